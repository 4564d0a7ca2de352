//! The Cuckoo filter's commands driven without Redis: grammars with
//! RedisBloom 2.8.2's quirks, what each command answers for each kind of
//! key, what is propagated, the expansion limit, the memory guard and the
//! events.

use super::chunks::{LoadChunk, ScanDump};
use super::read::{Count, Debug, Exists, Info, MExists};
use super::write::{Add, Compact, Del, Insert, Reserve};
use super::{grammar, replies, Cuckoo};
use crate::command::testing::{propagated, run, MemKey, TestEnv};
use crate::command::{CommandError, KeyedCommand, Reply, TestArgs};
use crate::notify::Event;
use ferrobloom_core::cuckoo::CuckooParams;

type Key = MemKey<Cuckoo>;

fn err(text: &'static std::ffi::CStr) -> Reply<'static> {
    Reply::Error(CommandError::Static(text))
}

/// Runs `line` and returns its reply.
fn reply<C: KeyedCommand<Value = Cuckoo>>(
    env: &TestEnv,
    key: &mut Key,
    line: &str,
) -> Reply<'static> {
    run::<C>(env, key, line).0.reply
}

fn debug_line(key: &Key) -> String {
    key.value().filter().debug_line()
}

#[test]
fn reserve_grammar_with_redisbloom_quirks() {
    let parse = |line: &str| grammar::parse_reserve(&TestArgs::new(line));
    let p = |capacity, bucket_size, max_iterations, expansion| CuckooParams {
        capacity,
        bucket_size,
        max_iterations,
        expansion,
    };
    let arity = Err(CommandError::Arity);
    let e = |text| Err(CommandError::Static(text));
    let cases = [
        ("CF.RESERVE k", arity.clone()),
        ("CF.RESERVE k 100 BUCKETSIZE", arity.clone()),
        // 2.8.2 reads past argv for these (and crashes).
        ("CF.RESERVE k 100 foo MAXITERATIONS", arity.clone()),
        ("CF.RESERVE k 100 EXPANSION BUCKETSIZE", arity.clone()),
        ("CF.RESERVE k 1.5", e(replies::BAD_CAPACITY)),
        ("CF.RESERVE k -5", e(replies::CAPACITY_TOO_SMALL)),
        (
            "CF.RESERVE k 100 BUCKETSIZE 51",
            e(replies::CAPACITY_TOO_SMALL),
        ),
        (
            "CF.RESERVE k 100 EXPANSION -1 BUCKETSIZE 0 MAXITERATIONS 0",
            e(replies::MAX_ITERATIONS_RANGE),
        ),
        (
            "CF.RESERVE k 100 EXPANSION abc BUCKETSIZE abc",
            e(replies::PARSE_BUCKET_SIZE),
        ),
        (
            "CF.RESERVE k 100 EXPANSION 32769",
            e(replies::EXPANSION_RANGE),
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS 65536",
            e(replies::MAX_ITERATIONS_RANGE),
        ),
        (
            "CF.RESERVE k 100 BUCKETSIZE 256",
            e(replies::BUCKET_SIZE_RANGE),
        ),
        ("CF.RESERVE k 100 EXPANSION x", e(replies::PARSE_EXPANSION)),
        (
            "CF.RESERVE k 100 MAXITERATIONS x",
            e(replies::PARSE_MAX_ITERATIONS),
        ),
        ("CF.RESERVE k 1000", Ok(p(1000, 2, 20, 1))),
        (
            "CF.RESERVE k3 100 bucketsize 4 maxiterations 7 expansion 3",
            Ok(p(100, 4, 7, 3)),
        ),
        // Unknown tokens are ignored while argc stays odd; the first
        // occurrence of an option wins.
        ("CF.RESERVE k4 100 foo bar", Ok(p(100, 2, 20, 1))),
        (
            "CF.RESERVE k 100 BUCKETSIZE 2 BUCKETSIZE 4",
            Ok(p(100, 2, 20, 1)),
        ),
        // A key named like an option takes the capacity as its value.
        ("CF.RESERVE expansion 100", Ok(p(100, 2, 20, 100))),
        ("CF.RESERVE maxiterations 100", Ok(p(100, 2, 100, 1))),
        ("CF.RESERVE bucketsize 100", e(replies::CAPACITY_TOO_SMALL)),
        ("CF.RESERVE bucketsize 600", e(replies::BUCKET_SIZE_RANGE)),
    ];
    for (line, expected) in cases {
        assert_eq!(parse(line), expected, "{line}");
    }
}

