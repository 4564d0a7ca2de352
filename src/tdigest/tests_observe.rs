//! TDIGEST.STATS and TDIGEST.PLAN driven without Redis (field order,
//! numbers worked out here, the grammar's refusals in order, the guard's
//! verdict), and the keyspace events of each write: only when something
//! changed.

use std::ffi::CStr;

use ferrobloom_core::tdigest::TDigest;
use ferrobloom_core::Unguarded;

use super::merge::Merge;
use super::observe::{allocated_bytes, jemalloc_size_class, PlanCommand, Stats};
use super::write::{Add, Create, Reset};
use super::{replies, TDigestValue};
use crate::command::testing::{run, MemKey, TestEnv};
use crate::command::{CommandError, KeylessCommand, Outcome, Reply, Sources, TestArgs};
use crate::notify::Events;

type Key = MemKey<TDigestValue>;

fn err(text: &'static CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

fn held(compression: f64, values: &[f64]) -> Key {
    let mut td = TDigest::new(compression, &Unguarded).unwrap();
    for &v in values {
        td.add(v).unwrap();
    }
    MemKey::Held(TDigestValue::new(td))
}

fn plan(env: &TestEnv, line: &str) -> Reply<'static> {
    PlanCommand::run(&TestArgs::new(line), env)
        .reply
        .into_owned()
}

/// The value's box at its size class.
fn boxed() -> i64 {
    jemalloc_size_class(std::mem::size_of::<TDigestValue>() as u64) as i64
}

/// The size classes, and what a digest took on Redis 7.0.15 with jemalloc
/// 5.3.0 (`bf_allocated_bytes` growth, examples/tdigest_memory.rs).
#[test]
fn allocated_bytes_are_jemalloc_size_classes() {
    let classes: Vec<u64> = [1, 8, 9, 16, 17, 33, 64, 65, 112, 113, 4097, 9760]
        .into_iter()
        .map(jemalloc_size_class)
        .collect();
    assert_eq!(
        classes,
        [8, 8, 16, 16, 32, 48, 64, 80, 112, 128, 5120, 10240]
    );
    for (compression, measured) in [(20, 2672), (100, 10352), (5000, 524400)] {
        let capacity = 6 * compression + 10;
        assert_eq!(
            allocated_bytes(capacity) as i64 - boxed(),
            measured - 112,
            "{compression}"
        );
    }
}

#[test]
fn stats_fields_in_order() {
    let env = TestEnv::client();
    // Compression 10: capacity 70 nodes, 1..=100 added with compresses on
    // the way (the array fills at 69), a tail of points unmerged.
    let mut key = held(10.0, &(1..=100).map(f64::from).collect::<Vec<_>>());
    let td = key.value().digest().clone();
    let (merged, unmerged) = (td.merged_nodes(), td.unmerged_nodes());
    assert!(merged > 0 && unmerged > 0, "{merged} {unmerged}");
    let heaviest = td.nodes()[..merged].iter().map(|n| n.weight).max().unwrap();
    let bound = |q: f64| 2.0 * std::f64::consts::PI * 100f64.ln() * q * (1.0 - q) / 10.0;
    let reply = run::<Stats>(&env, &mut key, "TDIGEST.STATS k").0.reply;
    assert_eq!(
        reply,
        Reply::Map(vec![
            (c"compression", Reply::Integer(10)),
            (c"capacity", Reply::Integer(70)),
            (c"observations", Reply::Integer(100)),
            (c"merged_nodes", Reply::Integer(merged as i64)),
            (c"unmerged_nodes", Reply::Integer(unmerged as i64)),
            (c"fill", Reply::Double((merged + unmerged) as f64 / 70.0)),
            (c"heaviest_centroid", Reply::Integer(heaviest)),
            (c"min", Reply::Double(1.0)),
            (c"max", Reply::Double(100.0)),
            (c"bytes", Reply::Integer(16 * 70)),
            (c"allocated", Reply::Integer(1280 + boxed())),
            (c"memory_usage", Reply::Integer(16 * 70 + 8)),
            (c"median_error_bound", Reply::Double(bound(0.5))),
            (c"tail_error_bound", Reply::Double(bound(0.01))),
        ])
    );
    // STATS changes nothing (no compress).
    assert_eq!(key.value().digest(), &td);

    // Empty: no min or max.
    let mut empty = held(100.0, &[]);
    let Reply::Map(fields) = run::<Stats>(&env, &mut empty, "TDIGEST.STATS k").0.reply else {
        panic!()
    };
    assert_eq!(fields[7], (c"min", Reply::Null));
    assert_eq!(fields[8], (c"max", Reply::Null));
    assert_eq!(fields[6], (c"heaviest_centroid", Reply::Integer(0)));

    let missing = run::<Stats>(&env, &mut MemKey::Missing, "TDIGEST.STATS k").0;
    assert_eq!(missing.reply, err(replies::KEY_DOES_NOT_EXIST));
    let other = run::<Stats>(&env, &mut MemKey::Other, "TDIGEST.STATS k").0;
    assert_eq!(other.reply, err(replies::WRONGTYPE));
    let arity = run::<Stats>(&env, &mut empty, "TDIGEST.STATS k x").0;
    assert_eq!(arity.reply, Reply::Error(CommandError::Arity));
}

