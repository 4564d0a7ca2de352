//! Reads between adds on the master and on a replica leave both holding
//! the same digests (2.8.2's reads compress where they run, so its master
//! and replica drift apart), and AOF replays answer the same. A read by a
//! client allowed to write the key on the master leaves a compress owed
//! (P), which the next write sends first (`TDIGEST.QUANTILE key 0`, the
//! marker); reads on a replica or by a read-only user owe nothing.

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::common::replication::{replicate, wait_for_replica};
use super::common::{ModuleKind, RawClient, Server, ServerOpts};
use super::OK;

const TIMEOUT: Duration = Duration::from_secs(30);

/// What every server holding the same digests answers alike, whatever
/// reads ran where (INFO only once the master's last write sent what its
/// reads owed).
fn answers(r: &mut RawClient) -> Vec<Vec<u8>> {
    vec![
        r.cmd(&["DEBUG", "DIGEST-VALUE", "t", "m"]),
        r.cmd(&["TDIGEST.QUANTILE", "t", "0.1", "0.5", "0.9"]),
        r.cmd(&["TDIGEST.CDF", "m", "3", "50"]),
        r.cmd(&["TDIGEST.BYRANK", "x", "3", "300"]),
    ]
}

/// INFO of the keys written last (`m` is only read after its last write:
/// the master shows compress(S) there, the replica S).
fn info(r: &mut RawClient) -> Vec<Vec<u8>> {
    ["t", "x"]
        .iter()
        .map(|k| r.cmd(&["TDIGEST.INFO", k]))
        .collect()
}

/// The commands of a server's AOF (the increment files), in order, as
/// text words.
fn aof_commands(dir: &Path) -> Vec<Vec<String>> {
    let mut names: Vec<_> = fs::read_dir(dir.join("appendonlydir"))
        .expect("appendonlydir")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .filter(|n| n.contains(".incr."))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let bytes = fs::read(dir.join("appendonlydir").join(name)).expect("AOF");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut lines = text.split("\r\n");
        while let Some(head) = lines.next() {
            let Some(n) = head.strip_prefix('*') else {
                continue;
            };
            let n: usize = n.parse().expect("an array length");
            let mut words = Vec::with_capacity(n);
            for _ in 0..n {
                lines.next().expect("a bulk length");
                words.push(lines.next().expect("a bulk").to_string());
            }
            out.push(words);
        }
    }
    out
}

/// The commands on key `key` after the last `TDIGEST.CREATE` of it.
fn on_key(commands: &[Vec<String>], key: &str) -> Vec<String> {
    commands
        .iter()
        .filter(|c| c.len() > 1 && c[1] == key && c[0].starts_with("TDIGEST."))
        .map(|c| c.join(" "))
        .collect()
}

fn add_round(m: &mut RawClient, key: &str, round: usize) {
    let values: Vec<String> = (0..37)
        .map(|i| ((round * 37 + i) % 91).to_string())
        .collect();
    let mut add = vec!["TDIGEST.ADD", key];
    add.extend(values.iter().map(String::as_str));
    assert_eq!(m.cmd(&add), OK);
}

