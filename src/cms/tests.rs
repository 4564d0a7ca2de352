//! The Count-Min sketch's commands driven without Redis: what each
//! command answers for each kind of key, with the spec's worked numbers.

use ferrobloom_core::cms::{CellSize, CountMinSketch};
use ferrobloom_core::Unguarded;

use super::merge::Merge;
use super::read::{Info, Query};
use super::write::{IncrBy, InitByDim, InitByProb};
use super::{replies, Sketch};
use crate::command::testing::{propagated, run, MemKey, TestEnv};
use crate::command::Sources;
use crate::command::{CommandError, KeyedCommand, Outcome, Reply, TestArgs};
use crate::notify::{Event, Events};

type Key = MemKey<Sketch>;

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

fn reply<C: KeyedCommand<Value = Sketch>>(key: &mut Key, line: &str) -> Reply<'static> {
    run::<C>(&TestEnv::client(), key, line).0.reply
}

fn ints(values: &[i64]) -> Reply<'static> {
    Reply::Array(values.iter().map(|&v| Reply::Integer(v)).collect())
}

/// Spec §3.8: a 2×2 sketch with foo incremented by 3 and bar by 5 holds
/// the cells [0, 8, 3, 5] (foo in columns 1, 0; bar in 1, 1).
fn worked_example(cell_size: CellSize) -> Key {
    let mut s = CountMinSketch::new(2, 2, cell_size, &Unguarded).unwrap();
    s.incrby(b"foo", 3).unwrap();
    s.incrby(b"bar", 5).unwrap();
    assert_eq!((0..4).map(|i| s.cell(i)).collect::<Vec<_>>(), [0, 8, 3, 5]);
    MemKey::Held(Sketch::new(s))
}

#[test]
fn query_answers_the_smallest_cell_of_each_item() {
    let mut key = worked_example(CellSize::Four);
    assert_eq!(
        reply::<Query>(&mut key, "CMS.QUERY w foo bar baz"),
        ints(&[3, 5, 3])
    );
    assert_eq!(reply::<Query>(&mut key, "CMS.QUERY w"), err_arity());
}

fn err_arity() -> Reply<'static> {
    Reply::Error(CommandError::Arity)
}

#[test]
fn info_has_8_12s_four_pairs() {
    for size in CellSize::ALL {
        let mut key = worked_example(size);
        assert_eq!(
            reply::<Info>(&mut key, "CMS.INFO w"),
            Reply::Map(vec![
                (c"width", Reply::Integer(2)),
                (c"depth", Reply::Integer(2)),
                (c"count", Reply::Integer(8)),
                (c"cell_size", Reply::Integer(size.bytes() as i64)),
            ])
        );
        assert_eq!(reply::<Info>(&mut key, "CMS.INFO w x"), err_arity());
    }
}

#[test]
fn a_missing_key_or_another_type_is_refused_before_the_arguments() {
    for line in ["CMS.QUERY k a", "CMS.INFO k"] {
        let query = line.starts_with("CMS.QUERY");
        let answer = |key: &mut Key| {
            if query {
                reply::<Query>(key, line)
            } else {
                reply::<Info>(key, line)
            }
        };
        assert_eq!(
            answer(&mut MemKey::Missing),
            err(replies::KEY_DOES_NOT_EXIST)
        );
        assert_eq!(answer(&mut MemKey::Other), err(replies::WRONGTYPE));
    }
}

/// The outcome of `line` and what a replica gets for it.
fn outcome<C: KeyedCommand<Value = Sketch>>(
    env: &TestEnv,
    key: &mut Key,
    line: &str,
) -> (Outcome<'static>, Option<String>) {
    let (o, args) = run::<C>(env, key, line);
    let sent = propagated(&o.propagate, &args);
    (o, sent)
}

