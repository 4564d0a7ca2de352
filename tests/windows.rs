//! Windowed filters on a real server: BF.* on them with the usual reply
//! shapes (RESP2 and RESP3), forgetting by items and by the clock, bad
//! input refused without changing anything, and persistence: DEBUG RELOAD,
//! DUMP/RESTORE, COPY, a replica and an AOF replay (with and without the
//! RDB preamble) ending with the master's state (DEBUG DIGEST-VALUE equal).

mod common;

use std::thread::sleep;
use std::time::{Duration, Instant};

use common::client::{digest, error, ferrobloom, int, ok, run};
use common::info::info_field;
use common::replication::{replicate, wait_for_aof_rewrite, wait_for_replica};
use common::{decode, RawClient, Resp, Server};

#[test]
fn windowed_filters_answer_the_bf_commands_in_their_usual_shapes() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE w 0.01 1000 WINDOW 30d");
    assert_eq!(run(&mut r, "TYPE w"), Resp::Simple("FBwindows".into()));
    assert_eq!(int(&mut r, "BF.ADD w a"), 1);
    assert_eq!(int(&mut r, "BF.ADD w a"), 0);
    assert_eq!(
        run(&mut r, "BF.MADD w a b c"),
        Resp::Array(vec![Resp::Int(0), Resp::Int(1), Resp::Int(1)])
    );
    assert_eq!(
        run(&mut r, "BF.INSERT w ITEMS c d"),
        Resp::Array(vec![Resp::Int(0), Resp::Int(1)])
    );
    assert_eq!(int(&mut r, "BF.EXISTS w d"), 1);
    assert_eq!(int(&mut r, "BF.EXISTS w zz"), 0);
    assert_eq!(
        run(&mut r, "BF.MEXISTS w a zz"),
        Resp::Array(vec![Resp::Int(1), Resp::Int(0)])
    );
    assert_eq!(int(&mut r, "BF.CARD w"), 4);
    // BF.INFO keeps RedisBloom's five fields (a non-scaling filter's
    // shape: no expansion); the window's fields come by name.
    ok(&mut r, "BF.RESERVE plain 0.01 1000 NONSCALING");
    let labels = |reply: Resp| match reply {
        Resp::Array(items) => items
            .iter()
            .step_by(2)
            .map(|l| l.as_str().unwrap())
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        labels(run(&mut r, "BF.INFO w")),
        labels(run(&mut r, "BF.INFO plain"))
    );
    assert_eq!(
        run(&mut r, "BF.INFO w ITEMS"),
        Resp::Array(vec![Resp::Int(4)])
    );
    assert_eq!(
        run(&mut r, "BF.INFO w WINDOW"),
        Resp::Array(vec![Resp::Bulk(b"30d".to_vec())])
    );
    assert_eq!(
        run(&mut r, "BF.INFO w GENERATIONS"),
        Resp::Array(vec![Resp::Int(8)])
    );
    assert!(error(&mut r, "BF.INFO plain WINDOW").contains("Invalid information value"));
    assert!(error(&mut r, "BF.SCANDUMP w 0").contains("windowed filters do not support"));
    assert!(error(&mut r, "BF.DEBUG w").contains("windowed filters do not support"));
    let memory = int(&mut r, "MEMORY USAGE w");
    assert!(memory > 2_000, "{memory}");

    // RESP3: booleans and maps, as for any filter.
    r.hello3();
    assert_eq!(run(&mut r, "BF.ADD w e"), Resp::Bool(true));
    assert_eq!(
        run(&mut r, "BF.MEXISTS w e zz"),
        Resp::Array(vec![Resp::Bool(true), Resp::Bool(false)])
    );
    match run(&mut r, "BF.INFO w") {
        Resp::Map(fields) => assert_eq!(fields.len(), 5),
        other => panic!("{other:?}"),
    }
}

/// An item window of 100 items in 4 generations: the last 100 items are
/// always found; items 125 or more adds old are gone (a few may still
/// answer yes as false positives, at the error rate).
#[test]
fn item_windows_keep_the_last_items_and_forget_the_rest() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE w 0.001 100 WINDOW 100 GENERATIONS 4");
    let item = |i: u32| format!("url:{i}");
    for i in 0..1000u32 {
        r.cmd(&["BF.ADD", "w", &item(i)]);
        if i % 50 == 49 {
            for j in i.saturating_sub(99)..=i {
                assert_eq!(
                    decode(&r.cmd(&["BF.EXISTS", "w", &item(j)])),
                    Resp::Int(1),
                    "item {j} after {i}"
                );
            }
            if i >= 200 {
                let old = (0..=i - 125)
                    .filter(|&j| decode(&r.cmd(&["BF.EXISTS", "w", &item(j)])) == Resp::Int(1))
                    .count();
                assert!(
                    old <= 1 + (i as usize - 125) / 100,
                    "{old} old items found at {i}"
                );
            }
        }
    }
    assert!(int(&mut r, "BF.CARD w") <= 125);
    let forgotten = match run(&mut r, "BF.INFO w FORGOTTEN") {
        Resp::Array(v) => match v[0] {
            Resp::Int(n) => n,
            _ => panic!(),
        },
        other => panic!("{other:?}"),
    };
    assert!(forgotten >= 1000 - 125, "{forgotten}");
}