#[test]
fn master_replica_and_aof_agree_with_reads_between_adds() {
    let aof = |opts: ServerOpts| {
        opts.config("appendonly", "yes")
            .config("appendfsync", "always")
    };
    let mut master = Server::start(aof(ServerOpts::new(ModuleKind::FerroBloom)));
    let mut replica = Server::start(aof(ServerOpts::new(ModuleKind::FerroBloom)));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    assert_eq!(m.line("TDIGEST.CREATE t COMPRESSION 20"), OK);
    assert_eq!(m.line("TDIGEST.CREATE x COMPRESSION 50"), OK);
    for round in 0..40 {
        add_round(&mut m, "t", round);
        add_round(&mut m, "x", round);
        // Reads on the master at some rounds, on the replica at others.
        if round % 3 == 0 {
            m.cmd(&["TDIGEST.QUANTILE", "t", "0.5"]);
            m.cmd(&["TDIGEST.RANK", "x", "40"]);
        }
        if round % 5 == 0 {
            wait_for_replica(&mut m, &mut s, TIMEOUT);
            s.cmd(&["TDIGEST.CDF", "t", "7"]);
            s.cmd(&["TDIGEST.TRIMMED_MEAN", "x", "0.1", "0.9"]);
        }
        if round % 7 == 0 {
            assert_eq!(m.line("TDIGEST.MERGE m 2 t x"), OK);
        }
        if round == 20 {
            // Saved and loaded on the master while it owes a compress.
            m.cmd(&["TDIGEST.QUANTILE", "t", "0.5"]);
            assert_eq!(m.line("DEBUG RELOAD"), OK);
            wait_for_replica(&mut m, &mut s, TIMEOUT);
            assert_eq!(answers(&mut s), answers(&mut m), "after DEBUG RELOAD");
        }
    }
    // The last round read on the master: answers agree, INFO waits for a
    // write (the replica shows its stored digest).
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    let want = answers(&mut m);
    assert!(
        want[0].starts_with(b"*2\r\n+"),
        "{}",
        String::from_utf8_lossy(&want[0])
    );
    assert_eq!(answers(&mut s), want, "replica");
    assert_ne!(info(&mut s), info(&mut m), "INFO before the next write");
    for key in ["t", "x"] {
        assert_eq!(m.cmd(&["TDIGEST.ADD", key, "1000"]), OK);
    }
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    // INFO first: the reads in `answers` owe a compress again.
    let want = (info(&mut m), answers(&mut m));
    assert_eq!((info(&mut s), answers(&mut s)), want, "replica");
    for (server, what) in [(&mut master, "master"), (&mut replica, "replica")] {
        server.restart();
        let mut r = server.raw();
        assert_eq!((info(&mut r), answers(&mut r)), want, "{what}'s AOF replay");
    }
}

#[test]
fn the_marker_goes_before_the_write_only_after_a_writers_read_on_the_master() {
    let master = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("appendfsync", "always"),
    );
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    // Redis 7.0 puts module commands in no category from their flags:
    // the write is denied by name.
    assert_eq!(
        m.line("ACL SETUSER ro on nopass ~* +@all -tdigest.add -tdigest.reset"),
        OK
    );
    assert_eq!(m.line("ACL SETUSER keys_ro on nopass %R~* +@all"), OK);
    assert_eq!(m.line("TDIGEST.CREATE t COMPRESSION 20"), OK);
    assert_eq!(m.line("TDIGEST.ADD t 1 2 3"), OK);
    let stored = m.cmd(&["TDIGEST.INFO", "t"]);

    // Reads that owe nothing: a replica's, and read-only users'.
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    assert_eq!(
        s.line("TDIGEST.QUANTILE t 0.5"),
        b"*1\r\n$1\r\n2\r\n",
        "replica read"
    );
    for user in ["ro", "keys_ro"] {
        let mut r = master.raw();
        assert_eq!(r.cmd(&["AUTH", user, "x"]), OK);
        assert!(r.line("TDIGEST.ADD t 9").starts_with(b"-NOPERM"), "{user}");
        assert_eq!(r.line("TDIGEST.QUANTILE t 0.5"), b"*1\r\n$1\r\n2\r\n");
        assert_eq!(r.line("TDIGEST.CDF t 2"), b"*1\r\n$3\r\n0.5\r\n");
    }
    assert_eq!(m.cmd(&["TDIGEST.INFO", "t"]), stored, "INFO unchanged");
    assert_eq!(m.line("TDIGEST.ADD t 4"), OK);
    assert_eq!(
        on_key(&aof_commands(master.dir()), "t"),
        [
            "TDIGEST.CREATE t COMPRESSION 20",
            "TDIGEST.ADD t 1 2 3",
            "TDIGEST.ADD t 4"
        ],
        "no marker"
    );

    // The default user may write: its read owes the replicas a compress.
    assert!(m.line("TDIGEST.QUANTILE t 0.5").starts_with(b"*1\r\n$"));
    let compressed = m.cmd(&["TDIGEST.INFO", "t"]);
    assert_ne!(compressed, stored);
    assert!(
        String::from_utf8_lossy(&compressed).contains("Unmerged nodes\r\n:0\r\n"),
        "{}",
        String::from_utf8_lossy(&compressed)
    );
    assert_eq!(m.line("TDIGEST.ADD t 5"), OK);
    assert_eq!(m.line("TDIGEST.ADD t 6"), OK);
    assert_eq!(
        on_key(&aof_commands(master.dir()), "t")[3..],
        ["TDIGEST.QUANTILE t 0", "TDIGEST.ADD t 5", "TDIGEST.ADD t 6"],
        "the marker, once, before the write"
    );
    let commands = aof_commands(master.dir());
    let at = commands
        .iter()
        .position(|c| c.join(" ") == "TDIGEST.QUANTILE t 0")
        .expect("the marker");
    assert_eq!(commands[at - 1], ["MULTI"], "one transaction");
    assert_eq!(commands[at + 2], ["EXEC"]);
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    assert_eq!(s.cmd(&["TDIGEST.INFO", "t"]), m.cmd(&["TDIGEST.INFO", "t"]));
    assert_eq!(
        s.line("DEBUG DIGEST-VALUE t"),
        m.line("DEBUG DIGEST-VALUE t")
    );
}

