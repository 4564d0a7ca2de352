//! RDB / DUMP against the live vectors: `dump`, `rdb_legacy_restore`,
//! `rdb_dead_link`, and the loader requirements of §6.5.

mod common;

use common::*;
use ferrobloom_core::bloom::chain::{AddOutcome, Chain, ChainParams, MAX_LINKS};
use ferrobloom_core::bloom::dump::{self, load_payload, TYPE_ID_BASE};
use ferrobloom_core::bloom::rdb;
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count, Policy};
use ferrobloom_core::dump_format::{crc64_jones, module_type_id, DumpWriter};
use ferrobloom_core::rdb_io::RdbError;

/// `rdb::save` of `chain` through a DumpWriter with the given id/trailer.
fn save_with(chain: &Chain, type_id: u64, rdb_version: u16) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id);
    rdb::save(chain, &mut w);
    w.finish(rdb_version)
}

#[test]
fn dump_vectors() {
    for v in group_vectors("dump") {
        let args = strings(&v["reserve_args"]);
        let original = hex(s(&v["dump_hex"]));
        let walked = walk_payload(&original);
        assert_eq!(walked.type_id, module_type_id(b"MBbloom--", 4).unwrap());
        assert_eq!(u64::from(walked.rdb_version), u(&v["rdb_version_trailer"]));

        let chain = load_payload(&original).unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
        assert_eq!(chain.debug_lines(), strings(&v["bf_debug"]), "{args:?}");

        let ours = save_with(&chain, walked.type_id, walked.rdb_version);
        let ours_walked = walk_payload(&ours);
        assert!(!ours_walked.special_strings, "we write raw strings");
        if walked.special_strings {
            // Redis compressed or integer-encoded a string: the bytes
            // differ, the decoded fields may not.
            assert_eq!(ours_walked.fields, walked.fields, "{args:?}: fields");
        } else {
            assert_eq!(
                ours_walked.field_bytes, walked.field_bytes,
                "{args:?}: field bytes"
            );
            assert_eq!(ours, original, "{args:?}: whole payload");
            assert_eq!(
                dump::dump_payload(&chain, walked.rdb_version),
                original,
                "{args:?}: dump_payload"
            );
        }

        // The same filter built from its commands is identical.
        let mut built = new_chain(&reserve_params(&args));
        let items = items_hex(&v["items_hex"]);
        for item in &items {
            assert_eq!(add(&mut built, item), AddOutcome::Added);
        }
        assert_same_chain(&chain, &built, &format!("{args:?}: restored vs built"));
        assert_eq!(save_with(&built, walked.type_id, walked.rdb_version), ours);
        // RESTORE then DUMP again reproduces our payload byte for byte.
        let again = load_payload(&ours).unwrap();
        assert_same_chain(&chain, &again, "reload");
        assert_ones_exact(&again);
    }
}

#[test]
fn dump_trailer_of_redis_7_4() {
    // §6.2: the same filter on 7.4.1 is identical up to EOF, then
    // 0c 00 48 38 0f 36 b4 0e 55 a8.
    let v = &group_vectors("dump")[0];
    assert_eq!(strings(&v["reserve_args"]), ["0.1", "5"]);
    let chain = load_payload(&hex(s(&v["dump_hex"]))).unwrap();
    let p12 = dump::dump_payload(&chain, 12);
    assert_eq!(to_hex(&p12[p12.len() - 10..]), "0c0048380f36b40e55a8");
    assert_same_chain(&chain, &load_payload(&p12).unwrap(), "7.4 payload");
}

#[test]
fn module_type_ids() {
    // §6.1: encver 0-3 give ...f800 - ...f803.
    for encver in 0..=4u16 {
        assert_eq!(
            module_type_id(b"MBbloom--", encver),
            Some(0x3016_e5a2_89be_f800 | u64::from(encver))
        );
    }
    assert_eq!(TYPE_ID_BASE, 0x3016_e5a2_89be_f800);
}