/// A window of 2 s in 2 generations (1 s each): an item is found for the
/// whole window and gone 3 s after its add at the latest, with no write
/// in between (lookups read the clock).
#[test]
fn time_windows_forget_by_the_clock() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE t 0.001 1000 WINDOW 2s GENERATIONS 2");
    let added = Instant::now();
    assert_eq!(int(&mut r, "BF.ADD t x"), 1);
    sleep(Duration::from_millis(1_500));
    if added.elapsed() < Duration::from_millis(1_950) {
        assert_eq!(int(&mut r, "BF.EXISTS t x"), 1);
    }
    sleep(Duration::from_millis(3_050).saturating_sub(added.elapsed()));
    assert_eq!(int(&mut r, "BF.EXISTS t x"), 0);
    assert_eq!(int(&mut r, "BF.CARD t"), 0);
    // Added again, it lives again.
    assert_eq!(int(&mut r, "BF.ADD t x"), 1);
    assert_eq!(int(&mut r, "BF.EXISTS t x"), 1);
}

#[test]
fn bad_window_arguments_are_refused_and_change_nothing() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE plain 0.01 100");
    ok(&mut r, "BF.RESERVE w 0.01 100 WINDOW 1h");
    let before = r.cmd(&["DEBUG", "DIGEST"]);
    for (line, wanted) in [
        (
            "BF.RESERVE x 0.01 100 WINDOW 0",
            "ERR WINDOW must be positive",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW -5",
            "ERR WINDOW must be positive",
        ),
        ("BF.RESERVE x 0.01 100 WINDOW 5w", "ERR WINDOW unit must be"),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1.5h",
            "ERR WINDOW must be a whole number",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW",
            "ERR wrong number of arguments",
        ),
        (
            "BF.RESERVE x 0.01 100 GENERATIONS 4 WINDOW",
            "ERR WINDOW needs a span",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 36501d",
            "ERR WINDOW is too long",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1h GENERATIONS 0",
            "ERR GENERATIONS must be",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1h GENERATIONS 65",
            "ERR GENERATIONS must be",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1h GENERATIONS many",
            "ERR GENERATIONS must be",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1h EXPANSION 2",
            "ERR EXPANSION does not apply",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 1h COLOUR red",
            "ERR unknown option",
        ),
        (
            "BF.RESERVE x 2 100 WINDOW 1h",
            "ERR (0 < error rate range < 1)",
        ),
        (
            "BF.RESERVE x 0.01 0 WINDOW 1h",
            "ERR (capacity should be larger than 0)",
        ),
        ("BF.RESERVE w 0.01 100 WINDOW 1h", "ERR item exists"),
        ("BF.RESERVE plain 0.01 100 WINDOW 1h", "ERR item exists"),
        (
            "BF.INSERT plain WINDOW 1h ITEMS a",
            "ERR the key holds a Bloom filter without a window",
        ),
        (
            "BF.INSERT x WINDOW 1h GENERATIONS 0 ITEMS a",
            "ERR GENERATIONS must be",
        ),
        ("BF.INSERT w AT -1 ITEMS a", "ERR unknown option"),
        (
            "BF.LOADCHUNK w 1 abc",
            "ERR windowed filters do not support",
        ),
        (
            "BF.ADD w",
            "ERR wrong number of arguments for 'bf.add' command",
        ),
    ] {
        let e = error(&mut r, line);
        assert!(e.starts_with(wanted), "{line}: {e}");
    }
    assert_eq!(int(&mut r, "EXISTS x"), 0);
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), before);
    // A 2^40-item window is refused by the memory guard before anything is
    // allocated.
    let e = error(&mut r, "BF.RESERVE huge 0.001 1099511627776 WINDOW 30d");
    assert!(
        e.starts_with("ERR Insufficient memory to create filter"),
        "{e}"
    );
    assert_eq!(int(&mut r, "EXISTS huge"), 0);
}

/// Fills `key` over `rounds` rounds `pause` apart, so that a time window
/// rotates in between.
fn feed(r: &mut RawClient, key: &str, rounds: u32, pause: Duration) {
    for round in 0..rounds {
        let items: Vec<String> = (0..40).map(|i| format!("{round}:{i}")).collect();
        let mut args = vec!["BF.MADD".to_string(), key.to_string()];
        args.extend(items);
        r.cmd(&args);
        r.cmd(&["BF.ADD", key, &format!("single:{round}")]);
        r.cmd(&["BF.INSERT", key, "ITEMS", &format!("insert:{round}")]);
        sleep(pause);
    }
}

