//! The Bloom filter's commands driven without Redis: in-memory keys, a
//! test environment, and tables of cases for what commands create, what
//! they propagate, and what the memory guard refuses.

use ferrobloom_core::bloom::stats;
use ferrobloom_core::{AddOutcome, Chain, ChainParams, Policy, Unguarded};

use super::create::{creation_defaults, replica_rule};
use super::propagate;
use super::{dump, read, replies, write, Filter};
use crate::command::testing::{self, propagated, run, TestEnv};
use crate::command::Applied;
use crate::command::{
    ArgSource, CommandError, KeyedCommand, Outcome, Propagation, Reply, TestArgs,
};
use crate::config::Settings;
use crate::guard::tests::FixedMemory;
use crate::notify::{Event, Events};

/// A key in memory.
type MemKey = testing::MemKey<Filter>;

use super::grammar::chain_params as params;

fn settings(error_rate: f64, initial_size: u64, expansion: u32, policy: Policy) -> Settings {
    Settings {
        error_rate,
        initial_size,
        expansion,
        policy,
        ..Settings::DEFAULT
    }
}

#[test]
fn creation_defaults_local_settings_or_the_replica_rule() {
    use Policy::{Exact, Pow2};
    let cases = [
        // (settings, from a master or AOF, what is created)
        (Settings::DEFAULT, false, params(100, 0.01, 2, false, Exact)),
        (Settings::DEFAULT, true, params(100, 0.01, 2, false, Exact)),
        (
            settings(0.001, 1000, 0, Exact),
            false,
            params(1000, 0.001, 2, true, Exact),
        ),
        (
            settings(0.001, 1000, 0, Exact),
            true,
            params(1000, 0.001, 2, false, Exact),
        ),
        (
            settings(0.05, 7, 4, Pow2),
            false,
            params(7, 0.05, 4, false, Pow2),
        ),
        (
            settings(0.05, 7, 4, Pow2),
            true,
            params(7, 0.05, 2, false, Exact),
        ),
    ];
    for (i, (s, replicated, expected)) in cases.into_iter().enumerate() {
        assert_eq!(creation_defaults(&s, replicated), expected, "case {i}");
    }
    assert_eq!(
        replica_rule(&params(5, 0.2, 9, true, Pow2)),
        params(5, 0.2, 2, false, Exact)
    );
}

/// Which command runs a line.
fn run_line(env: &TestEnv, key: &mut MemKey, line: &str) -> (Outcome<'static>, TestArgs) {
    let name = line.split(' ').next().unwrap_or("").to_ascii_uppercase();
    match name.as_str() {
        "BF.RESERVE" => run::<write::Reserve>(env, key, line),
        "BF.ADD" => run::<write::Add>(env, key, line),
        "BF.MADD" => run::<write::MAdd>(env, key, line),
        "BF.INSERT" => run::<write::Insert>(env, key, line),
        "BF.EXISTS" => run::<read::Exists>(env, key, line),
        "BF.CARD" => run::<read::Card>(env, key, line),
        "BF.INFO" => run::<read::Info>(env, key, line),
        "BF.SCANDUMP" => run::<dump::ScanDump>(env, key, line),
        "BF.LOADCHUNK" => run::<dump::LoadChunk>(env, key, line),
        other => panic!("no command {other} in these tests"),
    }
}

