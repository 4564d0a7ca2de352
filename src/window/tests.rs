//! Windowed filters' commands driven without Redis: the grammars, what a
//! creation and an add propagate (the epoch and origin that make replicas
//! exact), and the clock deciding only on the master.

use ferrobloom_core::window::Span;
use ferrobloom_core::Policy;

use super::grammar::{self, asks_for_window, Source, WindowDefaults};
use super::read::{Card, Exists};
use super::write::{Add, Insert, MAdd, Reserve};
use super::Window;
use crate::command::testing::{self, TestEnv};
use crate::command::{CommandError, KeyedCommand, Propagation, Reply, RewriteArg, TestArgs};
use crate::config::Settings;

type MemKey = testing::MemKey<Window>;

/// Runs `line` on `key`: the reply and what it propagates.
fn run<C: KeyedCommand<Value = Window>>(
    env: &TestEnv,
    key: &mut MemKey,
    line: &str,
) -> (Reply<'static>, Propagation) {
    let (outcome, _) = testing::run::<C>(env, key, line);
    (outcome.reply, outcome.propagate)
}

fn texts(args: &[RewriteArg], line: &str) -> Vec<String> {
    let input = TestArgs::new(line);
    args.iter()
        .map(|a| match a {
            RewriteArg::Input(i) => String::from_utf8(input.0[*i].clone()).unwrap(),
            RewriteArg::Text(t) => t.clone(),
        })
        .collect()
}

fn rewrite(p: &Propagation, line: &str) -> (String, Vec<String>) {
    match p {
        Propagation::Rewrite { command, args } => {
            (command.to_string_lossy().into_owned(), texts(args, line))
        }
        other => panic!("{other:?}"),
    }
}

/// A client's command, and one from the master's stream (or an AOF).
const CLIENT: Source = Source {
    trusted: false,
    now_ms: 1_000_000,
};
const MASTER: Source = Source {
    trusted: true,
    now_ms: 1_000_000,
};

fn defaults() -> WindowDefaults {
    WindowDefaults {
        chain: Settings::DEFAULT.creation_params(),
        generations: Settings::DEFAULT.window_generations,
    }
}

#[test]
fn window_words_route_creations() {
    for (line, window) in [
        ("BF.RESERVE k 0.01 100 WINDOW 1h", true),
        ("BF.RESERVE k 0.01 100 window 1h", true),
        ("BF.RESERVE k 0.01 100", false),
        ("BF.RESERVE window 0.01 100", false),
        ("BF.INSERT k WINDOW 10 ITEMS a", true),
        ("BF.INSERT k ITEMS WINDOW", false),
        ("BF.INSERT k CAPACITY 5 ITEMS a", false),
    ] {
        assert_eq!(asks_for_window(&TestArgs::new(line)), window, "{line}");
    }
}

#[test]
fn reserve_grammar() {
    let parsed = grammar::parse_reserve(
        &TestArgs::new("BF.RESERVE k 0.001 500 WINDOW 30d GENERATIONS 10 POLICY pow2 ORIGIN 7"),
        &defaults(),
        CLIENT,
    )
    .unwrap();
    assert_eq!(
        parsed.params.span,
        Span::Time {
            ms: 30 * 86_400_000
        }
    );
    assert_eq!(parsed.params.generations, 10);
    assert_eq!(parsed.params.policy, Policy::Pow2);
    assert_eq!(parsed.params.capacity, 500);
    assert_eq!(parsed.origin_ms, Some(7));
    let default = grammar::parse_reserve(
        &TestArgs::new("BF.RESERVE k 0.001 500 NONSCALING WINDOW 100"),
        &defaults(),
        CLIENT,
    )
    .unwrap();
    assert_eq!(default.params.generations, 8);
    assert_eq!(default.params.span, Span::Items { count: 100 });
    assert_eq!(default.origin_ms, None);
    for (line, error) in [
        ("BF.RESERVE k 0.001 500 WINDOW", "wrong number"),
        ("BF.RESERVE k x 500 WINDOW 1h", "ERR bad error rate"),
        ("BF.RESERVE k 0.01 x WINDOW 1h", "ERR bad capacity"),
        ("BF.RESERVE k 0.01 5 WINDOW 1h AT 3", "ERR unknown option"),
        (
            "BF.RESERVE k 0.01 5 WINDOW 1h ORIGIN -1",
            "ERR ORIGIN must be",
        ),
        (
            "BF.RESERVE k 0.01 5 WINDOW 1h POLICY fast",
            "ERR bad policy",
        ),
        (
            "BF.RESERVE k 0.01 5 WINDOW 1h GENERATIONS",
            "ERR GENERATIONS must be",
        ),
        (
            "BF.RESERVE k 0.01 5 GENERATIONS 4 NONSCALING",
            "ERR WINDOW needs a span",
        ),
    ] {
        let e = grammar::parse_reserve(&TestArgs::new(line), &defaults(), CLIENT).unwrap_err();
        let text = match &e {
            CommandError::Arity => "wrong number".to_string(),
            CommandError::Static(t) => t.to_string_lossy().into_owned(),
            CommandError::Text(t) => t.clone(),
        };
        assert!(text.starts_with(error), "{line}: {text}");
    }
}