#[test]
fn insert_grammar_reads_first_letters() {
    let parse = |line: &str| grammar::parse_insert(&TestArgs::new(line));
    let ok = |capacity, nocreate, items_from| {
        Ok(grammar::Insert {
            capacity,
            nocreate,
            items_from,
        })
    };
    let arity = Err(CommandError::Arity);
    let e = |text| Err(CommandError::Static(text));
    let cases = [
        ("CF.INSERT k ITEMS", arity.clone()),
        ("CF.INSERT k a b", e(replies::UNKNOWN_ARGUMENT)),
        ("CF.INSERT k NOCREATE x", e(replies::UNKNOWN_ARGUMENT)),
        ("CF.INSERT k NOCREATE NOCREATE", arity.clone()),
        ("CF.INSERT k CAPACITY", arity.clone()),
        ("CF.INSERT k CAPACITY ITEMS a", e(replies::BAD_CAPACITY)),
        (
            "CF.INSERT k CAPACITY 3 ITEMS a",
            e(replies::CAPACITY_TOO_SMALL),
        ),
        (
            "CF.INSERT k EXPANSION 2 ITEMS a",
            e(replies::UNKNOWN_ARGUMENT),
        ),
        ("CF.INSERT k ITEMS a b", ok(1024, false, 3)),
        ("CF.INSERT k cXYZ 100 iFOO a", ok(100, false, 5)),
        ("CF.INSERT k nope c 5 C 9 items a", ok(9, true, 8)),
    ];
    for (line, expected) in cases {
        assert_eq!(parse(line), expected, "{line}");
    }
}

/// A command run on a key in a test environment.
type Runner = fn(&TestEnv, &mut Key, &str) -> Reply<'static>;

#[test]
fn missing_and_other_keys_per_command() {
    let env = TestEnv::client();
    // (command, its line, reply on a missing key, reply on a Bloom filter)
    let cases: [(Runner, &str, Reply<'static>, Reply<'static>); 10] = [
        (
            reply::<Exists>,
            "CF.EXISTS k a",
            Reply::Bool(false),
            Reply::Bool(false),
        ),
        (
            reply::<Count>,
            "CF.COUNT k a",
            Reply::Integer(0),
            Reply::Integer(0),
        ),
        (
            reply::<Del>,
            "CF.DEL k a",
            err(replies::DEL_NOT_FOUND),
            err(replies::DEL_NOT_FOUND),
        ),
        (
            reply::<Compact>,
            "CF.COMPACT k",
            err(replies::COMPACT_NOT_FOUND),
            err(replies::COMPACT_NOT_FOUND),
        ),
        (
            reply::<Info>,
            "CF.INFO k",
            err(replies::NOT_FOUND),
            err(replies::WRONGTYPE),
        ),
        (
            reply::<Debug>,
            "CF.DEBUG k",
            err(replies::NOT_FOUND),
            err(replies::WRONGTYPE),
        ),
        (
            reply::<ScanDump>,
            "CF.SCANDUMP k 0",
            err(replies::NOT_FOUND),
            err(replies::WRONGTYPE),
        ),
        (
            reply::<LoadChunk>,
            "CF.LOADCHUNK k 9 x",
            err(replies::NOT_FOUND),
            err(replies::WRONGTYPE),
        ),
        (
            reply::<Insert<false>>,
            "CF.INSERT k NOCREATE ITEMS a",
            err(replies::NOT_FOUND),
            err(replies::WRONGTYPE),
        ),
        (
            reply::<Add<true>>,
            "CF.ADDNX k a",
            Reply::Bool(true),
            err(replies::WRONGTYPE),
        ),
    ];
    for (command, line, missing, other) in cases {
        assert_eq!(
            command(&env, &mut Key::Missing, line),
            missing,
            "{line} on a missing key"
        );
        assert_eq!(
            command(&env, &mut Key::Other, line),
            other,
            "{line} on another type"
        );
    }
    assert_eq!(
        reply::<MExists>(&env, &mut Key::Other, "CF.MEXISTS k a b").into_owned(),
        Reply::Array(vec![Reply::Bool(false), Reply::Bool(false)])
    );
}