/// CMS.INITBYDIM's errors, each in the order RedisBloom checks (spec §3.3,
/// then §3.9's CELL_SIZE): the first failing check answers.
#[test]
fn initbydim_checks_in_order() {
    let table: &[(&str, Reply<'static>)] = &[
        ("CMS.INITBYDIM k", err_arity()),
        ("CMS.INITBYDIM k 10", err_arity()),
        ("CMS.INITBYDIM k 10 3 CELL_SIZE", err_arity()),
        ("CMS.INITBYDIM k 10 3 CELL_SIZE 4 x", err_arity()),
        ("CMS.INITBYDIM k x 3", err(replies::INVALID_WIDTH)),
        ("CMS.INITBYDIM k 0 x", err(replies::INVALID_WIDTH)),
        ("CMS.INITBYDIM k -1 3", err(replies::INVALID_WIDTH)),
        ("CMS.INITBYDIM k 1.5 3", err(replies::INVALID_WIDTH)),
        ("CMS.INITBYDIM k 10 0", err(replies::INVALID_DEPTH)),
        (
            "CMS.INITBYDIM k 10 x CELL_SIZE 3",
            err(replies::INVALID_DEPTH),
        ),
        (
            "CMS.INITBYDIM k 8589934592 8589934592",
            err(replies::INVALID_INIT),
        ),
        (
            "CMS.INITBYDIM k 8589934592 8589934592 CELL_SIZE x",
            err(replies::INVALID_INIT),
        ),
        (
            "CMS.INITBYDIM k 4611686018427387904 1",
            err(replies::INSUFFICIENT_MEMORY),
        ),
        (
            "CMS.INITBYDIM k 10 3 CELLSIZE 4",
            err(replies::UNKNOWN_ARGUMENT),
        ),
        ("CMS.INITBYDIM k 10 3 x 3", err(replies::UNKNOWN_ARGUMENT)),
    ];
    for (line, want) in table {
        let mut key = MemKey::Missing;
        assert_eq!(&reply::<InitByDim>(&mut key, line), want, "{line}");
        assert!(matches!(key, MemKey::Missing), "{line} created a key");
    }
    for n in ["0", "3", "16", "-1", "blah", "4.5", "", "04", "+4"] {
        let line = format!("CMS.INITBYDIM k 10 3 CELL_SIZE {n}");
        assert_eq!(
            reply::<InitByDim>(&mut MemKey::Missing, &line),
            err(replies::BAD_CELL_SIZE),
            "{line}"
        );
    }
}

/// A key holding anything (a string too) is `key already exists`, before
/// any other argument is looked at.
#[test]
fn a_creation_on_any_existing_key_is_refused_first() {
    for line in [
        "CMS.INITBYDIM k x 3",
        "CMS.INITBYDIM k 10 3 CELL_SIZE 3",
        "CMS.INITBYPROB k 0 0",
    ] {
        let mut other = MemKey::Other;
        let mut held = worked_example(CellSize::Four);
        for key in [&mut other, &mut held] {
            let (o, sent) = if line.starts_with("CMS.INITBYDIM") {
                outcome::<InitByDim>(&TestEnv::client(), key, line)
            } else {
                outcome::<InitByProb>(&TestEnv::client(), key, line)
            };
            assert_eq!(o.reply, err(replies::KEY_EXISTS), "{line}");
            assert_eq!(sent, None);
            assert!(o.events.is_empty());
        }
        assert_eq!(held.value().sketch().width(), 2, "the sketch is kept");
    }
}

#[test]
fn initbyprob_checks_in_order() {
    let table: &[(&str, Reply<'static>)] = &[
        ("CMS.INITBYPROB k 0.1", err_arity()),
        (
            "CMS.INITBYPROB k 0 0.1",
            err(replies::INVALID_OVERESTIMATION),
        ),
        ("CMS.INITBYPROB k 1 x", err(replies::INVALID_OVERESTIMATION)),
        (
            "CMS.INITBYPROB k x 0.1",
            err(replies::INVALID_OVERESTIMATION),
        ),
        (
            "CMS.INITBYPROB k nan 0.1",
            err(replies::INVALID_OVERESTIMATION),
        ),
        (
            "CMS.INITBYPROB k inf 0.1",
            err(replies::INVALID_OVERESTIMATION),
        ),
        ("CMS.INITBYPROB k 0.1 1", err(replies::INVALID_PROB)),
        (
            "CMS.INITBYPROB k 0.1 0 CELL_SIZE 3",
            err(replies::INVALID_PROB),
        ),
        (
            "CMS.INITBYPROB k 0.5 0.99999999",
            err(replies::INVALID_INIT),
        ),
        ("CMS.INITBYPROB k 1e-300 0.5", err(replies::INVALID_INIT)),
        (
            "CMS.INITBYPROB k 1e-300 0.5 CELL_SIZE 3",
            err(replies::INVALID_INIT),
        ),
        (
            "CMS.INITBYPROB k 0.1 0.1 SIZE 4",
            err(replies::UNKNOWN_ARGUMENT),
        ),
        (
            "CMS.INITBYPROB k 0.1 0.1 CELL_SIZE 9",
            err(replies::BAD_CELL_SIZE),
        ),
    ];
    for (line, want) in table {
        let mut key = MemKey::Missing;
        assert_eq!(&reply::<InitByProb>(&mut key, line), want, "{line}");
        assert!(matches!(key, MemKey::Missing), "{line} created a key");
    }
}

/// What a creation makes, and what replicas get: the command as received
/// (the dimensions are in it), the creation event.
#[test]
fn creations_make_the_sketch_asked_for() {
    let cases: &[(&str, u64, u64, CellSize)] = &[
        ("CMS.INITBYDIM k 10 3", 10, 3, CellSize::Four),
        ("CMS.INITBYDIM k 10 3 cell_size 1", 10, 3, CellSize::One),
        ("CMS.INITBYDIM k 1 1 CELL_SIZE 8", 1, 1, CellSize::Eight),
        ("CMS.INITBYPROB k 0.001 0.01", 2000, 7, CellSize::Four),
        (
            "CMS.INITBYPROB k 0.01 0.01 CeLl_SiZe 2",
            200,
            7,
            CellSize::Two,
        ),
    ];
    for &(line, width, depth, size) in cases {
        let mut key = MemKey::Missing;
        let env = TestEnv::client();
        let (o, sent) = if line.starts_with("CMS.INITBYDIM") {
            outcome::<InitByDim>(&env, &mut key, line)
        } else {
            outcome::<InitByProb>(&env, &mut key, line)
        };
        assert_eq!(o.reply, Reply::Ok, "{line}");
        assert_eq!(sent.as_deref(), Some(line));
        assert_eq!(o.events, Events::of(&[Event::SketchCreated]));
        let s = key.value().sketch();
        assert_eq!((s.width(), s.depth(), s.cell_size()), (width, depth, size));
        assert_eq!(s.count(), 0);
        assert!(s.cell_bytes().iter().all(|&b| b == 0));
    }
}

/// The memory guard refuses a client's sketch over a limit with 2.8.2's
/// words and the numbers (2.8.2 aborts Redis 7.0 on
/// `CMS.INITBYPROB x 1e-18 0.5`); a master's creation is never refused.
#[test]
fn the_memory_guard_refuses_a_clients_sketch() {
    let refused = |env: &TestEnv, line: &str| {
        let mut key = MemKey::Missing;
        let (o, sent) = if line.starts_with("CMS.INITBYDIM") {
            outcome::<InitByDim>(env, &mut key, line)
        } else {
            outcome::<InitByProb>(env, &mut key, line)
        };
        match &o.reply {
            Reply::Error(CommandError::Text(t)) => assert!(
                t.starts_with("CMS: Insufficient memory to create the key: "),
                "{line}: {t}"
            ),
            other => panic!("{line}: {other:?}"),
        }
        assert_eq!(sent, None);
        assert_eq!(o.events, Events::of(&[Event::GuardRefused]));
        assert!(matches!(key, MemKey::Missing));
    };
    // The default per-value cap (4 GiB) is below 2·10^18 cells.
    refused(&TestEnv::client(), "CMS.INITBYPROB x 1e-18 0.5");
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 1_000);
    refused(&capped, "CMS.INITBYDIM k 1000 5");
    refused(&capped, "CMS.INITBYDIM k 100 100 CELL_SIZE 1");
    let master = TestEnv::with(|e| {
        e.settings.max_filter_bytes = 1_000;
        e.replicated = true;
    });
    let mut key = MemKey::Missing;
    let (o, _) = outcome::<InitByDim>(&master, &mut key, "CMS.INITBYDIM k 1000 5");
    assert_eq!(o.reply, Reply::Ok);
    assert_eq!(key.value().sketch().width(), 1000);
}

fn sketch_key(width: u64, depth: u64, size: CellSize) -> Key {
    MemKey::Held(Sketch::new(
        CountMinSketch::new(width, depth, size, &Unguarded).unwrap(),
    ))
}

/// INCRBY's checks: the count, then the key, then every increment before
/// any applies (spec §3.4, §3.9).
#[test]
fn incrby_checks_in_order_and_applies_nothing_on_a_bad_increment() {
    let arity_lines = ["CMS.INCRBY k a", "CMS.INCRBY k", "CMS.INCRBY k a 1 b"];
    for line in arity_lines {
        assert_eq!(reply::<IncrBy>(&mut MemKey::Missing, line), err_arity());
    }
    assert_eq!(
        reply::<IncrBy>(&mut MemKey::Missing, "CMS.INCRBY k a x"),
        err(replies::KEY_DOES_NOT_EXIST)
    );
    assert_eq!(
        reply::<IncrBy>(&mut MemKey::Other, "CMS.INCRBY k a x"),
        err(replies::WRONGTYPE)
    );
    let table: &[(&str, &std::ffi::CStr)] = &[
        ("CMS.INCRBY k a x", replies::CANNOT_PARSE_NUMBER),
        ("CMS.INCRBY k a 1 b 1.5", replies::CANNOT_PARSE_NUMBER),
        ("CMS.INCRBY k a 1 b 1e3", replies::CANNOT_PARSE_NUMBER),
        (
            "CMS.INCRBY k a 1 b -9223372036854775808",
            replies::INVALID_INCREMENT,
        ),
        (
            "CMS.INCRBY k a -9223372036854775808 b x",
            replies::INVALID_INCREMENT,
        ),
        (
            "CMS.INCRBY k a 1 b 9223372036854775808",
            replies::CANNOT_PARSE_NUMBER,
        ),
    ];
    for &(line, want) in table {
        let mut key = sketch_key(10, 3, CellSize::Four);
        let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, line);
        assert_eq!(o.reply, err(want), "{line}");
        assert_eq!(sent, None, "{line}");
        assert!(o.events.is_empty());
        let s = key.value().sketch();
        assert_eq!(s.count(), 0, "{line} applied a pair");
        assert!(s.cell_bytes().iter().all(|&b| b == 0), "{line}");
    }
}