#[test]
fn insert_grammar() {
    let parsed = grammar::parse_insert(
        &TestArgs::new("BF.INSERT k ERROR 0.05 CAPACITY 9 WINDOW 2h AT 4 NOCREATE ITEMS a b"),
        &defaults(),
        MASTER,
    )
    .unwrap();
    let creation = parsed.creation.unwrap();
    assert_eq!(creation.params.error, 0.05);
    assert_eq!(creation.params.capacity, 9);
    assert_eq!(parsed.at, Some(4));
    assert!(parsed.nocreate);
    assert_eq!(parsed.items_from, 12);
    let adds = grammar::parse_insert(
        &TestArgs::new("BF.INSERT k AT 0 ITEMS a"),
        &defaults(),
        MASTER,
    )
    .unwrap();
    assert_eq!(adds.creation, None);
    for line in [
        "BF.INSERT k ITEMS",
        "BF.INSERT k WINDOW 1h",
        "BF.INSERT k AT ITEMS a",
        "BF.INSERT k CAPACITY 0 WINDOW 1h ITEMS a",
        "BF.INSERT k EXPANSION 2 WINDOW 1h ITEMS a",
        "BF.INSERT k FOO ITEMS a",
    ] {
        assert!(
            grammar::parse_insert(&TestArgs::new(line), &defaults(), MASTER).is_err(),
            "{line}"
        );
    }
}

/// A creation spells out every parameter and when epoch 0 began; adds name
/// their epoch, so a replica with another clock (or an AOF replayed a month
/// later) applies them in the same generation.
#[test]
fn creations_and_adds_propagate_their_epochs() {
    let env = TestEnv::at(1_000_000);
    let mut key = MemKey::Missing;
    let line = "BF.RESERVE k 0.01 1000 WINDOW 1h GENERATIONS 4";
    let (reply, p) = run::<Reserve>(&env, &mut key, line);
    assert_eq!(reply, Reply::Ok);
    assert_eq!(
        rewrite(&p, line),
        (
            "bf.reserve".to_string(),
            [
                "k",
                "0.01",
                "1000",
                "WINDOW",
                "1h",
                "GENERATIONS",
                "4",
                "POLICY",
                "exact",
                "ORIGIN",
                "1000000"
            ]
            .map(String::from)
            .to_vec()
        )
    );
    // Two generations (15 minutes each) later.
    env.set_now(1_000_000 + 2 * 900_000 + 5);
    let line = "BF.ADD k a";
    let (reply, p) = run::<Add>(&env, &mut key, line);
    assert_eq!(reply, Reply::Bool(true));
    assert_eq!(
        rewrite(&p, line).1,
        ["k", "AT", "2", "ITEMS", "a"].map(String::from).to_vec()
    );
    // In the same epoch, the command as sent: a replica is at epoch 2
    // already.
    let (_, p) = run::<MAdd>(&env, &mut key, "BF.MADD k a b");
    assert_eq!(p, Propagation::Verbatim);
    env.set_now(1_000_000 + 3 * 900_000);
    let line = "BF.MADD k a b";
    let (_, p) = run::<MAdd>(&env, &mut key, line);
    assert_eq!(
        rewrite(&p, line).1,
        ["k", "AT", "3", "ITEMS", "a", "b"]
            .map(String::from)
            .to_vec()
    );
    // A replica applies the epoch it is given, not its clock.
    let replica = TestEnv {
        replicated: true,
        ..TestEnv::at(0)
    };
    let mut copy = MemKey::Missing;
    run::<Reserve>(
        &replica,
        &mut copy,
        "BF.RESERVE k 0.01 1000 WINDOW 1h GENERATIONS 4 POLICY exact ORIGIN 1000000",
    );
    let (reply, _) = run::<Insert>(&replica, &mut copy, "BF.INSERT k AT 2 ITEMS a b");
    assert_eq!(
        reply,
        Reply::Array(vec![Reply::Bool(true), Reply::Bool(true)])
    );
    run::<MAdd>(&replica, &mut copy, "BF.MADD k a b");
    run::<Insert>(&replica, &mut copy, "BF.INSERT k AT 3 ITEMS a b");
    let (MemKey::Held(a), MemKey::Held(b)) = (&key, &copy) else {
        panic!("both keys hold windows")
    };
    assert_eq!(a.filter().epoch(), b.filter().epoch());
    // Without AT, a replicated add keeps the epoch (the clock says 0 here).
    run::<Add>(&replica, &mut copy, "BF.ADD k c");
    let MemKey::Held(b) = &copy else { panic!() };
    assert_eq!(b.filter().epoch(), 3);
}