#[test]
fn creating_commands_create_and_propagate() {
    use Policy::{Exact, Pow2};
    let default = Settings::DEFAULT;
    let small_nonscaling_pow2 = settings(0.001, 1000, 0, Pow2);
    let expansion_4 = settings(0.01, 100, 4, Exact);
    #[rustfmt::skip]
    let cases: [(Settings, bool, &str, ChainParams, &str); 16] = [
        // Auto-creation: local settings, always spelled out.
        (default, false, "BF.ADD k a", params(100, 0.01, 2, false, Exact),
         "BF.INSERT k CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS a"),
        (small_nonscaling_pow2, false, "BF.ADD k a", params(1000, 0.001, 2, true, Pow2),
         "BF.INSERT k CAPACITY 1000 ERROR 0.001 EXPANSION 2 NONSCALING POLICY pow2 ITEMS a"),
        (default, false, "BF.MADD k a b", params(100, 0.01, 2, false, Exact),
         "BF.INSERT k CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS a b"),
        (default, false, "BF.INSERT k ITEMS a b", params(100, 0.01, 2, false, Exact),
         "BF.INSERT k CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS a b"),
        // From a master or an AOF: the replica rule, spelled out too.
        (small_nonscaling_pow2, true, "BF.ADD k a", params(1000, 0.001, 2, false, Exact),
         "BF.INSERT k CAPACITY 1000 ERROR 0.001 EXPANSION 2 ITEMS a"),
        (small_nonscaling_pow2, true, "BF.RESERVE k 0.1 10", params(10, 0.1, 2, false, Exact),
         "BF.RESERVE k 0.1 10"),
        (small_nonscaling_pow2, true, "BF.INSERT k ERROR 0.1 ITEMS a",
         params(1000, 0.1, 2, false, Exact),
         "BF.INSERT k CAPACITY 1000 ERROR 0.1 EXPANSION 2 ITEMS a"),
        // BF.RESERVE: verbatim unless a default the replica lacks decided.
        (default, false, "BF.RESERVE k 0.01 100", params(100, 0.01, 2, false, Exact),
         "BF.RESERVE k 0.01 100"),
        (expansion_4, false, "BF.RESERVE k 0.01 100", params(100, 0.01, 4, false, Exact),
         "BF.RESERVE k 0.01 100 EXPANSION 4"),
        (expansion_4, false, "BF.RESERVE k 0.01 100 EXPANSION 3",
         params(100, 0.01, 3, false, Exact), "BF.RESERVE k 0.01 100 EXPANSION 3"),
        (expansion_4, false, "BF.RESERVE k 0.01 100 NONSCALING",
         params(100, 0.01, 2, true, Exact), "BF.RESERVE k 0.01 100 NONSCALING"),
        (small_nonscaling_pow2, false, "BF.RESERVE k 0.01 100",
         params(100, 0.01, 2, true, Pow2), "BF.RESERVE k 0.01 100 NONSCALING POLICY pow2"),
        (settings(0.01, 100, 2, Pow2), false, "BF.RESERVE k 0.01 100 POLICY exact",
         params(100, 0.01, 2, false, Exact), "BF.RESERVE k 0.01 100 POLICY exact"),
        // BF.INSERT: verbatim when it names all that settings could decide.
        (default, false, "BF.INSERT k CAPACITY 50 ERROR 0.1 ITEMS a",
         params(50, 0.1, 2, false, Exact), "BF.INSERT k CAPACITY 50 ERROR 0.1 ITEMS a"),
        (expansion_4, false, "BF.INSERT k CAPACITY 50 ERROR 0.1 ITEMS a",
         params(50, 0.1, 4, false, Exact),
         "BF.INSERT k CAPACITY 50 ERROR 0.1 EXPANSION 4 ITEMS a"),
        (expansion_4, false, "BF.INSERT k CAPACITY 50 ERROR 0.1 EXPANSION 3 ITEMS a",
         params(50, 0.1, 3, false, Exact),
         "BF.INSERT k CAPACITY 50 ERROR 0.1 EXPANSION 3 ITEMS a"),
    ];
    for (s, replicated, line, created, replica_line) in cases {
        let env = TestEnv::with(|e| {
            e.settings = s;
            e.replicated = replicated;
        });
        let mut key = MemKey::Missing;
        let (outcome, args) = run_line(&env, &mut key, line);
        assert!(
            !matches!(outcome.reply, Reply::Error(_)),
            "{line}: {:?}",
            outcome.reply
        );
        // What a filter made with `created` reports (pow2 rounds capacity).
        let reference = Chain::new(&created, &Unguarded).expect("a valid filter");
        assert_eq!(
            stats::creation_params(key.value().chain()),
            stats::creation_params(&reference),
            "{line}"
        );
        assert_eq!(
            propagated(&outcome.propagate, &args).as_deref(),
            Some(replica_line),
            "{line}"
        );
        assert!(outcome.events.contains(Event::Created), "{line}");
    }
}