#[test]
fn replicas_and_aof_replays_end_with_the_masters_state() {
    let (mut master, replica) = master_with_replica();
    let mut m = master.raw();
    let mut s = replica.raw();
    ok(&mut m, "BF.RESERVE t 0.01 200 WINDOW 1s GENERATIONS 4");
    assert_eq!(
        run(
            &mut m,
            "BF.INSERT i CAPACITY 50 ERROR 0.01 WINDOW 50 GENERATIONS 5 ITEMS a b"
        ),
        Resp::Array(vec![Resp::Int(1), Resp::Int(1)])
    );
    feed(&mut m, "t", 6, Duration::from_millis(300));
    feed(&mut m, "i", 6, Duration::ZERO);
    wait_for_replica(&mut m, &mut s, Duration::from_secs(20));
    for key in ["t", "i"] {
        assert_eq!(
            digest(&mut m, key),
            digest(&mut s, key),
            "{key} on the replica"
        );
        assert_ne!(digest(&mut m, key), digest(&mut m, "missing"));
    }
    assert!(
        info_field(&mut m, "bf", "bf_window_rotations")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    let before: Vec<Vec<u8>> = ["t", "i"].iter().map(|k| digest(&mut m, k)).collect();
    drop(m);
    aof_replays_keep(&mut master, &["t", "i"], &before);
}

/// A master with its AOF on (no RDB preamble) and a replica linked to it.
fn master_with_replica() -> (Server, Server) {
    let master = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let replica = Server::start(ferrobloom());
    replicate(&master, &replica, Duration::from_secs(20));
    (master, replica)
}

/// The master's AOF as written, then as rewritten (a RESTORE of each
/// value), replayed by a restart: `keys` keep the digests `before`.
fn aof_replays_keep(master: &mut Server, keys: &[&str], before: &[Vec<u8>]) {
    for rewrite in [false, true] {
        let mut m = master.raw();
        if rewrite {
            let started = run(&mut m, "BGREWRITEAOF");
            assert!(matches!(started, Resp::Simple(_)), "{started:?}");
            wait_for_aof_rewrite(&mut m, Duration::from_secs(20));
        }
        master.restart();
        let mut m = master.raw();
        let after: Vec<Vec<u8>> = keys.iter().map(|k| digest(&mut m, k)).collect();
        assert_eq!(after, before, "after an AOF replay (rewritten: {rewrite})");
    }
}

#[test]
fn reload_dump_restore_and_copy_keep_the_window() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(
        &mut r,
        "BF.RESERVE w 0.01 100 WINDOW 40 GENERATIONS 4 POLICY pow2",
    );
    feed(&mut r, "w", 3, Duration::ZERO);
    let d = digest(&mut r, "w");
    ok(&mut r, "DEBUG RELOAD");
    assert_eq!(digest(&mut r, "w"), d);
    assert_eq!(int(&mut r, "BF.EXISTS w insert:2"), 1);
    let payload = match run(&mut r, "DUMP w") {
        Resp::Bulk(b) => b,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        decode(&r.cmd(&[b"RESTORE".as_slice(), b"w2", b"0", &payload])),
        Resp::Simple("OK".into())
    );
    assert_eq!(digest(&mut r, "w2"), d);
    assert_eq!(int(&mut r, "COPY w w3"), 1);
    assert_eq!(digest(&mut r, "w3"), d);
    // The copy is independent.
    assert_eq!(int(&mut r, "BF.ADD w3 only-in-the-copy"), 1);
    assert_eq!(int(&mut r, "BF.EXISTS w only-in-the-copy"), 0);
    // A damaged payload is refused and stores nothing.
    let mut damaged = payload.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0xff;
    assert!(decode(&r.cmd(&[b"RESTORE".as_slice(), b"w4", b"0", &damaged])).is_error());
    assert_eq!(int(&mut r, "EXISTS w4"), 0);
    assert_eq!(int(&mut r, "BF.EXISTS w insert:2"), 1);
}

