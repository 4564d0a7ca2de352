//! Hashing and bit positions against the live vectors: `hash_pairs`,
//! `bit_positions_modern`, `bit_positions_legacy` (§4).

mod common;

use common::*;
use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::bloom::chain::AddOutcome;
use ferrobloom_core::bloom::scandump;
use ferrobloom_core::hash::{murmur2, murmur64a, HashPair, HashWidth, SEED32, SEED64};

/// Position `i` computed the naive way of §4.3.
fn naive_position(h: HashPair, i: u64, modulus: u64) -> u64 {
    h.a.wrapping_add(i.wrapping_mul(h.b)) % modulus
}

#[test]
fn hash_pairs_64_and_32_bit() {
    for v in group_vectors("hash_pairs") {
        let item = hex(s(&v["item_hex"]));
        let (a64, b64) = (hex_u64(&v["h64_a"]), hex_u64(&v["h64_b"]));
        let (a32, b32) = (hex_u64(&v["h32_a"]), hex_u64(&v["h32_b"]));
        let what = s(&v["item"]);

        assert_eq!(
            HashPair::of(&item, HashWidth::Bits64),
            HashPair { a: a64, b: b64 },
            "64-bit pair of {what:?}"
        );
        assert_eq!(
            HashPair::of(&item, HashWidth::Bits32),
            HashPair { a: a32, b: b32 },
            "32-bit pair of {what:?}"
        );
        // The pair is built from the raw hashes as documented.
        assert_eq!(murmur64a(&item, SEED64), a64);
        assert_eq!(murmur64a(&item, a64), b64);
        assert_eq!(u64::from(murmur2(&item, SEED32)), a32);
        assert_eq!(u64::from(murmur2(&item, a32 as u32)), b32);
    }
}

#[test]
fn hash_pairs_readable_form_matches_hex_for_plain_items() {
    // Guards the reading of the file: where the readable form is plain
    // printable ASCII it must be the hex bytes.
    for v in group_vectors("hash_pairs") {
        let readable = s(&v["item"]);
        if readable.bytes().all(|b| (0x20..0x7f).contains(&b)) && !readable.contains('\\') {
            assert_eq!(readable.as_bytes(), hex(s(&v["item_hex"])).as_slice());
        }
    }
}

#[test]
fn bit_positions_modern() {
    for v in group_vectors("bit_positions_modern") {
        let args = strings(&v["reserve_args"]);
        let item = hex(s(&v["item_hex"]));
        let what = format!("{args:?} {:?}", s(&v["item"]));
        let mut chain = new_chain(&reserve_params(&args));

        assert_eq!(u64::from(chain.options()), u(&v["options"]), "{what}");
        assert_eq!(chain.links().len(), 1);
        let link = &chain.links()[0];
        assert_eq!(link.bits, u(&v["bits"]), "{what}: bits");
        assert_eq!(link.bytes(), u(&v["bytes"]), "{what}: bytes");
        assert_eq!(u64::from(link.hashes), u(&v["hashes"]), "{what}: hashes");
        assert_eq!(link.error, f(&v["link_error"]), "{what}: link error");
        assert_eq!(link.modulus(), u(&v["bits"]), "{what}: modulus");

        // The index sequence, in probe order, three ways.
        let h = chain.hash(&item);
        let expected = u64s(&v["index_sequence"]);
        assert_eq!(expected.len() as u64, u(&v["hashes"]));
        let head = link.head(h);
        assert_eq!(head[0], expected[0], "{what}: head");
        if expected.len() > 1 {
            assert_eq!(head[1], expected[1], "{what}: head");
        }
        let naive: Vec<u64> = (0..u64::from(link.hashes))
            .map(|i| naive_position(h, i, link.bits))
            .collect();
        assert_eq!(naive, expected, "{what}: naive positions");
        let mut buf = vec![u64::MAX; link.hashes as usize];
        assert_eq!(link.positions_into(h, &mut buf), buf.len());
        assert_eq!(buf, expected, "{what}: positions_into");

        assert!(!chain.contains(h));
        assert_eq!(chain.add(h, &Unguarded), AddOutcome::Added, "{what}");
        assert!(chain.contains(h));

        // The SCANDUMP data stream has exactly those bits set.
        let dumped = scandump(&chain);
        assert_eq!(dumped.len(), 2, "{what}: one header and one data chunk");
        let data = &dumped[1].1;
        let want = u64s(&v["set_bits_sorted"]);
        assert_eq!(set_bits(data), want, "{what}: set bits");
        assert_eq!(
            data,
            &bytes_with_bits(u(&v["bytes"]) as usize, &want),
            "{what}: data bytes"
        );
        assert_eq!(chain.links()[0].ones(), want.len() as u64, "{what}: ones");
        assert_eq!(chain.items(), 1);
    }
}