#[test]
fn what_is_propagated() {
    let env = TestEnv::client();
    let mut key = Key::Missing;
    let check = |line: &str, verbatim: bool, key: &mut Key| {
        let (outcome, args) = match line.split(' ').next().unwrap() {
            "CF.RESERVE" => run::<Reserve>(&env, key, line),
            "CF.ADD" => run::<Add<false>>(&env, key, line),
            "CF.ADDNX" => run::<Add<true>>(&env, key, line),
            "CF.INSERT" => run::<Insert<false>>(&env, key, line),
            "CF.DEL" => run::<Del>(&env, key, line),
            "CF.COMPACT" => run::<Compact>(&env, key, line),
            "CF.LOADCHUNK" => run::<LoadChunk>(&env, key, line),
            _ => unreachable!(),
        };
        assert_eq!(
            propagated(&outcome.propagate, &args).is_some(),
            verbatim,
            "{line}: {:?}",
            outcome.reply
        );
    };
    check("CF.RESERVE f 4 EXPANSION 0", true, &mut key);
    check("CF.RESERVE f 4", false, &mut key);
    for i in 0..4 {
        check(&format!("CF.ADD f {i}"), true, &mut key);
    }
    // A full non-growing filter: `Filter is full`, not propagated; an
    // INSERT's array with -1 is.
    check("CF.ADD f x", false, &mut key);
    check("CF.INSERT f ITEMS x", true, &mut key);
    check("CF.ADDNX f 0", true, &mut key);
    check("CF.DEL f absent", true, &mut key);
    check("CF.DEL f 0", true, &mut key);
    check("CF.COMPACT f", true, &mut key);
    // Data chunks are replicated (2.8.2 forgets them).
    check("CF.LOADCHUNK f 5 abcd", true, &mut key);
    check("CF.LOADCHUNK f 99 abcd", false, &mut key);
    let mut missing = Key::Missing;
    check("CF.DEL g a", false, &mut missing);
    check("CF.RESERVE g 1.5", false, &mut missing);
}

#[test]
fn insert_replies_per_item() {
    let env = TestEnv::client();
    let mut key = Key::Missing;
    reply::<Reserve>(&env, &mut key, "CF.RESERVE f 4 EXPANSION 0");
    let items = |r: Reply<'static>| match r.into_owned() {
        Reply::Array(items) => items,
        other => panic!("{other:?}"),
    };
    // Four slots: `-1` in RESP2 (`#f` in RESP3) for the items with no room,
    // and the batch goes on after them.
    let answers = items(reply::<Insert<false>>(
        &env,
        &mut key,
        "CF.INSERT f ITEMS a b c d e f g h",
    ));
    let stored = answers.iter().filter(|r| **r == Reply::Bool(true)).count();
    assert_eq!(stored as u64, key.value().filter().items());
    assert!((1..=4).contains(&stored));
    assert!(answers
        .iter()
        .all(|r| *r == Reply::Bool(true) || *r == Reply::Integer(-1)));
    assert_eq!(answers.len(), 8);
    let mut key = Key::Missing;
    reply::<Reserve>(&env, &mut key, "CF.RESERVE f 4 EXPANSION 0");
    assert_eq!(
        items(reply::<Insert<true>>(
            &env,
            &mut key,
            "CF.INSERTNX f ITEMS a a b"
        )),
        [1, 0, 1].map(Reply::Integer)
    );
}

