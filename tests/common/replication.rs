//! Replicas and AOF rewrites, waited for.

use super::client::{ok, show, wait_until};
use super::info::info_field;
use super::{RawClient, Server};
use std::time::Duration;

/// Makes `replica` a replica of `master` and waits until its link is up.
pub fn replicate(master: &Server, replica: &Server, timeout: Duration) {
    let mut s = replica.raw();
    ok(&mut s, &format!("REPLICAOF 127.0.0.1 {}", master.port()));
    wait_until("replica link", timeout, || {
        info_field(&mut s, "replication", "master_link_status") == "up"
    });
}

/// Waits until the replica `s` has processed all that the master `m` had
/// propagated when called.
pub fn wait_for_replica(m: &mut RawClient, s: &mut RawClient, timeout: Duration) {
    let offset = info_field(m, "replication", "master_repl_offset");
    wait_until("replica offset", timeout, || {
        info_field(s, "replication", "slave_repl_offset") == offset
    });
}

/// Whether no AOF rewrite runs or is scheduled.
pub fn aof_rewrite_idle(r: &mut RawClient) -> bool {
    info_field(r, "persistence", "aof_rewrite_in_progress") == "0"
        && info_field(r, "persistence", "aof_rewrite_scheduled") == "0"
}

/// Waits until no AOF rewrite runs or is scheduled.
pub fn wait_for_aof_rewrite(r: &mut RawClient, timeout: Duration) {
    wait_until("AOF rewrite", timeout, || aof_rewrite_idle(r));
}

/// BGREWRITEAOF after any earlier rewrite, waited for; it must succeed.
pub fn rewrite_aof(r: &mut RawClient, timeout: Duration) {
    wait_until("an earlier AOF rewrite", timeout, || aof_rewrite_idle(r));
    let reply = r.cmd(&["BGREWRITEAOF"]);
    assert!(
        reply.starts_with(b"+Background append only file rewriting"),
        "{}",
        show(&reply)
    );
    wait_until("BGREWRITEAOF", timeout, || aof_rewrite_idle(r));
    assert_eq!(
        info_field(r, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
}