fn elements(values: &[Result<i64, &'static std::ffi::CStr>]) -> Reply<'static> {
    Reply::Array(
        values
            .iter()
            .map(|v| match v {
                Ok(n) => Reply::Integer(*n),
                Err(e) => err(e),
            })
            .collect(),
    )
}

const OVER: Result<i64, &std::ffi::CStr> = Err(replies::INCRBY_OVERFLOW);
const UNDER: Result<i64, &std::ffi::CStr> = Err(replies::INCRBY_UNDERFLOW);

/// §3.8's numbers: every pair applies; the command goes out as received.
#[test]
fn incrby_worked_example() {
    let mut key = sketch_key(2, 2, CellSize::Four);
    let line = "CMS.INCRBY w foo 3 bar 5";
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, line);
    assert_eq!(o.reply, ints(&[3, 5]));
    assert_eq!(sent.as_deref(), Some(line));
    assert_eq!(o.events, Events::of(&[Event::SketchIncremented]));
    let s = key.value().sketch();
    assert_eq!((0..4).map(|i| s.cell(i)).collect::<Vec<_>>(), [0, 8, 3, 5]);
    assert_eq!(
        reply::<Query>(&mut key, "CMS.QUERY w foo bar baz"),
        ints(&[3, 5, 3])
    );
    // The same item twice is applied twice.
    assert_eq!(
        reply::<IncrBy>(&mut key, "CMS.INCRBY w x 1 x 2"),
        ints(&[1, 3])
    );
    // Only zero increments: nothing changed, no event; the estimates.
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, "CMS.INCRBY w foo 0");
    assert_eq!(o.reply, ints(&[3]));
    assert!(o.events.is_empty());
    assert_eq!(sent.as_deref(), Some("CMS.INCRBY w foo 0"));
}