#[test]
fn an_insert_that_creates_spells_out_the_creation() {
    let env = TestEnv::at(5_000);
    let mut key = MemKey::Missing;
    let line = "BF.INSERT k CAPACITY 50 WINDOW 20 ITEMS x y";
    let (reply, p) = run::<Insert>(&env, &mut key, line);
    assert_eq!(
        reply,
        Reply::Array(vec![Reply::Bool(true), Reply::Bool(true)])
    );
    assert_eq!(
        rewrite(&p, line).1,
        [
            "k",
            "ERROR",
            "0.01",
            "CAPACITY",
            "50",
            "WINDOW",
            "20",
            "GENERATIONS",
            "8",
            "POLICY",
            "exact",
            "ORIGIN",
            "0",
            "AT",
            "0",
            "ITEMS",
            "x",
            "y"
        ]
        .map(String::from)
        .to_vec()
    );
    assert_eq!(
        run::<Card>(&env, &mut key, "BF.CARD k").0,
        Reply::Integer(2)
    );
    // NOCREATE and a missing window: not found; another type: WRONGTYPE.
    let mut missing = MemKey::Missing;
    let (reply, _) = run::<Insert>(&env, &mut missing, "BF.INSERT k NOCREATE WINDOW 5 ITEMS a");
    assert!(matches!(reply, Reply::Error(_)));
    assert!(matches!(missing, MemKey::Missing));
    let mut other = MemKey::Other;
    let (reply, _) = run::<Exists>(&env, &mut other, "BF.EXISTS k a");
    assert_eq!(
        reply,
        Reply::Error(CommandError::Static(crate::command::WRONGTYPE))
    );
}

/// The events of one command on `key`.
fn events_of<C: KeyedCommand<Value = Window>>(
    env: &TestEnv,
    key: &mut MemKey,
    line: &str,
) -> Vec<&'static str> {
    let args = TestArgs::new(line);
    let request = C::parse(&args, env).unwrap_or_else(|_| panic!("{line}"));
    C::run(request, &args, key, env)
        .events
        .iter()
        .map(|e| e.name().to_str().unwrap())
        .collect()
}