/// BF.PLAN ... WINDOW sizes a windowed filter without allocating it: the
/// crawler's 30-day window at 0.1% (the numbers in docs/windows.md).
#[test]
fn plan_sizes_a_window_before_it_exists() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    let reply = run(&mut r, "BF.PLAN 15000000 0.001 WINDOW 30d");
    let Resp::Array(fields) = reply else {
        panic!("{reply:?}")
    };
    let field = |name: &str| {
        let at = fields
            .iter()
            .position(|f| f.as_str().as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no {name}"));
        fields[at + 1].clone()
    };
    assert_eq!(field("window"), Resp::Bulk(b"30d".to_vec()));
    assert_eq!(field("generations"), Resp::Int(8));
    assert_eq!(field("generation_span"), Resp::Bulk(b"90h".to_vec()));
    assert_eq!(field("generation_capacity"), Resp::Int(1_875_000));
    assert_eq!(field("bit_arrays"), Resp::Int(10));
    assert_eq!(field("bytes"), Resp::Int(44_927_840));
    assert_eq!(field("plain_filter_bytes"), Resp::Int(26_957_984));
    assert_eq!(int(&mut r, "DBSIZE"), 0);
    // What BF.RESERVE then allocates is what was planned.
    ok(&mut r, "BF.RESERVE seen 0.001 15000000 WINDOW 30d");
    assert_eq!(
        run(&mut r, "BF.INFO seen SIZE"),
        Resp::Array(vec![Resp::Int(44_927_840)])
    );
    for (line, wanted) in [
        ("BF.PLAN 0 0.001 WINDOW 30d", "ERR bad capacity"),
        ("BF.PLAN 100 0.001 WINDOW 0", "ERR WINDOW must be positive"),
        (
            "BF.PLAN 100 0.001 WINDOW 1h ORIGIN 5",
            "ERR unknown option for BF.PLAN of a windowed filter (expected WINDOW, GENERATIONS, POLICY or NONSCALING)",
        ),
        (
            "BF.PLAN 100 0.001 WINDOW 1h GENERATIONS 99",
            "ERR GENERATIONS must be",
        ),
    ] {
        let e = error(&mut r, line);
        assert!(e.starts_with(wanted), "{line}: {e}");
    }
}

/// BF.STATS name/value pairs (RESP2), by name.
fn stats(r: &mut RawClient, key: &str) -> std::collections::BTreeMap<String, Resp> {
    match run(r, &format!("BF.STATS {key}")) {
        Resp::Array(flat) => flat
            .chunks(2)
            .map(|p| (p[0].as_str().unwrap().to_string(), p[1].clone()))
            .collect(),
        other => panic!("BF.STATS {key}: {other:?}"),
    }
}

fn as_u64(v: &Resp) -> u64 {
    match v {
        Resp::Int(n) => u64::try_from(*n).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn as_f64(v: &Resp) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{v:?}"))
}

/// Reads keyspace events (`__keyevent@0__:*`) until `sentinel`'s
/// `bf.create`, as (event, key) pairs.
fn events_until(sub: &mut RawClient, sentinel: &str) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    loop {
        let Resp::Array(msg) = decode(&sub.read_reply().expect("a keyspace event")) else {
            panic!("not a message")
        };
        if msg[0].as_str().as_deref() != Some("pmessage") {
            continue;
        }
        let channel = msg[2].as_str().unwrap();
        let event = channel.rsplit(':').next().unwrap().to_string();
        let key = msg[3].as_str().unwrap().to_string();
        if key == sentinel {
            return seen;
        }
        seen.push((event, key));
    }
}