/// §3.9: `a -100 b 3 a -4` on a=10 → [underflow, 3, 6]; replicas get the
/// applied pairs alone.
#[test]
fn incrby_refused_pairs_are_not_propagated() {
    let mut key = sketch_key(100, 5, CellSize::Four);
    reply::<IncrBy>(&mut key, "CMS.INCRBY k a 10");
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, "CMS.INCRBY k a -100 b 3 a -4");
    assert_eq!(o.reply, elements(&[UNDER, Ok(3), Ok(6)]));
    assert_eq!(sent.as_deref(), Some("CMS.INCRBY k b 3 a -4"));
    assert_eq!(o.events, Events::of(&[Event::SketchIncremented]));
    assert_eq!(key.value().sketch().count(), 9);
    // A refusal in the middle keeps the pairs before and after it.
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, "CMS.INCRBY k b 1 a -7 c 2");
    assert_eq!(o.reply, elements(&[Ok(4), UNDER, Ok(2)]));
    assert_eq!(sent.as_deref(), Some("CMS.INCRBY k b 1 c 2"));
    // Nothing applied: nothing sent, no event.
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, "CMS.INCRBY k a -7 zz -1");
    assert_eq!(o.reply, elements(&[UNDER, UNDER]));
    assert_eq!(sent, None);
    assert!(o.events.is_empty());
    assert_eq!(key.value().sketch().count(), 12);
}

