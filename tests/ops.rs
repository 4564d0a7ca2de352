//! Operational tests: replication to replicas with other module settings
//! (partial and full resynchronisation included), COPY and RESTORE, lazy
//! free of large filters, active defragmentation, ACL categories per server
//! version, key specs (read-only key access) and ACL key permissions, and
//! durability of acknowledged writes across `kill -9` with
//! `appendfsync always` (spec §7, §2.10, §9.2).
//!
//! Filters are "identical" when DUMP, DEBUG DIGEST-VALUE (and DEBUG DIGEST
//! of the whole data set) are the same on every server.
//!
//! The ACL and defrag tests run the servers that `scripts/servers.sh`
//! installs into target/servers (`make test` installs them).

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, sleep};
use std::time::{Duration, Instant};

use common::client::{ferrobloom, show, wait_until};
use common::info::info_u64;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const OK: &[u8] = b"+OK\r\n";

#[track_caller]
fn expect(raw: &mut RawClient, line: &str, want: &[u8]) {
    let got = raw.line(line);
    assert!(
        got == want,
        "{line}\n   got: {}\n  want: {}",
        show(&got),
        show(want)
    );
}

/// A reply that must be an error starting with `prefix` (e.g. `-NOPERM`).
#[track_caller]
fn expect_error(raw: &mut RawClient, line: &str, prefix: &str) {
    let got = raw.line(line);
    assert!(
        got.starts_with(prefix.as_bytes()),
        "{line}: want an error starting with {prefix:?}, got {}",
        show(&got)
    );
}

fn info(raw: &mut RawClient, section: &str) -> String {
    decode(&raw.cmd(&["INFO", section]))
        .as_str()
        .unwrap_or_else(|| panic!("INFO {section} is no text"))
}

fn info_field(raw: &mut RawClient, section: &str, field: &str) -> Option<String> {
    let prefix = format!("{field}:");
    info(raw, section)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
}

fn dump(raw: &mut RawClient, key: &str) -> Vec<u8> {
    match decode(&raw.cmd(&["DUMP", key])) {
        Resp::Bulk(payload) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

/// A server binary installed by `scripts/servers.sh` (e.g. `redis-7.4`).
fn installed_server(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/servers")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `make test` (it runs `bash scripts/servers.sh`, \
         which installs Redis 7.4 and Valkey 8.1/9.1 into target/servers)",
        path.display()
    );
    path
}

/// Debian's Redis 7.0, the server RedisBloom 2.8.2 was observed on.
const REDIS_70: &str = "/usr/bin/redis-server";

// ---------------------------------------------------------------------------
// Replication
// ---------------------------------------------------------------------------

/// Random write commands on a fixed set of keys: adds that auto-create
/// filters, BF.INSERT with any subset of its options, BF.RESERVE (new keys
/// and existing ones), DEL, MULTI/EXEC, EVAL, and failures that are not
/// propagated (WRONGTYPE, item exists, NOCREATE on a missing key).
struct Workload {
    rng: StdRng,
    fresh: u64,
    tag: &'static str,
}

const KEYS: usize = 300;
const ITEM_SPACE: u32 = 20_000;

impl Workload {
    fn new(seed: u64, tag: &'static str) -> Workload {
        Workload {
            rng: StdRng::seed_from_u64(seed),
            fresh: 0,
            tag,
        }
    }

    fn key(&mut self) -> Vec<u8> {
        let n = self.rng.gen_range(0..KEYS);
        // A few keys hold strings, for WRONGTYPE replies.
        if n < 3 {
            format!("str{n}").into_bytes()
        } else {
            format!("k{n}").into_bytes()
        }
    }

    fn item(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.05) {
            let len = self.rng.gen_range(0..24);
            (0..len).map(|_| self.rng.gen()).collect()
        } else {
            format!("i{}", self.rng.gen_range(0..ITEM_SPACE)).into_bytes()
        }
    }

    fn items(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = self.rng.gen_range(1..=max);
        (0..n).map(|_| self.item()).collect()
    }

    fn error_rate(&mut self) -> Vec<u8> {
        let rates = ["0.1", "0.05", "0.01", "0.001", "0.123", "0.3"];
        rates[self.rng.gen_range(0..rates.len())]
            .as_bytes()
            .to_vec()
    }

    fn capacity(&mut self) -> Vec<u8> {
        let caps = ["1", "7", "50", "100", "333", "1000", "20000"];
        caps[self.rng.gen_range(0..caps.len())].as_bytes().to_vec()
    }

    fn expansion(&mut self) -> Vec<u8> {
        self.rng.gen_range(1..=4u32).to_string().into_bytes()
    }

    fn reserve(&mut self) -> Vec<Vec<u8>> {
        let key = if self.rng.gen_bool(0.5) {
            self.fresh += 1;
            format!("r-{}-{}", self.tag, self.fresh).into_bytes()
        } else {
            self.key()
        };
        let mut cmd = vec![
            b"BF.RESERVE".to_vec(),
            key,
            self.error_rate(),
            self.capacity(),
        ];
        match self.rng.gen_range(0..4) {
            0 => {
                cmd.push(b"EXPANSION".to_vec());
                cmd.push(self.expansion());
            }
            1 => cmd.push(b"NONSCALING".to_vec()),
            _ => {}
        }
        if self.rng.gen_bool(0.2) {
            cmd.push(b"POLICY".to_vec());
            cmd.push(
                if self.rng.gen_bool(0.5) {
                    "pow2"
                } else {
                    "exact"
                }
                .into(),
            );
        }
        cmd
    }

    fn insert(&mut self) -> Vec<Vec<u8>> {
        let mut cmd = vec![b"BF.INSERT".to_vec(), self.key()];
        if self.rng.gen_bool(0.35) {
            cmd.push(b"CAPACITY".to_vec());
            cmd.push(self.capacity());
        }
        if self.rng.gen_bool(0.35) {
            cmd.push(b"ERROR".to_vec());
            cmd.push(self.error_rate());
        }
        if self.rng.gen_bool(0.3) {
            cmd.push(b"EXPANSION".to_vec());
            cmd.push(self.expansion());
        }
        if self.rng.gen_bool(0.1) {
            cmd.push(b"NONSCALING".to_vec());
        }
        if self.rng.gen_bool(0.1) {
            cmd.push(b"NOCREATE".to_vec());
        }
        if self.rng.gen_bool(0.15) {
            cmd.push(b"POLICY".to_vec());
            cmd.push(
                if self.rng.gen_bool(0.5) {
                    "pow2"
                } else {
                    "exact"
                }
                .into(),
            );
        }
        cmd.push(b"ITEMS".to_vec());
        cmd.extend(self.items(6));
        cmd
    }

    /// One group of commands sent back to back (a transaction is several).
    fn next(&mut self) -> Vec<Vec<Vec<u8>>> {
        let r = self.rng.gen_range(0..100);
        let one = match r {
            0..=34 => vec![b"BF.ADD".to_vec(), self.key(), self.item()],
            35..=59 => {
                let mut cmd = vec![b"BF.MADD".to_vec(), self.key()];
                cmd.extend(self.items(8));
                cmd
            }
            60..=81 => self.insert(),
            82..=90 => self.reserve(),
            91..=93 => vec![b"DEL".to_vec(), self.key()],
            94..=95 => vec![
                b"EVAL".to_vec(),
                b"return redis.call('BF.MADD', KEYS[1], ARGV[1], ARGV[2])".to_vec(),
                b"1".to_vec(),
                self.key(),
                self.item(),
                self.item(),
            ],
            96..=97 => {
                let mut group = vec![vec![b"MULTI".to_vec()]];
                group.push(vec![b"BF.ADD".to_vec(), self.key(), self.item()]);
                group.push(self.insert());
                group.push(vec![b"BF.EXISTS".to_vec(), self.key(), self.item()]);
                group.push(vec![b"EXEC".to_vec()]);
                return group;
            }
            // A filter overwritten by a string now and then.
            98 if self.rng.gen_bool(0.1) => vec![b"SET".to_vec(), self.key(), b"plain".to_vec()],
            _ => vec![b"BF.CARD".to_vec(), self.key()],
        };
        vec![one]
    }

    /// At least `n` commands.
    fn batch(&mut self, n: usize) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend(self.next());
        }
        out
    }
}