/// BF.STATS shows each live generation (items, fill, age), the rotations
/// and forgotten items (the same numbers as BF.CARD and BF.INFO), how much
/// of its window the filter covers, and a fill level that warns when a
/// generation gets more than its share and alerts when the estimated false
/// positive rate is above the error rate; each write that retires
/// generations sends `bf.rotate`.
#[test]
fn stats_show_each_generation_and_rotations_are_notified() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "CONFIG SET notify-keyspace-events Ed");
    let mut sub = server.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);

    // An item window: 1,000 items per generation, 3 generations.
    ok(&mut r, "BF.RESERVE w 0.01 3000 WINDOW 3000 GENERATIONS 3");
    for batch in 0..45 {
        let mut args = vec!["BF.MADD".to_string(), "w".to_string()];
        args.extend((0..100).map(|i| format!("item:{}", batch * 100 + i)));
        r.cmd(&args);
    }
    let s = stats(&mut r, "w");
    assert_eq!(s["window"].as_str().as_deref(), Some("3000"));
    assert_eq!(s["generation_span"].as_str().as_deref(), Some("1000"));
    assert_eq!(as_u64(&s["generations"]), 3);
    assert_eq!(as_u64(&s["epoch"]), 4);
    assert_eq!(as_u64(&s["items"]), int(&mut r, "BF.CARD w") as u64);
    assert_eq!(as_u64(&s["rotations"]), 1);
    assert_eq!(as_u64(&s["forgotten"]), 1000);
    assert_eq!(
        run(&mut r, "BF.INFO w FORGOTTEN"),
        Resp::Array(vec![Resp::Int(1000)])
    );
    assert_eq!(as_f64(&s["coverage"]), 1.0);
    assert_eq!(s["fill_level"].as_str().as_deref(), Some("ok"));
    let Resp::Array(generations) = &s["per_generation"] else {
        panic!("{:?}", s["per_generation"])
    };
    let generations: Vec<_> = generations
        .iter()
        .map(|g| match g {
            Resp::Array(flat) => flat
                .chunks(2)
                .map(|p| (p[0].as_str().unwrap().to_string(), p[1].clone()))
                .collect::<std::collections::BTreeMap<_, _>>(),
            other => panic!("{other:?}"),
        })
        .collect();
    let epochs: Vec<u64> = generations.iter().map(|g| as_u64(&g["epoch"])).collect();
    assert_eq!(epochs, [1, 2, 3, 4]);
    let items: Vec<u64> = generations.iter().map(|g| as_u64(&g["items"])).collect();
    assert_eq!(items[..3], [1000, 1000, 1000]);
    // The last 500 adds, less those already in the active generation
    // (false positives of a 1,000-item generation).
    assert!((480..=500).contains(&items[3]), "{items:?}");
    assert_eq!(items.iter().sum::<u64>(), as_u64(&s["items"]));
    let mut miss = 1.0;
    for g in &generations {
        assert_eq!(g["age_ms"], Resp::Nil, "an item window has no clock");
        let fill = as_f64(&g["fill_ratio"]);
        assert_eq!(
            fill,
            as_u64(&g["items"]) as f64 / as_u64(&g["capacity"]) as f64
        );
        miss *= 1.0 - as_f64(&g["estimated_fpr"]);
    }
    let fpr = as_f64(&s["estimated_fpr"]);
    assert!((fpr - (1.0 - miss)).abs() < 1e-12, "{fpr} {miss}");
    assert!(fpr < 0.01, "{fpr}");

    // A time window far younger than its span covers little of it; a
    // generation that receives more than its share warns, and once the
    // estimate passes the error rate, alerts.
    ok(&mut r, "BF.RESERVE t 0.01 100 WINDOW 1h GENERATIONS 2");
    let s = stats(&mut r, "t");
    assert!(as_f64(&s["coverage"]) < 0.01, "{:?}", s["coverage"]);
    assert_eq!(s["fill_level"].as_str().as_deref(), Some("ok"));
    let mut added = 0;
    let mut levels = Vec::new();
    while added < 20_000 {
        let mut args = vec!["BF.MADD".to_string(), "t".to_string()];
        args.extend((0..250).map(|i| format!("t:{}", added + i)));
        r.cmd(&args);
        added += 250;
        let s = stats(&mut r, "t");
        let level = s["fill_level"].as_str().unwrap().to_string();
        let fill = as_f64(&s["fill_ratio"]);
        let fpr = as_f64(&s["estimated_fpr"]);
        let want = if fpr > 0.01 || fill > 2.0 {
            "alert"
        } else if fill > 1.0 {
            "warning"
        } else {
            "ok"
        };
        assert_eq!(level, want, "fill {fill} fpr {fpr}");
        if levels.last() != Some(&level) {
            levels.push(level);
        }
    }
    assert_eq!(levels, ["ok", "warning", "alert"]);
    let Resp::Array(generations) = &stats(&mut r, "t")["per_generation"] else {
        panic!()
    };
    let Resp::Array(first) = &generations[0] else {
        panic!()
    };
    assert_eq!(first[2].as_str().as_deref(), Some("age_ms"));
    assert!(as_u64(&first[3]) < 60_000);

    // RESP3: a map.
    r.hello3();
    match run(&mut r, "BF.STATS w") {
        Resp::Map(fields) => assert_eq!(fields.len(), 19),
        other => panic!("{other:?}"),
    }
    assert!(error(&mut r, "BF.STATS nothing").starts_with("ERR not found"));

    // Notifications: the MADD that began epoch 4 (at 4,000 items) retired
    // epoch 0 and sent `bf.rotate`; epochs 1 to 3 retired nothing (G + 1
    // generations are live).
    ok(&mut r, "BF.RESERVE zz-sentinel 0.01 10");
    let events = events_until(&mut sub, "zz-sentinel");
    let on_w: Vec<&str> = events
        .iter()
        .filter(|(_, key)| key == "w")
        .map(|(e, _)| e.as_str())
        .collect();
    assert_eq!(on_w.iter().filter(|e| **e == "bf.rotate").count(), 1);
    assert_eq!(on_w.iter().filter(|e| **e == "bf.add").count(), 45);
    assert_eq!(on_w[0], "bf.create");
}

/// The server's clock in milliseconds.
fn server_ms(r: &mut RawClient) -> u64 {
    match run(r, "TIME") {
        Resp::Array(v) => {
            let part = |i: usize| v[i].as_str().unwrap().parse::<u64>().unwrap();
            part(0) * 1000 + part(1) / 1000
        }
        other => panic!("{other:?}"),
    }
}