#[test]
fn refusals_before_anything_changes() {
    let created = || {
        let mut key = MemKey::Missing;
        run_line(&TestEnv::client(), &mut key, "BF.RESERVE k 0.01 100");
        key
    };
    let wrongtype = || Reply::Error(CommandError::Static(replies::WRONGTYPE));
    #[rustfmt::skip]
    let cases: [(MemKey, &str, Reply<'static>); 12] = [
        (MemKey::Missing, "BF.ADD k", Reply::Error(CommandError::Arity)),
        (MemKey::Missing, "BF.RESERVE k 0.01", Reply::Error(CommandError::Arity)),
        (MemKey::Other, "BF.RESERVE k abc 100",
         Reply::Error(CommandError::Static(replies::BAD_ERROR_RATE))),
        (MemKey::Other, "BF.RESERVE k 0.01 100", wrongtype()),
        (created(), "BF.RESERVE k 0.01 100",
         Reply::Error(CommandError::Static(replies::ITEM_EXISTS))),
        (MemKey::Other, "BF.ADD k a", wrongtype()),
        (MemKey::Other, "BF.MADD k a b", wrongtype()),
        (MemKey::Other, "BF.INSERT k ITEMS a", wrongtype()),
        (MemKey::Missing, "BF.INSERT k NOCREATE ITEMS a",
         Reply::Error(CommandError::Static(replies::NOT_FOUND))),
        (MemKey::Missing, "BF.LOADCHUNK k 2 x",
         Reply::Error(CommandError::Static(replies::NOT_FOUND))),
        (MemKey::Missing, "BF.LOADCHUNK k x x",
         Reply::Error(CommandError::Static(replies::LOADCHUNK_NOT_NUMERIC))),
        (MemKey::Missing, "BF.LOADCHUNK k 1 garbage",
         Reply::Error(CommandError::Static(replies::BAD_DATA))),
    ];
    for (mut key, line, reply) in cases {
        let was_missing = matches!(key, MemKey::Missing);
        let (outcome, _) = run_line(&TestEnv::client(), &mut key, line);
        assert_eq!(outcome.reply, reply, "{line}");
        assert_eq!(outcome.propagate, Propagation::Nothing, "{line}");
        assert_eq!(outcome.events, Events::default(), "{line}");
        if was_missing {
            assert!(matches!(key, MemKey::Missing), "{line} created a key");
        }
    }
}

#[test]
fn reads_of_missing_and_other_keys() {
    let cases = [
        (MemKey::Missing, "BF.EXISTS k a", Reply::Bool(false)),
        (MemKey::Other, "BF.EXISTS k a", Reply::Bool(false)),
        (MemKey::Missing, "BF.CARD k", Reply::Integer(0)),
        (
            MemKey::Other,
            "BF.CARD k",
            Reply::Error(CommandError::Static(replies::WRONGTYPE)),
        ),
        (
            MemKey::Missing,
            "BF.INFO k",
            Reply::Error(CommandError::Static(replies::NOT_FOUND)),
        ),
        (
            MemKey::Missing,
            "BF.SCANDUMP k 0",
            Reply::Error(CommandError::Static(replies::NOT_FOUND)),
        ),
    ];
    for (mut key, line, reply) in cases {
        let (outcome, _) = run_line(&TestEnv::client(), &mut key, line);
        assert_eq!(outcome, Outcome::reply(reply), "{line}");
    }
}

#[test]
fn adds_reply_propagate_and_notify() {
    let env = TestEnv::client();
    let mut key = MemKey::Missing;
    let (first, _) = run_line(&env, &mut key, "BF.ADD k a");
    assert_eq!(first.reply, Reply::Bool(true));
    assert_eq!(first.events, Events::of(&[Event::Created, Event::Added]));
    let (again, args) = run_line(&env, &mut key, "BF.ADD k a");
    assert_eq!(again.reply, Reply::Bool(false));
    assert_eq!(again.events, Events::default());
    assert_eq!(
        propagated(&again.propagate, &args).as_deref(),
        Some("BF.ADD k a")
    );
    let (batch, args) = run_line(&env, &mut key, "BF.MADD k a b");
    assert_eq!(
        batch.reply,
        Reply::Array(vec![Reply::Bool(false), Reply::Bool(true)])
    );
    assert_eq!(batch.events, Events::of(&[Event::Added]));
    assert_eq!(
        propagated(&batch.propagate, &args).as_deref(),
        Some("BF.MADD k a b")
    );
    let (card, _) = run_line(&env, &mut key, "BF.CARD k");
    assert_eq!(card.reply, Reply::Integer(2));
    let (field, _) = run_line(&env, &mut key, "BF.INFO k capacity");
    assert_eq!(
        field.reply,
        Reply::Field(c"Capacity", Box::new(Reply::Integer(100)))
    );
    let (info, _) = run_line(&env, &mut key, "BF.INFO k");
    let Reply::Map(fields) = info.reply else {
        panic!("BF.INFO replies a map");
    };
    let labels: Vec<_> = fields.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        labels,
        [
            c"Capacity",
            c"Size",
            c"Number of filters",
            c"Number of items inserted",
            c"Expansion rate"
        ]
    );
}