#[test]
fn the_expansion_limit() {
    let env = TestEnv::with(|e| e.settings.cf_max_expansions = 2);
    let mut key = Key::Missing;
    reply::<Reserve>(&env, &mut key, "CF.RESERVE m 4");
    let replies: Vec<_> = (0..7)
        .map(|i| run::<Add<false>>(&env, &mut key, &format!("CF.ADD m {i}")).0)
        .collect();
    // 2.8.2 with CF_MAX_EXPANSIONS 2: five adds, then the limit.
    assert!(replies[..5].iter().all(|o| o.reply == Reply::Bool(true)));
    for o in &replies[5..] {
        assert_eq!(o.reply, err(replies::MAX_EXPANSIONS));
        assert_eq!(o.propagate, crate::command::Propagation::Nothing);
    }
    assert!(debug_line(&key).contains("filters:2"));
    // From a master or an AOF the limit never refuses.
    let replica = TestEnv::with(|e| {
        e.settings.cf_max_expansions = 2;
        e.replicated = true;
    });
    assert_eq!(
        reply::<Add<false>>(&replica, &mut key, "CF.ADD m 9"),
        Reply::Bool(true)
    );
    // With a limit of 1 nothing can be added, and an empty key stays empty.
    let one = TestEnv::with(|e| e.settings.cf_max_expansions = 1);
    let mut missing = Key::Missing;
    assert_eq!(
        reply::<Add<false>>(&one, &mut missing, "CF.ADD n x"),
        err(replies::MAX_EXPANSIONS)
    );
    assert!(matches!(missing, Key::Missing));
}

