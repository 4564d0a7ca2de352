//! The propagation rule on real servers (docs/architecture.md): what goes
//! to replicas and the AOF is what the master applied, and commands from a
//! master or an AOF never consult the memory guard. After a guard refusal,
//! for each command family (Bloom, Cuckoo, windowed), the master, its
//! replica and a replay of its AOF hold the same values (DEBUG
//! DIGEST-VALUE); a master's COPY reaches a replica with `maxmemory` and
//! survives an AOF load under `maxmemory`; pipelined bursts of Cuckoo and
//! windowed filters stop at the memory budget.

mod common;

use std::time::Duration;

use common::client::{ferrobloom, int, ok, run};
use common::info::info_u64;
use common::replication::{replicate, wait_for_aof_rewrite, wait_for_replica};
use common::{decode, RawClient, Resp, Server};

/// `key` and its DEBUG DIGEST-VALUE, as text.
fn digest(r: &mut RawClient, key: &str) -> String {
    let reply = r.cmd(&["DEBUG", "DIGEST-VALUE", key]);
    format!("{key}: {}", String::from_utf8_lossy(&reply).trim_end())
}

fn digests(r: &mut RawClient, keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| digest(r, k)).collect()
}

/// A master with its AOF on (`preamble`: with the RDB preamble) and a
/// replica linked to it, started with `replica_config`.
fn master_with_replica(replica_config: &[(&str, &str)]) -> (Server, Server) {
    let master = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut opts = ferrobloom();
    for (name, value) in replica_config {
        opts = opts.config(name, value);
    }
    let replica = Server::start(opts);
    replicate(&master, &replica, Duration::from_secs(30));
    (master, replica)
}

/// The master's AOF replayed by DEBUG LOADAOF, as written and after a
/// rewrite: `keys` keep the digests `before`.
fn aof_replays_keep(m: &mut RawClient, keys: &[&str], before: &[String]) {
    for rewrite in [false, true] {
        if rewrite {
            let started = run(m, "BGREWRITEAOF");
            assert!(matches!(started, Resp::Simple(_)), "{started:?}");
            wait_for_aof_rewrite(m, Duration::from_secs(30));
        }
        ok(m, "DEBUG LOADAOF");
        assert_eq!(
            digests(m, keys),
            before,
            "after an AOF replay (rewritten: {rewrite})"
        );
    }
}