#[test]
fn a_read_during_client_pause_write_answers_and_owes_its_compress() {
    let mut master = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("appendfsync", "always"),
    );
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    assert_eq!(m.line("TDIGEST.CREATE t COMPRESSION 20"), OK);
    add_round(&mut m, "t", 1);
    assert_eq!(m.line("CLIENT PAUSE 2000 WRITE"), OK);
    let during = m.line("TDIGEST.QUANTILE t 0.25 0.5");
    assert!(
        during.starts_with(b"*2\r\n$"),
        "{}",
        String::from_utf8_lossy(&during)
    );
    m.line("TDIGEST.BYRANK t 3");
    m.line("TDIGEST.INFO t");
    assert_eq!(m.line("PING"), b"+PONG\r\n");
    assert!(
        master.is_running(),
        "a read propagates nothing during a pause"
    );
    assert_eq!(m.line("CLIENT UNPAUSE"), OK);
    assert_eq!(m.line("TDIGEST.ADD t 7"), OK);
    assert!(on_key(&aof_commands(master.dir()), "t").contains(&"TDIGEST.QUANTILE t 0".to_string()));
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    assert_eq!(s.cmd(&["TDIGEST.INFO", "t"]), m.cmd(&["TDIGEST.INFO", "t"]));
    assert_eq!(
        s.line("TDIGEST.QUANTILE t 0.25 0.5"),
        m.line("TDIGEST.QUANTILE t 0.25 0.5")
    );
}

/// RedisBloom 2.8.2 compresses on any read, the marker included, so a
/// 2.8.2 replica of a FerroBloom master holds the master's digest.
#[test]
fn a_2_8_2_replica_follows_a_ferrobloom_master() {
    let master = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    if !master.version().is_redis_70() {
        // The oracle runs on Redis 7.0, which takes no newer master.
        return;
    }
    let replica = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    assert_eq!(m.line("TDIGEST.CREATE t COMPRESSION 20"), OK);
    for round in 0..30 {
        add_round(&mut m, "t", round);
        if round % 4 == 0 {
            m.cmd(&["TDIGEST.QUANTILE", "t", "0.5"]);
        }
        if round % 6 == 0 {
            m.cmd(&["TDIGEST.CDF", "t", "30"]);
        }
    }
    assert_eq!(m.line("TDIGEST.ADD t 1"), OK);
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    // INFO first: the replica's reads compress its digest.
    assert_eq!(s.line("TDIGEST.INFO t"), m.line("TDIGEST.INFO t"));
    let reads = [
        "TDIGEST.QUANTILE t 0 0.1 0.5 0.9 0.99 1",
        "TDIGEST.CDF t 3 30 60",
        "TDIGEST.BYRANK t 1 100 1000",
        "TDIGEST.TRIMMED_MEAN t 0.1 0.9",
    ];
    for read in reads {
        assert_eq!(
            String::from_utf8_lossy(&s.line(read)),
            String::from_utf8_lossy(&m.line(read)),
            "{read}"
        );
    }
}