/// Error replies the workload is expected to produce, by kind.
#[derive(Default, Debug)]
struct Errors(BTreeMap<String, usize>);

impl Errors {
    const EXPECTED: [&'static str; 4] = [
        "ERR item exists",
        "ERR non scaling filter is full",
        "WRONGTYPE",
        "ERR not found",
    ];

    #[track_caller]
    fn record(&mut self, cmd: &[Vec<u8>], reply: &[u8]) {
        if let Resp::Error(text) = decode(reply) {
            let kind = Self::EXPECTED
                .iter()
                .find(|k| text.starts_with(*k))
                .unwrap_or_else(|| {
                    panic!(
                        "unexpected error {text:?} for {:?}",
                        cmd.iter()
                            .map(|a| String::from_utf8_lossy(a).into_owned())
                            .collect::<Vec<_>>()
                    )
                });
            *self.0.entry(kind.to_string()).or_default() += 1;
        }
    }
}

fn run_batch(raw: &mut RawClient, cmds: &[Vec<Vec<u8>>], errors: &mut Errors) {
    for (cmd, reply) in cmds.iter().zip(raw.pipeline(cmds)) {
        errors.record(cmd, &reply);
    }
}

fn replica_offset(replica: &mut RawClient) -> Option<u64> {
    let text = info(replica, "replication");
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).map(str::to_string))
    };
    if field("master_link_status:").as_deref() != Some("up") {
        return None;
    }
    field("slave_repl_offset:").and_then(|v| v.parse().ok())
}

fn link_up(replica: &mut RawClient) -> bool {
    info_field(replica, "replication", "master_link_status").as_deref() == Some("up")
}

/// Waits until every replica has applied the master's whole stream.
fn wait_in_sync(master: &mut RawClient, replicas: &mut [&mut RawClient]) {
    let start = Instant::now();
    loop {
        let target = info_u64(master, "replication", "master_repl_offset");
        let offsets: Vec<Option<u64>> = replicas.iter_mut().map(|r| replica_offset(r)).collect();
        if offsets.iter().all(|o| *o == Some(target)) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "replicas not in sync: master offset {target}, replicas {offsets:?}"
        );
        sleep(Duration::from_millis(20));
    }
}

fn all_keys(raw: &mut RawClient) -> Vec<Vec<u8>> {
    let Resp::Array(keys) = decode(&raw.cmd(&["KEYS", "*"])) else {
        panic!("KEYS *")
    };
    let mut keys: Vec<Vec<u8>> = keys
        .into_iter()
        .map(|k| match k {
            Resp::Bulk(b) => b,
            other => panic!("key {other:?}"),
        })
        .collect();
    keys.sort();
    keys
}

/// Asserts that the replicas hold exactly the master's data: same keys,
/// same DEBUG DIGEST, and per key the same DEBUG DIGEST-VALUE and DUMP.
fn assert_identical(master: &mut RawClient, replicas: &mut [(&str, &mut RawClient)]) -> usize {
    let keys = all_keys(master);
    let digest = master.line("DEBUG DIGEST");
    let per_key = |raw: &mut RawClient| -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut cmds = Vec::new();
        for k in &keys {
            cmds.push(vec![b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), k.clone()]);
            cmds.push(vec![b"DUMP".to_vec(), k.clone()]);
        }
        let replies = raw.pipeline(&cmds);
        replies
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect()
    };
    let want = per_key(master);
    for (k, (_, d)) in keys.iter().zip(&want) {
        assert!(d.starts_with(b"$"), "DUMP {}: {}", show(k), show(d));
    }
    for (name, replica) in replicas.iter_mut() {
        assert_eq!(
            all_keys(replica).len(),
            keys.len(),
            "{name}: number of keys"
        );
        assert_eq!(
            show(&replica.line("DEBUG DIGEST")),
            show(&digest),
            "{name}: DEBUG DIGEST"
        );
        let got = per_key(replica);
        for ((k, w), g) in keys.iter().zip(&want).zip(&got) {
            assert_eq!(
                show(&g.0),
                show(&w.0),
                "{name}: DEBUG DIGEST-VALUE {}",
                show(k)
            );
            assert!(
                g.1 == w.1,
                "{name}: DUMP {} differs (master BF.INFO {}, replica BF.INFO {})",
                show(k),
                show(&master.cmd(&[b"BF.INFO".as_slice(), k])),
                show(&replica.cmd(&[b"BF.INFO".as_slice(), k]))
            );
        }
    }
    keys.len()
}

