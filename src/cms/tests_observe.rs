//! CMS.STATS and CMS.PLAN driven without Redis: field order, numbers
//! worked out by hand, fill levels against the settings, the grammar's
//! refusals in order, the guard's verdict per cell size.

use ferrobloom_core::cms::{CellSize, CountMinSketch};
use ferrobloom_core::Unguarded;

use super::observe::{self, PlanCommand, Stats};
use super::{replies, Sketch};
use crate::command::testing::{run, MemKey, TestEnv};
use crate::command::{CommandError, KeylessCommand, Reply, TestArgs};

type Key = MemKey<Sketch>;

fn stats(env: &TestEnv, key: &mut Key) -> Reply<'static> {
    run::<Stats>(env, key, "CMS.STATS k").0.reply
}

fn plan(env: &TestEnv, line: &str) -> Reply<'static> {
    PlanCommand::run(&TestArgs::new(line), env)
        .reply
        .into_owned()
}

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

/// Spec §3.8's 2×2 sketch: foo +3, bar +5 give the cells [0, 8, 3, 5].
fn worked_example(cell_size: CellSize) -> Key {
    let mut s = CountMinSketch::new(2, 2, cell_size, &Unguarded).unwrap();
    s.incrby(b"foo", 3).unwrap();
    s.incrby(b"bar", 5).unwrap();
    MemKey::Held(Sketch::new(s))
}

#[test]
fn stats_fields_in_order_with_the_worked_numbers() {
    let env = TestEnv::client();
    let mut key = worked_example(CellSize::Four);
    assert_eq!(
        stats(&env, &mut key),
        Reply::Map(vec![
            (c"width", Reply::Integer(2)),
            (c"depth", Reply::Integer(2)),
            (c"cell_size", Reply::Integer(4)),
            (c"count", Reply::Integer(8)),
            // 2·2 cells of 4 bytes; MEMORY USAGE's 8 + 2·2·8.
            (c"bytes", Reply::Integer(16)),
            (c"memory_usage", Reply::Integer(40)),
            // 2N/width = 16/2, with probability 1 − 2^−2.
            (c"error_bound", Reply::Double(8.0)),
            (c"confidence", Reply::Double(0.75)),
            (c"fullest_cell", Reply::Integer(8)),
            (c"cell_max", Reply::Integer(4294967295)),
            (c"fullest_fraction", Reply::Double(8.0 / 4294967295.0)),
            (c"count_headroom", Reply::Integer(i64::MAX - 8)),
            (c"fill_level", Reply::Simple(c"ok")),
        ])
    );
}

