use ferrobloom_core::tdigest::TDigest;
use ferrobloom_core::Unguarded;

use super::TDigestValue;
use crate::datatype::{AofRecord, DataType, DigestSink};

/// Collects what DEBUG DIGEST would be fed.
#[derive(Default, PartialEq, Debug)]
struct Collected(Vec<u8>);

impl DigestSink for Collected {
    fn add_int(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn add_bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn end_sequence(&mut self) {
        self.0.push(0xff);
    }
}

fn value(compression: f64, points: &[f64]) -> Box<TDigestValue> {
    let mut td = TDigest::new(compression, &Unguarded).unwrap();
    for &p in points {
        td.add(p).unwrap();
    }
    TDigestValue::new(td)
}

fn digest_of(v: &TDigestValue) -> Collected {
    let mut c = Collected::default();
    DataType::digest(v, &mut c);
    c
}

#[test]
fn debug_digest_differs_per_content_and_matches_a_copy() {
    let a = value(100.0, &[1.0, 2.0, 3.0]);
    let b = value(100.0, &[1.0, 2.0, 4.0]);
    let empty = value(100.0, &[]);
    let other_compression = value(50.0, &[1.0, 2.0, 3.0]);
    assert_ne!(digest_of(&a), digest_of(&b));
    assert_ne!(digest_of(&a), digest_of(&empty));
    assert_ne!(digest_of(&a), digest_of(&other_compression));
    let copy = a.deep_copy().unwrap();
    assert_eq!(digest_of(&a), digest_of(&copy));
}

#[test]
fn memory_usage_is_2_8_2s_formula() {
    // Compression 100: capacity 6·100 + 10 = 610 nodes of 16 bytes, plus 8.
    assert_eq!(value(100.0, &[]).mem_usage(), 16 * 610 + 8);
    assert_eq!(value(5.0, &[1.0]).footprint().bytes, 16 * 40);
}

#[test]
fn aof_rewrite_is_one_restore_of_the_dump_payload() {
    let v = value(5.0, &[1.0, 2.0, 2.5]);
    let mut records = Vec::new();
    v.aof_rewrite(&mut |r| {
        if let AofRecord::Restore(p) = r {
            records.push(p.to_vec());
        } else {
            panic!("not a RESTORE: {r:?}");
        }
    });
    assert_eq!(records.len(), 1);
    let back = ferrobloom_core::tdigest::dump::load_payload(&records[0], &Unguarded).unwrap();
    assert_eq!(back.total_weight(), 3);
    assert_eq!((back.min(), back.max()), (1.0, 2.5));
}

mod reads {
    //! What reads do to the value, and what the next write propagates
    //! (`tdigest::value`), with the server's role and the user's ACL set
    //! by the test environment.

    use ferrobloom_core::tdigest::TDigest;
    use ferrobloom_core::Unguarded;

    use crate::command::testing::{propagated, run, MemKey, TestEnv};
    use crate::command::{KeyedCommand, Outcome, Reply};
    use crate::datatype::DataType;
    use crate::tdigest::read::{Cdf, Info, Max, Quantile, Rank, TrimmedMean};
    use crate::tdigest::write::{Add, Reset};
    use crate::tdigest::TDigestValue;

    fn key(points: &[f64]) -> MemKey<TDigestValue> {
        let mut td = TDigest::new(100.0, &Unguarded).unwrap();
        for &p in points {
            td.add(p).unwrap();
        }
        MemKey::Held(TDigestValue::new(td))
    }

    fn line<C: KeyedCommand<Value = TDigestValue>>(
        env: &TestEnv,
        k: &mut MemKey<TDigestValue>,
        text: &str,
    ) -> (Outcome<'static>, Option<String>) {
        let (o, args) = run::<C>(env, k, text);
        let p = propagated(&o.propagate, &args);
        (o, p)
    }