#[test]
fn integer_encoded_string_is_decoded() {
    // §6.2: an 8-byte array "12345678" is dumped as 05 c2 4e 61 bc 00.
    let chain = reserve(&["0.1", "5"]);
    let mut p = dump::dump_payload(&chain, 10);
    let raw = [&[5u8, 8][..], &[0u8; 8]].concat();
    let at = p
        .windows(raw.len())
        .position(|w| w == raw)
        .expect("raw array");
    p.splice(at..at + raw.len(), [5u8, 0xc2, 0x4e, 0x61, 0xbc, 0x00]);
    let n = p.len();
    let crc = crc64_jones(&p[..n - 8]);
    p[n - 8..].copy_from_slice(&crc.to_le_bytes());
    let w = walk_payload(&p);
    assert!(w.special_strings);
    let loaded = load_payload(&p).unwrap();
    assert_eq!(loaded.links()[0].data().as_bytes(), b"12345678");
    assert_ones_exact(&loaded);
}

#[test]
fn rdb_legacy_restore() {
    for v in group_vectors("rdb_legacy_restore") {
        let name = s(&v["name"]);
        let p = hex(s(&v["payload_hex"]));
        let w = walk_payload(&p);
        assert_eq!(w.type_id & 0x3ff, u(&v["encver"]), "{name}");
        let mut chain = load_payload(&p).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(
            chain.debug_lines(),
            strings(&v["bf_debug_after_restore"]),
            "{name}"
        );
        let exists: Vec<u64> = [&b"a"[..], b"b", b"c", b"zz"]
            .iter()
            .map(|i| u64::from(contains(&chain, i)))
            .collect();
        assert_eq!(exists, u64s(&v["mexists_a_b_c_zz"]), "{name}: a b c zz");
        assert_eq!(
            u64::from(chain.growth()),
            u(&v["expansion_after_restore"]),
            "{name}"
        );
        assert_eq!(chain.expansion(), Some(chain.growth()), "{name}: scaling");

        // Saving writes encver 4 with the in-memory values; it reloads
        // identically (legacy bits 0 stays 0).
        let saved = dump::dump_payload(&chain, 10);
        assert_eq!(walk_payload(&saved).type_id & 0x3ff, 4);
        assert_same_chain(&chain, &load_payload(&saved).unwrap(), name);

        for i in 0..40 {
            add(&mut chain, format!("x{i}").as_bytes());
        }
        assert_eq!(
            chain.debug_lines(),
            strings(&v["bf_debug_after_adding_x0_to_x39"]),
            "{name}: after x0..x39"
        );
        for item in [&b"a"[..], b"b", b"c"] {
            assert!(contains(&chain, item), "{name}");
            assert_eq!(add(&mut chain, item), AddOutcome::Present, "{name}");
        }
        for i in 0..40 {
            assert!(contains(&chain, format!("x{i}").as_bytes()), "{name}: x{i}");
        }
        let saved = dump::dump_payload(&chain, 10);
        assert_same_chain(&chain, &load_payload(&saved).unwrap(), name);
        assert_ones_exact(&chain);
    }
}