/// The value of `name` in a map reply.
fn field(reply: &Reply<'static>, name: &str) -> Reply<'static> {
    match reply {
        Reply::Map(fields) => fields
            .iter()
            .find(|(k, _)| k.to_bytes() == name.as_bytes())
            .unwrap_or_else(|| panic!("no {name} in {reply:?}"))
            .1
            .clone(),
        other => panic!("not a map: {other:?}"),
    }
}

#[test]
fn fill_level_follows_the_fullest_cell_and_the_settings() {
    // One-byte cells: an item incremented by n fills its cells to n (one
    // item only, so no other item shares them).
    let sketch_with = |n: i64| {
        let mut s = CountMinSketch::new(10, 3, CellSize::One, &Unguarded).unwrap();
        s.incrby(b"x", n).unwrap();
        MemKey::Held(Sketch::new(s))
    };
    let env = TestEnv::client(); // warning 0.75, alert 0.90
    for (n, level) in [
        (191, c"ok"),
        (192, c"warning"),
        (229, c"warning"),
        (230, c"alert"),
    ] {
        let reply = stats(&env, &mut sketch_with(n));
        assert_eq!(field(&reply, "fullest_cell"), Reply::Integer(n), "{n}");
        assert_eq!(field(&reply, "cell_max"), Reply::Integer(255));
        assert_eq!(
            field(&reply, "fullest_fraction"),
            Reply::Double(n as f64 / 255.0)
        );
        assert_eq!(field(&reply, "fill_level"), Reply::Simple(level), "{n}");
    }
    let strict = TestEnv::with(|e| {
        e.settings.fill_warning = 0.1;
        e.settings.fill_alert = 0.5;
    });
    assert_eq!(
        field(&stats(&strict, &mut sketch_with(26)), "fill_level"),
        Reply::Simple(c"warning")
    );
    assert_eq!(
        field(&stats(&strict, &mut sketch_with(128)), "fill_level"),
        Reply::Simple(c"alert")
    );
    assert_eq!(
        field(&stats(&strict, &mut sketch_with(25)), "fill_level"),
        Reply::Simple(c"ok")
    );
}

#[test]
fn stats_of_a_missing_key_or_another_type() {
    let env = TestEnv::client();
    assert_eq!(
        stats(&env, &mut MemKey::Missing),
        err(replies::KEY_DOES_NOT_EXIST)
    );
    assert_eq!(stats(&env, &mut MemKey::Other), err(replies::WRONGTYPE));
    let mut key = worked_example(CellSize::Two);
    assert_eq!(
        run::<Stats>(&env, &mut key, "CMS.STATS k extra").0.reply,
        Reply::Error(CommandError::Arity)
    );
}

#[test]
fn plan_refusals_in_order() {
    let env = TestEnv::client();
    let arity = Reply::Error(CommandError::Arity);
    for (line, want) in [
        ("CMS.PLAN", arity.clone()),
        ("CMS.PLAN BYDIM 10", arity.clone()),
        ("CMS.PLAN BYDIM 10 5 TOTAL", arity.clone()),
        ("CMS.PLAN BYWIDTH 10 5", err(observe::PLAN_UNKNOWN_MODE)),
        ("CMS.PLAN BYDIM 0 5", err(c"CMS: invalid width")),
        ("CMS.PLAN BYDIM 1.5 x", err(c"CMS: invalid width")),
        ("CMS.PLAN BYDIM 10 -1", err(c"CMS: invalid depth")),
        (
            "CMS.PLAN BYPROB 1 x",
            err(c"CMS: invalid overestimation value"),
        ),
        ("CMS.PLAN byprob 0.01 0", err(c"CMS: invalid prob value")),
        (
            "CMS.PLAN BYDIM 10 5 ITEMS 3",
            err(observe::PLAN_UNKNOWN_ARGUMENT),
        ),
        ("CMS.PLAN BYDIM 10 5 TOTAL -1", err(observe::PLAN_BAD_TOTAL)),
        (
            "CMS.PLAN BYDIM 10 5 TOTAL 1.5",
            err(observe::PLAN_BAD_TOTAL),
        ),
        // CMS.INITBY*'s limits, with their texts.
        (
            "CMS.PLAN BYDIM 8589934592 8589934592",
            err(c"CMS: invalid init arguments"),
        ),
        (
            "CMS.PLAN BYDIM 4611686018427387904 1",
            err(c"CMS: Insufficient memory to create the key"),
        ),
        (
            "CMS.PLAN BYPROB 1e-300 0.5",
            err(c"CMS: invalid init arguments"),
        ),
    ] {
        assert_eq!(plan(&env, line), want, "{line}");
    }
}

#[test]
fn plan_by_prob_gives_the_sizes_and_bounds() {
    let env = TestEnv::client();
    let reply = plan(&env, "CMS.PLAN BYPROB 0.001 0.01 total 1000000");
    let header = std::mem::size_of::<CountMinSketch>() as i64;
    let cell = |bytes: i64, usage: i64, holds: i64| {
        Reply::Map(vec![
            (c"cell_size", Reply::Integer(bytes)),
            (c"bytes", Reply::Integer(14000 * bytes)),
            (c"memory_usage", Reply::Integer(usage)),
            (c"holds_total", Reply::Integer(holds)),
            (c"guard", Reply::Simple(c"ok")),
        ])
    };
    assert_eq!(
        reply,
        Reply::Map(vec![
            // ceil(2/0.001), ceil(log2(100)).
            (c"width", Reply::Integer(2000)),
            (c"depth", Reply::Integer(7)),
            (c"total", Reply::Integer(1_000_000)),
            (c"error", Reply::Double(0.001)),
            (c"probability", Reply::Double(1.0 / 128.0)),
            (c"error_bound", Reply::Double(1000.0)),
            (c"confidence", Reply::Double(127.0 / 128.0)),
            (
                c"textbook_error_bound",
                Reply::Double(std::f64::consts::E * 1_000_000.0 / 2000.0)
            ),
            (c"textbook_confidence", Reply::Double(1.0 - (-7.0f64).exp())),
            (
                c"cell_sizes",
                Reply::Array(vec![
                    cell(1, 14000 + header, 0),
                    cell(2, 28000 + header, 0),
                    // 2.8.2's MEMORY USAGE: 8 + 14000·8.
                    cell(4, 112008, 1),
                    cell(8, 112000 + header, 1),
                ])
            ),
            (c"smallest_cell_size", Reply::Integer(4)),
        ])
    );
    // Without TOTAL: no count, no overestimate, every size holds it.
    let empty = plan(&env, "CMS.PLAN BYDIM 2000 7");
    assert_eq!(field(&empty, "total"), Reply::Integer(0));
    assert_eq!(field(&empty, "error_bound"), Reply::Double(0.0));
    assert_eq!(field(&empty, "smallest_cell_size"), Reply::Integer(1));
    // A total no cell size holds.
    let huge = plan(&env, "CMS.PLAN BYDIM 2000 7 TOTAL 9223372036854775807");
    assert_eq!(field(&huge, "smallest_cell_size"), Reply::Integer(8));
}

#[test]
fn plan_says_which_cell_sizes_the_guard_refuses() {
    let verdicts = |env: &TestEnv, line: &str| -> Vec<Reply<'static>> {
        match field(&plan(env, line), "cell_sizes") {
            Reply::Array(sizes) => sizes.iter().map(|s| field(s, "guard")).collect(),
            other => panic!("{other:?}"),
        }
    };
    let simple = |names: [&'static std::ffi::CStr; 4]| names.map(Reply::Simple).to_vec();
    // MEMORY USAGE per cell size of 1000×100: about 100 kB, 200 kB, 800 kB,
    // 800 kB; a cap of 300 kB admits the first two.
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 300_000);
    assert_eq!(
        verdicts(&capped, "CMS.PLAN BYDIM 1000 100"),
        simple([c"ok", c"ok", c"bf.max-filter-bytes", c"bf.max-filter-bytes"])
    );
    // maxmemory counts the cell bytes: 100 kB, 200 kB, 400 kB, 800 kB.
    let full = TestEnv::with(|e| e.memory.maxmemory = Some((1_000_000, 1_300_000)));
    assert_eq!(
        verdicts(&full, "CMS.PLAN BYDIM 1000 100"),
        simple([c"ok", c"ok", c"maxmemory", c"maxmemory"])
    );
    let machine = TestEnv::with(|e| {
        e.memory.used = Some(0);
        e.memory.machine = Some(300_000);
    });
    assert_eq!(
        verdicts(&machine, "CMS.PLAN BYDIM 1000 100"),
        simple([c"ok", c"ok", c"machine-memory", c"machine-memory"])
    );
    // 2^60 cells of 8 bytes are more than the address space holds.
    let open = TestEnv::with(|e| e.settings.max_filter_bytes = 0);
    assert_eq!(
        verdicts(&open, "CMS.PLAN BYDIM 1152921504606846976 1")[3],
        Reply::Simple(c"insufficient-memory")
    );
}