    fn info(k: &mut MemKey<TDigestValue>, env: &TestEnv) -> Vec<i64> {
        let (o, _) = line::<Info>(env, k, "TDIGEST.INFO k");
        let Reply::Map(fields) = o.reply else {
            panic!("{:?}", o.reply)
        };
        fields
            .into_iter()
            .map(|(_, v)| match v {
                Reply::Integer(i) => i,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// (merged nodes, unmerged nodes, total compressions) of S.
    fn stored(k: &MemKey<TDigestValue>) -> (usize, usize, i64) {
        let td = k.value().digest();
        (
            td.merged_nodes(),
            td.unmerged_nodes(),
            td.total_compressions(),
        )
    }

    #[test]
    fn a_writers_read_on_a_master_pends_and_the_next_add_sends_the_marker() {
        let env = TestEnv::client();
        let mut k = key(&[1.0, 2.0, 3.0]);
        assert_eq!(info(&mut k, &env)[2..4], [0, 3]);
        let (o, p) = line::<Quantile>(&env, &mut k, "TDIGEST.QUANTILE k 0.5");
        assert_eq!(o.reply, Reply::Array(vec![Reply::ServerDouble(2.0)]));
        assert_eq!(p, None, "a read never propagates on a master");
        assert!(k.value().pending());
        assert_eq!(stored(&k), (0, 3, 0), "S is not changed by a read");
        // INFO shows what 2.8.2 shows after the read.
        assert_eq!(info(&mut k, &env)[2..8], [3, 0, 3, 0, 3, 1]);
        assert!(k.value().view_bytes() > 0);
        let mem = k.value().mem_usage();
        assert_eq!(mem, 16 * 610 + 8 + k.value().view_bytes() as usize);
        // Later reads change nothing more.
        line::<Cdf>(&env, &mut k, "TDIGEST.CDF k 2");
        assert_eq!(stored(&k), (0, 3, 0));
        let (o, p) = line::<Add>(&env, &mut k, "TDIGEST.ADD k 4 5");
        assert_eq!(o.reply, Reply::Ok);
        assert_eq!(
            p.as_deref(),
            Some("TDIGEST.QUANTILE k 0; TDIGEST.ADD k 4 5")
        );
        assert!(!k.value().pending());
        assert_eq!(
            stored(&k),
            (3, 2, 1),
            "compress(S) installed, then the adds"
        );
        assert_eq!(k.value().view_bytes(), 0, "the view went with the write");
        let (_, p) = line::<Add>(&env, &mut k, "TDIGEST.ADD k 6");
        assert_eq!(p.as_deref(), Some("TDIGEST.ADD k 6"), "owed once");
    }

    #[test]
    fn replicas_read_only_users_and_unknown_users_change_nothing() {
        for env in [
            TestEnv::with(|e| e.replica = true),
            TestEnv::with(|e| e.read_only_replica = true),
            TestEnv::with(|e| e.user_may_run = Some(false)),
            TestEnv::with(|e| e.user_may_run = None),
        ] {
            let mut k = key(&[1.0, 2.0, 3.0]);
            let (o, p) = line::<TrimmedMean>(&env, &mut k, "TDIGEST.TRIMMED_MEAN k 0 1");
            assert_eq!(o.reply, Reply::ServerDouble(2.0));
            assert_eq!(p, None);
            assert!(!k.value().pending());
            assert_eq!(stored(&k), (0, 3, 0));
            assert_eq!(info(&mut k, &env)[2..4], [0, 3], "INFO shows S");
            let (_, p) = line::<Add>(&env, &mut k, "TDIGEST.ADD k 4");
            assert_eq!(p.as_deref(), Some("TDIGEST.ADD k 4"), "no marker");
        }
    }

    #[test]
    fn the_master_link_and_loads_compress_the_stored_digest() {
        let link = TestEnv::with(|e| {
            e.replicated = true;
            e.replica = true;
        });
        let mut k = key(&[1.0, 2.0, 3.0]);
        let (o, p) = line::<Quantile>(&link, &mut k, "TDIGEST.QUANTILE k 0");
        assert_eq!(o.reply, Reply::Array(vec![Reply::ServerDouble(1.0)]));
        assert_eq!(stored(&k), (3, 0, 1));
        assert_eq!(
            p.as_deref(),
            Some("TDIGEST.QUANTILE k 0"),
            "a replica's own AOF gets the compress"
        );
        let (_, p) = line::<Quantile>(&link, &mut k, "TDIGEST.QUANTILE k 0");
        assert_eq!(p, None, "nothing changed, nothing to write");

        let load = TestEnv::with(|e| {
            e.replicated = true;
            e.loading = true;
        });
        let mut k = key(&[1.0, 2.0, 3.0]);
        let (_, p) = line::<Rank>(&load, &mut k, "TDIGEST.RANK k 2");
        assert_eq!(stored(&k), (3, 0, 1));
        assert_eq!(p, None, "a load propagates nothing");
    }

    #[test]
    fn writes_from_the_master_link_ignore_and_clear_p() {
        let env = TestEnv::client();
        let mut k = key(&[1.0, 2.0, 3.0]);
        line::<Quantile>(&env, &mut k, "TDIGEST.QUANTILE k 0.5");
        assert!(k.value().pending());
        let link = TestEnv::with(|e| e.replicated = true);
        let (_, p) = line::<Add>(&link, &mut k, "TDIGEST.ADD k 4");
        assert_eq!(p.as_deref(), Some("TDIGEST.ADD k 4"));
        assert!(!k.value().pending());
        assert_eq!(stored(&k), (0, 4, 0), "its master decided: no compress");
    }

    #[test]
    fn reset_clears_p_and_min_max_do_not_pend() {
        let env = TestEnv::client();
        let mut k = key(&[1.0, 2.0, 3.0]);
        line::<Max>(&env, &mut k, "TDIGEST.MAX k");
        assert!(!k.value().pending(), "MAX does not compress in 2.8.2");
        line::<Quantile>(&env, &mut k, "TDIGEST.QUANTILE k 0.5");
        let (_, p) = line::<Reset>(&env, &mut k, "TDIGEST.RESET k");
        assert_eq!(p.as_deref(), Some("TDIGEST.RESET k"));
        assert!(!k.value().pending());
    }

    #[test]
    fn a_view_the_guard_refuses_is_an_allocation_error_and_owes_nothing() {
        let env = TestEnv::with(|e| e.memory.maxmemory = Some((1000, 1000)));
        let mut k = key(&[1.0, 2.0, 3.0]);
        let (o, p) = line::<Quantile>(&env, &mut k, "TDIGEST.QUANTILE k 0.5");
        assert_eq!(
            o.reply,
            Reply::Error(crate::tdigest::replies::ALLOCATION_FAILED.into())
        );
        assert_eq!(p, None);
        assert!(!k.value().pending());
        assert_eq!(k.value().view_bytes(), 0);
        // A compressed digest needs no view.
        let mut c = key(&[1.0, 2.0, 3.0]);
        line::<Quantile>(&TestEnv::client(), &mut c, "TDIGEST.QUANTILE k 0.5");
        line::<Add>(&TestEnv::client(), &mut c, "TDIGEST.ADD k 4");
        line::<Quantile>(
            &TestEnv::with(|e| e.replicated = true),
            &mut c,
            "TDIGEST.QUANTILE k 0",
        );
        let (o, _) = line::<Quantile>(&env, &mut c, "TDIGEST.QUANTILE k 1");
        assert_eq!(o.reply, Reply::Array(vec![Reply::ServerDouble(4.0)]));
    }

    #[test]
    fn saves_write_2_8_2s_compressed_bytes_and_leave_a_compress_owed() {
        let env = TestEnv::client();
        let mut k = key(&[1.0, 2.0, 3.0]);
        assert!(!k.value().owes());
        let mut compressed = k.value().digest().clone();
        compressed.compress().unwrap();
        let mut saved = Vec::new();
        k.value().aof_rewrite(&mut |record| {
            if let crate::datatype::AofRecord::Restore(payload) = record {
                saved = payload.to_vec();
            }
        });
        assert_eq!(
            saved,
            ferrobloom_core::tdigest::dump::dump_payload(&compressed, 10),
            "compress(S) in 2.8.2's bytes"
        );
        assert!(
            !k.value().digest().is_compressed(),
            "saving changes nothing"
        );
        // A save begun since S changed: whatever loads it holds compress(S),
        // so the next client write installs it and sends the marker.
        crate::tdigest::value::save_begins();
        assert!(k.value().owes());
        let (o, _) = line::<Add>(&env, &mut k, "TDIGEST.ADD k 4");
        assert_eq!(o.reply, Reply::Ok);
        assert!(!k.value().owes());
        let mut want = compressed.clone();
        want.add(4.0).unwrap();
        assert_eq!(k.value().digest().nodes(), want.nodes());
        // Loaded back: compressed with centroids, so pending.
        let back = ferrobloom_core::tdigest::dump::load_payload(&saved, &Unguarded).unwrap();
        assert!(TDigestValue::loaded(back).as_loaded().pending());
    }

    #[test]
    fn debug_digest_follows_the_answers() {
        let env = TestEnv::client();
        let mut a = key(&[1.0, 2.0, 3.0]);
        let b = key(&[1.0, 2.0, 3.0]);
        line::<Quantile>(&env, &mut a, "TDIGEST.QUANTILE k 0.5");
        let link = TestEnv::with(|e| e.replicated = true);
        let mut c = key(&[1.0, 2.0, 3.0]);
        line::<Quantile>(&link, &mut c, "TDIGEST.QUANTILE k 0");
        let d = |k: &MemKey<TDigestValue>| super::digest_of(k.value());
        assert_eq!(d(&a), d(&b));
        assert_eq!(d(&a), d(&c));
        // A copy keeps P.
        let copy = a.value().deep_copy().unwrap();
        assert!(copy.pending());
    }
}