/// The propagation of a batch after failures, outcome by outcome: items
/// before the first failure, then only those added after it.
#[test]
fn batch_propagation_after_failures() {
    use AddOutcome::{Added, Full, Present, ScaleFailed};
    let created = params(100, 0.01, 2, false, Policy::Exact);
    #[rustfmt::skip]
    let cases: [(&[AddOutcome], Option<&ChainParams>, Option<&str>); 8] = [
        (&[Added, Present, Added], None, Some("verbatim")),
        (&[Added, Present], Some(&created),
         Some("BF.INSERT k CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS i0 i1")),
        (&[Added, Full], None, Some("BF.MADD k i0")),
        (&[Present, Full], None, Some("BF.MADD k i0")),
        (&[Full], None, None),
        (&[Full], Some(&created), Some("BF.RESERVE k 0.01 100 EXPANSION 2")),
        (&[Added, ScaleFailed, Present, Added], None, Some("BF.MADD k i0 i3")),
        (&[ScaleFailed, Added], Some(&created),
         Some("BF.INSERT k CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS i1")),
    ];
    for (outcomes, created_with, expected) in cases {
        let items: Vec<String> = (0..outcomes.len()).map(|i| format!("i{i}")).collect();
        let args = TestArgs::new(&format!("BF.MADD k {}", items.join(" ")));
        let mut applied = Applied::default();
        for (i, outcome) in outcomes.iter().enumerate() {
            applied.record(2 + i, propagate::item(*outcome));
        }
        let p = propagate::adds(args.count(), 2, &applied, created_with);
        let shown = match p {
            Propagation::Verbatim => Some("verbatim".to_string()),
            ref other => propagated(other, &args),
        };
        assert_eq!(shown.as_deref(), expected, "{outcomes:?}");
    }
}

#[test]
fn a_full_nonscaling_filter_stops_the_batch_and_propagates_what_applied() {
    let env = TestEnv::client();
    let mut key = MemKey::Missing;
    run_line(&env, &mut key, "BF.RESERVE k 0.001 2 NONSCALING");
    let (outcome, args) = run_line(&env, &mut key, "BF.MADD k a b c d");
    let Reply::Array(replies) = &outcome.reply else {
        panic!("an array");
    };
    assert_eq!(replies[..2], [Reply::Bool(true), Reply::Bool(true)]);
    assert_eq!(
        replies[2..],
        [Reply::Error(CommandError::Static(replies::NONSCALING_FULL))]
    );
    assert_eq!(
        propagated(&outcome.propagate, &args).as_deref(),
        Some("BF.MADD k a b")
    );
    let (created, args) = run_line(
        &env,
        &mut MemKey::Missing,
        "BF.INSERT k CAPACITY 1 ERROR 0.001 NONSCALING ITEMS a b c",
    );
    assert_eq!(
        propagated(&created.propagate, &args).as_deref(),
        Some("BF.INSERT k CAPACITY 1 ERROR 0.001 EXPANSION 2 NONSCALING ITEMS a"),
        "an explicit creation is spelled out after a failure"
    );
}

#[test]
fn the_memory_guard_refuses_clients_only() {
    let capped = |cap: u64, replicated: bool| {
        TestEnv::with(|e| {
            e.settings.max_filter_bytes = cap;
            e.replicated = replicated;
        })
    };
    let machine_full = TestEnv::with(|e| {
        e.memory = FixedMemory {
            used: Some(9_000_000),
            machine: Some(10_000_000),
            ..FixedMemory::default()
        }
    });
    #[rustfmt::skip]
    let refused: [(&TestEnv, &str, &str); 4] = [
        (&capped(1000, false), "BF.RESERVE k 0.001 100000",
         "over bf.max-filter-bytes (1000 bytes)"),
        (&capped(1000, false), "BF.INSERT k CAPACITY 100000 ITEMS a",
         "over bf.max-filter-bytes (1000 bytes)"),
        (&machine_full, "BF.ADD k a",
         "over the 9000000 bytes the server may use (90% of the cgroup memory limit"),
        (&machine_full, "BF.LOADCHUNK k 1 x", ""),
    ];
    for (env, line, detail) in refused {
        let mut key = MemKey::Missing;
        let (outcome, _) = run_line(env, &mut key, line);
        if detail.is_empty() {
            // A header that does not decode is bad data, before any guard.
            assert_eq!(
                outcome.reply,
                Reply::Error(CommandError::Static(replies::BAD_DATA))
            );
            continue;
        }
        let Reply::Error(CommandError::Text(text)) = &outcome.reply else {
            panic!("{line}: {:?}", outcome.reply);
        };
        assert!(
            text.starts_with("ERR Insufficient memory to create filter: ") && text.contains(detail),
            "{line}: {text}"
        );
        assert_eq!(outcome.events, Events::of(&[Event::GuardRefused]), "{line}");
        assert_eq!(outcome.propagate, Propagation::Nothing, "{line}");
        assert!(matches!(key, MemKey::Missing), "{line}");
    }
    // From a master or an AOF: created anyway, with a warning naming the key.
    let env = capped(1000, true);
    let mut key = MemKey::Missing;
    let (outcome, args) = run_line(&env, &mut key, "BF.RESERVE big 0.001 100000");
    assert_eq!(outcome.reply, Reply::Ok);
    assert_eq!(
        propagated(&outcome.propagate, &args).as_deref(),
        Some("BF.RESERVE big 0.001 100000")
    );
    let warnings = env.warnings.borrow();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("loading Bloom filter 'big' (")
            && warnings[0].contains("over bf.max-filter-bytes (1000 bytes)"),
        "{}",
        warnings[0]
    );
}