#[test]
fn plan_fields_in_order_and_its_refusals() {
    let env = TestEnv::client();
    let bound = |q: f64, n: f64| 2.0 * std::f64::consts::PI * n.ln() * q * (1.0 - q) / 100.0;
    let want = |n: i64| {
        Reply::Map(vec![
            (c"compression", Reply::Integer(100)),
            (c"capacity", Reply::Integer(610)),
            (c"observations", Reply::Integer(n)),
            (c"bytes", Reply::Integer(9760)),
            (c"allocated", Reply::Integer(10240 + boxed())),
            (c"memory_usage", Reply::Integer(9768)),
            (c"guard", Reply::Simple(c"ok")),
            (c"median_error_bound", Reply::Double(bound(0.5, n as f64))),
            (c"tail_error_bound", Reply::Double(bound(0.01, n as f64))),
        ])
    };
    assert_eq!(plan(&env, "TDIGEST.PLAN 100"), want(1_000_000));
    assert_eq!(plan(&env, "TDIGEST.PLAN 100 observations 5000"), want(5000));
    // The last OBSERVATIONS counts.
    assert_eq!(
        plan(&env, "TDIGEST.PLAN 100 OBSERVATIONS 7 OBSERVATIONS 5000"),
        want(5000)
    );
    // The guard with the live settings: 9768 bytes over a 5000-byte cap.
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 5000);
    let Reply::Map(fields) = plan(&capped, "TDIGEST.PLAN 100") else {
        panic!()
    };
    assert_eq!(fields[6], (c"guard", Reply::Simple(c"bf.max-filter-bytes")));
    assert_eq!(
        plan(&capped, "TDIGEST.PLAN 10"),
        plan(&env, "TDIGEST.PLAN 10")
    );

    for (line, want) in [
        ("TDIGEST.PLAN", Reply::Error(CommandError::Arity)),
        ("TDIGEST.PLAN abc", err(replies::PARSING_COMPRESSION)),
        ("TDIGEST.PLAN 1.5", err(replies::PARSING_COMPRESSION)),
        ("TDIGEST.PLAN 0", err(replies::COMPRESSION_NOT_POSITIVE)),
        ("TDIGEST.PLAN -3", err(replies::COMPRESSION_NOT_POSITIVE)),
        // A capacity past 32 bits: TDIGEST.CREATE's refusal.
        ("TDIGEST.PLAN 357913940", err(replies::ALLOCATION_FAILED)),
        (
            "TDIGEST.PLAN 100 OBSERVATIONS",
            Reply::Error(CommandError::Arity),
        ),
        (
            "TDIGEST.PLAN 100 TOTAL 5",
            err(c"ERR unknown argument (expected OBSERVATIONS)"),
        ),
        (
            "TDIGEST.PLAN 100 OBSERVATIONS -1",
            err(c"ERR bad observations (expected an integer >= 0)"),
        ),
        (
            "TDIGEST.PLAN 100 OBSERVATIONS x",
            err(c"ERR bad observations (expected an integer >= 0)"),
        ),
    ] {
        assert_eq!(plan(&env, line), want, "{line}");
    }
    // The largest compression whose capacity fits.
    let Reply::Map(fields) = plan(&env, "TDIGEST.PLAN 357913939") else {
        panic!()
    };
    assert_eq!(fields[1], (c"capacity", Reply::Integer(2147483644)));
}

fn names(events: Events) -> Vec<&'static str> {
    events.iter().map(|e| e.name().to_str().unwrap()).collect()
}

fn events_of<C: crate::command::KeyedCommand<Value = TDigestValue>>(
    key: &mut Key,
    line: &str,
) -> Vec<&'static str> {
    names(run::<C>(&TestEnv::client(), key, line).0.events)
}

