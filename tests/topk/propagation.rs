//! What replicas and the AOF get from a TOPK.INCRBY with a bad increment:
//! the pairs the master applied (those before the bad one), as a
//! TOPK.INCRBY of their own, and nothing when the first pair is the bad
//! one. A replica and the AOF replayed then hold what the master holds.

use std::fs;
use std::time::Duration;

use super::*;
use common::encode;
use common::replication::{replicate, wait_for_replica};

const TIMEOUT: Duration = Duration::from_secs(30);

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

fn count_in(haystack: &[u8], command: &[&str]) -> usize {
    let needle = encode(command);
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// The state every server must reach: the list with counts and the digest.
fn state(r: &mut RawClient) -> (Vec<u8>, Vec<u8>) {
    (
        r.line("TOPK.LIST t WITHCOUNT"),
        r.line("DEBUG DIGEST-VALUE t"),
    )
}

#[test]
fn incrby_with_a_bad_increment_propagates_the_applied_pairs() {
    let mut master = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    assert_eq!(m.line("TOPK.RESERVE t 3 50 3 1"), OK);
    for line in [
        "TOPK.INCRBY t a 1 b 2 c x d 4",
        "TOPK.INCRBY t e 100001 f 1",
        "TOPK.INCRBY t g 5 h -1",
        "TOPK.INCRBY t a 3 b 1",
        "TOPK.INCRBY nokey a x",
    ] {
        m.line(line);
    }
    let want = state(&mut m);
    assert_eq!(
        esc(&want.0),
        esc(b"*6\r\n$1\r\ng\r\n:5\r\n$1\r\na\r\n:4\r\n$1\r\nb\r\n:3\r\n"),
        "c, d, e, f and h were never applied"
    );
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    assert_eq!(state(&mut s), want, "replica");
    drop(m);
    // Read once the server stopped: a busy server may postpone writing.
    master.restart();
    let aof = aof_bytes(&master);
    for (times, command) in [
        (1, &["TOPK.INCRBY", "t", "a", "1", "b", "2"][..]),
        (
            0,
            &["TOPK.INCRBY", "t", "a", "1", "b", "2", "c", "x", "d", "4"],
        ),
        (0, &["TOPK.INCRBY", "t", "e", "100001", "f", "1"]),
        (0, &["TOPK.INCRBY", "t", "f", "1"]),
        (1, &["TOPK.INCRBY", "t", "g", "5"]),
        (0, &["TOPK.INCRBY", "t", "g", "5", "h", "-1"]),
        (1, &["TOPK.INCRBY", "t", "a", "3", "b", "1"]),
        (0, &["TOPK.INCRBY", "nokey", "a", "x"]),
    ] {
        assert_eq!(count_in(&aof, command), times, "{command:?} in the AOF");
    }
    assert_eq!(state(&mut master.raw()), want, "AOF replayed");
}