/// §3.9: a 1×1 sketch of 1-byte cells reaches 255 exactly, then refuses.
#[test]
fn incrby_exact_maximum_then_overflow() {
    let mut key = sketch_key(1, 1, CellSize::One);
    assert_eq!(
        reply::<IncrBy>(&mut key, "CMS.INCRBY k a 255"),
        ints(&[255])
    );
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, "CMS.INCRBY k a 1");
    assert_eq!(o.reply, elements(&[OVER]));
    assert_eq!(sent, None);
    assert_eq!(reply::<Query>(&mut key, "CMS.QUERY k a"), ints(&[255]));
    assert_eq!(
        reply::<Info>(&mut key, "CMS.INFO k"),
        Reply::Map(vec![
            (c"width", Reply::Integer(1)),
            (c"depth", Reply::Integer(1)),
            (c"count", Reply::Integer(255)),
            (c"cell_size", Reply::Integer(1)),
        ])
    );
}

/// §3.9's test: a 5×2 sketch, `a 2147483647 b 10 c 7 d 5` three times.
#[test]
fn incrby_upstream_overflow_sequence() {
    let mut key = sketch_key(5, 2, CellSize::Four);
    let line = "CMS.INCRBY k a 2147483647 b 10 c 7 d 5";
    reply::<IncrBy>(&mut key, line);
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, line);
    assert_eq!(o.reply, ints(&[4294967294, 27, 34, 10]));
    assert_eq!(sent.as_deref(), Some(line));
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, line);
    assert_eq!(o.reply, elements(&[OVER, Ok(44), Ok(51), Ok(15)]));
    assert_eq!(sent.as_deref(), Some("CMS.INCRBY k b 10 c 7 d 5"));
    assert_eq!(key.value().sketch().count(), 2 * (2147483647 + 22) + 22);
}