fn info_int(r: &mut RawClient, key: &str, field: &str) -> i64 {
    match run(r, &format!("BF.INFO {key} {field}")) {
        Resp::Array(v) => match v[0] {
            Resp::Int(n) => n,
            ref other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// A client cannot move a window's clock: `AT` is an unknown option from
/// it (the master's stream and the AOF still carry it: the replica and
/// AOF tests), an `ORIGIN` ahead of the server's clock is refused, and
/// nothing changes.
#[test]
fn clients_cannot_move_a_windows_clock() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE tw 0.01 1000 WINDOW 20s");
    assert_eq!(int(&mut r, "BF.ADD tw before"), 1);
    let digest_before = digest(&mut r, "tw");
    for line in [
        "BF.INSERT tw AT 999999 ITEMS x",
        "BF.INSERT tw AT 0 ITEMS y",
    ] {
        let e = error(&mut r, line);
        assert!(e.starts_with("ERR unknown option"), "{line}: {e}");
        assert!(!e.contains(" AT"), "the error advertises AT: {e}");
    }
    assert_eq!(info_int(&mut r, "tw", "EPOCH"), 0);
    assert_eq!(int(&mut r, "BF.EXISTS tw before"), 1);
    assert_eq!(int(&mut r, "BF.EXISTS tw x"), 0);
    assert_eq!(digest(&mut r, "tw"), digest_before);
    let now = server_ms(&mut r);
    for origin in [99_999_999_999_999_999u64, now + 60_000] {
        let e = error(
            &mut r,
            &format!("BF.RESERVE o 0.01 100 WINDOW 1h ORIGIN {origin}"),
        );
        assert!(
            e.starts_with(&format!("ERR ORIGIN {origin} is in the future")),
            "{e}"
        );
    }
    let e = error(&mut r, "BF.INSERT o WINDOW 100 ORIGIN 5 ITEMS a");
    assert!(
        e.starts_with("ERR ORIGIN applies only to a time WINDOW"),
        "{e}"
    );
    assert_eq!(int(&mut r, "EXISTS o"), 0);
    // An origin in the past places the generations, as documented.
    ok(
        &mut r,
        &format!(
            "BF.RESERVE o 0.01 100 WINDOW 1h GENERATIONS 4 ORIGIN {}",
            now - 3_600_000
        ),
    );
    assert_eq!(info_int(&mut r, "o", "EPOCH"), 4);
}

/// Options are never silently ignored: one given twice, creation options
/// that an existing windowed filter does not have, and BF.PLAN's options.
#[test]
fn window_options_are_not_silently_ignored() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE w 0.01 1000 WINDOW 1h GENERATIONS 4");
    for (line, wanted) in [
        (
            "BF.RESERVE x 0.01 100 WINDOW 10s WINDOW 20s",
            "ERR WINDOW is given more than once",
        ),
        (
            "BF.INSERT x WINDOW 10s NOCREATE NOCREATE ITEMS a",
            "ERR NOCREATE is given more than once",
        ),
        (
            "BF.INSERT w WINDOW 2h ITEMS a",
            "ERR the key holds a windowed filter with WINDOW 1h: creation options apply only when creating a filter",
        ),
        (
            "BF.INSERT w WINDOW 1h GENERATIONS 8 ITEMS a",
            "ERR the key holds a windowed filter with GENERATIONS 4:",
        ),
        (
            "BF.INSERT w CAPACITY 10 WINDOW 1h ITEMS a",
            "ERR the key holds a windowed filter with CAPACITY 1000:",
        ),
        (
            "BF.RESERVE x 0.01 100 WINDOW 3 GENERATIONS 64",
            "ERR GENERATIONS must not exceed the number of items",
        ),
    ] {
        let e = error(&mut r, line);
        assert!(e.starts_with(wanted), "{line}: {e}");
    }
    assert_eq!(int(&mut r, "EXISTS x"), 0);
    assert_eq!(int(&mut r, "BF.CARD w"), 0);
    assert_eq!(
        run(&mut r, "BF.INSERT w WINDOW 1h GENERATIONS 4 ITEMS a"),
        Resp::Array(vec![Resp::Int(1)])
    );
}

/// `WINDOW N GENERATIONS G` keeps exactly the last N items, whether or
/// not G divides N, and forgets an item once N + ceil(N/G) - 1 items came
/// after it at the latest: the bound BF.PLAN states.
#[test]
fn item_windows_keep_exactly_their_last_items() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    for (n, g) in [(10u64, 4u64), (100, 8), (40, 40), (7, 1)] {
        let key = format!("w{n}:{g}");
        ok(
            &mut r,
            &format!("BF.RESERVE {key} 0.000001 100 WINDOW {n} GENERATIONS {g}"),
        );
        let plan = run(
            &mut r,
            &format!("BF.PLAN 100 0.000001 WINDOW {n} GENERATIONS {g}"),
        );
        let Resp::Array(fields) = plan else {
            panic!("{plan:?}")
        };
        let at = fields
            .iter()
            .position(|f| f.as_str().as_deref() == Some("forgotten_late_by"))
            .unwrap();
        let slack = n.div_ceil(g) - 1;
        assert_eq!(
            fields[at + 1],
            Resp::Bulk(slack.to_string().into_bytes()),
            "{key}"
        );
        let item = |i: u64| format!("x{i}");
        let mut longest = 0;
        for i in 0..3 * n + slack + 2 {
            assert_eq!(int(&mut r, &format!("BF.ADD {key} {}", item(i))), 1);
            let found: Vec<u64> = (0..=i)
                .filter(|&j| int(&mut r, &format!("BF.EXISTS {key} {}", item(j))) == 1)
                .collect();
            for j in i.saturating_sub(n - 1)..=i {
                assert!(found.contains(&j), "{key}: item {j} lost after {i}");
            }
            longest = longest.max(i - found[0]);
        }
        assert_eq!(longest, n - 1 + slack, "{key}");
    }
}