fn config_get(raw: &mut RawClient, name: &str) -> String {
    match decode(&raw.cmd(&["CONFIG", "GET", name])) {
        Resp::Array(v) if v.len() == 2 => v[1].as_str().expect("value"),
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

/// A master with default settings (changed by CONFIG SET on the way) and two
/// replicas whose module settings differ from it and from each other end
/// byte-identical after 100k random writes, a partial resynchronisation
/// (replica link killed), a restart of a replica with its RDB (partial) and
/// a restart of a replica with an empty directory (full).
#[test]
fn replicas_with_other_settings_stay_identical() {
    const TOTAL: usize = 100_000;
    let master = Server::start(
        ferrobloom()
            .config("repl-backlog-size", "64mb")
            .config("repl-diskless-sync-delay", "0"),
    );
    let of = format!("127.0.0.1 {}", master.port());
    // RedisBloom's load arguments on one replica, FerroBloom's settings on
    // the other (which also saves an RDB when it shuts down).
    let mut one = Server::start(
        ferrobloom()
            .module_args(&["ERROR_RATE", "0.1", "INITIAL_SIZE", "7"])
            .config("replicaof", &of),
    );
    let mut two = Server::start(
        ferrobloom()
            .config("bf.expansion", "4")
            .config("bf.policy", "pow2")
            .config("bf.error-rate", "0.05")
            .config("bf.initial-size", "1000")
            .config("bf.max-filter-bytes", "65536")
            .config("save", "3600 1")
            .config("replicaof", &of),
    );
    let mut m = master.raw();
    let (mut r1, mut r2) = (one.raw(), two.raw());
    wait_until("both replicas online", Duration::from_secs(30), || {
        link_up(&mut r1)
            && link_up(&mut r2)
            && info_u64(&mut m, "replication", "connected_slaves") == 2
    });
    for (name, raw, want) in [
        ("master", &mut m, ("0.01", "100", "2", "exact")),
        ("replica one", &mut r1, ("0.1", "7", "2", "exact")),
        ("replica two", &mut r2, ("0.05", "1000", "4", "pow2")),
    ] {
        let got = (
            config_get(raw, "bf.error-rate"),
            config_get(raw, "bf.initial-size"),
            config_get(raw, "bf.expansion"),
            config_get(raw, "bf.policy"),
        );
        assert_eq!(
            (
                got.0.as_str(),
                got.1.as_str(),
                got.2.as_str(),
                got.3.as_str()
            ),
            want,
            "{name} settings"
        );
    }
    for n in 0..3 {
        m.cmd(&["SET", &format!("str{n}"), "plain"]);
    }

    let started = Instant::now();
    let mut errors = Errors::default();
    let mut sent = 0usize;
    // Phase 1: 50k writes, the master's settings changed half way.
    let mut work = Workload::new(0x5eed_0001, "a");
    while sent < TOTAL / 2 {
        if (TOTAL / 4..TOTAL / 4 + 1000).contains(&sent) {
            for (name, value) in [
                ("bf.policy", "pow2"),
                ("bf.expansion", "3"),
                ("bf.error-rate", "0.02"),
                ("bf.initial-size", "33"),
            ] {
                expect(&mut m, &format!("CONFIG SET {name} {value}"), OK);
            }
        }
        let batch = work.batch(1000);
        sent += batch.len();
        run_batch(&mut m, &batch, &mut errors);
    }
    // Auto-created filters are non-scaling from here on.
    for (name, value) in [
        ("bf.policy", "exact"),
        ("bf.expansion", "0"),
        ("bf.initial-size", "500"),
    ] {
        expect(&mut m, &format!("CONFIG SET {name} {value}"), OK);
    }
    let phase1 = started.elapsed();

    // Phase 2: a second client writes while the replicas resynchronise.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let port = master.port();
        let budget = TOTAL - sent;
        thread::spawn(move || {
            let mut raw = RawClient::connect(port);
            let mut work = Workload::new(0x5eed_0002, "b");
            let mut errors = Errors::default();
            let mut sent = 0usize;
            let deadline = Instant::now() + Duration::from_secs(40);
            // About 10k writes a second, so that writes go on during every
            // resynchronisation below.
            while !stop.load(Ordering::Relaxed) {
                assert!(
                    sent + 100 < budget && Instant::now() < deadline,
                    "the writer ran out of its budget before the resynchronisations ended"
                );
                let batch = work.batch(50);
                sent += batch.len();
                run_batch(&mut raw, &batch, &mut errors);
                sleep(Duration::from_millis(5));
            }
            (sent, errors)
        })
    };
    let stats = |m: &mut RawClient| {
        (
            info_u64(m, "stats", "sync_full"),
            info_u64(m, "stats", "sync_partial_ok"),
        )
    };
    sleep(Duration::from_millis(200));

    // (a) The replica's link to the master is killed: it reconnects and
    // continues from its offset.
    let (full0, partial0) = stats(&mut m);
    let killed = r1.line("CLIENT KILL TYPE master");
    assert_eq!(killed, b":1\r\n", "CLIENT KILL TYPE master");
    wait_until(
        "a partial resync after CLIENT KILL TYPE master",
        Duration::from_secs(20),
        || stats(&mut m).1 > partial0 && link_up(&mut r1),
    );
    assert_eq!(stats(&mut m).0, full0, "CLIENT KILL caused a full sync");
    sleep(Duration::from_millis(200));

    // (b) Replica two shuts down (saving its RDB with the replication
    // offset) and restarts: it loads the RDB and continues from there.
    let (full1, partial1) = stats(&mut m);
    two.restart();
    let mut r2 = two.raw();
    wait_until(
        "a partial resync after restarting replica two with its RDB",
        Duration::from_secs(30),
        || stats(&mut m).1 > partial1 && link_up(&mut r2),
    );
    assert_eq!(stats(&mut m).0, full1, "restart with the RDB: full sync");
    sleep(Duration::from_millis(200));

    // (c) Replica one restarts with an empty directory: a full sync.
    let (full2, _) = stats(&mut m);
    one.stop();
    for entry in fs::read_dir(one.dir()).expect("replica dir") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|n| n != "server.log") {
            if path.is_dir() {
                fs::remove_dir_all(&path).expect("rm");
            } else {
                fs::remove_file(&path).expect("rm");
            }
        }
    }
    one.restart();
    let mut r1 = one.raw();
    wait_until(
        "a full sync of replica one restarted empty",
        Duration::from_secs(30),
        || stats(&mut m).0 > full2 && link_up(&mut r1),
    );
    sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let (written, writer_errors) = writer.join().expect("writer thread");
    sent += written;
    for (k, v) in writer_errors.0 {
        *errors.0.entry(k).or_default() += v;
    }
    // Phase 3: the rest of the 100k.
    let mut work = Workload::new(0x5eed_0003, "c");
    while sent < TOTAL {
        let batch = work.batch(1000.min(TOTAL - sent));
        sent += batch.len();
        run_batch(&mut m, &batch, &mut errors);
    }
    let writing = started.elapsed();

    wait_in_sync(&mut m, &mut [&mut r1, &mut r2]);
    let filters = assert_identical(
        &mut m,
        &mut [("replica one", &mut r1), ("replica two", &mut r2)],
    );
    eprintln!(
        "replication: {sent} writes ({} in phase 2) in {writing:?} (phase 1 {phase1:?}), \
         {filters} keys identical on 3 servers after {:?}; errors {:?}; sync_full/partial_ok {:?}",
        written,
        started.elapsed(),
        errors.0,
        stats(&mut m)
    );
    assert!(filters > 200, "only {filters} keys");
    for s in [&master, &one, &two] {
        assert!(!s.log().contains("panicked"), "{}", s.log());
    }
}

// ---------------------------------------------------------------------------
// COPY, RESTORE
// ---------------------------------------------------------------------------

fn madd_line(key: &str, prefix: &str, n: usize) -> Vec<String> {
    let mut cmd = vec!["BF.MADD".to_string(), key.to_string()];
    cmd.extend((0..n).map(|i| format!("{prefix}{i}")));
    cmd
}

fn all_present(raw: &mut RawClient, key: &str, prefix: &str, n: usize) -> bool {
    let mut cmd = vec!["BF.MEXISTS".to_string(), key.to_string()];
    cmd.extend((0..n).map(|i| format!("{prefix}{i}")));
    let Resp::Array(replies) = decode(&raw.cmd(&cmd)) else {
        panic!("BF.MEXISTS {key}")
    };
    replies.iter().all(|r| *r == Resp::Int(1))
}

#[test]
fn copy_gives_an_independent_filter_and_its_dump_restores() {
    let server = Server::start(ferrobloom());
    let mut raw = server.raw();
    expect(&mut raw, "BF.RESERVE src 0.01 50 EXPANSION 2", OK);
    raw.cmd(&madd_line("src", "s", 400));
    expect(&mut raw, "BF.INFO src FILTERS", b"*1\r\n:4\r\n");
    let original = dump(&mut raw, "src");
    let digest = raw.line("DEBUG DIGEST-VALUE src");

    // Same database.
    expect(&mut raw, "COPY src dst", b":1\r\n");
    assert!(dump(&mut raw, "dst") == original, "DUMP of the copy");
    assert_eq!(raw.line("DEBUG DIGEST-VALUE dst"), digest);
    raw.cmd(&madd_line("dst", "d", 100));
    assert!(all_present(&mut raw, "dst", "d", 100));
    assert!(
        dump(&mut raw, "src") == original,
        "source changed by the copy"
    );
    expect(&mut raw, "BF.EXISTS src d0", b":0\r\n");
    raw.cmd(&madd_line("src", "t", 50));
    expect(&mut raw, "BF.EXISTS dst t0", b":0\r\n");
    let src_now = dump(&mut raw, "src");

    // An existing destination: refused, then replaced.
    expect(&mut raw, "COPY src dst", b":0\r\n");
    expect(&mut raw, "BF.EXISTS dst t0", b":0\r\n");
    expect(&mut raw, "COPY src dst REPLACE", b":1\r\n");
    assert!(dump(&mut raw, "dst") == src_now, "COPY REPLACE");
    expect(&mut raw, "COPY missing x", b":0\r\n");

    // Another database.
    expect(&mut raw, "COPY src far DB 1", b":1\r\n");
    expect(&mut raw, "EXISTS far", b":0\r\n");
    expect(&mut raw, "SELECT 1", OK);
    assert!(dump(&mut raw, "far") == src_now, "COPY ... DB 1");
    expect(&mut raw, "BF.ADD far only-in-db1", b":1\r\n");
    expect(&mut raw, "COPY far src DB 0 REPLACE", b":1\r\n");
    expect(&mut raw, "SELECT 0", OK);
    expect(&mut raw, "BF.EXISTS src only-in-db1", b":1\r\n");
    expect(&mut raw, "BF.EXISTS dst only-in-db1", b":0\r\n");

    // The copy's DUMP restores, here and on another server.
    let payload = dump(&mut raw, "dst");
    let restore = |raw: &mut RawClient, key: &str, extra: &[&str]| -> Vec<u8> {
        let mut cmd: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"0", &payload];
        cmd.extend(extra.iter().map(|e| e.as_bytes()));
        raw.cmd(&cmd)
    };
    assert_eq!(restore(&mut raw, "restored", &[]), OK);
    assert!(dump(&mut raw, "restored") == payload);
    assert!(all_present(&mut raw, "restored", "s", 400));
    assert!(all_present(&mut raw, "restored", "t", 50));
    assert!(restore(&mut raw, "restored", &[]).starts_with(b"-BUSYKEY"));
    assert_eq!(restore(&mut raw, "src", &["REPLACE"]), OK);
    assert!(dump(&mut raw, "src") == payload);
    let other = Server::start(ferrobloom());
    let mut o = other.raw();
    assert_eq!(restore(&mut o, "dst", &[]), OK);
    assert_eq!(
        o.line("DEBUG DIGEST-VALUE dst"),
        raw.line("DEBUG DIGEST-VALUE dst")
    );
    assert!(all_present(&mut o, "dst", "t", 50));
    // Deleting the source leaves the copies whole.
    expect(&mut raw, "DEL src", b":1\r\n");
    assert!(all_present(&mut raw, "dst", "s", 400));
    expect(&mut raw, "DEBUG RELOAD", OK);
    assert!(dump(&mut raw, "dst") == payload);
}