#[test]
fn a_refused_scale_out_fails_its_items_only() {
    let env = TestEnv::client();
    let mut key = MemKey::Missing;
    run_line(&env, &mut key, "BF.RESERVE k 0.01 4");
    // The cap admits the first link only.
    let size = key.value().chain().reported_size();
    let env = TestEnv::with(|e| e.settings.max_filter_bytes = size);
    let items: Vec<String> = (0..12).map(|i| format!("item{i}")).collect();
    let (outcome, args) = run_line(&env, &mut key, &format!("BF.MADD k {}", items.join(" ")));
    let Reply::Array(replies) = &outcome.reply else {
        panic!("an array");
    };
    assert_eq!(replies.len(), 12, "a refusal does not stop the batch");
    let first_error = replies
        .iter()
        .position(|r| matches!(r, Reply::Error(_)))
        .expect("a refused scale-out");
    // RedisBloom's words for a failed scale-out, then the guard's numbers.
    let Reply::Error(CommandError::Text(text)) = &replies[first_error] else {
        panic!("{:?}", replies[first_error]);
    };
    assert!(
        text.starts_with("ERR problem inserting into filter: the filter would take ")
            && text.ends_with(&format!("over bf.max-filter-bytes ({size} bytes)")),
        "{text}"
    );
    assert!(outcome.events.contains(Event::GuardRefused));
    assert_eq!(key.value().chain().links().len(), 1);
    // Only the items before the refusal, and those present after it, were
    // no-ops or adds; the replica gets the first group only (items present
    // after a failure change nothing).
    let mut expected = vec!["BF.MADD".to_string(), "k".to_string()];
    expected.extend(items[..first_error].iter().cloned());
    for (i, reply) in replies.iter().enumerate().skip(first_error) {
        assert!(
            matches!(reply, Reply::Error(_) | Reply::Bool(false)),
            "item {i}: {reply:?}"
        );
    }
    assert_eq!(
        propagated(&outcome.propagate, &args),
        Some(expected.join(" "))
    );
}

#[test]
fn scandump_then_loadchunk_rebuilds_the_filter() {
    let env = TestEnv::client();
    let mut source = MemKey::Missing;
    run_line(&env, &mut source, "BF.MADD src a b c");
    let mut target = MemKey::Missing;
    let mut iter = 0i64;
    loop {
        let (outcome, _) = run_line(&env, &mut source, &format!("BF.SCANDUMP src {iter}"));
        let Reply::Array(parts) = outcome.reply else {
            panic!("an array");
        };
        let [Reply::Integer(next), Reply::Bulk(chunk)] = parts.as_slice() else {
            panic!("iterator and chunk");
        };
        if *next == 0 {
            break;
        }
        // Chunks are binary: built as arguments directly.
        let args = TestArgs(vec![
            b"BF.LOADCHUNK".to_vec(),
            b"dst".to_vec(),
            next.to_string().into_bytes(),
            chunk.to_vec(),
        ]);
        let request = dump::LoadChunk::parse(&args, &env).expect("numeric");
        let loaded = dump::LoadChunk::run(request, &args, &mut target, &env);
        assert_eq!(loaded.reply, Reply::Ok);
        assert_eq!(loaded.propagate, Propagation::Verbatim);
        let events = if *next == 1 {
            Events::of(&[Event::Created])
        } else {
            Events::default()
        };
        assert_eq!(loaded.events, events);
        iter = *next;
    }
    assert!(target.value().loading().is_none());
    for item in ["a", "b", "c"] {
        let (outcome, _) = run_line(&env, &mut target, &format!("BF.EXISTS dst {item}"));
        assert_eq!(outcome.reply, Reply::Bool(true), "{item}");
    }
    assert_eq!(
        run_line(&env, &mut target, "BF.CARD dst").0.reply,
        Reply::Integer(3)
    );
}
