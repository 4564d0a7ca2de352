//! The Cuckoo filter's commands driven without Redis: grammars with
//! RedisBloom 2.8.2's quirks, what each command answers for each kind of
//! key, what is propagated, the expansion limit, the memory guard and the
//! events.

use super::dump::{LoadChunk, ScanDump};
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
    // A LOADCHUNK header of 2^20 buckets (2 MiB): RedisBloom's words for a
    // header it cannot make a filter of, then the guard's numbers.
    let Reply::Array(pair) = reply::<ScanDump>(&env, &mut key, "CF.SCANDUMP f 0").into_owned()
    else {
        panic!("a SCANDUMP pair");
    };
    let Reply::Bulk(header) = &pair[1] else {
        panic!("{pair:?}");
    };
    let mut header = header.to_vec();
    header[8..16].copy_from_slice(&(1u64 << 20).to_le_bytes());
    let args = TestArgs(vec![
        b"CF.LOADCHUNK".to_vec(),
        b"copy".to_vec(),
        b"1".to_vec(),
        header,
    ]);
    let mut copy = Key::Missing;
    let request = LoadChunk::parse(&args, &env).unwrap();
    let outcome = LoadChunk::run(request, &args, &mut copy, &env);
    match &outcome.reply {
        Reply::Error(CommandError::Text(t)) => assert!(
            t.starts_with("Couldn't create filter!: the filter would take ")
                && t.ends_with("over bf.max-filter-bytes (10000 bytes)"),
            "{t}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(outcome.events.contains(Event::GuardRefused));
    assert!(matches!(copy, Key::Missing));
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

/// CF.PLAN's reply for `line` as (field, value) pairs.
fn plan_fields(env: &TestEnv, line: &str) -> Vec<(String, Reply<'static>)> {
    use crate::command::KeylessCommand;
    match super::observe::PlanCommand::run(&TestArgs::new(line), env).reply {
        Reply::Map(fields) => fields
            .into_iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.into_owned()))
            .collect(),
        other => panic!("{line}: {other:?}"),
    }
}