// ---------------------------------------------------------------------------
// Lazy free
// ---------------------------------------------------------------------------

/// UNLINK of a large filter is handed to Redis' lazy-free thread (the
/// free-effort callback reports 4 KiB pages + links, over Redis' threshold
/// of 64); small filters, and DEL without lazyfree-lazy-user-del, are
/// freed synchronously.
#[test]
fn unlink_of_a_large_filter_frees_it_in_the_background() {
    let server = Server::start(ferrobloom());
    let mut raw = server.raw();
    // INFO memory on Redis 7.0, 7.4 and Valkey 8/9.
    let lazyfreed = |raw: &mut RawClient| info_u64(raw, "memory", "lazyfreed_objects");
    let pending = |raw: &mut RawClient| info_u64(raw, "memory", "lazyfree_pending_objects");
    expect(&mut raw, "BF.RESERVE small 0.01 100", OK);
    expect(&mut raw, "BF.ADD small a", b":1\r\n");
    expect(&mut raw, "BF.RESERVE small2 0.01 1000", OK);
    // ~180 MB (RedisBloom's 2.8.2 observation: 198 MB with overhead).
    expect(&mut raw, "BF.RESERVE huge 0.001 100000000", OK);
    expect(&mut raw, "BF.ADD huge x", b":1\r\n");
    let size = info_u64(&mut raw, "memory", "used_memory");
    assert!(size > 170_000_000, "used_memory {size}");

    let before = lazyfreed(&mut raw);
    expect(&mut raw, "UNLINK small", b":1\r\n");
    expect(&mut raw, "DEL small2", b":1\r\n");
    assert_eq!(lazyfreed(&mut raw), before, "a small filter was lazy-freed");
    assert_eq!(pending(&mut raw), 0);

    let t = Instant::now();
    expect(&mut raw, "UNLINK huge", b":1\r\n");
    let unlink_time = t.elapsed();
    expect(&mut raw, "EXISTS huge", b":0\r\n");
    wait_until("the lazy free of huge", Duration::from_secs(20), || {
        lazyfreed(&mut raw) == before + 1
    });
    wait_until("no pending lazy free", Duration::from_secs(20), || {
        pending(&mut raw) == 0
    });
    let after = info_u64(&mut raw, "memory", "used_memory");
    assert!(size - after > 170_000_000, "used_memory {size} -> {after}");

    // DEL of a big filter is synchronous with lazyfree-lazy-user-del no
    // (Redis' default; Valkey 8 made it yes), lazy with yes.
    let version = server.version();
    let default = config_get(&mut raw, "lazyfree-lazy-user-del");
    assert_eq!(
        default,
        if version.valkey { "yes" } else { "no" },
        "{version:?}: default lazyfree-lazy-user-del"
    );
    expect(&mut raw, "CONFIG SET lazyfree-lazy-user-del no", OK);
    expect(&mut raw, "BF.RESERVE big 0.001 10000000", OK);
    let t = Instant::now();
    expect(&mut raw, "DEL big", b":1\r\n");
    let del_time = t.elapsed();
    assert_eq!(lazyfreed(&mut raw), before + 1, "DEL freed lazily");
    expect(&mut raw, "CONFIG SET lazyfree-lazy-user-del yes", OK);
    expect(&mut raw, "BF.RESERVE big 0.001 10000000", OK);
    expect(&mut raw, "DEL big", b":1\r\n");
    wait_until(
        "the lazy free of DEL with lazyfree-lazy-user-del",
        Duration::from_secs(20),
        || lazyfreed(&mut raw) == before + 2,
    );
    eprintln!("UNLINK of a 180 MB filter: {unlink_time:?}; synchronous DEL of 18 MB: {del_time:?}");
    assert!(!server.log().contains("panicked"));
}

// ---------------------------------------------------------------------------
// Active defragmentation
// ---------------------------------------------------------------------------

/// Debian's Redis 7.0 links Debian's jemalloc, which lacks the
/// fragmentation hint active defrag needs, so it refuses `activedefrag`
/// (as Valkey's libc-malloc builds do); Redis 7.4.1 (target/servers) has it.
#[test]
fn activedefrag_needs_redis_jemalloc() {
    let server = Server::start(ferrobloom().server_binary(REDIS_70));
    let mut raw = server.raw();
    assert_eq!(
        info_field(&mut raw, "memory", "mem_allocator").as_deref(),
        Some("jemalloc-5.3.0")
    );
    let reply = raw.line("CONFIG SET activedefrag yes");
    assert!(
        String::from_utf8_lossy(&reply).contains("modified Jemalloc"),
        "Debian's Redis 7.0 accepted activedefrag ({}); run the defrag test on it too",
        show(&reply)
    );
}

/// Many filters of various sizes, plain and windowed, every other one
/// deleted, then active defrag with low thresholds on Redis 7.4.1: it
/// moves value boxes and bit arrays (large chains and windows
/// incrementally, one bit array per step), and afterwards every filter
/// answers exactly as before (DUMP, DEBUG DIGEST-VALUE, all items).
/// The items `{prefix}0..n` added to a Bloom (`d…`) or Cuckoo (`cf…`)
/// filter in one command.
fn add_line(key: &str, prefix: &str, n: usize) -> Vec<String> {
    if key.starts_with("cf") {
        let mut cmd = vec![
            "CF.INSERT".to_string(),
            key.to_string(),
            "ITEMS".to_string(),
        ];
        cmd.extend((0..n).map(|i| format!("{prefix}{i}")));
        cmd
    } else {
        madd_line(key, prefix, n)
    }
}

/// Whether the items `{prefix}0..n` are all in a Bloom or Cuckoo filter.
fn present(raw: &mut RawClient, key: &str, prefix: &str, n: usize) -> bool {
    if !key.starts_with("cf") {
        return all_present(raw, key, prefix, n);
    }
    let mut cmd = vec!["CF.MEXISTS".to_string(), key.to_string()];
    cmd.extend((0..n).map(|i| format!("{prefix}{i}")));
    let Resp::Array(replies) = decode(&raw.cmd(&cmd)) else {
        panic!("CF.MEXISTS {key}")
    };
    replies.iter().all(|r| *r == Resp::Int(1))
}