#[test]
fn a_write_that_retires_generations_sends_bf_rotate() {
    // A time window of 4 generations of 15 minutes: epochs 1 to 4 retire
    // nothing (5 generations are live); epoch 5 retires epoch 0. Reads
    // never rotate, so never notify.
    let env = TestEnv::at(0);
    let mut key = MemKey::Missing;
    let created = events_of::<Reserve>(
        &env,
        &mut key,
        "BF.RESERVE k 0.01 100 WINDOW 1h GENERATIONS 4",
    );
    assert_eq!(created, ["bf.create"]);
    assert_eq!(events_of::<Add>(&env, &mut key, "BF.ADD k a"), ["bf.add"]);
    env.set_now(4 * 900_000);
    // Not new (epoch 0 is still live), so no `bf.add`, though `a` is
    // copied into the active generation.
    assert!(events_of::<Add>(&env, &mut key, "BF.ADD k a").is_empty());
    env.set_now(5 * 900_000);
    assert!(events_of::<Exists>(&env, &mut key, "BF.EXISTS k a").is_empty());
    // The add finds `a` no more (epoch 0 left) and it is new again.
    assert_eq!(
        events_of::<MAdd>(&env, &mut key, "BF.MADD k b"),
        ["bf.add", "bf.rotate"]
    );
    env.set_now(9 * 900_000);
    assert_eq!(
        events_of::<Insert>(&env, &mut key, "BF.INSERT k NOCREATE ITEMS c"),
        ["bf.add", "bf.rotate"]
    );
    // An item window rotates inside the MADD that fills a generation.
    let mut items = MemKey::Missing;
    events_of::<Reserve>(
        &env,
        &mut items,
        "BF.RESERVE i 0.01 4 WINDOW 4 GENERATIONS 2",
    );
    let batch = |from: u32| {
        let names: Vec<String> = (from..from + 2).map(|n| format!("x{n}")).collect();
        format!("BF.MADD i {}", names.join(" "))
    };
    let rotated: Vec<bool> = (0..6)
        .map(|n| events_of::<MAdd>(&env, &mut items, &batch(2 * n)).contains(&"bf.rotate"))
        .collect();
    // Generations of 2 items: the third generation's start (after 6 adds)
    // is the first to retire one.
    assert_eq!(rotated, [false, false, true, true, true, true]);
}

#[test]
fn window_fill_levels() {
    use super::observe::fill_level;
    for (fullest, fpr, level) in [
        (0.0, 0.0, "ok"),
        (1.0, 0.009, "ok"),
        (1.01, 0.009, "warning"),
        (1.01, 0.0101, "alert"),
        // An estimate above the rate alerts even when no generation is
        // over its share (a loaded filter that was overfilled elsewhere).
        (0.5, 0.02, "alert"),
    ] {
        assert_eq!(fill_level(fullest, fpr, 0.01).to_str().unwrap(), level);
    }
}

#[test]
fn coverage_grows_with_age_up_to_the_window() {
    use super::observe::coverage;
    let env = TestEnv::at(1_000);
    let mut key = MemKey::Missing;
    run::<Reserve>(
        &env,
        &mut key,
        "BF.RESERVE k 0.01 100 WINDOW 100s GENERATIONS 4",
    );
    let MemKey::Held(w) = &key else { panic!() };
    let f = w.filter();
    for (now, want) in [
        (1_000, 0.0),
        (26_000, 0.25),
        (51_000, 0.5),
        (101_000, 1.0),
        (1_000_000, 1.0),
    ] {
        assert_eq!(coverage(f, f.epoch_at(now), now), want, "at {now}");
    }
    // An item window covers the items its live generations hold.
    let mut items = MemKey::Missing;
    run::<Reserve>(
        &env,
        &mut items,
        "BF.RESERVE i 0.01 100 WINDOW 100 GENERATIONS 4",
    );
    let mut added = 0;
    for (upto, want) in [(0, 0.0), (30, 0.3), (100, 1.0), (160, 1.0)] {
        while added < upto {
            run::<Add>(&env, &mut items, &format!("BF.ADD i item{added}"));
            added += 1;
        }
        let MemKey::Held(w) = &items else { panic!() };
        let f = w.filter();
        assert_eq!(coverage(f, f.epoch(), 0), want, "after {upto}");
    }
}

