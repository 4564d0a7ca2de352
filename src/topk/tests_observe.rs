//! TOPK.STATS and TOPK.PLAN driven without Redis: field order, numbers
//! worked out by hand, the list's reliability, the grammar's refusals in
//! order, the guard's verdict.

use ferrobloom_core::topk::plan::min_reliable_count;
use ferrobloom_core::topk::{HeapSlot, Params, TopK};
use ferrobloom_core::Unguarded;

use super::observe::{self, list_reliability, PlanCommand, Stats};
use super::{replies, TopKey};
use crate::command::testing::{run, MemKey, TestEnv};
use crate::command::{CommandError, KeylessCommand, Reply, TestArgs};

type Key = MemKey<TopKey>;

fn stats(key: &mut Key) -> Reply<'static> {
    run::<Stats>(&TestEnv::client(), key, "TOPK.STATS k")
        .0
        .reply
}

fn plan(env: &TestEnv, line: &str) -> Reply<'static> {
    PlanCommand::run(&TestArgs::new(line), env)
        .reply
        .into_owned()
}

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
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

fn sketch(k: u32, width: u32, depth: u32, decay: f64) -> TopK {
    let params = Params {
        k,
        width,
        depth,
        decay,
    };
    TopK::new(params, &Unguarded).unwrap()
}

/// Spec §4.7's collision-free example: the list is qux 6, baz 3; every
/// row holds foo 2, bar 1, baz 3, qux 6.
#[test]
fn stats_fields_in_order_with_the_worked_numbers() {
    let mut s = sketch(2, 1000, 3, 0.9);
    for item in ["foo", "bar", "foo", "baz", "baz", "baz", "qux"] {
        s.add(item.as_bytes()).unwrap();
    }
    s.incrby(b"qux", 5).unwrap();
    assert_eq!(s.draws(), 0, "no bucket collision");
    let allocated = s.allocated_bytes() as i64;
    let mut key = MemKey::Held(TopKey::new(s));
    assert_eq!(
        stats(&mut key),
        Reply::Map(vec![
            (c"k", Reply::Integer(2)),
            (c"width", Reply::Integer(1000)),
            (c"depth", Reply::Integer(3)),
            (c"decay", Reply::Double(0.9)),
            (c"listed", Reply::Integer(2)),
            (c"smallest_listed_count", Reply::Integer(3)),
            (c"largest_listed_count", Reply::Integer(6)),
            (c"counted", Reply::Integer(12)),
            (c"bytes", Reply::Integer(allocated)),
            // 2088 + 1000·3·8 + 2·24.
            (c"memory_usage", Reply::Integer(26136)),
            (c"occupied_buckets", Reply::Integer(12)),
            (c"occupancy", Reply::Double(12.0 / 3000.0)),
            (c"error", Reply::Double(0.1)),
            (c"confidence", Reply::Double(0.99)),
            // 12 counts over 1000 buckets: N/(w·ε) = 0.12, at least 1.
            (c"min_reliable_count", Reply::Integer(1)),
            (c"reliable_listed", Reply::Integer(2)),
            (c"list_reliability", Reply::Simple(c"reliable")),
        ])
    );
}