#[test]
fn active_defrag_keeps_filters_exact() {
    let server = Server::start(
        ferrobloom()
            .server_binary(installed_server("redis-7.4"))
            .config("hz", "100"),
    );
    let mut raw = server.raw();
    let mut rng = StdRng::seed_from_u64(7);
    const FILTERS: usize = 8000;
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let mut items = Vec::with_capacity(FILTERS);
    for i in 0..FILTERS {
        let key = format!("d{i}");
        if i % 10 == 7 {
            // Cuckoo filters: one block per sub-filter; small ones expand.
            let key = format!("cf{i}");
            let capacity = rng.gen_range(20..600);
            let bucket_size = rng.gen_range(1..5);
            cmds.push(
                format!("CF.RESERVE {key} {capacity} BUCKETSIZE {bucket_size} EXPANSION 2")
                    .split(' ')
                    .map(str::to_string)
                    .collect(),
            );
            let n = rng.gen_range(1..400);
            cmds.push(add_line(&key, &format!("{key}-"), n));
            items.push((key, n));
            continue;
        }
        if i % 10 == 5 {
            // Windowed filters: G + 2 bit arrays each, one per step.
            let capacity = rng.gen_range(5..1500);
            cmds.push(
                format!("BF.RESERVE {key} 0.01 {capacity} WINDOW 30d GENERATIONS 2")
                    .split(' ')
                    .map(str::to_string)
                    .collect(),
            );
            let n = rng.gen_range(1..120);
            cmds.push(madd_line(&key, &format!("{key}-"), n));
            items.push((key, n));
            continue;
        }
        let (capacity, expansion, n) = if i % 50 == 0 {
            // Long chains of small links, defragmented incrementally.
            (10, 1, rng.gen_range(200..400))
        } else {
            (
                rng.gen_range(5..1500),
                rng.gen_range(1..4),
                rng.gen_range(1..120),
            )
        };
        cmds.push(
            format!("BF.RESERVE {key} 0.01 {capacity} EXPANSION {expansion}")
                .split(' ')
                .map(str::to_string)
                .collect(),
        );
        cmds.push(madd_line(&key, &format!("{key}-"), n));
        items.push((key, n));
    }
    for reply in raw.pipeline(&cmds) {
        assert!(!reply.starts_with(b"-"), "{}", show(&reply));
    }
    // Fragment: free every other filter.
    let dels: Vec<Vec<String>> = items
        .iter()
        .step_by(2)
        .map(|(k, _)| vec!["DEL".to_string(), k.clone()])
        .collect();
    raw.pipeline(&dels);
    let kept: Vec<(String, usize)> = items.into_iter().skip(1).step_by(2).collect();
    let state = |raw: &mut RawClient| -> Vec<Vec<u8>> {
        let cmds: Vec<Vec<String>> = kept
            .iter()
            .flat_map(|(k, _)| {
                [
                    vec!["DUMP".to_string(), k.clone()],
                    vec!["DEBUG".to_string(), "DIGEST-VALUE".to_string(), k.clone()],
                ]
            })
            .collect();
        raw.pipeline(&cmds)
    };
    let before = state(&mut raw);

    let stat = |raw: &mut RawClient, f: &str| info_u64(raw, "stats", f);
    for (name, value) in [
        ("active-defrag-ignore-bytes", "1"),
        ("active-defrag-threshold-lower", "1"),
        ("active-defrag-threshold-upper", "5"),
        ("active-defrag-cycle-min", "25"),
        ("active-defrag-cycle-max", "75"),
        // Filters whose free effort exceeds this are defragmented later,
        // through the cursor.
        ("active-defrag-max-scan-fields", "8"),
        ("activedefrag", "yes"),
    ] {
        expect(&mut raw, &format!("CONFIG SET {name} {value}"), OK);
    }
    let start = Instant::now();
    let waited = (|| {
        while start.elapsed() < Duration::from_secs(20) {
            if stat(&mut raw, "active_defrag_hits") > 0
                && stat(&mut raw, "active_defrag_key_hits") > 0
            {
                return true;
            }
            sleep(Duration::from_millis(50));
        }
        false
    })();
    assert!(
        waited,
        "active defrag moved nothing in 20 s:\n{}\n{}",
        info(&mut raw, "memory"),
        info(&mut raw, "stats")
    );
    // Let it go on for a while, then stop and compare.
    sleep(Duration::from_millis(1000));
    expect(&mut raw, "CONFIG SET activedefrag no", OK);
    let hits = (
        stat(&mut raw, "active_defrag_hits"),
        stat(&mut raw, "active_defrag_key_hits"),
    );
    let after = state(&mut raw);
    for (i, (a, b)) in after.iter().zip(&before).enumerate() {
        assert!(
            a == b,
            "{} of {} changed by defrag",
            if i % 2 == 0 {
                "DUMP"
            } else {
                "DEBUG DIGEST-VALUE"
            },
            kept[i / 2].0
        );
    }
    for (k, n) in &kept {
        assert!(present(&mut raw, k, &format!("{k}-"), *n), "{k}");
    }
    // Moved blocks are still owned properly: the filters grow, reload and
    // are freed.
    let grow: Vec<Vec<String>> = kept
        .iter()
        .map(|(k, _)| add_line(k, "more-", 200))
        .collect();
    for reply in raw.pipeline(&grow) {
        assert!(reply.starts_with(b"*200\r\n"), "{}", show(&reply));
    }
    expect(&mut raw, "DEBUG RELOAD", OK);
    for (k, n) in kept.iter().step_by(7) {
        assert!(present(&mut raw, k, &format!("{k}-"), *n), "{k}");
        assert!(present(&mut raw, k, "more-", 200), "{k}");
    }
    expect(&mut raw, "FLUSHALL", OK);
    expect(&mut raw, "PING", b"+PONG\r\n");
    eprintln!(
        "defrag: hits {} key hits {} after {:?}",
        hits.0,
        hits.1,
        start.elapsed()
    );
    assert!(!server.log().contains("panicked"));
}

// ---------------------------------------------------------------------------
// ACL categories
// ---------------------------------------------------------------------------

const ALL_COMMANDS: [&str; 13] = [
    "bf.reserve",
    "bf.add",
    "bf.madd",
    "bf.insert",
    "bf.exists",
    "bf.mexists",
    "bf.info",
    "bf.card",
    "bf.debug",
    "bf.scandump",
    "bf.loadchunk",
    "bf.plan",
    "bf.stats",
];

/// The ACL categories COMMAND INFO lists for a command, sorted.
fn categories(raw: &mut RawClient, command: &str) -> Vec<String> {
    let Resp::Array(reply) = decode(&raw.cmd(&["COMMAND", "INFO", command])) else {
        panic!("COMMAND INFO {command}")
    };
    let Resp::Array(fields) = &reply[0] else {
        panic!("COMMAND INFO {command}: {reply:?}")
    };
    let Resp::Array(cats) = &fields[6] else {
        panic!("COMMAND INFO {command}: {fields:?}")
    };
    let mut cats: Vec<String> = cats.iter().map(|c| c.as_str().expect("category")).collect();
    cats.sort();
    cats
}

/// As user `user` (authenticated on a fresh connection), runs `line`.
fn as_user(server: &Server, user: &str, line: &str) -> Vec<u8> {
    let mut raw = server.raw();
    expect(&mut raw, &format!("AUTH {user} any"), OK);
    raw.line(line)
}