#[test]
fn configured_generations_apply_to_new_windows_on_the_master_only() {
    let env = TestEnv {
        settings: Settings {
            window_generations: 3,
            ..Settings::DEFAULT
        },
        ..TestEnv::at(0)
    };
    let generations = |key: &MemKey| match key {
        MemKey::Held(w) => w.filter().spec().params.generations,
        _ => panic!("no window"),
    };
    let mut key = MemKey::Missing;
    let line = "BF.RESERVE k 0.01 100 WINDOW 1h";
    let (_, p) = run::<Reserve>(&env, &mut key, line);
    assert_eq!(generations(&key), 3);
    // Replicas get the number spelled out.
    assert!(rewrite(&p, line)
        .1
        .windows(2)
        .any(|w| w == ["GENERATIONS", "3"]));
    let mut explicit = MemKey::Missing;
    run::<Reserve>(
        &env,
        &mut explicit,
        "BF.RESERVE k 0.01 100 WINDOW 1h GENERATIONS 5",
    );
    assert_eq!(generations(&explicit), 5);
    let mut inserted = MemKey::Missing;
    run::<Insert>(&env, &mut inserted, "BF.INSERT k WINDOW 1h ITEMS a");
    assert_eq!(generations(&inserted), 3);
    // A replicated or loaded creation without GENERATIONS (never written
    // by a master) gets the built-in 8, whatever the local setting.
    let replica = TestEnv {
        replicated: true,
        ..env
    };
    let mut copy = MemKey::Missing;
    run::<Reserve>(
        &replica,
        &mut copy,
        "BF.RESERVE k 0.01 100 WINDOW 1h ORIGIN 0",
    );
    assert_eq!(generations(&copy), 8);
}

/// `AT` names the epoch of a master's add: only the master's stream and
/// the AOF may send it. From a client it is an unknown option, and the
/// error does not advertise it.
#[test]
fn only_a_master_or_an_aof_names_an_epoch() {
    let env = TestEnv::at(1_000_000);
    let mut key = MemKey::Missing;
    run::<Reserve>(&env, &mut key, "BF.RESERVE k 0.01 100 WINDOW 20s");
    let (reply, p) = run::<Insert>(&env, &mut key, "BF.INSERT k AT 999999 ITEMS x");
    let Reply::Error(CommandError::Static(text)) = reply else {
        panic!("{reply:?}")
    };
    let text = text.to_str().unwrap();
    assert!(text.starts_with("ERR unknown option"), "{text}");
    assert!(!text.contains(" AT"), "{text}");
    assert_eq!(p, Propagation::Nothing);
    let MemKey::Held(w) = &key else { panic!() };
    assert_eq!(w.filter().epoch(), 0);
    // From the master, an epoch older than the filter's adds to the
    // active generation: the add is never lost.
    let replica = TestEnv {
        replicated: true,
        ..TestEnv::at(0)
    };
    run::<Insert>(&replica, &mut key, "BF.INSERT k AT 5 ITEMS a");
    let (reply, _) = run::<Insert>(&replica, &mut key, "BF.INSERT k AT 0 ITEMS y");
    assert_eq!(reply, Reply::Array(vec![Reply::Bool(true)]));
    let MemKey::Held(w) = &key else { panic!() };
    assert_eq!(w.filter().epoch(), 5);
    assert_eq!(
        run::<Exists>(&replica, &mut key, "BF.EXISTS k y").0,
        Reply::Bool(true)
    );
}

#[test]
fn a_clients_origin_is_not_in_the_future() {
    let now: u64 = 1_000_000;
    let parse = |line: &str, source: Source| {
        grammar::parse_reserve(&TestArgs::new(line), &defaults(), source)
    };
    for ms in [0, now - 300_000, now, now + 1_000] {
        let line = format!("BF.RESERVE k 0.01 100 WINDOW 1h ORIGIN {ms}");
        assert_eq!(parse(&line, CLIENT).unwrap().origin_ms, Some(ms), "{line}");
    }
    for ms in [now + 1_001, now + 60_000, 99_999_999_999_999_999u64] {
        let line = format!("BF.RESERVE k 0.01 100 WINDOW 1h ORIGIN {ms}");
        let Err(CommandError::Text(e)) = parse(&line, CLIENT) else {
            panic!("{line}")
        };
        assert!(
            e.starts_with(&format!("ERR ORIGIN {ms} is in the future")),
            "{e}"
        );
        // A master's creation is applied whatever the replica's clock says.
        assert_eq!(parse(&line, MASTER).unwrap().origin_ms, Some(ms));
    }
    // An item window has no clock: ORIGIN is refused, not ignored.
    let env = TestEnv::at(now);
    let mut key = MemKey::Missing;
    let (reply, _) = run::<Reserve>(&env, &mut key, "BF.RESERVE k 0.01 100 WINDOW 100 ORIGIN 5");
    assert!(
        matches!(reply, Reply::Error(CommandError::Static(t)) if t == super::replies::ORIGIN_NEEDS_TIME)
    );
    assert!(matches!(key, MemKey::Missing));
}