#[test]
fn list_reliability_against_the_counted_stream() {
    // 100,000 counts, no collision: the reliable count at width 1000,
    // depth 3, decay 0.9 is 210 (keeping the bucket:
    // sqrt(100 / (0.1 · ln(1/0.9) · 0.01^(1/3)))), so a and b are above
    // it and c is not.
    assert_eq!(min_reliable_count(1000, 3, 0.9, 100_000, 0.1, 0.01), 210);
    let mut s = sketch(3, 1000, 3, 0.9);
    for (item, n) in [("a", 99_500), ("b", 300), ("c", 200)] {
        s.incrby(item.as_bytes(), n).unwrap();
    }
    assert_eq!(s.draws(), 0, "no bucket collision");
    let reply = stats(&mut MemKey::Held(TopKey::new(s)));
    assert_eq!(field(&reply, "counted"), Reply::Integer(100_000));
    assert_eq!(field(&reply, "min_reliable_count"), Reply::Integer(210));
    assert_eq!(field(&reply, "smallest_listed_count"), Reply::Integer(200));
    assert_eq!(field(&reply, "reliable_listed"), Reply::Integer(2));
    assert_eq!(field(&reply, "list_reliability"), Reply::Simple(c"partial"));

    // 600 items added once: nothing listed can be trusted (each count is
    // at most 1, the reliable count about N/(w·ε) = 6).
    let mut s = sketch(3, 1000, 3, 0.9);
    for i in 0..600 {
        s.add(format!("item{i}").as_bytes()).unwrap();
    }
    let reply = stats(&mut MemKey::Held(TopKey::new(s)));
    assert_eq!(field(&reply, "largest_listed_count"), Reply::Integer(1));
    assert!(matches!(field(&reply, "min_reliable_count"), Reply::Integer(n) if n >= 2));
    assert_eq!(field(&reply, "reliable_listed"), Reply::Integer(0));
    assert_eq!(
        field(&reply, "list_reliability"),
        Reply::Simple(c"unreliable")
    );

    // An empty sketch, and a count-0 record (INCRBY by 0): nothing listed.
    let mut s = sketch(3, 8, 7, 0.9);
    s.incrby(b"zero", 0).unwrap();
    assert!(s.heap().iter().any(HeapSlot::is_complete));
    let reply = stats(&mut MemKey::Held(TopKey::new(s)));
    assert_eq!(field(&reply, "listed"), Reply::Integer(0));
    assert_eq!(field(&reply, "counted"), Reply::Integer(0));
    assert_eq!(field(&reply, "min_reliable_count"), Reply::Integer(0));
    assert_eq!(
        field(&reply, "list_reliability"),
        Reply::Simple(c"reliable")
    );
    assert_eq!(list_reliability(5, 5), c"reliable");
    assert_eq!(list_reliability(5, 1), c"partial");
    assert_eq!(list_reliability(5, 0), c"unreliable");
}

#[test]
fn stats_of_a_missing_key_or_another_type() {
    assert_eq!(
        stats(&mut MemKey::Missing),
        err(replies::KEY_DOES_NOT_EXIST)
    );
    assert_eq!(stats(&mut MemKey::Other), err(replies::WRONGTYPE));
    let mut key = MemKey::Held(TopKey::new(sketch(1, 1, 1, 0.9)));
    assert_eq!(
        run::<Stats>(&TestEnv::client(), &mut key, "TOPK.STATS k extra")
            .0
            .reply,
        Reply::Error(CommandError::Arity)
    );
}

#[test]
fn plan_refusals_in_order() {
    let env = TestEnv::client();
    let arity = Reply::Error(CommandError::Arity);
    for (line, want) in [
        ("TOPK.PLAN", arity.clone()),
        ("TOPK.PLAN 10 8", arity.clone()),
        ("TOPK.PLAN 10 8 7", arity.clone()),
        ("TOPK.PLAN 10 TOTAL", arity.clone()),
        ("TOPK.PLAN 10 8 7 0.9 ITEMLEN", arity.clone()),
        // TOPK.RESERVE's checks and texts, in its order.
        ("TOPK.PLAN x 8 7 0.9", err(replies::INVALID_K)),
        ("TOPK.PLAN 0", err(replies::INVALID_K)),
        ("TOPK.PLAN 4294967296", err(replies::INVALID_K)),
        ("TOPK.PLAN 10 0 x x", err(replies::INVALID_WIDTH)),
        ("TOPK.PLAN 10 4294967296 7 0.9", err(replies::INVALID_WIDTH)),
        ("TOPK.PLAN 10 8 -1 x", err(replies::INVALID_DEPTH)),
        ("TOPK.PLAN 10 8 7 0", err(replies::INVALID_DECAY)),
        ("TOPK.PLAN 10 8 7 nan", err(replies::INVALID_DECAY)),
        ("TOPK.PLAN 10 8 7 1.5", err(replies::INVALID_DECAY)),
        // Its own.
        // A word after k that is no option starts width depth decay.
        ("TOPK.PLAN 10 WIDTH 8", arity.clone()),
        ("TOPK.PLAN 10 WIDTH 8 7", err(replies::INVALID_WIDTH)),
        (
            "TOPK.PLAN 10 TOTAL 5 WIDTH 8",
            err(observe::PLAN_UNKNOWN_ARGUMENT),
        ),
        (
            "TOPK.PLAN 10 8 7 0.9 TOTAL 5 DEPTH 3",
            err(observe::PLAN_UNKNOWN_ARGUMENT),
        ),
        ("TOPK.PLAN 10 TOTAL -1", err(observe::PLAN_BAD_TOTAL)),
        ("TOPK.PLAN 10 total 1.5", err(observe::PLAN_BAD_TOTAL)),
        ("TOPK.PLAN 10 ITEMLEN x", err(observe::PLAN_BAD_ITEMLEN)),
        // Buckets beyond the address space: TOPK.RESERVE's text.
        (
            "TOPK.PLAN 1 4294967295 4294967295 0.9",
            err(replies::INSUFFICIENT_MEMORY),
        ),
    ] {
        assert_eq!(plan(&env, line), want, "{line}");
    }
}