/// Named keys for CMS.MERGE's sources; a source opened is a copy of the
/// shelf's value (the destination is never opened as a source).
struct Shelf(Vec<(&'static str, Key)>);

impl Sources<Sketch> for Shelf {
    type Key<'a> = Key;

    fn open(&self, _: usize, name: &[u8]) -> Key {
        match self.0.iter().find(|(n, _)| n.as_bytes() == name) {
            Some((_, MemKey::Held(s))) => {
                MemKey::Held(Sketch::new(s.sketch().try_clone(&Unguarded).unwrap()))
            }
            Some((_, MemKey::Other)) => MemKey::Other,
            _ => MemKey::Missing,
        }
    }
}

/// A CMS.MERGE line on `dest` with the sources on `shelf`; what a
/// replica gets.
fn merge_line(dest: &mut Key, shelf: &Shelf, line: &str) -> (Outcome<'static>, Option<String>) {
    let args = TestArgs::new(line);
    let o = match Merge::parse(&args) {
        Ok(()) => Merge::run(&args, dest, shelf),
        Err(e) => Outcome::error(e),
    };
    let o = Outcome {
        reply: o.reply.into_owned(),
        propagate: o.propagate,
        events: o.events,
    };
    let sent = propagated(&o.propagate, &args);
    (o, sent)
}

/// A 10×3 sketch holding `items` with 4-byte cells.
fn holding(items: &[(&str, i64)]) -> Key {
    let mut key = sketch_key(10, 3, CellSize::Four);
    for (item, n) in items {
        key_sketch(&mut key).incrby(item.as_bytes(), *n).unwrap();
    }
    key
}

/// The key's value: increments through it keep INFO bf's totals.
fn key_sketch(key: &mut Key) -> &mut Sketch {
    match key {
        MemKey::Held(s) => s,
        _ => panic!("no sketch"),
    }
}

fn shelf() -> Shelf {
    Shelf(vec![
        ("a", holding(&[("x", 5), ("y", 2)])),
        ("b", holding(&[("x", 1), ("z", 7)])),
        ("str", MemKey::Other),
        ("wide", sketch_key(11, 3, CellSize::Four)),
        ("deep", sketch_key(10, 4, CellSize::Four)),
        ("two", sketch_key(10, 3, CellSize::Two)),
        ("weights", holding(&[])),
    ])
}

/// CMS.MERGE's errors in 2.8.2's order (spec §3.6, then 8.12's cell size
/// check after the width and depth of each source); nothing changes.
#[test]
fn merge_checks_in_order() {
    let table: &[(&str, Reply<'static>)] = &[
        ("CMS.MERGE d 1", err_arity()),
        ("CMS.MERGE d", err_arity()),
        ("CMS.MERGE d x a", err(replies::INVALID_NUMKEYS)),
        ("CMS.MERGE d 1.0 a", err(replies::INVALID_NUMKEYS)),
        ("CMS.MERGE d 0 a", err(replies::NUMKEYS_NOT_POSITIVE)),
        ("CMS.MERGE d -1 a", err(replies::NUMKEYS_NOT_POSITIVE)),
        ("CMS.MERGE d 2 a", err(replies::WRONG_NUMBER_OF_KEYS)),
        ("CMS.MERGE d 1 a b", err(replies::WRONG_NUMBER_OF_KEYS)),
        (
            "CMS.MERGE d 1 a WEIGHTS",
            err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS),
        ),
        (
            "CMS.MERGE d 1 a WEIGHTS 1 2",
            err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS),
        ),
        (
            "CMS.MERGE d 2 a WEIGHTS b 1 2",
            err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS),
        ),
        // A source named `weights` is taken for the keyword (2.8.2's scan).
        (
            "CMS.MERGE d 1 weights",
            err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS),
        ),
        (
            "CMS.MERGE d 2 a weights WEIGHTS 1 1",
            err(replies::WRONG_NUMBER_OF_KEYS_WEIGHTS),
        ),
        ("CMS.MERGE d 1 a WEIGHTS x", err(replies::INVALID_WEIGHT)),
        ("CMS.MERGE d 1 a weights 1.5", err(replies::INVALID_WEIGHT)),
        ("CMS.MERGE d 1 nokey", err(replies::KEY_DOES_NOT_EXIST)),
        ("CMS.MERGE d 1 str", err(replies::WRONGTYPE)),
        ("CMS.MERGE d 1 wide", err(replies::DIMENSIONS_NOT_EQUAL)),
        ("CMS.MERGE d 1 deep", err(replies::DIMENSIONS_NOT_EQUAL)),
        ("CMS.MERGE d 1 two", err(replies::CELL_SIZE_NOT_EQUAL)),
        // Per source: its weight, its key, its shape, then the next one.
        (
            "CMS.MERGE d 2 a nokey WEIGHTS 1 x",
            err(replies::INVALID_WEIGHT),
        ),
        (
            "CMS.MERGE d 2 nokey a WEIGHTS x 1",
            err(replies::INVALID_WEIGHT),
        ),
        (
            "CMS.MERGE d 2 nokey a WEIGHTS 1 x",
            err(replies::KEY_DOES_NOT_EXIST),
        ),
        (
            "CMS.MERGE d 2 wide nokey",
            err(replies::DIMENSIONS_NOT_EQUAL),
        ),
        ("CMS.MERGE d 2 two wide", err(replies::CELL_SIZE_NOT_EQUAL)),
        ("CMS.MERGE d 1 a WEIGHTS -1", err(replies::MERGE_OVERFLOW)),
        (
            "CMS.MERGE d 2 a b WEIGHTS 1 -2",
            err(replies::MERGE_OVERFLOW),
        ),
    ];
    let shelf = shelf();
    for (line, want) in table {
        let mut dest = holding(&[("kept", 3)]);
        let (o, sent) = merge_line(&mut dest, &shelf, line);
        assert_eq!(&o.reply, want, "{line}");
        assert_eq!(sent, None, "{line}");
        assert!(o.events.is_empty(), "{line}");
        let d = dest.value().sketch();
        assert_eq!(
            (d.count(), d.query(b"kept")),
            (3, 3),
            "{line} changed the destination"
        );
    }
    // The destination first, whatever the other arguments say.
    for (mut dest, want) in [
        (MemKey::Missing, replies::KEY_DOES_NOT_EXIST),
        (MemKey::Other, replies::WRONGTYPE),
    ] {
        let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d x nokey");
        assert_eq!(o.reply, err(want));
    }
    // A destination of another cell size refuses 4-byte sources too.
    let mut dest = sketch_key(10, 3, CellSize::Eight);
    let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d 1 a");
    assert_eq!(o.reply, err(replies::CELL_SIZE_NOT_EQUAL));
}