#[test]
fn options_are_given_once() {
    for line in [
        "BF.RESERVE k 0.01 100 WINDOW 10s WINDOW 20s",
        "BF.RESERVE k 0.01 100 WINDOW 10s GENERATIONS 2 generations 2",
        "BF.RESERVE k 0.01 100 WINDOW 10s POLICY exact POLICY pow2",
        "BF.RESERVE k 0.01 100 WINDOW 10s NONSCALING NONSCALING",
        "BF.RESERVE k 0.01 100 WINDOW 10s ORIGIN 1 ORIGIN 2",
    ] {
        let Err(CommandError::Text(e)) =
            grammar::parse_reserve(&TestArgs::new(line), &defaults(), CLIENT)
        else {
            panic!("{line}")
        };
        assert!(e.ends_with("is given more than once"), "{line}: {e}");
    }
    for line in [
        "BF.INSERT k CAPACITY 5 CAPACITY 6 WINDOW 1h ITEMS a",
        "BF.INSERT k ERROR 0.1 WINDOW 1h ERROR 0.2 ITEMS a",
        "BF.INSERT k NOCREATE NOCREATE WINDOW 1h ITEMS a",
        "BF.INSERT k AT 1 AT 2 ITEMS a",
    ] {
        let Err(CommandError::Text(e)) =
            grammar::parse_insert(&TestArgs::new(line), &defaults(), MASTER)
        else {
            panic!("{line}")
        };
        assert!(e.ends_with("is given more than once"), "{line}: {e}");
    }
}

/// BF.INSERT's creation options on an existing window must match it, as
/// WINDOW on a plain filter is refused; a master's add never is.
#[test]
fn an_insert_into_an_existing_window_with_other_options_is_refused() {
    let env = TestEnv::at(1_000_000);
    let mut key = MemKey::Missing;
    run::<Reserve>(
        &env,
        &mut key,
        "BF.RESERVE k 0.01 1000 WINDOW 1h GENERATIONS 4",
    );
    for (line, wanted) in [
        ("BF.INSERT k WINDOW 2h ITEMS a", "WINDOW 1h"),
        (
            "BF.INSERT k WINDOW 1h GENERATIONS 8 ITEMS a",
            "GENERATIONS 4",
        ),
        ("BF.INSERT k WINDOW 1h POLICY pow2 ITEMS a", "POLICY exact"),
        ("BF.INSERT k CAPACITY 5 WINDOW 1h ITEMS a", "CAPACITY 1000"),
        ("BF.INSERT k ERROR 0.5 WINDOW 1h ITEMS a", "ERROR 0.01"),
        ("BF.INSERT k WINDOW 1h ORIGIN 5 ITEMS a", "ORIGIN 1000000"),
    ] {
        let (reply, p) = run::<Insert>(&env, &mut key, line);
        let Reply::Error(CommandError::Text(e)) = reply else {
            panic!("{line}: {reply:?}")
        };
        assert_eq!(
            e,
            format!("ERR the key holds a windowed filter with {wanted}: creation options apply only when creating a filter")
        );
        assert_eq!(p, Propagation::Nothing);
    }
    assert_eq!(
        run::<Card>(&env, &mut key, "BF.CARD k").0,
        Reply::Integer(0)
    );
    // The same options, or none: the add goes through.
    for line in [
        "BF.INSERT k WINDOW 1h GENERATIONS 4 CAPACITY 1000 ERROR 0.01 POLICY exact ITEMS a",
        "BF.INSERT k WINDOW 3600s ITEMS b",
        "BF.INSERT k ITEMS c",
    ] {
        let (reply, _) = run::<Insert>(&env, &mut key, line);
        assert_eq!(reply, Reply::Array(vec![Reply::Bool(true)]), "{line}");
    }
    let replica = TestEnv {
        replicated: true,
        ..TestEnv::at(0)
    };
    let (reply, _) = run::<Insert>(&replica, &mut key, "BF.INSERT k WINDOW 2h AT 0 ITEMS d");
    assert_eq!(reply, Reply::Array(vec![Reply::Bool(true)]));
}