/// BF.STATS lists every live generation, those of epochs in which the
/// key was idle too (with no items).
#[test]
fn stats_list_idle_generations() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    let now = server_ms(&mut r);
    // Created 2.5 generations of 10 s ago, one add at creation.
    ok(
        &mut r,
        &format!(
            "BF.RESERVE t 0.01 100 WINDOW 40s GENERATIONS 4 ORIGIN {}",
            now - 25_000
        ),
    );
    let s = stats(&mut r, "t");
    assert_eq!(as_u64(&s["epoch"]), 2);
    let Resp::Array(per) = &s["per_generation"] else {
        panic!("{s:?}")
    };
    let epochs: Vec<u64> = per
        .iter()
        .map(|g| match g {
            Resp::Array(kv) => as_u64(&kv[1]),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(epochs, [0, 1, 2]);
}

/// Sends `count` BF.MADD of 500 items each, `prefix:<n>`, pipelined.
fn burst(r: &mut RawClient, key: &str, prefix: &str, count: u64) -> Vec<Resp> {
    let lines: Vec<Vec<String>> = (0..count)
        .map(|b| {
            let mut args = vec!["BF.MADD".to_string(), key.to_string()];
            args.extend((0..500).map(|i| format!("{prefix}:{}", b * 500 + i)));
            args
        })
        .collect();
    lines.iter().map(|args| decode(&r.cmd(args))).collect()
}

/// The share of `count` never-added items a window answers 1 for.
fn false_positive_share(r: &mut RawClient, key: &str, count: u64) -> f64 {
    let mut found = 0;
    for b in 0..count / 500 {
        let mut args = vec!["BF.MEXISTS".to_string(), key.to_string()];
        args.extend((0..500).map(|i| format!("never:{}", b * 500 + i)));
        let Resp::Array(v) = decode(&r.cmd(&args)) else {
            panic!()
        };
        found += v.iter().filter(|x| **x == Resp::Int(1)).count();
    }
    found as f64 / count as f64
}

/// 20,000 adds into a window planned for 1,000 an hour: the generation
/// grows (a scaling filter's links), new items keep answering 1 at the
/// planned error rate, and `INFO bf` and the `bf.fill-warning` /
/// `bf.fill-alert` notifications show it. With NONSCALING the memory
/// stays as planned and the false positive rate climbs, in view too.
#[test]
fn a_burst_into_a_time_window_is_absorbed_and_seen() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "CONFIG SET notify-keyspace-events Ed");
    let mut sub = server.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    ok(&mut r, "BF.RESERVE hot 0.01 1000 WINDOW 1h");
    let planned = info_int(&mut r, "hot", "SIZE");
    assert_eq!(info_field(&mut r, "bf", "bf_filters_over_alert"), "0");
    burst(&mut r, "hot", "url", 40);
    assert_eq!(int(&mut r, "BF.ADD hot brandnew"), 1);
    let fpr = false_positive_share(&mut r, "hot", 20_000);
    assert!(fpr <= 0.01, "{fpr}");
    let s = stats(&mut r, "hot");
    assert_eq!(s["fill_level"].as_str().as_deref(), Some("alert"));
    assert!(as_f64(&s["estimated_fpr"]) <= 0.01);
    let grown = info_int(&mut r, "hot", "SIZE");
    assert!(grown > 3 * planned, "{grown} against {planned}");
    assert_eq!(info_field(&mut r, "bf", "bf_windows_over_alert"), "1");
    assert_eq!(info_field(&mut r, "bf", "bf_filters_over_alert"), "1");
    assert_eq!(info_field(&mut r, "bf", "bf_filters_over_warning"), "1");
    assert_eq!(
        info_field(&mut r, "bf", "bf_window_bytes"),
        grown.to_string()
    );
    let growths: u64 = info_field(&mut r, "bf", "bf_window_growths")
        .parse()
        .unwrap();
    assert!(growths >= 4, "{growths}");
    ok(&mut r, "BF.RESERVE sentinel 0.01 10");
    let events = events_until(&mut sub, "sentinel");
    for name in ["bf.fill-warning", "bf.fill-alert"] {
        assert_eq!(
            events
                .iter()
                .filter(|(e, k)| e == name && k == "hot")
                .count(),
            1,
            "{name}: {events:?}"
        );
    }

    // NONSCALING: fixed memory, and a false positive rate that says so.
    ok(&mut r, "BF.RESERVE fixed 0.01 1000 WINDOW 1h NONSCALING");
    let fixed = info_int(&mut r, "fixed", "SIZE");
    burst(&mut r, "fixed", "url", 40);
    assert_eq!(info_int(&mut r, "fixed", "SIZE"), fixed);
    let s = stats(&mut r, "fixed");
    assert!(as_f64(&s["estimated_fpr"]) > 0.5, "{s:?}");
    assert!(false_positive_share(&mut r, "fixed", 2_000) > 0.5);
    assert_eq!(info_field(&mut r, "bf", "bf_windows_over_alert"), "2");
    let worst: f64 = info_field(&mut r, "bf", "bf_max_estimated_fpr")
        .parse()
        .unwrap();
    assert!(worst > 0.5, "{worst}");
    // Deleting them takes them out of the totals.
    run(&mut r, "DEL hot fixed");
    assert_eq!(info_field(&mut r, "bf", "bf_filters_over_alert"), "0");
    assert_eq!(info_field(&mut r, "bf", "bf_window_bytes"), "0");
}