#[test]
fn bit_positions_legacy() {
    for v in group_vectors("bit_positions_legacy") {
        let what = format!("{} item {:?}", s(&v["name"]), s(&v["item"]));
        let header = scandump::decode_header(&hex(s(&v["header_hex"])))
            .unwrap_or_else(|e| panic!("{what}: header refused: {e:?}"));
        let want_link = &v["link"];
        assert_eq!(u64::from(header.options), u(&v["options"]), "{what}");
        assert_eq!(header.items, 0);
        assert_eq!(header.links.len(), 1);
        let lh = &header.links[0];
        assert_eq!(lh.entries, u(&want_link["entries"]), "{what}: entries");
        assert_eq!(lh.error, f(&want_link["error"]), "{what}: error");
        assert_eq!(lh.bpe, f(&want_link["bpe"]), "{what}: bpe");
        assert_eq!(
            u64::from(lh.hashes),
            u(&want_link["hashes"]),
            "{what}: hashes"
        );
        assert_eq!(lh.bytes, u(&want_link["bytes"]), "{what}: bytes");
        assert_eq!(lh.bits, u(&want_link["bits"]), "{what}: bits");
        assert_eq!(u64::from(lh.n2), u(&want_link["n2"]), "{what}: n2");

        let mut chain = header.instantiate(&Unguarded).expect("instantiate");
        let width = match s(&v["hash"]) {
            "h32" => HashWidth::Bits32,
            "h64" => HashWidth::Bits64,
            other => panic!("unknown hash {other}"),
        };
        assert_eq!(chain.hash_width(), width, "{what}");
        assert_eq!(
            chain.links()[0].modulus(),
            u(&v["modulus"]),
            "{what}: modulus"
        );

        let item = hex(s(&v["item_hex"]));
        let h = chain.hash(&item);
        assert_eq!(h, HashPair::of(&item, width));
        // Index arithmetic is 64-bit wrapping even for the 32-bit hash.
        let positions: Vec<u64> = (0..u64::from(lh.hashes))
            .map(|i| naive_position(h, i, u(&v["modulus"])))
            .collect();
        let mut computed = vec![u64::MAX; lh.hashes as usize];
        chain.links()[0].positions_into(h, &mut computed);
        assert_eq!(computed, positions, "{what}: positions");

        assert_eq!(chain.add(h, &Unguarded), AddOutcome::Added, "{what}");
        let want = u64s(&v["set_bits_sorted"]);
        let mut from_positions = positions.clone();
        from_positions.sort_unstable();
        from_positions.dedup();
        assert_eq!(from_positions, want, "{what}: positions give the set bits");
        let dumped = scandump(&chain);
        assert_eq!(set_bits(&dumped[1].1), want, "{what}: set bits");
        assert_eq!(
            chain.debug_lines(),
            strings(&v["bf_debug_after_add"]),
            "{what}"
        );
        assert_ones_exact(&chain);
    }
}

#[test]
fn forced_n2_wins_over_stored_bits() {
    // §4.5, last legacy row: options 5, a 144-byte link with bits 1152 and
    // n2 forced to 5: the modulus is 32, BF.DEBUG still shows bits 1152.
    let chain = reserve(&["0.01", "100"]);
    let mut header = scandump::encode_header(&chain);
    *header.last_mut().unwrap() = 5;
    let mut chain = scandump::decode_header(&header)
        .expect("n2 5 with 1152 bits is a valid header")
        .instantiate(&Unguarded)
        .unwrap();
    assert_eq!(chain.links()[0].modulus(), 32);
    assert_eq!(add(&mut chain, b"foo"), AddOutcome::Added);
    assert_eq!(
        set_bits(chain.links()[0].data().as_bytes()),
        vec![13, 15, 17, 19, 21, 23, 25, 27]
    );
    assert_eq!(
        chain.debug_lines()[1],
        "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"
    );
}

#[test]
fn spec_section_4_5_table() {
    // §4.5's live table, which overlaps bit_positions_modern; kept so the
    // spec text and the vectors cannot drift apart unnoticed.
    let rows: [(&[&str], &[u8], &[u64]); 4] = [
        (
            &["0.01", "100"],
            b"foo",
            &[21, 25, 145, 269, 475, 599, 723, 847],
        ),
        (
            &["0.001", "1000"],
            b"foo",
            &[
                207, 1945, 4179, 5917, 6413, 8151, 9889, 10385, 12123, 14357, 15583,
            ],
        ),
        (
            &["0.01", "100", "NONSCALING"],
            b"foo",
            &[213, 269, 339, 409, 721, 791, 847],
        ),
        (&["0.1", "7", "NONSCALING"], b"x", &[14, 22, 38, 62]),
    ];
    for (args, item, bits) in rows {
        let mut chain = reserve(args);
        assert_eq!(add(&mut chain, item), AddOutcome::Added);
        assert_eq!(set_bits(&chain_bytes(&chain)), bits, "{args:?}");
    }
}
