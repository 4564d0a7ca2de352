//! Top-K's commands driven without Redis: each command's grammar in
//! 2.8.2's check order, the spec's worked examples (§4.7), and what goes
//! to replicas and subscribers.

use std::borrow::Cow;

use super::read::{Count, Info, List, Query};
use super::write::{Add, IncrBy, Reserve};
use super::{replies, TopKey};
use crate::command::testing::{propagated, run, MemKey, TestEnv};
use crate::command::{CommandError, KeyedCommand, Reply};
use crate::notify::{Event, Events};

type Key = MemKey<TopKey>;

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

fn arity() -> Reply<'static> {
    Reply::Error(CommandError::Arity)
}

fn reply<C: KeyedCommand<Value = TopKey>>(key: &mut Key, line: &str) -> Reply<'static> {
    run::<C>(&TestEnv::client(), key, line).0.reply
}

fn bulk(s: &str) -> Reply<'static> {
    Reply::Bulk(Cow::Owned(s.as_bytes().to_vec()))
}

/// `None` for a null element.
fn items(values: &[Option<&str>]) -> Reply<'static> {
    Reply::Array(values.iter().map(|v| v.map_or(Reply::Null, bulk)).collect())
}

fn reserved(line: &str) -> Key {
    let mut key = MemKey::Missing;
    assert_eq!(reply::<Reserve>(&mut key, line), Reply::Ok, "{line}");
    key
}