#[test]
fn rdb_dead_link() {
    let g = group("rdb_dead_link");
    let p = hex(s(&g["dump_hex"]));
    let debug_2_8_2 = strings(&g["bf_debug_2_8_2"]);
    // 2.8.2 shows the dead link as its last line.
    assert_eq!(
        debug_2_8_2.last().unwrap(),
        "bytes:0 bits:1 hashes:0 hashwidth:64 capacity:0 size:0 ratio:0"
    );
    // 2.8.2's MADD a b c: the third item hit the failed scale-out.
    assert_eq!(
        s(&g["madd_reply_resp2_wire"]),
        "*3\r\n:1\r\n:1\r\n-ERR problem inserting into filter\r\n"
    );
    let w = walk_payload(&p);
    assert_eq!(w.fields[1], Field::U(2), "the payload carries two links");

    let mut chain = load_payload(&p).expect("2.8.2's own output loads");
    // The trailing all-zero link is dropped; the rest is as 2.8.2 shows.
    assert_eq!(chain.links().len(), 1);
    assert_eq!(chain.debug_lines(), debug_2_8_2[..debug_2_8_2.len() - 1]);
    assert_eq!(chain.growth(), 0, "growth wrapped to 0 is kept");
    assert!(contains(&chain, b"a") && contains(&chain, b"b"));

    // 2.8.2 then reported every item present (exists_random_item = 1); we
    // behave as before the failed scale-out: absent items are absent and
    // every add of one fails again without appending anything.
    assert_eq!(g["exists_random_item_2_8_2"].as_u64(), Some(1));
    assert!(!contains(&chain, b"c"));
    assert!(!contains(&chain, b"some random item"));
    let replies = madd(&mut chain, &[b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]);
    assert_eq!(
        replies,
        [
            Reply::Int(0),
            Reply::Err("ERR problem inserting into filter".into()),
            Reply::Err("ERR problem inserting into filter".into())
        ]
    );
    assert_eq!(chain.links().len(), 1);
    assert_eq!(chain.items(), 2);

    // Saved again, it is the payload of the same filter without the dead
    // link, identical to one built by the same commands.
    let mut built = new_chain(&ChainParams {
        capacity: 2,
        error: 0.01,
        growth: 0,
        nonscaling: false,
        policy: Policy::Exact,
    });
    madd(&mut built, &[b"a".to_vec(), b"b".to_vec()]);
    assert_same_chain(&chain, &built, "dead link dropped");
    assert_eq!(
        dump::dump_payload(&chain, 10),
        dump::dump_payload(&built, 10)
    );
}

/// The fields of a valid one-link filter (BF.RESERVE 0.1 5 + a b).
fn base_fields() -> Vec<Field> {
    let mut chain = reserve(&["0.1", "5"]);
    add(&mut chain, b"a");
    add(&mut chain, b"b");
    walk_payload(&dump::dump_payload(&chain, 10)).fields
}

const ITEMS: usize = 0;
const NFILTERS: usize = 1;
const OPTIONS: usize = 2;
const GROWTH: usize = 3;
const ENTRIES: usize = 4;
const ERROR: usize = 5;
const HASHES: usize = 6;
const BPE: usize = 7;
const BITS: usize = 8;
const N2: usize = 9;
const DATA: usize = 10;
const LINK_ITEMS: usize = 11;

fn with(changes: &[(usize, Field)]) -> Vec<Field> {
    let mut fields = base_fields();
    for (i, f) in changes {
        fields[*i] = f.clone();
    }
    fields
}

fn refused(name: &str, p: &[u8]) {
    let r = load_payload(p);
    assert!(
        r.is_err(),
        "{name}: loaded {:?}",
        r.map(|c| c.debug_lines()).ok()
    );
}

