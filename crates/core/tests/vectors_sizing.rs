//! Link sizing against the live vectors: `sizing`, `hash_count_edges`,
//! `debug_ratio_format`, `pow2_sizing` (§3, §2.7).

mod common;

use common::*;
use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::bloom::chain::{AddOutcome, Chain, ChainParams, CreateError};
use ferrobloom_core::bloom::dump;
use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::bloom::sizing::{
    bits_per_entry, hash_count, LinkSpec, Policy, SizingError, LN2,
};
use ferrobloom_core::format::printf_g;
use ferrobloom_core::BitArray;

#[test]
fn sizing_rows() {
    let rows = group("sizing")["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        let capacity = u(&r["capacity"]);
        let error = f(&r["error"]);
        let nonscaling = r["nonscaling"].as_bool().unwrap();
        let what = format!("capacity {capacity} error {error} nonscaling {nonscaling}");
        let params = ChainParams {
            capacity,
            error,
            growth: 2,
            nonscaling,
            policy: Policy::Exact,
        };
        assert_eq!(params.first_link_error(), f(&r["link_error"]), "{what}");
        let bpe = bits_per_entry(f(&r["link_error"]));
        assert_eq!(bpe, f(&r["bpe"]), "{what}: bpe");
        assert_eq!(
            (capacity as f64 * bpe) as u64,
            u(&r["raw_bits"]),
            "{what}: raw"
        );

        let spec = LinkSpec::new(capacity, params.first_link_error(), Policy::Exact).unwrap();
        assert_eq!(spec.bytes, u(&r["bytes"]), "{what}: bytes");
        assert_eq!(spec.bits, u(&r["bits"]), "{what}: bits");
        assert_eq!(u64::from(spec.hashes), u(&r["hashes"]), "{what}: hashes");
        assert_eq!(spec.bpe, f(&r["bpe"]), "{what}: spec bpe");
        assert_eq!(spec.n2, 0);
        assert_eq!(spec.entries, capacity);

        let chain = new_chain(&params);
        assert_eq!(
            chain.reported_size(),
            u(&r["bf_info_size"]),
            "{what}: BF.INFO Size"
        );
        assert_eq!(
            chain.debug_lines()[1],
            s(&r["bf_debug_link"]),
            "{what}: BF.DEBUG"
        );
        assert_eq!(chain.debug_lines()[0], "size:0");
        assert_eq!(chain.capacity(), capacity);
        assert_eq!(chain.data_bytes(), spec.bytes);
        // MEMORY USAGE is Size plus Redis' own key overhead (32 for 'sz').
        assert_eq!(u(&r["memory_usage_key_sz"]), u(&r["bf_info_size"]) + 32);
    }
}

#[test]
fn hash_count_edges() {
    for v in group_vectors("hash_count_edges") {
        let error: f64 = s(&v["error_arg"]).parse().unwrap();
        let nonscaling = v["nonscaling"].as_bool().unwrap();
        let what = format!("{error} nonscaling {nonscaling}");
        let params = ChainParams {
            capacity: u(&v["capacity"]),
            error,
            growth: 2,
            nonscaling,
            policy: Policy::Exact,
        };
        let bpe = bits_per_entry(params.first_link_error());
        assert_eq!(bpe, f(&v["bpe"]), "{what}: bpe");
        assert_eq!(LN2 * bpe, f(&v["ln2_times_bpe"]), "{what}: ln2 * bpe");
        assert_eq!(
            u64::from(hash_count(bpe)),
            u(&v["hashes"]),
            "{what}: hashes"
        );
        let chain = new_chain(&params);
        let link = &chain.links()[0];
        assert_eq!(u64::from(link.hashes), u(&v["hashes"]), "{what}");
        assert_eq!(link.bits, u(&v["bits"]), "{what}");
        assert_eq!(chain.debug_lines()[1], s(&v["bf_debug_link"]), "{what}");
    }
}

#[test]
fn debug_ratio_format() {
    for v in group_vectors("debug_ratio_format") {
        let error: f64 = s(&v["error_arg"]).parse().unwrap();
        let text = s(&v["ratio_text"]);
        assert_eq!(printf_g(error), text, "{error:e}");
        let chain = reserve(&[s(&v["error_arg"]), "10", "NONSCALING"]);
        let line = &chain.debug_lines()[1];
        assert!(
            line.ends_with(&format!(" ratio:{text}")),
            "{line} should end with ratio:{text}"
        );
    }
}