#[test]
fn the_memory_guard_refuses_creation_and_growth() {
    let env = TestEnv::with(|e| e.settings.max_filter_bytes = 10_000);
    let mut key = Key::Missing;
    let (outcome, _) = run::<Reserve>(&env, &mut key, "CF.RESERVE big 100000");
    match &outcome.reply {
        Reply::Error(CommandError::Text(t)) => {
            assert!(
                t.starts_with("ERR Insufficient memory to create filter: "),
                "{t}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(outcome.events.contains(Event::GuardRefused));
    assert!(matches!(key, Key::Missing));
    // 4,096 bytes, then a second sub-filter of 4,096 and no third.
    reply::<Reserve>(&env, &mut key, "CF.RESERVE f 4096");
    let mut last = Reply::Ok;
    for i in 0..20_000 {
        last = reply::<Add<false>>(&env, &mut key, &format!("CF.ADD f {i}"));
        if !matches!(last, Reply::Bool(true)) {
            break;
        }
    }
    match last {
        Reply::Error(CommandError::Text(t)) => {
            assert!(t.starts_with("ERR Insufficient memory: "), "{t}")
        }
        other => panic!("{other:?}"),
    }
    assert!(debug_line(&key).contains("filters:2"));
    assert!(key.value().filter().reported_size() <= 10_000);
}

#[test]
fn events_of_each_write() {
    let env = TestEnv::client();
    let mut key = Key::Missing;
    let events = |key: &mut Key, line: &str| match line.split(' ').next().unwrap() {
        "CF.ADD" => run::<Add<false>>(&env, key, line).0.events,
        "CF.DEL" => run::<Del>(&env, key, line).0.events,
        "CF.COMPACT" => run::<Compact>(&env, key, line).0.events,
        _ => unreachable!(),
    };
    let e = events(&mut key, "CF.ADD f a");
    assert!(e.contains(Event::CuckooCreated) && e.contains(Event::CuckooAdded));
    let mut grew = false;
    for i in 0..3000 {
        grew |= events(&mut key, &format!("CF.ADD f {i}")).contains(Event::CuckooExpanded);
    }
    assert!(grew, "a 1,024-slot filter grew after 3,000 items");
    assert!(events(&mut key, "CF.DEL f a").contains(Event::CuckooDeleted));
    assert!(!events(&mut key, "CF.DEL f a").contains(Event::CuckooDeleted));
    assert!(events(&mut key, "CF.COMPACT f").contains(Event::CuckooCompacted));
}

#[test]
fn scandump_and_loadchunk_round_trip() {
    let env = TestEnv::client();
    let mut source = Key::Missing;
    reply::<Reserve>(&env, &mut source, "CF.RESERVE s 8 EXPANSION 2");
    for i in 0..10 {
        reply::<Add<false>>(&env, &mut source, &format!("CF.ADD s {i}"));
    }
    // RedisBloom 2.8.2's state after the same commands.
    assert_eq!(
        debug_line(&source),
        "bktsize:2 buckets:4 items:10 deletes:0 filters:2 max_iterations:20 expansion:2"
    );
    let mut copy = Key::Missing;
    let mut it = 0u64;
    loop {
        let r = reply::<ScanDump>(&env, &mut source, &format!("CF.SCANDUMP s {it}")).into_owned();
        let Reply::Array(pair) = r else { panic!() };
        let (Reply::Integer(next), data) = (&pair[0], &pair[1]) else {
            panic!()
        };
        if *next == 0 {
            break;
        }
        let Reply::Bulk(bytes) = data else { panic!() };
        let args = TestArgs(vec![
            b"CF.LOADCHUNK".to_vec(),
            b"c".to_vec(),
            next.to_string().into_bytes(),
            bytes.to_vec(),
        ]);
        let request = LoadChunk::parse(&args, &env).unwrap();
        let o = LoadChunk::run(request, &args, &mut copy, &env);
        assert_eq!(o.reply, Reply::Ok);
        it = *next as u64;
    }
    assert_eq!(debug_line(&copy), debug_line(&source));
    for (a, b) in copy
        .value()
        .filter()
        .sub_filters()
        .iter()
        .zip(source.value().filter().sub_filters())
    {
        assert_eq!(a.as_bytes(), b.as_bytes());
    }
    assert_eq!(
        reply::<ScanDump>(&env, &mut source, "CF.SCANDUMP s -1"),
        err(replies::INVALID_POSITION)
    );
    assert_eq!(
        reply::<LoadChunk>(&env, &mut copy, "CF.LOADCHUNK c 0 x"),
        err(replies::INVALID_POSITION)
    );
    assert_eq!(
        reply::<LoadChunk>(&env, &mut copy, "CF.LOADCHUNK c 1 x"),
        err(replies::ITEM_EXISTS)
    );
    assert_eq!(
        reply::<LoadChunk>(&env, &mut Key::Missing, "CF.LOADCHUNK c 1 x"),
        err(replies::INVALID_HEADER)
    );
}

#[test]
fn compact_is_refused_to_clients_of_a_read_only_replica() {
    let mut key = Key::Missing;
    let env = TestEnv::client();
    run::<Reserve>(&env, &mut key, "CF.RESERVE f 4");
    let replica = TestEnv::with(|e| e.read_only_replica = true);
    let (outcome, args) = run::<Compact>(&replica, &mut key, "CF.COMPACT f");
    assert_eq!(outcome.reply, err(replies::READ_ONLY_REPLICA));
    assert!(propagated(&outcome.propagate, &args).is_none());
    // From the master link it runs, as on the master.
    let link = TestEnv::with(|e| {
        e.read_only_replica = true;
        e.replicated = true;
    });
    assert_eq!(
        run::<Compact>(&link, &mut key, "CF.COMPACT f").0.reply,
        Reply::Ok
    );
    // A missing key keeps RedisBloom's reply.
    let mut missing = Key::Missing;
    assert_eq!(
        run::<Compact>(&replica, &mut missing, "CF.COMPACT g")
            .0
            .reply,
        err(replies::COMPACT_NOT_FOUND)
    );
}