fn acl_categories_on(binary: PathBuf) {
    let server = Server::start(ferrobloom().server_binary(&binary));
    let mut raw = server.raw();
    let version = server.version();
    assert!(
        version.module_category_names(),
        "{}: {version:?}",
        binary.display()
    );
    let fast = [
        "bf.add",
        "bf.madd",
        "bf.insert",
        "bf.exists",
        "bf.mexists",
        "bf.info",
        "bf.card",
    ];
    for c in ALL_COMMANDS {
        let write = [
            "bf.reserve",
            "bf.add",
            "bf.madd",
            "bf.insert",
            "bf.loadchunk",
        ]
        .contains(&c);
        let mut want = vec!["@bloom", if write { "@write" } else { "@read" }];
        if fast.contains(&c) {
            want.push("@fast");
        }
        want.sort();
        assert_eq!(categories(&mut raw, c), want, "{version:?}: {c}");
    }
    let Resp::Array(listed) = decode(&raw.line("ACL CAT bloom")) else {
        panic!("ACL CAT bloom")
    };
    let mut listed: Vec<String> = listed.iter().map(|c| c.as_str().expect("name")).collect();
    listed.sort();
    let mut all = ALL_COMMANDS.map(str::to_string).to_vec();
    all.sort();
    if version.valkey {
        assert_eq!(listed, all, "{version:?}: ACL CAT bloom");
    } else {
        // Redis leaves module commands out of ACL CAT listings (its
        // aclCatWithFlags skips CMD_MODULE), though the category applies.
        assert_eq!(listed, Vec::<String>::new(), "{version:?}: ACL CAT bloom");
    }

    expect(&mut raw, "BF.RESERVE k 0.01 100", OK);
    expect(&mut raw, "BF.ADD k a", b":1\r\n");
    expect(&mut raw, "SET plain v", OK);
    for line in [
        "ACL SETUSER reader on nopass ~* +@read",
        "ACL SETUSER writer on nopass ~* +@write",
        "ACL SETUSER bloom on nopass ~* +@bloom",
        "ACL SETUSER fast on nopass ~* +@fast",
    ] {
        expect(&mut raw, line, OK);
    }
    // +@read: the read commands, no write.
    assert_eq!(as_user(&server, "reader", "BF.EXISTS k a"), b":1\r\n");
    assert_eq!(as_user(&server, "reader", "BF.CARD k"), b":1\r\n");
    assert!(as_user(&server, "reader", "BF.INFO k").starts_with(b"*10\r\n"));
    assert!(as_user(&server, "reader", "BF.ADD k b").starts_with(b"-NOPERM"));
    assert!(as_user(&server, "reader", "BF.RESERVE n 0.01 10").starts_with(b"-NOPERM"));
    // +@write: the writes only.
    assert_eq!(as_user(&server, "writer", "BF.ADD k b"), b":1\r\n");
    assert!(as_user(&server, "writer", "BF.EXISTS k a").starts_with(b"-NOPERM"));
    // +@fast: the O(items) commands, not BF.RESERVE or BF.SCANDUMP.
    assert_eq!(as_user(&server, "fast", "BF.MADD k c"), b"*1\r\n:1\r\n");
    assert!(as_user(&server, "fast", "BF.RESERVE f 0.01 10").starts_with(b"-NOPERM"));
    assert!(as_user(&server, "fast", "BF.SCANDUMP k 0").starts_with(b"-NOPERM"));
    // +@bloom: every BF command and nothing else.
    let mut bloom = server.raw();
    expect(&mut bloom, "AUTH bloom any", OK);
    for (line, want) in [
        ("BF.RESERVE b 0.01 100", "+OK"),
        ("BF.ADD b x", ":1"),
        ("BF.MADD b y", "*1"),
        ("BF.INSERT b ITEMS z", "*1"),
        ("BF.EXISTS b x", ":1"),
        ("BF.MEXISTS b x", "*1"),
        ("BF.INFO b", "*10"),
        ("BF.CARD b", ":3"),
        ("BF.DEBUG b", "*2"),
        ("BF.SCANDUMP b 0", "*2"),
        ("BF.PLAN 1000 0.01", "*"),
        ("BF.STATS b", "*"),
    ] {
        let got = bloom.line(line);
        assert!(
            got.starts_with(want.as_bytes()),
            "{version:?} +@bloom: {line}: {}",
            show(&got)
        );
    }
    let head = match decode(&bloom.line("BF.SCANDUMP b 0")) {
        Resp::Array(v) => v,
        other => panic!("{other:?}"),
    };
    let Resp::Bulk(bytes) = &head[1] else {
        panic!("{head:?}")
    };
    assert_eq!(
        bloom.cmd(&[b"BF.LOADCHUNK".as_slice(), b"b2", b"1", bytes]),
        OK,
        "{version:?} +@bloom: BF.LOADCHUNK"
    );
    assert!(bloom.line("GET plain").starts_with(b"-NOPERM"));
    assert!(bloom.line("SET plain w").starts_with(b"-NOPERM"));
    cuckoo_acl_categories_on(&server);
    eprintln!("ACL categories checked on {version:?}");
}

const CF_COMMANDS: [&str; 16] = [
    "cf.reserve",
    "cf.add",
    "cf.addnx",
    "cf.insert",
    "cf.insertnx",
    "cf.exists",
    "cf.mexists",
    "cf.count",
    "cf.del",
    "cf.compact",
    "cf.scandump",
    "cf.loadchunk",
    "cf.info",
    "cf.debug",
    "cf.stats",
    "cf.plan",
];

/// The CF commands are in `@cuckoo`, apart from `@bloom`: a user may be
/// given one type's commands without the other's.
fn cuckoo_acl_categories_on(server: &Server) {
    let mut raw = server.raw();
    let version = server.version();
    let write = [
        "cf.reserve",
        "cf.add",
        "cf.addnx",
        "cf.insert",
        "cf.insertnx",
        "cf.del",
        "cf.loadchunk",
    ];
    // Bounded by their items; CF.COMPACT, CF.SCANDUMP and CF.DEBUG walk a
    // whole filter.
    let fast = [
        "cf.add",
        "cf.addnx",
        "cf.insert",
        "cf.insertnx",
        "cf.exists",
        "cf.mexists",
        "cf.count",
        "cf.del",
        "cf.info",
    ];
    for c in CF_COMMANDS {
        // CF.COMPACT is read-only, as in RedisBloom (it only moves
        // fingerprints; it runs on read-only replicas).
        let mut want = vec![
            "@cuckoo",
            if write.contains(&c) {
                "@write"
            } else {
                "@read"
            },
        ];
        if fast.contains(&c) {
            want.push("@fast");
        }
        want.sort();
        assert_eq!(categories(&mut raw, c), want, "{version:?}: {c}");
    }
    let Resp::Array(listed) = decode(&raw.line("ACL CAT cuckoo")) else {
        panic!("ACL CAT cuckoo")
    };
    let mut listed: Vec<String> = listed.iter().map(|c| c.as_str().expect("name")).collect();
    listed.sort();
    let mut all = CF_COMMANDS.map(str::to_string).to_vec();
    all.sort();
    if version.valkey {
        assert_eq!(listed, all, "{version:?}: ACL CAT cuckoo");
    } else {
        // As for @bloom: Redis leaves module commands out of ACL CAT.
        assert_eq!(listed, Vec::<String>::new(), "{version:?}: ACL CAT cuckoo");
    }

    expect(&mut raw, "CF.RESERVE ck 100", OK);
    expect(&mut raw, "CF.ADD ck a", b":1\r\n");
    expect(&mut raw, "BF.ADD bk a", b":1\r\n");
    expect(&mut raw, "ACL SETUSER cuckoo on nopass ~* +@cuckoo", OK);
    expect(
        &mut raw,
        "ACL SETUSER cfreader on nopass ~* +@cuckoo -@write",
        OK,
    );
    let mut cuckoo = server.raw();
    expect(&mut cuckoo, "AUTH cuckoo any", OK);
    for (line, want) in [
        ("CF.RESERVE c2 100 BUCKETSIZE 4", "+OK"),
        ("CF.ADD c2 x", ":1"),
        ("CF.ADDNX c2 x", ":0"),
        ("CF.INSERT c2 ITEMS y", "*1"),
        ("CF.INSERTNX c2 ITEMS z", "*1"),
        ("CF.EXISTS c2 x", ":1"),
        ("CF.MEXISTS c2 x nope", "*2"),
        ("CF.COUNT c2 x", ":1"),
        ("CF.DEL c2 y", ":1"),
        ("CF.COMPACT c2", "+OK"),
        ("CF.INFO c2", "*16"),
        ("CF.DEBUG c2", "$"),
        ("CF.SCANDUMP c2 0", "*2"),
        ("CF.STATS c2", "*"),
        ("CF.PLAN 1000", "*"),
    ] {
        let got = cuckoo.line(line);
        assert!(
            got.starts_with(want.as_bytes()),
            "{version:?} +@cuckoo: {line}: {}",
            show(&got)
        );
    }
    let head = match decode(&cuckoo.line("CF.SCANDUMP c2 0")) {
        Resp::Array(v) => v,
        other => panic!("{other:?}"),
    };
    let Resp::Bulk(bytes) = &head[1] else {
        panic!("{head:?}")
    };
    assert_eq!(
        cuckoo.cmd(&[b"CF.LOADCHUNK".as_slice(), b"c3", b"1", bytes]),
        OK,
        "{version:?} +@cuckoo: CF.LOADCHUNK"
    );
    // The other type's commands, and the rest, stay closed.
    assert!(cuckoo.line("BF.EXISTS bk a").starts_with(b"-NOPERM"));
    assert!(cuckoo.line("BF.RESERVE b9 0.01 10").starts_with(b"-NOPERM"));
    assert!(cuckoo.line("GET plain").starts_with(b"-NOPERM"));
    let mut bloom = server.raw();
    expect(&mut bloom, "AUTH bloom any", OK);
    assert!(bloom.line("CF.EXISTS ck a").starts_with(b"-NOPERM"));
    assert!(bloom.line("CF.ADD ck b").starts_with(b"-NOPERM"));
    // +@cuckoo -@write: lookups only.
    assert_eq!(as_user(server, "cfreader", "CF.EXISTS ck a"), b":1\r\n");
    assert!(as_user(server, "cfreader", "CF.ADD ck b").starts_with(b"-NOPERM"));
    assert!(as_user(server, "cfreader", "CF.DEL ck a").starts_with(b"-NOPERM"));
}