#[test]
fn debug_ratio_format_spec_outputs() {
    // §2.7's observed list, including the chain-generated ones.
    for (x, text) in [
        (0.005, "0.005"),
        (0.000625, "0.000625"),
        (6.25e-05, "6.25e-05"),
        (7.8125e-05, "7.8125e-05"),
        (1e-05, "1e-05"),
        (1e-07, "1e-07"),
        (0.123456789, "0.123457"),
        (1.23456789e-05, "1.23457e-05"),
        (f64::from_bits(1), "4.94066e-324"),
        (f64::NAN, "nan"),
        (0.0, "0"),
    ] {
        assert_eq!(printf_g(x), text);
    }
}

struct Pow2Case {
    entries: u64,
    error: f64,
    n2: u8,
    bits: u64,
    options: u32,
    growth: u32,
}

fn pow2_case(v: &serde_json::Value) -> Pow2Case {
    let l = &v["link0"];
    Pow2Case {
        entries: u(&l["entries_inflated"]),
        error: f(&l["error"]),
        n2: u(&l["n2"]) as u8,
        bits: u(&l["bits"]),
        options: u(&v["options"]) as u32,
        growth: u(&v["growth"]) as u32,
    }
}

/// The full link 0 restored from a crafted encver-4 DUMP payload.
fn pow2_chain_from_dump(c: &Pow2Case) -> Chain {
    let bpe = bits_per_entry(c.error);
    let fields = one_link_fields(
        c.entries,
        u64::from(c.options),
        u64::from(c.growth),
        c.entries,
        c.error,
        u64::from(hash_count(bpe)),
        bpe,
        c.bits,
        u64::from(c.n2),
        vec![0; (c.bits / 8) as usize],
        c.entries,
    );
    dump::load_payload(&payload(4, &fields)).expect("crafted pow2 payload loads")
}

/// The same chain built directly from its parts.
fn pow2_chain_from_parts(c: &Pow2Case) -> Chain {
    let bpe = bits_per_entry(c.error);
    let data = BitArray::zeroed(c.bits / 8).unwrap();
    let link = Link::from_parts(
        c.entries,
        c.error,
        bpe,
        hash_count(bpe),
        c.bits,
        c.n2,
        c.entries,
        data,
    )
    .unwrap();
    Chain::from_parts(c.entries, c.options, c.growth, vec![link]).unwrap()
}

#[test]
fn pow2_sizing() {
    for v in group_vectors("pow2_sizing") {
        let c = pow2_case(v);
        let request = &v["new_link_request"];
        let result = &v["new_link_result"];
        let want_debug = strings(&v["bf_debug"]);
        let what = format!("link0 {} {}", c.entries, c.error);

        // The requested link sizes to the observed result.
        let spec = LinkSpec::new(u(&request["entries"]), f(&request["error"]), Policy::Pow2)
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(u64::from(spec.n2), u(&result["n2"]), "{what}: n2");
        assert_eq!(spec.bits, u(&result["bits"]), "{what}: bits");
        assert_eq!(spec.bytes, u(&result["bytes"]), "{what}: bytes");
        assert_eq!(
            u64::from(spec.hashes),
            u(&result["hashes"]),
            "{what}: hashes"
        );
        assert_eq!(spec.entries, u(&result["entries"]), "{what}: entries");
        // Link 0 itself was sized the same way.
        let spec0 =
            LinkSpec::new(u(&v["link0"]["entries_requested"]), c.error, Policy::Pow2).unwrap();
        assert_eq!(spec0.entries, c.entries, "{what}: link 0 inflation");
        assert_eq!(spec0.n2, c.n2, "{what}: link 0 n2");
        assert_eq!(spec0.bits, c.bits, "{what}: link 0 bits");

        for (route, mut chain) in [
            ("dump", pow2_chain_from_dump(&c)),
            ("parts", pow2_chain_from_parts(&c)),
        ] {
            let what = format!("{what} via {route}");
            assert_eq!(chain.policy(), Policy::Pow2, "{what}");
            assert_eq!(chain.debug_lines()[1], want_debug[1], "{what}: link 0");
            let next = chain.next_link_spec().unwrap();
            assert_eq!(next, spec, "{what}: next link");
            assert!(next.entries >= u(&request["entries"]), "{what}: inflated");

            // Force the scale-out.
            assert_eq!(add(&mut chain, b"new-item"), AddOutcome::Added, "{what}");
            assert_eq!(chain.links().len(), 2, "{what}");
            let l1 = &chain.links()[1];
            assert_eq!(l1.entries, u(&result["entries"]), "{what}");
            assert_eq!(l1.bits, u(&result["bits"]), "{what}");
            assert_eq!(l1.bytes(), u(&result["bytes"]), "{what}");
            assert_eq!(u64::from(l1.n2), u(&result["n2"]), "{what}");
            assert_eq!(u64::from(l1.hashes), u(&result["hashes"]), "{what}");
            assert_eq!(l1.modulus(), 1u64 << u(&result["n2"]), "{what}: modulus");
            assert_eq!(l1.error, f(&request["error"]), "{what}: error");
            assert_eq!(chain.debug_lines(), want_debug, "{what}: BF.DEBUG");
            assert!(contains(&chain, b"new-item"));
        }
    }
}