/// The destination's content is replaced by the weighted sum; it counts
/// only when listed as a source (then as it was before the merge).
#[test]
fn merge_replaces_the_destination_by_the_weighted_sum() {
    let shelf = shelf();
    let mut dest = holding(&[("kept", 3)]);
    let line = "CMS.MERGE d 2 a b";
    let (o, sent) = merge_line(&mut dest, &shelf, line);
    assert_eq!(o.reply, Reply::Ok);
    assert_eq!(sent.as_deref(), Some(line));
    assert_eq!(o.events, Events::of(&[Event::SketchMerged]));
    let d = dest.value().sketch();
    assert_eq!((d.query(b"x"), d.query(b"z"), d.count()), (6, 7, 15));

    // `CMS.MERGE d 2 a a WEIGHTS 1 -1` empties it.
    let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d 2 a a WEIGHTS 1 -1");
    assert_eq!(o.reply, Reply::Ok);
    assert_eq!(dest.value().sketch().count(), 0);
    assert!(dest.value().sketch().cell_bytes().iter().all(|&b| b == 0));

    // The destination as a source, twice, in place.
    let mut dest = holding(&[("x", 2)]);
    let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d 3 d a d WEIGHTS 2 1 1");
    assert_eq!(o.reply, Reply::Ok);
    let d = dest.value().sketch();
    assert_eq!((d.query(b"x"), d.query(b"y"), d.count()), (11, 2, 13));
}