#[test]
fn plan_gives_the_sizes_and_the_reliable_count() {
    let env = TestEnv::client();
    let allocated =
        (std::mem::size_of::<TopK>() + 448 + 10 * std::mem::size_of::<HeapSlot>()) as i64;
    assert_eq!(
        plan(&env, "TOPK.PLAN 10 TOTAL 1000000 ITEMLEN 16"),
        Reply::Map(vec![
            (c"k", Reply::Integer(10)),
            (c"width", Reply::Integer(8)),
            (c"depth", Reply::Integer(7)),
            (c"decay", Reply::Double(0.9)),
            (c"total", Reply::Integer(1_000_000)),
            (c"item_len", Reply::Integer(16)),
            // 2.8.2's 2088 + 8·7·8 + 10·24.
            (c"memory_usage", Reply::Integer(2776)),
            (c"bytes", Reply::Integer(448 + 240)),
            (c"allocated_bytes", Reply::Integer(allocated)),
            (c"full_bytes", Reply::Integer(allocated + 160)),
            (c"error", Reply::Double(0.1)),
            (c"confidence", Reply::Double(0.99)),
            // The foothold: N/w = 125,000.
            (c"min_reliable_count", Reply::Integer(125_000)),
            (c"guard", Reply::Simple(c"ok")),
        ])
    );
    // Without TOTAL: no reliable count; options in any order and case.
    let bare = plan(&env, "TOPK.PLAN 10");
    assert_eq!(field(&bare, "min_reliable_count"), Reply::Null);
    assert_eq!(field(&bare, "full_bytes"), Reply::Integer(allocated));
    let reply = plan(&env, "topk.plan 50 2000 5 0.95 itemlen 8 total 10000000");
    assert_eq!(field(&reply, "width"), Reply::Integer(2000));
    assert_eq!(field(&reply, "decay"), Reply::Double(0.95));
    assert_eq!(
        field(&reply, "memory_usage"),
        Reply::Integer(2088 + 80_000 + 1200)
    );
    assert_eq!(
        field(&reply, "min_reliable_count"),
        Reply::Integer(min_reliable_count(2000, 5, 0.95, 10_000_000, 0.1, 0.01) as i64)
    );
    // Decay 1: N/(w·ε).
    let reply = plan(&env, "TOPK.PLAN 50 2000 5 1 TOTAL 10000000");
    assert_eq!(field(&reply, "min_reliable_count"), Reply::Integer(50_000));
}

#[test]
fn plan_says_what_the_guard_refuses() {
    let verdict = |env: &TestEnv, line: &str| field(&plan(env, line), "guard");
    // MEMORY USAGE 2088 + 1000·100·8 + 100·24 = 804,488.
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 800_000);
    assert_eq!(
        verdict(&capped, "TOPK.PLAN 100 1000 100 0.9"),
        Reply::Simple(c"bf.max-filter-bytes")
    );
    assert_eq!(
        verdict(&capped, "TOPK.PLAN 100 1000 99 0.9"),
        Reply::Simple(c"ok")
    );
    // maxmemory counts the buckets and records: 802,400 bytes.
    let full = TestEnv::with(|e| e.memory.maxmemory = Some((1_000_000, 1_500_000)));
    assert_eq!(
        verdict(&full, "TOPK.PLAN 100 1000 100 0.9"),
        Reply::Simple(c"maxmemory")
    );
    assert_eq!(
        verdict(&full, "TOPK.PLAN 100 1000 50 0.9"),
        Reply::Simple(c"ok")
    );
    let machine = TestEnv::with(|e| {
        e.memory.used = Some(0);
        e.memory.machine = Some(500_000);
    });
    assert_eq!(
        verdict(&machine, "TOPK.PLAN 100 1000 100 0.9"),
        Reply::Simple(c"machine-memory")
    );
}