#[test]
fn pow2_spec_examples() {
    // §3.5: (2, 0.2) has stored bits 64 but modulus 8.
    let spec = LinkSpec::new(2, 0.2, Policy::Pow2).unwrap();
    assert_eq!(
        (spec.n2, spec.bits, spec.bytes, spec.entries),
        (3, 64, 8, 2)
    );
    assert_eq!(spec.modulus(), 8);
    let link = Link::new(&spec).unwrap();
    assert_eq!(link.modulus(), 8);
}

#[test]
fn extreme_error_rates() {
    // §3.7: 0.999 NONSCALING -> raw 0 -> 1 -> 8 bytes, k 1.
    let c = reserve(&["0.999", "100", "NONSCALING"]);
    assert_eq!(
        c.debug_lines()[1],
        "bytes:8 bits:64 hashes:1 hashwidth:64 capacity:100 size:0 ratio:0.999"
    );
    // 4.9e-324 NONSCALING capacity 10 -> 1,944 bytes, k 1,075.
    let c = reserve(&["4.9e-324", "10", "NONSCALING"]);
    assert_eq!(
        c.debug_lines()[1],
        "bytes:1944 bits:15552 hashes:1075 hashwidth:64 capacity:10 size:0 ratio:4.94066e-324"
    );
    // Scaling: half of the smallest denormal is 0 -> could not create.
    let params = reserve_params(&["4.9e-324".into(), "10".into()]);
    assert!(matches!(
        Chain::new(&params, &Unguarded),
        Err(CreateError::Sizing(SizingError::InvalidParameters))
    ));
    // Error 0.9 is kept as is (no 0.25 cap): link ratio 0.45.
    let c = reserve(&["0.9", "100"]);
    assert!(c.debug_lines()[1].ends_with("ratio:0.45"));
}

#[test]
fn capacity_overflowing_the_bit_count_is_refused() {
    // 2.8.2 silently made an 8-byte filter; §9.2 lets us refuse.
    let params = reserve_params(&["0.01".into(), "2000000000000000000".into()]);
    assert!(matches!(
        Chain::new(&params, &Unguarded),
        Err(CreateError::Sizing(SizingError::TooLarge))
    ));
}

#[test]
fn small_capacities_spec_3_7() {
    for error in ["0.01", "0.001", "0.0001"] {
        for ns in [false, true] {
            for cap in ["1", "2", "3"] {
                let mut args = vec![error, cap];
                if ns {
                    args.push("NONSCALING");
                }
                let c = reserve(&args);
                assert_eq!(c.data_bytes(), 8, "{args:?}");
                assert_eq!(c.reported_size(), 104, "{args:?}");
            }
            let mut args = vec![error, "7"];
            if ns {
                args.push("NONSCALING");
            }
            let want = if error == "0.0001" { 24 } else { 16 };
            assert_eq!(reserve(&args).data_bytes(), want, "{args:?}");
        }
    }
}