#[test]
fn reserve_checks_in_order() {
    let decay = err(replies::INVALID_DECAY);
    let table: &[(&str, Reply<'static>)] = &[
        ("TOPK.RESERVE k", arity()),
        ("TOPK.RESERVE k 3 8", arity()),
        ("TOPK.RESERVE k 3 8 7", arity()),
        ("TOPK.RESERVE k 3 8 7 0.9 x", arity()),
        ("TOPK.RESERVE k x", err(replies::INVALID_K)),
        ("TOPK.RESERVE k 0 x x x", err(replies::INVALID_K)),
        ("TOPK.RESERVE k -1", err(replies::INVALID_K)),
        ("TOPK.RESERVE k 1.5", err(replies::INVALID_K)),
        // 2.8.2 truncates k to 32 bits and aborts on 0.
        ("TOPK.RESERVE k 4294967296", err(replies::INVALID_K)),
        ("TOPK.RESERVE k 8589934592", err(replies::INVALID_K)),
        ("TOPK.RESERVE k 3 0 x x", err(replies::INVALID_WIDTH)),
        (
            "TOPK.RESERVE k 3 4294967296 7 0.9",
            err(replies::INVALID_WIDTH),
        ),
        ("TOPK.RESERVE k 3 x 7 0.9", err(replies::INVALID_WIDTH)),
        ("TOPK.RESERVE k 3 8 0 x", err(replies::INVALID_DEPTH)),
        ("TOPK.RESERVE k 3 8 -2 0.9", err(replies::INVALID_DEPTH)),
        ("TOPK.RESERVE k 3 8 7 0", decay.clone()),
        ("TOPK.RESERVE k 3 8 7 1.0000001", decay.clone()),
        ("TOPK.RESERVE k 3 8 7 nan", decay.clone()),
        ("TOPK.RESERVE k 3 8 7 inf", decay.clone()),
        ("TOPK.RESERVE k 3 8 7 -0.5", decay.clone()),
        ("TOPK.RESERVE k 3 8 7 x", decay),
        (
            "TOPK.RESERVE k 3 4294967295 4294967295 0.9",
            err(replies::INSUFFICIENT_MEMORY),
        ),
    ];
    for (line, want) in table {
        let mut key = MemKey::Missing;
        assert_eq!(&reply::<Reserve>(&mut key, line), want, "{line}");
        assert!(matches!(key, MemKey::Missing), "{line} created a key");
    }
}

/// The key is checked before the arguments: any type is `already exists`.
#[test]
fn reserve_on_any_existing_key_is_refused_first() {
    for line in [
        "TOPK.RESERVE k 3",
        "TOPK.RESERVE k x",
        "TOPK.RESERVE k 3 0 0 0",
    ] {
        let mut other = MemKey::Other;
        assert_eq!(reply::<Reserve>(&mut other, line), err(replies::KEY_EXISTS));
        let mut held = reserved("TOPK.RESERVE k 2");
        assert_eq!(reply::<Reserve>(&mut held, line), err(replies::KEY_EXISTS));
    }
}

#[test]
fn reserve_defaults_truncation_and_info() {
    let mut key = reserved("TOPK.RESERVE k 4294967297");
    assert_eq!(
        reply::<Info>(&mut key, "TOPK.INFO k"),
        Reply::Map(vec![
            (c"k", Reply::Integer(1)),
            (c"width", Reply::Integer(8)),
            (c"depth", Reply::Integer(7)),
            (c"decay", Reply::ServerDouble(0.9)),
        ])
    );
    assert_eq!(reply::<Info>(&mut key, "TOPK.INFO k x"), arity());
    let (o, args) = run::<Reserve>(
        &TestEnv::client(),
        &mut MemKey::Missing,
        "TOPK.RESERVE n 5 10 3 1",
    );
    assert_eq!(o.events, Events::of(&[Event::TopkReserved]));
    assert_eq!(
        propagated(&o.propagate, &args).as_deref(),
        Some("TOPK.RESERVE n 5 10 3 1")
    );
}

#[test]
fn commands_on_a_missing_key_or_another_type() {
    let missing = err(replies::KEY_DOES_NOT_EXIST);
    let wrong = err(replies::WRONGTYPE);
    type Runner = fn(&mut Key, &str) -> Reply<'static>;
    let table: &[(Runner, &str)] = &[
        (reply::<Add>, "TOPK.ADD k a"),
        (reply::<IncrBy>, "TOPK.INCRBY k a x"),
        (reply::<Query>, "TOPK.QUERY k a"),
        (reply::<Count>, "TOPK.COUNT k a"),
        (reply::<List>, "TOPK.LIST k"),
        (reply::<List>, "TOPK.LIST k WITHCOUNT"),
        (reply::<Info>, "TOPK.INFO k"),
    ];
    for (command, line) in table {
        assert_eq!(command(&mut MemKey::Missing, line), missing, "{line}");
        assert_eq!(command(&mut MemKey::Other, line), wrong, "{line}");
    }
    // Arity before the key.
    for (command, line) in [
        (reply::<Add> as Runner, "TOPK.ADD k"),
        (reply::<IncrBy>, "TOPK.INCRBY k a"),
        (reply::<IncrBy>, "TOPK.INCRBY k a 1 b"),
        (reply::<Query>, "TOPK.QUERY k"),
        (reply::<Count>, "TOPK.COUNT k"),
        (reply::<List>, "TOPK.LIST k WITHCOUNT x"),
        (reply::<Info>, "TOPK.INFO"),
    ] {
        assert_eq!(command(&mut MemKey::Missing, line), arity(), "{line}");
    }
}

/// WITHCOUNT is any case-insensitive prefix of the word, checked before
/// the key.
#[test]
fn list_keyword_is_a_prefix_checked_before_the_key() {
    for word in ["foo", "WITHCOUNTS", "withcountx", "x"] {
        let line = format!("TOPK.LIST nokey {word}");
        assert_eq!(
            reply::<List>(&mut MemKey::Missing, &line),
            err(replies::WITHCOUNT_EXPECTED),
            "{line}"
        );
    }
    let mut key = reserved("TOPK.RESERVE t 2 1000 3 0.9");
    reply::<Add>(&mut key, "TOPK.ADD t a a b");
    let with = Reply::Array(vec![
        bulk("a"),
        Reply::Integer(2),
        bulk("b"),
        Reply::Integer(1),
    ]);
    for word in ["w", "With", "WITHCOUNT", "withcount"] {
        assert_eq!(
            reply::<List>(&mut key, &format!("TOPK.LIST t {word}")),
            with,
            "{word}"
        );
    }
    let args = crate::command::TestArgs::new("TOPK.LIST t");
    assert_eq!(super::grammar::parse_list(&args), Ok(false));
    assert_eq!(
        reply::<List>(&mut key, "TOPK.LIST t"),
        items(&[Some("a"), Some("b")])
    );
}

/// Spec §4.7, both worked examples.
#[test]
fn worked_examples() {
    let mut t = reserved("TOPK.RESERVE t 2 1000 3 0.9");
    let (o, args) = run::<Add>(
        &TestEnv::client(),
        &mut t,
        "TOPK.ADD t foo bar foo baz baz baz qux",
    );
    assert_eq!(
        o.reply,
        items(&[None, None, None, Some("bar"), None, None, None])
    );
    assert_eq!(
        o.events,
        Events::of(&[Event::TopkAdded, Event::TopkExpelled])
    );
    assert_eq!(
        propagated(&o.propagate, &args).as_deref(),
        Some("TOPK.ADD t foo bar foo baz baz baz qux")
    );
    assert_eq!(
        reply::<IncrBy>(&mut t, "TOPK.INCRBY t qux 5 zero 0"),
        items(&[Some("foo"), None])
    );
    assert_eq!(
        reply::<List>(&mut t, "TOPK.LIST t WITHCOUNT"),
        Reply::Array(vec![
            bulk("qux"),
            Reply::Integer(6),
            bulk("baz"),
            Reply::Integer(3)
        ])
    );
    assert_eq!(
        reply::<Query>(&mut t, "TOPK.QUERY t qux baz foo"),
        Reply::Array(vec![
            Reply::Bool(true),
            Reply::Bool(true),
            Reply::Bool(false)
        ])
    );
    assert_eq!(
        reply::<Count>(&mut t, "TOPK.COUNT t qux baz nothing"),
        Reply::Array(vec![
            Reply::Integer(6),
            Reply::Integer(3),
            Reply::Integer(0)
        ])
    );

    let mut t = reserved("TOPK.RESERVE t 4 2 2 1");
    assert_eq!(
        reply::<Add>(&mut t, "TOPK.ADD t p q r s t p q p"),
        items(&[None, None, None, None, Some("q"), None, Some("s"), None])
    );
    assert_eq!(
        reply::<List>(&mut t, "TOPK.LIST t WITHCOUNT"),
        Reply::Array(vec![
            bulk("t"),
            Reply::Integer(1),
            bulk("q"),
            Reply::Integer(1),
            bulk("r"),
            Reply::Integer(1),
            bulk("p"),
            Reply::Integer(1),
        ])
    );
}

/// A bad increment answers the error for its pair and every later one (a
/// well-formed array); the pairs before it apply, and replicas and the AOF
/// get a TOPK.INCRBY of those pairs alone (nothing when the first pair is
/// the bad one): what was applied, not the command as received.
#[test]
fn incrby_with_a_bad_increment_keeps_the_frame() {
    let bad = err(replies::BAD_INCREMENT);
    for incr in ["x", "-1", "100001", "1.5", "4294967297"] {
        let mut t = reserved("TOPK.RESERVE t 3");
        let line = format!("TOPK.INCRBY t a 1 b {incr} c 1");
        let (o, args) = run::<IncrBy>(&TestEnv::client(), &mut t, &line);
        assert_eq!(
            o.reply,
            Reply::Array(vec![Reply::Null, bad.clone(), bad.clone()]),
            "{line}"
        );
        assert_eq!(
            propagated(&o.propagate, &args).as_deref(),
            Some("TOPK.INCRBY t a 1"),
            "{line}"
        );
        assert_eq!(reply::<List>(&mut t, "TOPK.LIST t"), items(&[Some("a")]));
    }
    // Two pairs applied, then the bad one: both go out, in order.
    let mut t = reserved("TOPK.RESERVE t 3");
    let line = "TOPK.INCRBY t a 2 b 0 c 100001 d 1";
    let (o, args) = run::<IncrBy>(&TestEnv::client(), &mut t, line);
    assert_eq!(
        propagated(&o.propagate, &args).as_deref(),
        Some("TOPK.INCRBY t a 2 b 0")
    );
    // Every pair good: the command as received.
    let line = "TOPK.INCRBY t a 2 b 0";
    let (o, args) = run::<IncrBy>(&TestEnv::client(), &mut t, line);
    assert_eq!(propagated(&o.propagate, &args).as_deref(), Some(line));
    // The first pair bad: nothing changed, nothing goes out.
    let mut t = reserved("TOPK.RESERVE t 3");
    let (o, args) = run::<IncrBy>(&TestEnv::client(), &mut t, "TOPK.INCRBY t a x b 1");
    assert_eq!(o.reply, Reply::Array(vec![bad.clone(), bad.clone()]));
    assert_eq!(propagated(&o.propagate, &args), None);
    assert!(o.events.is_empty());
    let (o, _) = run::<IncrBy>(&TestEnv::client(), &mut t, "TOPK.INCRBY t a x");
    assert_eq!(o.reply, Reply::Array(vec![bad]));
    assert!(o.events.is_empty());
    assert_eq!(
        reply::<IncrBy>(&mut t, "TOPK.INCRBY t a 100000 b 0"),
        items(&[None, None])
    );
    // INCRBY 0 puts the item in the heap with count 0: QUERY sees it,
    // LIST does not.
    assert_eq!(
        reply::<Query>(&mut t, "TOPK.QUERY t b"),
        Reply::Array(vec![Reply::Bool(true)])
    );
    assert_eq!(reply::<List>(&mut t, "TOPK.LIST t"), items(&[Some("a")]));
}

/// Items are bytes: a NUL inside an item is kept in what an add expels
/// (the command lines here split on spaces, so the sketch is fed
/// directly; tests/topk.rs sends such items to a server).
#[test]
fn binary_items_come_back_whole() {
    let mut t = reserved("TOPK.RESERVE t 1 100 3 1");
    let MemKey::Held(sketch) = &mut t else {
        unreachable!("reserved")
    };
    let item = b"a\0b";
    assert_eq!(sketch.incrby(item, 2), Ok(None));
    assert_eq!(sketch.incrby(b"c", 5).unwrap().as_deref(), Some(&item[..]));
    assert_eq!(reply::<List>(&mut t, "TOPK.LIST t"), items(&[Some("c")]));
}

/// The memory guard refuses a client's sketch over a limit with 2.8.2's
/// words and the numbers (2.8.2 aborts Redis 7.0 where its allocation
/// fails); a master's creation is never refused.
#[test]
fn the_memory_guard_refuses_a_clients_sketch() {
    let refused = |env: &TestEnv, line: &str| {
        let mut key = MemKey::Missing;
        let (o, args) = run::<Reserve>(env, &mut key, line);
        match &o.reply {
            Reply::Error(CommandError::Text(t)) => assert!(
                t.starts_with("ERR Insufficient memory to create topk data structure: "),
                "{line}: {t}"
            ),
            other => panic!("{line}: {other:?}"),
        }
        assert_eq!(propagated(&o.propagate, &args), None);
        assert_eq!(o.events, Events::of(&[Event::GuardRefused]));
        assert!(matches!(key, MemKey::Missing));
    };
    // The default per-value cap (4 GiB) is below 4294967295 heap records.
    refused(&TestEnv::client(), "TOPK.RESERVE x 4294967295");
    let capped = TestEnv::with(|e| e.settings.max_filter_bytes = 1_000);
    refused(&capped, "TOPK.RESERVE k 10 100 7 0.9");
    let master = TestEnv::with(|e| {
        e.settings.max_filter_bytes = 1_000;
        e.replicated = true;
    });
    let mut key = MemKey::Missing;
    let (o, _) = run::<Reserve>(&master, &mut key, "TOPK.RESERVE k 10 100 7 0.9");
    assert_eq!(o.reply, Reply::Ok);
    assert_eq!(key.value().sketch().width(), 100);
}