/// §3.9's merge examples: 2×2 sketches each holding foo=4000000000, then
/// foo=4.
#[test]
fn merge_upstream_weight_tables() {
    let two_by_two = |n: i64| {
        let mut key = sketch_key(2, 2, CellSize::Four);
        key_sketch(&mut key).incrby(b"foo", n).unwrap();
        key
    };
    let big = Shelf(vec![
        ("s1", two_by_two(4_000_000_000)),
        ("s2", two_by_two(4_000_000_000)),
    ]);
    for w in ["1 -2", "-2 -2", "-2 1", "2 0", "0 2", "-1 -1"] {
        let mut dest = sketch_key(2, 2, CellSize::Four);
        let line = format!("CMS.MERGE d 2 s1 s2 WEIGHTS {w}");
        let (o, _) = merge_line(&mut dest, &big, &line);
        assert_eq!(o.reply, err(replies::MERGE_OVERFLOW), "{line}");
    }
    let four = Shelf(vec![("s1", two_by_two(4)), ("s2", two_by_two(4))]);
    for w in [
        "9223372036854775807 -4000000000",
        "8000000000 -4000000000",
        "-8000000000 4000000000",
        "-800000000000 8000000000",
        "-1 -1",
        "-5 -4",
    ] {
        let mut dest = sketch_key(2, 2, CellSize::Four);
        let line = format!("CMS.MERGE d 2 s1 s2 WEIGHTS {w}");
        let (o, _) = merge_line(&mut dest, &four, &line);
        assert_eq!(o.reply, err(replies::MERGE_OVERFLOW), "{line}");
    }
    let mut dest = sketch_key(2, 2, CellSize::Four);
    let (o, _) = merge_line(
        &mut dest,
        &four,
        "CMS.MERGE d 2 s1 s2 WEIGHTS -922337203685477500 922337203685477502",
    );
    assert_eq!(o.reply, Reply::Ok);
    assert_eq!(dest.value().sketch().count(), 8);
    assert_eq!(reply::<Query>(&mut dest, "CMS.QUERY d foo"), ints(&[8]));
    // Against the destination's cell maximum: 1-byte cells hold 255.
    let small = |n: i64| {
        let mut key = sketch_key(2, 2, CellSize::One);
        key_sketch(&mut key).incrby(b"foo", n).unwrap();
        key
    };
    let shelf = Shelf(vec![("s", small(85))]);
    let mut dest = sketch_key(2, 2, CellSize::One);
    let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d 1 s WEIGHTS 3");
    assert_eq!(o.reply, Reply::Ok);
    let (o, _) = merge_line(&mut dest, &shelf, "CMS.MERGE d 2 s d WEIGHTS 3 1");
    assert_eq!(o.reply, err(replies::MERGE_OVERFLOW));
    assert_eq!(dest.value().sketch().query(b"foo"), 255);
}

/// The keys a cluster is told about: the destination and numkeys sources.
#[test]
fn merge_key_positions() {
    let positions = |line: &str| Merge::key_positions(&TestArgs::new(line)).collect::<Vec<_>>();
    assert_eq!(positions("CMS.MERGE d 2 a b WEIGHTS 1 2"), [1, 3, 4]);
    assert_eq!(positions("CMS.MERGE d 1 a"), [1, 3]);
    assert_eq!(positions("CMS.MERGE d 3 a b"), [1, 3, 4]);
    assert_eq!(positions("CMS.MERGE d x a"), [1]);
    assert_eq!(positions("CMS.MERGE d -2 a"), [1]);
    assert_eq!(positions("CMS.MERGE d 9223372036854775807 a"), [1, 3]);
    assert_eq!(positions("CMS.MERGE d 1"), [1]);
    assert_eq!(positions("CMS.MERGE"), Vec::<usize>::new());
}

/// More pairs than are parsed on the stack: the same checks and results.
#[test]
fn incrby_with_many_pairs() {
    let pairs: Vec<String> = (0..40).map(|i| format!("i{i} {}", i + 1)).collect();
    let line = format!("CMS.INCRBY k {}", pairs.join(" "));
    let mut key = sketch_key(1000, 5, CellSize::Eight);
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, &format!("{line} last x"));
    assert_eq!(o.reply, err(replies::CANNOT_PARSE_NUMBER));
    assert_eq!((sent, key.value().sketch().count()), (None, 0));
    let (o, sent) = outcome::<IncrBy>(&TestEnv::client(), &mut key, &line);
    let Reply::Array(elements) = o.reply else {
        panic!("{:?}", o.reply)
    };
    assert_eq!(elements.len(), 40);
    assert_eq!(sent.as_deref(), Some(line.as_str()));
    assert_eq!(key.value().sketch().count(), (1..=40).sum::<u64>());
    assert!(elements
        .iter()
        .zip(1..)
        .all(|(e, n)| matches!(e, Reply::Integer(v) if *v >= n)));
}