fn accepted(name: &str, p: &[u8]) -> Chain {
    load_payload(p).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

#[test]
fn base_fields_load() {
    let chain = accepted("base", &payload(4, &base_fields()));
    assert_eq!(
        chain.debug_lines()[1],
        "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:5 size:2 ratio:0.05"
    );
}

#[test]
fn loader_rejects_what_6_5_forbids() {
    use Field::*;
    let cases: Vec<(&str, Vec<Field>)> = vec![
        ("nfilters 0", vec![U(0), U(0), U(5), U(2)]),
        ("nfilters 0 with a link after", with(&[(NFILTERS, U(0))])),
        ("options 16", with(&[(OPTIONS, U(16))])),
        ("options 0xff", with(&[(OPTIONS, U(0xff))])),
        ("options 2^32 + 5", with(&[(OPTIONS, U((1 << 32) + 5))])),
        ("error 0", with(&[(ERROR, D(0.0))])),
        ("error 1", with(&[(ERROR, D(1.0))])),
        ("error 1.5", with(&[(ERROR, D(1.5))])),
        ("error -0.1", with(&[(ERROR, D(-0.1))])),
        ("error NaN", with(&[(ERROR, D(f64::NAN))])),
        ("error inf", with(&[(ERROR, D(f64::INFINITY))])),
        ("hashes 6 (bpe says 5)", with(&[(HASHES, U(6))])),
        ("hashes 9", with(&[(HASHES, U(9))])),
        ("hashes 0", with(&[(HASHES, U(0))])),
        ("hashes 2^32 + 5", with(&[(HASHES, U((1 << 32) + 5))])),
        ("bpe 0 hashes 0", with(&[(BPE, D(0.0)), (HASHES, U(0))])),
        ("bpe -1 hashes 0", with(&[(BPE, D(-1.0)), (HASHES, U(0))])),
        ("bpe NaN", with(&[(BPE, D(f64::NAN))])),
        ("bpe inf", with(&[(BPE, D(f64::INFINITY))])),
        (
            "hashes above the bound",
            with(&[(BPE, D(3000.0)), (HASHES, U(u64::from(hash_count(3000.0))))]),
        ),
        ("bits 128 with an 8-byte array", with(&[(BITS, U(128))])),
        ("bits 65 with an 8-byte array", with(&[(BITS, U(65))])),
        ("bits 0 and n2 0", with(&[(BITS, U(0)), (N2, U(0))])),
        ("n2 64", with(&[(N2, U(64))])),
        ("n2 2^32", with(&[(N2, U(1 << 32))])),
        ("n2 7 beyond an 8-byte array", with(&[(N2, U(7))])),
        ("empty array", with(&[(DATA, S(Vec::new()))])),
        (
            "empty array with bits 0",
            with(&[(DATA, S(Vec::new())), (BITS, U(0))]),
        ),
        ("entries 0", with(&[(ENTRIES, U(0))])),
        ("size 3 != sum 2", with(&[(ITEMS, U(3))])),
        ("size 2 != sum 3", with(&[(LINK_ITEMS, U(3))])),
        ("double where unsigned", with(&[(ENTRIES, D(5.0))])),
        ("unsigned where double", with(&[(ERROR, U(0))])),
        ("string where unsigned", with(&[(BITS, S(vec![0; 8]))])),
        ("unsigned where string", with(&[(DATA, U(0))])),
    ];
    for (name, fields) in &cases {
        refused(name, &payload(4, fields));
    }

    let base = base_fields();
    // Truncated payloads (valid CRC): every prefix of the fields.
    for n in 0..base.len() {
        refused(&format!("first {n} fields"), &payload(4, &base[..n]));
    }
    // A trailing field.
    let mut longer = base.clone();
    longer.push(Field::U(0));
    refused("trailing unsigned", &payload(4, &longer));
    let mut longer = base.clone();
    longer.push(Field::S(vec![1, 2, 3]));
    refused("trailing string", &payload(4, &longer));
    // Unknown encoding versions.
    for encver in [5u16, 6, 0x3ff] {
        refused(&format!("encver {encver}"), &payload(encver, &base));
    }
    // Another module type.
    let other = module_type_id(b"MBbloomCF", 4).unwrap();
    refused("another type", &payload_with_id(other, &base));
    // A wrong checksum.
    let mut p = payload(4, &base);
    let n = p.len();
    p[n - 1] ^= 1;
    assert_eq!(load_payload(&p).err(), Some(RdbError::Io));
    // Cut inside a field, CRC fixed.
    let good = payload(4, &base);
    let body = &good[..good.len() - 10];
    for cut in 10..body.len() - 1 {
        let mut p = body[..cut].to_vec();
        p.push(0); // EOF
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64_jones(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        refused(&format!("cut at {cut}"), &p);
    }
    // Too short to be a payload at all.
    for len in 0..11 {
        refused(&format!("{len} bytes"), &vec![7u8; len]);
    }
}

#[test]
fn huge_nfilters_fails_at_the_first_missing_field() {
    let p = payload(4, &with(&[(NFILTERS, Field::U(1 << 40))]));
    refused("nfilters 2^40", &p);
    let p = payload(4, &with(&[(NFILTERS, Field::U(u64::MAX))]));
    refused("nfilters max", &p);
}

#[test]
fn dead_links_are_only_dropped_at_the_end() {
    use Field::*;
    let dead = vec![U(0), D(0.0), U(0), D(0.0), U(0), U(0), S(Vec::new()), U(0)];
    let base = base_fields();
    let link = base[ENTRIES..].to_vec();

    // base + dead + dead: both dropped.
    let mut fields = base.clone();
    fields[NFILTERS] = U(3);
    fields.extend(dead.clone());
    fields.extend(dead.clone());
    let chain = accepted("two trailing dead links", &payload(4, &fields));
    assert_eq!(chain.links().len(), 1);

    // A dead link in the middle is corruption.
    let mut fields = base[..ENTRIES].to_vec();
    fields[NFILTERS] = U(2);
    fields.extend(dead.clone());
    fields.extend(link.clone());
    refused("dead link first", &payload(4, &fields));

    // A chain of only a dead link.
    let mut fields = base[..ENTRIES].to_vec();
    fields[ITEMS] = U(0);
    fields.extend(dead.clone());
    refused("only a dead link", &payload(4, &fields));

    // Almost dead (one field non-zero) is not dropped, hence refused.
    for k in 0..dead.len() {
        let mut almost = dead.clone();
        almost[k] = match &almost[k] {
            U(_) => U(1),
            D(_) => D(0.5),
            S(_) => S(vec![0]),
        };
        let mut fields = base.clone();
        fields[NFILTERS] = U(2);
        fields.extend(almost);
        refused(
            &format!("almost-dead link with field {k} set"),
            &payload(4, &fields),
        );
    }
}

#[test]
fn legitimate_odd_shapes_load() {
    use Field::*;
    // bits not a multiple of 8: the modulus is the stored bit count.
    let chain = accepted(
        "bits 60",
        &payload(
            4,
            &with(&[
                (BITS, U(60)),
                (DATA, S(vec![0; 8])),
                (ITEMS, U(0)),
                (LINK_ITEMS, U(0)),
            ]),
        ),
    );
    assert_eq!(chain.links()[0].modulus(), 60);
    assert!(chain.debug_lines()[1].starts_with("bytes:8 bits:60 "));

    // Encver-0 style array: 4 bytes, bits 28 (not word sized either).
    let mut c = accepted(
        "bits 28 in 4 bytes",
        &payload(
            4,
            &with(&[
                (BITS, U(28)),
                (DATA, S(vec![0; 4])),
                (ITEMS, U(0)),
                (LINK_ITEMS, U(0)),
            ]),
        ),
    );
    assert_eq!(c.links()[0].bytes(), 4);
    for i in 0..5u8 {
        add(&mut c, &[i]);
    }
    assert!(set_bits(&chain_bytes(&c)).iter().all(|&b| b < 28));
    for i in 0..5u8 {
        assert!(contains(&c, &[i]));
    }

    // bits 0 with n2 > 0 (pre-2.2 power-of-two link): modulus 2^n2 and
    // BF.DEBUG shows bits:<2^n2>.
    let mut c = accepted(
        "bits 0 n2 5",
        &payload(
            4,
            &with(&[
                (BITS, U(0)),
                (N2, U(5)),
                (DATA, S(vec![0; 8])),
                (ITEMS, U(0)),
                (LINK_ITEMS, U(0)),
            ]),
        ),
    );
    assert_eq!(c.links()[0].modulus(), 32);
    assert!(c.debug_lines()[1].starts_with("bytes:8 bits:32 "));
    for i in 0..5u8 {
        add(&mut c, &[i]);
    }
    assert!(set_bits(&chain_bytes(&c)).iter().all(|&b| b < 32));

    // bits 32 with an 8-byte array (2.8.2 accepted it; in bounds).
    let c = accepted("bits 32", &payload(4, &with(&[(BITS, U(32))])));
    assert_eq!(c.links()[0].modulus(), 32);

    // n2 6 on a 64-bit array: modulus 64, in bounds.
    accepted("n2 6", &payload(4, &with(&[(N2, U(6))])));
    // Options 15, growth 0, growth above 32 bits (clamped as 2.8.2 does).
    accepted("options 15", &payload(4, &with(&[(OPTIONS, U(15))])));
    let c = accepted("growth 0", &payload(4, &with(&[(GROWTH, U(0))])));
    assert_eq!(c.growth(), 0);
    let c = accepted(
        "growth 2^32 + 3",
        &payload(4, &with(&[(GROWTH, U((1 << 32) + 3))])),
    );
    assert_eq!(c.growth(), 3);
    // Link size above its capacity (LOADCHUNK accepts it too).
    accepted(
        "size 200 > entries 5",
        &payload(4, &with(&[(ITEMS, U(200)), (LINK_ITEMS, U(200))])),
    );
    // A long bit array (4-byte length form) loads.
    let bpe = bits_per_entry(0.005);
    let big = one_link_fields(
        0,
        5,
        2,
        100_000,
        0.005,
        u64::from(hash_count(bpe)),
        bpe,
        8 * 200_000,
        0,
        vec![0; 200_000],
        0,
    );
    let c = accepted("200 kB array", &payload(4, &big));
    assert_eq!(c.links()[0].bytes(), 200_000);
}

#[test]
fn every_encoding_version_reads_its_own_layout() {
    use Field::*;
    // The same filter (options 0 semantics aside) in encodings 0..=4.
    let bpe = bits_per_entry(0.01);
    let k = u64::from(hash_count(bpe));
    let data = vec![0u8; 8];
    let link1 = |bits: u64, n2: u64| {
        vec![
            U(3),
            D(0.01),
            U(k),
            D(bpe),
            U(bits),
            U(n2),
            S(data.clone()),
            U(0),
        ]
    };
    let cases: Vec<(u16, Vec<Field>, u32, u32)> = vec![
        (
            0,
            vec![
                U(0),
                U(1),
                U(3),
                D(0.01),
                U(k),
                D(bpe),
                S(data.clone()),
                U(0),
            ],
            0,
            2,
        ),
        (1, [vec![U(0), U(1)], link1(64, 0)].concat(), 0, 2),
        (2, [vec![U(0), U(1), U(4)], link1(64, 0)].concat(), 4, 2),
        (3, [vec![U(0), U(1), U(5)], link1(64, 0)].concat(), 5, 2),
        (
            4,
            [vec![U(0), U(1), U(5), U(7)], link1(64, 0)].concat(),
            5,
            7,
        ),
    ];
    for (encver, fields, options, growth) in cases {
        let c = accepted(&format!("encver {encver}"), &payload(encver, &fields));
        assert_eq!(
            (c.options(), c.growth()),
            (options, growth),
            "encver {encver}"
        );
        if encver == 0 {
            // bits = trunc(entries * bpe), not rounded.
            assert_eq!(c.links()[0].bits, (3.0 * bpe) as u64);
        }
        // A layout read with the wrong version fails.
        if encver < 4 {
            refused(
                &format!("encver {encver} fields as 4"),
                &payload(4, &fields),
            );
        }
    }
}

/// The fields `rdb::save` writes for `chain`, with `dead` all-zero links
/// (2.8.2's failed scale-outs) appended and counted in nfilters.
fn fields_with_dead_links(chain: &Chain, dead: usize) -> Vec<Field> {
    use Field::*;
    let mut fields = walk_payload(&dump::dump_payload(chain, 10)).fields;
    fields[NFILTERS] = U((chain.links().len() + dead) as u64);
    for _ in 0..dead {
        fields.extend([U(0), D(0.0), U(0), D(0.0), U(0), U(0), S(Vec::new()), U(0)]);
    }
    fields
}

#[test]
fn link_count_is_bounded() {
    let longest = longest_chain();
    // The longest chain, alone or with the dead link 2.8.2 appends after
    // its failed scale-out, loads as it is.
    let loaded = accepted("MAX_LINKS links", &dump::dump_payload(&longest, 10));
    assert_same_chain(&loaded, &longest, "MAX_LINKS links");
    let p = payload(4, &fields_with_dead_links(&longest, 1));
    let loaded = accepted("MAX_LINKS links + a dead link", &p);
    assert_eq!(loaded.links().len(), MAX_LINKS);
    assert_same_chain(&loaded, &longest, "MAX_LINKS links + a dead link");

    // One live link more, or a second dead link after the bound: refused
    // as invalid data, not as a short read.
    let longer = one_link_longer(&longest);
    assert_eq!(longer.links().len(), MAX_LINKS + 1);
    let p = dump::dump_payload(&longer, 10);
    assert!(matches!(load_payload(&p), Err(RdbError::Invalid(_))));
    let p = payload(4, &fields_with_dead_links(&longest, 2));
    assert!(matches!(load_payload(&p), Err(RdbError::Invalid(_))));
    let p = payload(4, &fields_with_dead_links(&longer, 1));
    assert!(matches!(load_payload(&p), Err(RdbError::Invalid(_))));

    // The count is judged before any link is read: a claimed count above
    // the bound with one link's fields is invalid, whereas a count within
    // it fails at the first missing field.
    for n in [MAX_LINKS as u64 + 2, 1 << 40, u64::MAX] {
        let p = payload(4, &with(&[(NFILTERS, Field::U(n))]));
        assert!(
            matches!(load_payload(&p), Err(RdbError::Invalid(_))),
            "nfilters {n}"
        );
    }
    let p = payload(4, &with(&[(NFILTERS, Field::U(MAX_LINKS as u64 + 1))]));
    assert_eq!(load_payload(&p).err(), Some(RdbError::Io));
}

#[test]
fn arrays_far_beyond_their_modulus_are_refused() {
    use Field::*;
    let zero = [(ITEMS, U(0)), (LINK_ITEMS, U(0))];
    let case = |bits: u64, n2: u64, bytes: usize| {
        let mut changes = vec![(BITS, U(bits)), (N2, U(n2)), (DATA, S(vec![0; bytes]))];
        changes.extend(zero.iter().cloned());
        payload(4, &with(&changes))
    };
    // The bound: the words the modulus addresses, plus 4 KiB.
    accepted("bits 64, 16 bytes", &case(64, 0, 16));
    accepted("bits 64, 4104 bytes", &case(64, 0, 4104));
    refused("bits 64, 4105 bytes", &case(64, 0, 4105));
    refused("bits 64, 1 MiB", &case(64, 0, 1 << 20));
    accepted("bits 28, 4104 bytes", &case(28, 0, 4104));
    refused("bits 28, 4112 bytes", &case(28, 0, 4112));
    accepted("n2 5, 4104 bytes", &case(0, 5, 4104));
    refused("n2 5, 4112 bytes", &case(0, 5, 4112));
    accepted("n2 10 with bits 1152, 144 bytes", &case(1152, 10, 144));
    refused("n2 10 with bits 40000, 4232 bytes", &case(40000, 10, 4232));
    // The legacy shapes (§6.3 vectors) are all inside it.
    for v in group_vectors("rdb_legacy_restore") {
        accepted(s(&v["name"]), &hex(s(&v["payload_hex"])));
    }
}