fn field<'a>(fields: &'a [(String, Reply<'static>)], name: &str) -> &'a Reply<'static> {
    &fields
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

#[test]
fn plan_has_reserves_grammar_and_errors() {
    use crate::command::KeylessCommand;
    let env = TestEnv::client();
    let plan = |line: &str| super::observe::PlanCommand::run(&TestArgs::new(line), &env).reply;
    for (line, want) in [
        ("CF.PLAN", Reply::Error(CommandError::Arity)),
        ("CF.PLAN 100 BUCKETSIZE", Reply::Error(CommandError::Arity)),
        (
            "CF.PLAN 100 foo MAXITERATIONS",
            Reply::Error(CommandError::Arity),
        ),
        ("CF.PLAN 1.5", err(replies::BAD_CAPACITY)),
        ("CF.PLAN -5", err(replies::CAPACITY_TOO_SMALL)),
        (
            "CF.PLAN 100 BUCKETSIZE 51",
            err(replies::CAPACITY_TOO_SMALL),
        ),
        (
            "CF.PLAN 100 EXPANSION -1 BUCKETSIZE 0 MAXITERATIONS 0",
            err(replies::MAX_ITERATIONS_RANGE),
        ),
        (
            "CF.PLAN 100 EXPANSION abc BUCKETSIZE abc",
            err(replies::PARSE_BUCKET_SIZE),
        ),
        ("CF.PLAN 100 EXPANSION 32769", err(replies::EXPANSION_RANGE)),
        (
            "CF.PLAN 100 BUCKETSIZE 256",
            err(replies::BUCKET_SIZE_RANGE),
        ),
        ("CF.PLAN 9223372036854775807", err(replies::CANNOT_CREATE)),
    ] {
        assert_eq!(plan(line), want, "{line}");
    }
    // The same parameters as CF.RESERVE with a key, shifted by one.
    let reserve = grammar::parse_reserve(&TestArgs::new(
        "CF.RESERVE k 100 bucketsize 4 maxiterations 7 expansion 3 foo bar",
    ))
    .unwrap();
    let planned = grammar::parse_plan(&TestArgs::new(
        "CF.PLAN 100 bucketsize 4 maxiterations 7 expansion 3 foo bar",
    ))
    .unwrap();
    assert_eq!(reserve, planned);
}

#[test]
fn plan_predicts_what_reserve_allocates() {
    let env = TestEnv::client();
    let f = plan_fields(&env, "CF.PLAN 1000");
    let int = |name| match field(&f, name) {
        Reply::Integer(v) => *v,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(int("capacity"), 1000);
    assert_eq!(int("bucket_size"), 2);
    assert_eq!(int("max_iterations"), 20);
    assert_eq!(int("expansion"), 1);
    assert_eq!(int("buckets"), 512);
    assert_eq!(int("slots"), 1024);
    assert_eq!(int("bytes"), 1024);
    assert_eq!(int("size"), 1080);
    assert_eq!(int("max_expansions"), 32);
    assert_eq!(int("expansions"), 31);
    assert_eq!(int("worst_bytes"), 32 * 1024);
    assert_eq!(int("worst_size"), 40 + 16 * 32 + 32 * 1024);
    assert_eq!(field(&f, "fpr_bound"), &Reply::Double(4.0 / 255.0));
    let Reply::Double(load) = field(&f, "first_expansion_load") else {
        panic!()
    };
    assert!(*load > 0.5 && *load < 1.0);
    assert_eq!(
        int("first_expansion_items"),
        (*load * 1024.0) as i64,
        "load × slots"
    );
    let Reply::Array(subs) = field(&f, "sub_filters") else {
        panic!()
    };
    assert_eq!(subs.len(), 32);
    assert_eq!(field(&f, "guard_refuses"), &Reply::Simple(c"nothing"));
    assert_eq!(field(&f, "guard_refused_sub_filter"), &Reply::Null);

    // The same numbers as the filter CF.RESERVE makes.
    let mut key = Key::Missing;
    let line = "CF.RESERVE k 1000 BUCKETSIZE 3 EXPANSION 3";
    assert_eq!(reply::<Reserve>(&env, &mut key, line), Reply::Ok);
    let f = plan_fields(&env, "CF.PLAN 1000 BUCKETSIZE 3 EXPANSION 3");
    let filter = key.value().filter();
    assert_eq!(
        field(&f, "size"),
        &Reply::count(filter.reported_size()),
        "CF.INFO Size"
    );
    assert_eq!(field(&f, "buckets"), &Reply::count(filter.base_buckets()));
    assert_eq!(field(&f, "expansion"), &Reply::Integer(4));
}

#[test]
fn plan_uses_the_live_limits() {
    // cf-max-expansions 2: one expansion.
    let env = TestEnv::with(|e| e.settings.cf_max_expansions = 2);
    let f = plan_fields(&env, "CF.PLAN 1000");
    assert_eq!(field(&f, "expansions"), &Reply::Integer(1));
    assert_eq!(field(&f, "worst_size"), &Reply::Integer(40 + 32 + 2048));
    // EXPANSION 0 never grows: no first expansion either.
    let f = plan_fields(&TestEnv::client(), "CF.PLAN 1000 EXPANSION 0");
    assert_eq!(field(&f, "expansions"), &Reply::Integer(0));
    assert_eq!(field(&f, "first_expansion_load"), &Reply::Null);
    assert_eq!(field(&f, "first_expansion_items"), &Reply::Null);

    // bf.max-filter-bytes below the first sub-filter: the reservation is
    // refused, with CF.RESERVE's message.
    let env = TestEnv::with(|e| e.settings.max_filter_bytes = 1000);
    let f = plan_fields(&env, "CF.PLAN 1000");
    assert_eq!(field(&f, "guard_refuses"), &Reply::Simple(c"reserve"));
    assert_eq!(field(&f, "guard_refused_sub_filter"), &Reply::Integer(1));
    assert_eq!(
        field(&f, "guard_refused_by"),
        &Reply::Simple(c"bf.max-filter-bytes")
    );
    let Reply::Bulk(message) = field(&f, "guard_message") else {
        panic!()
    };
    let mut key = Key::Missing;
    let Reply::Error(CommandError::Text(reserved)) =
        reply::<Reserve>(&env, &mut key, "CF.RESERVE k 1000")
    else {
        panic!()
    };
    assert_eq!(String::from_utf8_lossy(message), reserved);
    // Room for two sub-filters (Size 2,120), not three: the second
    // expansion is refused.
    let env = TestEnv::with(|e| e.settings.max_filter_bytes = 2120);
    let f = plan_fields(&env, "CF.PLAN 1000");
    assert_eq!(field(&f, "guard_refuses"), &Reply::Simple(c"expansion"));
    assert_eq!(field(&f, "guard_refused_sub_filter"), &Reply::Integer(3));
    // maxmemory counts the bytes the filter would have taken by then.
    let env = TestEnv::with(|e| e.memory.maxmemory = Some((1_000_000, 1_004_000)));
    let f = plan_fields(&env, "CF.PLAN 1000");
    assert_eq!(field(&f, "guard_refused_sub_filter"), &Reply::Integer(4));
    assert_eq!(field(&f, "guard_refused_by"), &Reply::Simple(c"maxmemory"));
}

/// A CF.INSERT / CF.INSERTNX the memory guard refuses a sub-filter in
/// the middle of: it propagates the items it applied, and a replica (which
/// never refuses) applying that reaches the master's filter byte for byte.
#[test]
fn a_partly_refused_insert_propagates_what_it_applied() {
    use ferrobloom_core::cuckoo::dump::dump_payload;
    let master = TestEnv::with(|e| e.settings.max_filter_bytes = 10_000);
    let replica = TestEnv::with(|e| e.replicated = true);
    for command in ["CF.INSERT", "CF.INSERTNX"] {
        let mut on_master = Key::Missing;
        let mut on_replica = Key::Missing;
        for key in [&mut on_master, &mut on_replica] {
            reply::<Reserve>(&master, key, "CF.RESERVE f 4096");
        }
        let items: Vec<String> = (0..12_000).map(|i| i.to_string()).collect();
        let line = format!("{command} f ITEMS {}", items.join(" "));
        let (outcome, args) = if command == "CF.INSERT" {
            run::<Insert<false>>(&master, &mut on_master, &line)
        } else {
            run::<Insert<true>>(&master, &mut on_master, &line)
        };
        let Reply::Array(replies) = &outcome.reply else {
            panic!("{command}: not an array");
        };
        // RESP2's -1 (an error reply never comes from a batch insert).
        let failed = replies.iter().filter(|r| **r == Reply::Integer(-1)).count();
        assert!(failed > 0, "{command}: the guard refused nothing");
        assert!(outcome.events.contains(Event::GuardRefused));
        let sent = propagated(&outcome.propagate, &args).expect("something applied");
        assert!(
            sent.starts_with(&format!("{command} f ITEMS 0 1 2 ")),
            "{command}"
        );
        // Every item inserted, none refused (CF.INSERTNX leaves out the
        // items found present after the first refusal: no-ops anywhere).
        let inserted = replies
            .iter()
            .filter(|r| matches!(r, Reply::Bool(true) | Reply::Integer(1)))
            .count();
        let sent_items = sent.split(' ').count() - 3;
        assert!(
            (inserted..=items.len() - failed).contains(&sent_items),
            "{command}: {sent_items} items sent, {inserted} inserted, {failed} refused"
        );
        if command == "CF.INSERT" {
            assert_eq!(sent_items, inserted, "{command}");
        }
        let (_, _) = if command == "CF.INSERT" {
            run::<Insert<false>>(&replica, &mut on_replica, &sent)
        } else {
            run::<Insert<true>>(&replica, &mut on_replica, &sent)
        };
        assert_eq!(
            dump_payload(on_replica.value().filter(), 10),
            dump_payload(on_master.value().filter(), 10),
            "{command}: the replica's filter"
        );
        assert!(debug_line(&on_master).contains("filters:2"), "{command}");
    }
}