fn items(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

/// One batch command: its replies, with how many were errors (or RESP2's
/// -1 of a Cuckoo insert that found no room).
fn batch(r: &mut RawClient, head: &[&str], items: &[String]) -> (usize, usize) {
    let mut args: Vec<&str> = head.to_vec();
    args.extend(items.iter().map(String::as_str));
    match decode(&r.cmd(&args)) {
        Resp::Array(replies) => {
            let failed = replies
                .iter()
                .filter(|r| matches!(r, Resp::Error(_) | Resp::Int(-1)))
                .count();
            (replies.len() - failed, failed)
        }
        other => panic!("{}: {other:?}", head.join(" ")),
    }
}

/// Each family's batch writes, refused part way by the memory guard on the
/// master (a per-filter cap only the master has): the replica and the AOF
/// replays (as written and rewritten) end with the master's values.
#[test]
fn after_a_guard_refusal_master_replica_and_aof_agree() {
    let (master, replica) = master_with_replica(&[]);
    let mut m = master.raw();
    let mut s = replica.raw();
    // Sub-filters of 4,096, 8,192 and 16,384 bytes: the cap admits two.
    ok(&mut m, "CONFIG SET bf.max-filter-bytes 20000");
    ok(&mut m, "CF.RESERVE c 4096 EXPANSION 2");
    ok(&mut m, "CF.RESERVE nx 4096 EXPANSION 2");
    let (applied, refused) = batch(&mut m, &["CF.INSERT", "c", "ITEMS"], &items("i", 12_000));
    assert!(applied > 0 && refused > 0, "{applied} / {refused}");
    let (applied, refused) = batch(&mut m, &["CF.INSERTNX", "nx", "ITEMS"], &items("i", 12_000));
    assert!(applied > 0 && refused > 0, "{applied} / {refused}");
    // Created by the insert itself: CAPACITY and the defaults.
    let (applied, refused) = batch(
        &mut m,
        &["CF.INSERT", "made", "CAPACITY", "4096", "ITEMS"],
        &items("i", 20_000),
    );
    assert!(applied > 0 && refused > 0, "{applied} / {refused}");
    // A Bloom filter whose scale-out the cap refuses.
    ok(&mut m, "BF.RESERVE b 0.01 10000");
    let (applied, refused) = batch(&mut m, &["BF.MADD", "b"], &items("i", 12_000));
    assert!(applied > 0 && refused > 0, "{applied} / {refused}");
    let (_, refused) = batch(&mut m, &["BF.INSERT", "b", "ITEMS"], &items("j", 100));
    assert!(refused > 90, "{refused}");
    // A windowed filter whose generation may not grow.
    ok(&mut m, "CONFIG SET bf.max-filter-bytes 0");
    ok(&mut m, "BF.RESERVE w 0.01 1000 WINDOW 1h GENERATIONS 2");
    let size = match run(&mut m, "BF.INFO w SIZE") {
        Resp::Array(v) => match v[..] {
            [Resp::Int(size)] => size,
            _ => panic!("{v:?}"),
        },
        other => panic!("{other:?}"),
    };
    ok(
        &mut m,
        &format!("CONFIG SET bf.max-filter-bytes {}", size + 100),
    );
    let (applied, refused) = batch(&mut m, &["BF.MADD", "w"], &items("i", 3_000));
    assert!(applied > 0 && refused > 0, "{applied} / {refused}");
    ok(&mut m, "CONFIG SET bf.max-filter-bytes 0");
    assert!(info_u64(&mut m, "bf", "bf_guard_refusals") >= 5);

    wait_for_replica(&mut m, &mut s, Duration::from_secs(30));
    let keys = ["c", "nx", "made", "b", "w"];
    let before = digests(&mut m, &keys);
    assert_eq!(digests(&mut s, &keys), before, "the replica");
    aof_replays_keep(&mut m, &keys, &before);
}

/// A master's COPY of a Bloom, a Cuckoo and a windowed filter: the replica,
/// whose `maxmemory` is below what it holds, makes the copies (it never
/// refuses its master), and an AOF loaded under such a `maxmemory` keeps
/// them.
#[test]
fn copies_from_a_master_or_an_aof_are_never_refused() {
    let (master, replica) = master_with_replica(&[("maxmemory", "40mb")]);
    let mut m = master.raw();
    let mut s = replica.raw();
    // About 18, 17 and 12 MB: any of the copies takes the replica past
    // 40 MB.
    ok(&mut m, "BF.RESERVE b 0.001 10000000");
    ok(&mut m, "CF.RESERVE c 16000000");
    ok(&mut m, "BF.RESERVE w 0.01 5000000 WINDOW 1h GENERATIONS 2");
    for key in ["b", "w"] {
        let (applied, _) = batch(&mut m, &["BF.MADD", key], &items("i", 100));
        assert_eq!(applied, 100);
    }
    let (applied, _) = batch(&mut m, &["CF.INSERT", "c", "ITEMS"], &items("i", 100));
    assert_eq!(applied, 100);
    for key in ["b", "c", "w"] {
        assert_eq!(int(&mut m, &format!("COPY {key} {key}2")), 1, "{key}");
    }
    let keys = ["b", "c", "w", "b2", "c2", "w2"];
    let before = digests(&mut m, &keys);
    wait_for_replica(&mut m, &mut s, Duration::from_secs(30));
    assert!(info_u64(&mut s, "memory", "used_memory") > 40 << 20);
    assert_eq!(int(&mut s, "DBSIZE"), 6);
    assert_eq!(digests(&mut s, &keys), before, "the replica");
    // The AOF holds the COPY commands: loaded under a maxmemory the data
    // is already over, every copy is made again.
    ok(&mut m, "CONFIG SET maxmemory 40mb");
    ok(&mut m, "DEBUG LOADAOF");
    assert_eq!(int(&mut m, "DBSIZE"), 6);
    assert_eq!(digests(&mut m, &keys), before, "after DEBUG LOADAOF");
    // A client's COPY on the master is still refused what does not fit.
    let used = info_u64(&mut m, "memory", "used_memory");
    ok(
        &mut m,
        &format!("CONFIG SET maxmemory {}", used + (10 << 20)),
    );
    assert_eq!(
        run(&mut m, "COPY c c3"),
        Resp::Error("ERR module key failed to copy".into())
    );
    assert!(master
        .log()
        .contains("COPY of a Cuckoo filter to 'c3' refused"));
}

/// The field `name` of a flat RESP2 map reply.
fn map_u64(reply: &Resp, name: &str) -> u64 {
    let Resp::Array(flat) = reply else {
        panic!("{reply:?}");
    };
    flat.chunks(2)
        .find_map(|pair| match pair {
            [key, Resp::Int(v)] if key.as_str().as_deref() == Some(name) => Some(*v as u64),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {name} in {reply:?}"))
}

/// Sends `commands` in one pipeline (so they all run within the guard's
/// 250 ms reuse of a used_memory reading) and returns how many answered
/// OK; every other reply must be the guard's refusal by the budget.
fn admitted(r: &mut RawClient, commands: &[Vec<String>]) -> usize {
    let replies = r.pipeline(commands);
    let mut oks = 0;
    for reply in replies {
        match decode(&reply) {
            Resp::Simple(s) if s == "OK" => oks += 1,
            Resp::Error(e) => assert!(
                e.starts_with("ERR Insufficient memory to create filter: ")
                    && e.contains("bytes the server may use"),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
    }
    oks
}

/// Without maxmemory, only the machine's (or cgroup's) budget bounds the
/// filters: a pipelined burst of Cuckoo filters, then of windowed filters,
/// each an eighth to a quarter of the room left, stops when the room is
/// used up, however fast the filters come (the allocations are never
/// touched: no page is used).
#[test]
fn pipelined_bursts_of_cuckoo_and_windowed_filters_stop_at_the_budget() {
    for kind in ["cuckoo", "windowed"] {
        let server = Server::start(ferrobloom());
        let mut r = server.raw();
        ok(&mut r, "CONFIG SET bf.max-filter-bytes 0");
        let allowed = info_u64(&mut r, "bf", "bf_memory_allowed");
        let used = info_u64(&mut r, "memory", "used_memory");
        let room = allowed - used;
        let (bytes, command): (u64, Box<dyn Fn(usize) -> Vec<String>>) = if kind == "cuckoo" {
            // One byte per bucket: a power of two of bytes, an eighth to a
            // quarter of the room.
            let bytes = 1u64 << (63 - (room / 4).leading_zeros());
            let command = move |i: usize| {
                format!("CF.RESERVE k{i} {bytes} BUCKETSIZE 1")
                    .split(' ')
                    .map(String::from)
                    .collect()
            };
            (bytes, Box::new(command))
        } else {
            let per = map_u64(
                &run(&mut r, "BF.PLAN 1000000000 0.01 WINDOW 1h GENERATIONS 2"),
                "bytes",
            );
            let capacity = (1e9 * (room as f64 / 4.5) / per as f64) as u64;
            let plan = run(
                &mut r,
                &format!("BF.PLAN {capacity} 0.01 WINDOW 1h GENERATIONS 2"),
            );
            let command = move |i: usize| {
                format!("BF.RESERVE k{i} 0.01 {capacity} WINDOW 1h GENERATIONS 2")
                    .split(' ')
                    .map(String::from)
                    .collect()
            };
            (map_u64(&plan, "bytes"), Box::new(command))
        };
        let fits = (room / bytes) as usize;
        assert!(
            (4..=7).contains(&fits),
            "{kind}: {fits} of {bytes} in {room}"
        );
        let burst: Vec<Vec<String>> = (0..fits + 3).map(command).collect();
        let oks = admitted(&mut r, &burst);
        assert!(
            (1..=fits).contains(&oks),
            "{kind}: {oks} filters of {bytes} bytes admitted, {fits} fit in {room}"
        );
        assert!(info_u64(&mut r, "memory", "used_memory") <= allowed);
    }
}

/// A field of `/proc/<pid>/status`, in kB.
fn proc_status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// COPY of a 128 MiB Cuckoo filter holds one more copy of the filter at
/// its peak, not the copy plus an encoding of the whole value.
#[test]
fn copy_of_a_large_cuckoo_filter_peaks_at_one_copy() {
    const BYTES: u64 = 128 << 20;
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, &format!("CF.RESERVE c {BYTES}"));
    let (applied, _) = batch(&mut r, &["CF.INSERT", "c", "ITEMS"], &items("i", 1000));
    assert_eq!(applied, 1000);
    let pid = server.pid();
    // Resets the peak resident size to the current one (Linux 4.0+).
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let rss_before = proc_status_kb(pid, "VmRSS");
    assert_eq!(int(&mut r, "COPY c c2"), 1);
    let peak = proc_status_kb(pid, "VmHWM") - rss_before;
    assert_eq!(
        digest(&mut r, "c2").split(' ').nth(1),
        digest(&mut r, "c").split(' ').nth(1)
    );
    assert!(
        peak * 1024 < BYTES * 3 / 2,
        "COPY of {BYTES} bytes peaked at {peak} kB above the resident size before it"
    );
}

/// A value restored over a limit is named in the log by its type.
#[test]
fn load_warnings_name_the_type() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE b 0.01 1000000");
    ok(&mut r, "CF.RESERVE c 4000000");
    ok(&mut r, "BF.RESERVE w 0.01 1000000 WINDOW 1h");
    ok(&mut r, "CONFIG SET bf.max-filter-bytes 1000");
    for (key, what) in [
        ("b", "Bloom filter"),
        ("c", "Cuckoo filter"),
        ("w", "windowed filter"),
    ] {
        let payload = match run(&mut r, &format!("DUMP {key}")) {
            Resp::Bulk(b) => b,
            other => panic!("{other:?}"),
        };
        let copy = format!("{key}2");
        let restored = r.cmd(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", &payload]);
        assert_eq!(decode(&restored), Resp::Simple("OK".into()), "{key}");
        let warning = format!("loading {what} '{copy}' (");
        assert!(server.log().contains(&warning), "no {warning:?} in the log");
    }
}