#[test]
fn acl_categories_on_redis_74() {
    acl_categories_on(installed_server("redis-7.4"));
}

#[test]
fn acl_categories_on_valkey_8() {
    acl_categories_on(installed_server("valkey-8.1"));
}

#[test]
fn acl_categories_on_valkey_9() {
    acl_categories_on(installed_server("valkey-9.1"));
}

/// Redis 7.0 cannot put module commands in categories: FerroBloom's
/// commands are in none, exactly as RedisBloom 2.8.2's, and users need the
/// commands named (or +@all).
#[test]
fn no_acl_categories_on_redis_70() {
    let ours = Server::start(ferrobloom().server_binary(REDIS_70));
    let theirs = Server::start(ServerOpts::new(ModuleKind::RedisBloom).server_binary(REDIS_70));
    let (mut raw, mut oracle) = (ours.raw(), theirs.raw());
    let version = ours.version();
    assert!(
        version.is_redis_70() && !version.module_acl_categories(),
        "{version:?}"
    );
    for c in ALL_COMMANDS {
        assert_eq!(categories(&mut raw, c), Vec::<String>::new(), "{c}");
        if !["bf.plan", "bf.stats"].contains(&c) {
            assert_eq!(
                categories(&mut oracle, c),
                Vec::<String>::new(),
                "RedisBloom {c}"
            );
        }
    }
    for r in [&mut raw, &mut oracle] {
        expect_error(r, "ACL CAT bloom", "-ERR");
        expect_error(r, "ACL SETUSER u on nopass ~* +@bloom", "-ERR");
        expect(r, "BF.ADD k a", b":1\r\n");
        expect(r, "ACL SETUSER reader on nopass ~* +@read", OK);
        expect(r, "ACL SETUSER named on nopass ~* +bf.exists +bf.info", OK);
    }
    for s in [&ours, &theirs] {
        assert!(as_user(s, "reader", "BF.EXISTS k a").starts_with(b"-NOPERM"));
        assert_eq!(as_user(s, "named", "BF.EXISTS k a"), b":1\r\n");
        assert!(as_user(s, "named", "BF.ADD k b").starts_with(b"-NOPERM"));
    }
    // The one difference in key access: RedisBloom's key specs are all `RW
    // access update`, so a user with read-only key permissions cannot even
    // run BF.EXISTS there; FerroBloom declares `RO access`.
    for r in [&mut raw, &mut oracle] {
        expect(r, "ACL SETUSER ro on nopass %R~* +@all", OK);
    }
    assert_eq!(as_user(&ours, "ro", "BF.EXISTS k a"), b":1\r\n");
    assert!(as_user(&theirs, "ro", "BF.EXISTS k a").starts_with(b"-NOPERM"));
    let rw = vec![
        "[flags [RW access update] begin_search [type index spec [index 1]] \
         find_keys [type range spec [lastkey 0 keystep 1 limit 0]]]"
            .to_string(),
    ];
    for c in ALL_COMMANDS {
        if !["bf.plan", "bf.stats"].contains(&c) {
            assert_eq!(key_specs(&mut oracle, c), rw, "RedisBloom {c}");
        }
    }
}

// ---------------------------------------------------------------------------
// Key specs: read-only access for the commands that only read
// ---------------------------------------------------------------------------

/// A reply element as compact text for comparisons: strings as they are,
/// integers as numbers, arrays (RESP2 maps) as `[a b c]`.
fn render(value: &Resp) -> String {
    match value {
        Resp::Simple(s) => s.clone(),
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Resp::Int(n) => n.to_string(),
        Resp::Array(items) | Resp::Set(items) => {
            let inner: Vec<String> = items.iter().map(render).collect();
            format!("[{}]", inner.join(" "))
        }
        other => panic!("unexpected element {other:?}"),
    }
}

/// The key specs COMMAND INFO lists for a command (RESP2), each as text.
fn key_specs(raw: &mut RawClient, command: &str) -> Vec<String> {
    let Resp::Array(reply) = decode(&raw.cmd(&["COMMAND", "INFO", command])) else {
        panic!("COMMAND INFO {command}")
    };
    let Resp::Array(fields) = &reply[0] else {
        panic!("COMMAND INFO {command}: {reply:?}")
    };
    let Resp::Array(specs) = &fields[8] else {
        panic!("COMMAND INFO {command}: {fields:?}")
    };
    specs.iter().map(render).collect()
}

/// The key spec FerroBloom declares for `command`: its flags, the key at
/// index 1, one key.
fn want_key_specs(command: &str) -> Vec<String> {
    let flags = common::bf_key_spec_flags(command);
    if flags.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "[flags [{}] begin_search [type index spec [index 1]] \
         find_keys [type range spec [lastkey 0 keystep 1 limit 0]]]",
        flags.join(" ")
    )]
}

const READ_ONLY_COMMANDS: [&str; 7] = [
    "BF.EXISTS f1 a",
    "BF.MEXISTS f1 a zz",
    "BF.INFO f1",
    "BF.CARD f1",
    "BF.DEBUG f1",
    "BF.SCANDUMP f1 0",
    "BF.STATS f1",
];