#[test]
fn item_windows_of_fewer_items_than_generations_are_refused() {
    let env = TestEnv::at(0);
    for line in [
        "BF.RESERVE k 0.01 100 WINDOW 3 GENERATIONS 64",
        "BF.RESERVE k 0.01 100 WINDOW 7",
    ] {
        let mut key = MemKey::Missing;
        let (reply, _) = run::<Reserve>(&env, &mut key, line);
        assert_eq!(
            reply,
            Reply::Error(CommandError::Static(super::replies::GENERATIONS_OVER_ITEMS)),
            "{line}"
        );
    }
    let mut key = MemKey::Missing;
    let (reply, _) = run::<Reserve>(&env, &mut key, "BF.RESERVE k 0.01 100 WINDOW 8");
    assert_eq!(reply, Reply::Ok);
}

/// NONSCALING is spelled out for replicas and the AOF, and BF.INSERT
/// naming it on a scaling window is refused like any other mismatch.
#[test]
fn nonscaling_is_propagated_and_checked() {
    let env = TestEnv::at(1_000_000);
    let mut key = MemKey::Missing;
    let line = "BF.RESERVE k 0.01 1000 WINDOW 1h NONSCALING";
    let (reply, p) = run::<Reserve>(&env, &mut key, line);
    assert_eq!(reply, Reply::Ok);
    assert_eq!(
        rewrite(&p, line).1.last().map(String::as_str),
        Some("NONSCALING")
    );
    let MemKey::Held(w) = &key else { panic!() };
    assert!(!w.filter().spec().params.scaling);
    let (reply, _) = run::<Insert>(&env, &mut key, "BF.INSERT k WINDOW 1h NONSCALING ITEMS a");
    assert_eq!(reply, Reply::Array(vec![Reply::Bool(true)]));
    let mut scaling = MemKey::Missing;
    run::<Reserve>(&env, &mut scaling, "BF.RESERVE k 0.01 1000 WINDOW 1h");
    let (reply, _) = run::<Insert>(
        &env,
        &mut scaling,
        "BF.INSERT k WINDOW 1h NONSCALING ITEMS a",
    );
    assert!(matches!(reply, Reply::Error(CommandError::Text(t)) if t.contains("NONSCALING")));
}

/// Adds go to replicas as sent while the clock does not move the epoch
/// (an item window's never does: its epoch moves with its adds alone); a
/// time window's write that moves it names the epoch; a creation spells
/// out its options either way.
#[test]
fn item_window_adds_propagate_verbatim() {
    let env = TestEnv::at(1_000_000);
    let mut key = MemKey::Missing;
    let line = "BF.INSERT k WINDOW 100 ITEMS a b";
    let (_, p) = run::<Insert>(&env, &mut key, line);
    assert_eq!(rewrite(&p, line).0, "bf.insert");
    for line in ["BF.ADD k c", "BF.MADD k c d", "BF.INSERT k ITEMS e"] {
        let (_, p) = match line.split(' ').next() {
            Some("BF.ADD") => run::<Add>(&env, &mut key, line),
            Some("BF.MADD") => run::<MAdd>(&env, &mut key, line),
            _ => run::<Insert>(&env, &mut key, line),
        };
        assert_eq!(p, Propagation::Verbatim, "{line}");
    }
    let mut timed = MemKey::Missing;
    run::<Reserve>(&env, &mut timed, "BF.RESERVE t 0.01 100 WINDOW 1h");
    let (_, p) = run::<Add>(&env, &mut timed, "BF.ADD t c");
    assert_eq!(p, Propagation::Verbatim);
    env.set_now(1_000_000 + 450_000);
    let (_, p) = run::<Add>(&env, &mut timed, "BF.ADD t c");
    assert_eq!(rewrite(&p, "BF.ADD t c").1, ["t", "AT", "1", "ITEMS", "c"]);
}