#[test]
fn writes_send_their_event_only_when_something_changed() {
    let mut key = MemKey::Missing;
    assert_eq!(
        events_of::<Create>(&mut key, "TDIGEST.CREATE k"),
        ["tdigest.create"]
    );
    // Refused: the key exists, a bad compression.
    assert!(events_of::<Create>(&mut key, "TDIGEST.CREATE k").is_empty());
    let mut fresh = MemKey::Missing;
    assert!(events_of::<Create>(&mut fresh, "TDIGEST.CREATE k COMPRESSION 0").is_empty());
    assert!(events_of::<Create>(&mut fresh, "TDIGEST.CREATE k COMPRESSION 357913940").is_empty());
    // A creation the guard refused: the guard's own event.
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 100);
    let refused = run::<Create>(&capped, &mut fresh, "TDIGEST.CREATE k").0;
    assert_eq!(names(refused.events), ["bf.guard-refused"]);
    assert!(matches!(fresh, MemKey::Missing));

    assert_eq!(
        events_of::<Add>(&mut key, "TDIGEST.ADD k 1 2 3"),
        ["tdigest.add"]
    );
    assert!(events_of::<Add>(&mut key, "TDIGEST.ADD k 1 x").is_empty());
    assert!(events_of::<Add>(&mut key, "TDIGEST.ADD k 1 inf").is_empty());
    assert!(events_of::<Add>(&mut MemKey::Missing, "TDIGEST.ADD k 1").is_empty());
    assert!(events_of::<Add>(&mut MemKey::Other, "TDIGEST.ADD k 1").is_empty());
    assert_eq!(key.value().digest().total_weight(), 3);

    assert_eq!(
        events_of::<Reset>(&mut key, "TDIGEST.RESET k"),
        ["tdigest.reset"]
    );
    assert!(events_of::<Reset>(&mut MemKey::Missing, "TDIGEST.RESET k").is_empty());
    assert!(events_of::<Reset>(&mut key, "TDIGEST.RESET k x").is_empty());
}

/// An ADD whose values overflow the total weight part-way keeps (and
/// propagates) the values before, so it sends `tdigest.add`; one that
/// adds nothing sends nothing.
#[test]
fn an_add_refused_part_way_sends_its_event() {
    let mut td = TDigest::new(100.0, &Unguarded).unwrap();
    td.add_weighted(1.0, i64::MAX - 2).unwrap();
    let mut key = MemKey::Held(TDigestValue::new(td));
    let (o, _) = run::<Add>(&TestEnv::client(), &mut key, "TDIGEST.ADD k 5 6 7 8");
    assert_eq!(o.reply, err(replies::OVERFLOW));
    assert_eq!(names(o.events), ["tdigest.add"]);
    assert_eq!(key.value().digest().total_weight(), i64::MAX);
    let (o, _) = run::<Add>(&TestEnv::client(), &mut key, "TDIGEST.ADD k 9");
    assert_eq!(o.reply, err(replies::OVERFLOW));
    assert!(o.events.is_empty());
}

/// Sources for TDIGEST.MERGE: copies of the named digests.
struct Shelf(Vec<(&'static str, Key)>);

impl Sources<TDigestValue> for Shelf {
    type Key<'a> = Key;

    fn open(&self, _: usize, name: &[u8]) -> Key {
        match self.0.iter().find(|(n, _)| n.as_bytes() == name) {
            Some((_, MemKey::Held(v))) => {
                MemKey::Held(TDigestValue::new(v.digest().try_clone(&Unguarded).unwrap()))
            }
            Some((_, MemKey::Other)) => MemKey::Other,
            _ => MemKey::Missing,
        }
    }
}

fn merge(dest: &mut Key, shelf: &Shelf, line: &str) -> Outcome<'static> {
    let args = TestArgs::new(line);
    let o = match Merge::parse(&args) {
        Ok(()) => Merge::run(&args, dest, shelf, &TestEnv::client()),
        Err(e) => Outcome::error(e),
    };
    Outcome {
        reply: o.reply.into_owned(),
        propagate: o.propagate,
        events: o.events,
    }
}

#[test]
fn merge_sends_its_event_on_the_destination_when_it_merged() {
    let shelf = Shelf(vec![
        ("a", held(100.0, &[1.0, 2.0])),
        ("b", held(50.0, &[3.0])),
        ("str", MemKey::Other),
    ]);
    let mut dest = MemKey::Missing;
    for line in [
        "TDIGEST.MERGE d 1 a",
        "TDIGEST.MERGE d 2 a b COMPRESSION 20",
        "TDIGEST.MERGE d 1 b OVERRIDE",
    ] {
        let o = merge(&mut dest, &shelf, line);
        assert_eq!(o.reply, Reply::Ok, "{line}");
        assert_eq!(names(o.events), ["tdigest.merge"], "{line}");
    }
    assert_eq!(dest.value().digest().total_weight(), 1);
    for line in [
        "TDIGEST.MERGE d 1 nokey",
        "TDIGEST.MERGE d 1 str",
        "TDIGEST.MERGE d 0 a",
        "TDIGEST.MERGE d 1 a COMPRESSION 0",
        "TDIGEST.MERGE d 1 a FOO",
    ] {
        let o = merge(&mut dest, &shelf, line);
        assert!(matches!(o.reply, Reply::Error(_)), "{line}");
        assert!(o.events.is_empty(), "{line}");
    }
    let o = merge(&mut MemKey::Other, &shelf, "TDIGEST.MERGE d 1 a");
    assert!(o.events.is_empty());
}