/// COMMAND INFO shows each command's key access, and ACL key permissions
/// follow it: a `%R~` user runs the read commands and gets NOPERM for the
/// writes; `%RW~` and `~` users run both; a `%W~` user the writes only.
fn key_specs_on(binary: &str) {
    let server = Server::start(ferrobloom().server_binary(binary));
    let mut raw = server.raw();
    let version = server.version();
    for c in ALL_COMMANDS {
        assert_eq!(
            key_specs(&mut raw, c),
            want_key_specs(c),
            "{version:?}: {c}"
        );
        // The legacy key positions stay (1, 1, 1); BF.PLAN's (0, 0, 0).
        let Resp::Array(reply) = decode(&raw.cmd(&["COMMAND", "INFO", c])) else {
            panic!("COMMAND INFO {c}")
        };
        let Resp::Array(fields) = &reply[0] else {
            panic!("{reply:?}")
        };
        let first = Resp::Int(i64::from(c != "bf.plan"));
        assert_eq!(fields[1], Resp::Int(-1), "{version:?}: {c} arity");
        assert_eq!(
            fields[3..6],
            [first.clone(), first.clone(), first],
            "{version:?}: {c} key positions"
        );
    }
    expect(
        &mut raw,
        "COMMAND GETKEYS BF.ADD f1 a",
        b"*1\r\n$2\r\nf1\r\n",
    );
    expect(
        &mut raw,
        "COMMAND GETKEYS BF.EXISTS f1 a",
        b"*1\r\n$2\r\nf1\r\n",
    );

    expect(&mut raw, "BF.RESERVE f1 0.01 100", OK);
    expect(&mut raw, "BF.ADD f1 a", b":1\r\n");
    expect(&mut raw, "BF.ADD g1 a", b":1\r\n");
    let header = match decode(&raw.line("BF.SCANDUMP f1 0")) {
        Resp::Array(v) => match &v[1] {
            Resp::Bulk(bytes) => bytes.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let mut users = vec![
        "ACL SETUSER r on nopass %R~f* +@all",
        "ACL SETUSER rw on nopass %RW~f* +@all",
        "ACL SETUSER all on nopass ~f* +@all",
        "ACL SETUSER w on nopass %W~f* +@all",
    ];
    if version.module_category_names() {
        users.push("ACL SETUSER rb on nopass %R~f* +@bloom");
    }
    for line in &users {
        expect(&mut raw, line, OK);
    }
    let readers: &[&str] = if version.module_category_names() {
        &["r", "rb", "rw", "all"]
    } else {
        &["r", "rw", "all"]
    };
    for user in readers {
        let mut c = server.raw();
        expect(&mut c, &format!("AUTH {user} any"), OK);
        for line in READ_ONLY_COMMANDS {
            let got = c.line(line);
            assert!(
                !got.starts_with(b"-"),
                "{version:?} {user}: {line}: {}",
                show(&got)
            );
        }
        // Not on keys outside the pattern.
        expect_error(&mut c, "BF.EXISTS g1 a", "-NOPERM");
        expect_error(&mut c, "BF.CARD g1", "-NOPERM");
    }
    // A write-only user cannot read.
    let mut w = server.raw();
    expect(&mut w, "AUTH w any", OK);
    for line in READ_ONLY_COMMANDS {
        expect_error(&mut w, line, "-NOPERM");
    }
    // Writes: refused for the read-only users, allowed for the others.
    let writes = |key: &str| -> Vec<Vec<Vec<u8>>> {
        let k = key.as_bytes().to_vec();
        vec![
            vec![b"BF.ADD".to_vec(), k.clone(), b"b".to_vec()],
            vec![b"BF.MADD".to_vec(), k.clone(), b"c".to_vec()],
            vec![
                b"BF.INSERT".to_vec(),
                k.clone(),
                b"ITEMS".to_vec(),
                b"d".to_vec(),
            ],
            vec![
                b"BF.RESERVE".to_vec(),
                [key.as_bytes(), b"new"].concat(),
                b"0.01".to_vec(),
                b"10".to_vec(),
            ],
            vec![
                b"BF.LOADCHUNK".to_vec(),
                [key.as_bytes(), b"copy"].concat(),
                b"1".to_vec(),
                header.clone(),
            ],
        ]
    };
    let read_only: &[&str] = if version.module_category_names() {
        &["r", "rb"]
    } else {
        &["r"]
    };
    for user in read_only {
        let mut c = server.raw();
        expect(&mut c, &format!("AUTH {user} any"), OK);
        for cmd in writes("f1") {
            let got = c.cmd(&cmd);
            assert!(
                got.starts_with(b"-NOPERM"),
                "{version:?} {user}: {}: {}",
                String::from_utf8_lossy(&cmd[0]),
                show(&got)
            );
        }
    }
    for (user, key) in [("rw", "f2"), ("all", "f3"), ("w", "f4")] {
        let mut c = server.raw();
        expect(&mut c, &format!("AUTH {user} any"), OK);
        for cmd in writes(key) {
            let got = c.cmd(&cmd);
            assert!(
                !got.starts_with(b"-"),
                "{version:?} {user}: {}: {}",
                String::from_utf8_lossy(&cmd[0]),
                show(&got)
            );
        }
        expect_error(&mut c, "BF.ADD g1 x", "-NOPERM");
    }
    // Nothing the refused writes could have changed.
    expect(&mut raw, "BF.CARD f1", b":1\r\n");
    expect(&mut raw, "EXISTS f1new f1copy", b":0\r\n");
    expect(
        &mut raw,
        "EXISTS f2new f2copy f3new f3copy f4new f4copy",
        b":6\r\n",
    );
    assert!(!server.log().contains("key specs"), "{}", server.log());
    eprintln!("key specs and %R~ users checked on {version:?}");
}

#[test]
fn key_specs_on_redis_70() {
    key_specs_on(REDIS_70);
}

#[test]
fn key_specs_on_redis_74() {
    key_specs_on(installed_server("redis-7.4").to_str().expect("path"));
}

#[test]
fn key_specs_on_valkey_8() {
    key_specs_on(installed_server("valkey-8.1").to_str().expect("path"));
}

#[test]
fn key_specs_on_valkey_9() {
    key_specs_on(installed_server("valkey-9.1").to_str().expect("path"));
}

// ---------------------------------------------------------------------------
// Durability
// ---------------------------------------------------------------------------

/// With `appendfsync always`, every BF.MADD a client saw acknowledged
/// survives `kill -9` (an AOF rewrite to BF.LOADCHUNK commands happened on
/// the way), and the AOF replays to the same filters under other settings.
#[test]
fn acknowledged_adds_survive_kill_9() {
    let opts = ferrobloom()
        .module_args(&["ERROR_RATE", "0.05", "INITIAL_SIZE", "50"])
        .config("bf.policy", "pow2")
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no");
    let mut server = Server::start(opts);
    let mut raw = server.raw();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let port = server.port();
        thread::spawn(move || {
            let mut raw = RawClient::connect(port);
            let mut acked: Vec<(String, Vec<String>)> = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let key = format!("dur{}", i % 8);
                let items: Vec<String> = (0..16).map(|j| format!("it-{i}-{j}")).collect();
                let mut cmd = vec!["BF.MADD".to_string(), key.clone()];
                cmd.extend(items.iter().cloned());
                match raw.try_cmd(&cmd) {
                    Ok(reply) if reply.starts_with(b"*16\r\n") => acked.push((key, items)),
                    Ok(reply) => panic!("BF.MADD: {}", show(&reply)),
                    // The server is gone.
                    Err(_) => break,
                }
                i += 1;
            }
            acked
        })
    };
    sleep(Duration::from_millis(300));
    expect(
        &mut raw,
        "BGREWRITEAOF",
        b"+Background append only file rewriting started\r\n",
    );
    wait_until("the AOF rewrite", Duration::from_secs(20), || {
        info_field(&mut raw, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut raw, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    sleep(Duration::from_millis(300));
    let pid = server.pid();
    // SAFETY: kill(2) of our own child, still running.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) }, 0);
    // The writer stops at the first failed call (the connection is gone);
    // the flag only bounds it should the server somehow survive.
    stop.store(true, Ordering::Relaxed);
    let acked = writer.join().expect("writer thread");
    server.kill9(); // reaps it
    assert!(
        acked.len() > 20,
        "only {} acknowledged BF.MADD",
        acked.len()
    );

    server.restart();
    let mut raw = server.raw();
    let mut by_key: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    for (key, items) in &acked {
        by_key.entry(key).or_default().extend(items);
    }
    let check = |raw: &mut RawClient, context: &str| {
        for (key, items) in &by_key {
            for chunk in items.chunks(2000) {
                let mut cmd = vec!["BF.MEXISTS".to_string(), key.to_string()];
                cmd.extend(chunk.iter().map(|s| s.to_string()));
                let Resp::Array(replies) = decode(&raw.cmd(&cmd)) else {
                    panic!("{context}: BF.MEXISTS {key}")
                };
                let lost = replies.iter().filter(|r| **r != Resp::Int(1)).count();
                assert_eq!(
                    lost, 0,
                    "{context}: {lost} acknowledged items of {key} lost"
                );
            }
        }
    };
    check(&mut raw, "after kill -9");
    // The AOF (a LOADCHUNK base and the increments) under other settings.
    let mut other = ferrobloom()
        .module_args(&["ERROR_RATE", "0.2", "INITIAL_SIZE", "3"])
        .config("bf.expansion", "5")
        .config("appendonly", "yes")
        .config("aof-use-rdb-preamble", "no");
    let aof_dir = server.dir().join("appendonlydir");
    for entry in fs::read_dir(&aof_dir).expect("appendonlydir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_owned();
        other = other.file(
            Path::new("appendonlydir").join(name),
            fs::read(&path).expect("read AOF"),
        );
    }
    let replayed = Server::start(other);
    let mut r = replayed.raw();
    check(&mut r, "AOF replayed with other settings");
    for key in by_key.keys() {
        assert!(
            dump(&mut r, key) == dump(&mut raw, key),
            "{key}: the AOF replays to another filter under other settings"
        );
    }
    eprintln!(
        "durability: {} acknowledged BF.MADD of 16 items survived kill -9",
        acked.len()
    );
}
