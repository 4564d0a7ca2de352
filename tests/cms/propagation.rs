//! What replicas and the AOF get from the CMS.* writes: what the master
//! applied (an increment's refused pairs left out), so a replica, an AOF
//! replay and an AOF rewrite hold what the master holds, compared by
//! DEBUG DIGEST-VALUE.

use std::fs;
use std::time::Duration;

use crate::common::client::{digest, show};
use crate::common::replication::{replicate, rewrite_aof, wait_for_replica};
use crate::common::{encode, ModuleKind, RawClient, Server, ServerOpts};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Creations, increments with refused pairs (overflow, underflow, parse
/// errors), in two databases; `extra` more commands after them.
fn workload(r: &mut RawClient, extra: &[&str]) {
    let lines = [
        "CMS.INITBYDIM a 10 3",
        "CMS.INITBYDIM small 4 2 CELL_SIZE 1",
        "CMS.INITBYPROB p 0.01 0.01 CELL_SIZE 8",
        "CMS.INITBYDIM b 1000 3 CELL_SIZE 2",
        "CMS.INCRBY a x 5 y 7 z 1",
        "CMS.INCRBY small x 200 y 100 x 100 y -101 z 3",
        "CMS.INCRBY small x -500 q 1",
        "CMS.INCRBY small x 1000",
        "CMS.INCRBY a x -1 y x",
        "CMS.INCRBY p x 9223372036854775000 y 1000 x -1",
        "CMS.INCRBY b u 65535 u 1 v 3",
        "CMS.INITBYDIM a 10 3",
        "SELECT 4",
        "CMS.INITBYDIM a 20 2",
        "CMS.INCRBY a x 3 y -1",
        "SELECT 0",
    ];
    for line in lines.iter().chain(extra) {
        r.line(line);
    }
}

/// The digests of `keys` in databases 0 and 4.
fn digests(r: &mut RawClient, keys: &[&str]) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for db in ["0", "4"] {
        r.cmd(&["SELECT", db]);
        for k in keys {
            all.push(digest(r, k));
        }
    }
    r.cmd(&["SELECT", "0"]);
    all
}

/// Everything the AOF files of `server` hold, as bytes.
fn aof_bytes(server: &Server) -> Vec<u8> {
    let dir = server.dir().join("appendonlydir");
    let mut bytes = Vec::new();
    for entry in fs::read_dir(dir).expect("appendonlydir") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "aof") {
            bytes.extend(fs::read(path).unwrap());
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The keys every test compares.
pub const KEYS: [&str; 5] = ["a", "small", "p", "b", "missing"];

/// Runs `extra` after the common workload on a master with a replica and
/// an AOF, then checks that the replica, the AOF replayed and the AOF
/// rewritten all hold the master's values.
pub fn check_propagation(extra: &[&str], keys: &[&str]) -> (Server, Vec<Vec<u8>>) {
    let mut master = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    workload(&mut m, extra);
    let want = digests(&mut m, keys);
    assert!(
        want.iter().filter(|d| !d.starts_with(b"$-1")).count() >= 5,
        "{:?}",
        want.iter().map(|d| show(d)).collect::<Vec<_>>()
    );
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    assert_eq!(digests(&mut s, keys), want, "replica");
    drop(m);
    // Read once the server stopped: a busy server may postpone writing.
    master.restart();
    let aof = aof_bytes(&master);
    assert_eq!(digests(&mut master.raw(), keys), want, "AOF replayed");
    rewrite_aof(&mut master.raw(), TIMEOUT);
    master.restart();
    assert_eq!(digests(&mut master.raw(), keys), want, "AOF rewritten");
    (master, vec![aof])
}

#[test]
fn replicas_and_aof_replays_hold_what_the_master_applied() {
    let (_master, aof) = check_propagation(&[], &KEYS);
    let aof = &aof[0];
    // Applied pairs alone: the overflowing and underflowing ones are not
    // in the AOF, and a command with none applied is not there at all.
    for (present, command) in [
        (true, &["CMS.INCRBY", "a", "x", "5", "y", "7", "z", "1"][..]),
        (
            true,
            &["CMS.INCRBY", "small", "x", "200", "y", "100", "z", "3"],
        ),
        (true, &["CMS.INCRBY", "small", "q", "1"]),
        (false, &["CMS.INCRBY", "small", "x", "1000"]),
        (false, &["CMS.INCRBY", "a", "x", "-1", "y", "x"]),
        (
            true,
            &["CMS.INCRBY", "p", "x", "9223372036854775000", "x", "-1"],
        ),
        (true, &["CMS.INCRBY", "b", "u", "65535", "v", "3"]),
        (true, &["CMS.INCRBY", "a", "x", "3"]),
    ] {
        assert_eq!(
            contains(aof, &encode(command)),
            present,
            "{command:?} in the AOF"
        );
    }
    // A creation refused (the key exists) is not propagated: one INITBYDIM
    // of `a` in database 0, one in database 4.
    let created = encode(&["CMS.INITBYDIM", "a", "10", "3"]);
    assert_eq!(
        aof.windows(created.len()).filter(|w| *w == created).count(),
        1
    );
}