/// Bursts and rotations through a master, its replica and its AOF: the
/// same digests everywhere, memory back to the plan once the burst has
/// left the window, and a growth the memory guard refuses answers
/// RedisBloom's words, changes nothing, and propagates only what was
/// applied.
#[test]
fn bursts_and_refused_growth_keep_replicas_and_the_aof_exact() {
    let (mut master, replica) = master_with_replica();
    let mut m = master.raw();
    let mut s = replica.raw();
    ok(&mut m, "BF.RESERVE t 0.01 1000 WINDOW 2s GENERATIONS 2");
    let planned = info_int(&mut m, "t", "SIZE");
    burst(&mut m, "t", "a", 8);
    assert!(info_int(&mut m, "t", "SIZE") > planned);
    // Past the window and one generation: the grown arrays are freed.
    sleep(Duration::from_millis(3_100));
    burst(&mut m, "t", "b", 1);
    assert_eq!(info_int(&mut m, "t", "SIZE"), planned);
    // A cap that admits the planned filter and no growth.
    ok(
        &mut m,
        "BF.RESERVE capped 0.01 1000 WINDOW 1h GENERATIONS 2",
    );
    let capped = info_int(&mut m, "capped", "SIZE");
    ok(
        &mut m,
        &format!("CONFIG SET bf.max-filter-bytes {}", capped + 100),
    );
    let replies = burst(&mut m, "capped", "c", 3);
    let flat: Vec<&Resp> = replies
        .iter()
        .flat_map(|r| match r {
            Resp::Array(v) => v.iter(),
            other => panic!("{other:?}"),
        })
        .collect();
    let refused: Vec<&Resp> = flat
        .iter()
        .copied()
        .filter(|r| matches!(r, Resp::Error(_)))
        .collect();
    assert!(!refused.is_empty() && refused.len() < flat.len());
    let Resp::Error(e) = refused[0] else { panic!() };
    assert!(e.starts_with("ERR problem inserting into filter: "), "{e}");
    assert_eq!(info_int(&mut m, "capped", "SIZE"), capped);
    let e = error(&mut m, "BF.ADD capped another");
    assert!(e.starts_with("ERR problem inserting into filter"), "{e}");
    ok(&mut m, "CONFIG SET bf.max-filter-bytes 0");
    wait_for_replica(&mut m, &mut s, Duration::from_secs(20));
    let keys = ["t", "capped"];
    let before: Vec<Vec<u8>> = keys.iter().map(|k| digest(&mut m, k)).collect();
    let on_replica: Vec<Vec<u8>> = keys.iter().map(|k| digest(&mut s, k)).collect();
    assert_eq!(on_replica, before, "the replica");
    drop(m);
    aof_replays_keep(&mut master, &keys, &before);
}
