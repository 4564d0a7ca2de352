//! Reads between adds on the master and on a replica leave both holding
//! the same digests (2.8.2's reads compress where they run, so its master
//! and replica drift apart), and an AOF replay answers the same.

use std::time::Duration;

use super::common::replication::{replicate, wait_for_replica};
use super::common::{ModuleKind, RawClient, Server, ServerOpts};
use super::OK;

const TIMEOUT: Duration = Duration::from_secs(30);

fn state(r: &mut RawClient) -> Vec<Vec<u8>> {
    vec![
        r.cmd(&["DEBUG", "DIGEST-VALUE", "t", "m"]),
        r.cmd(&["TDIGEST.INFO", "t"]),
        r.cmd(&["TDIGEST.QUANTILE", "t", "0.1", "0.5", "0.9"]),
        r.cmd(&["TDIGEST.CDF", "m", "3", "50"]),
    ]
}

#[test]
fn master_replica_and_aof_agree_with_reads_between_adds() {
    let mut master = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("appendfsync", "always"),
    );
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    replicate(&master, &replica, TIMEOUT);
    let (mut m, mut s) = (master.raw(), replica.raw());
    assert_eq!(m.line("TDIGEST.CREATE t COMPRESSION 20"), OK);
    assert_eq!(m.line("TDIGEST.CREATE x COMPRESSION 50"), OK);
    for round in 0..40 {
        let values: Vec<String> = (0..37)
            .map(|i| ((round * 37 + i) % 91).to_string())
            .collect();
        let mut add = vec!["TDIGEST.ADD", "t"];
        add.extend(values.iter().map(String::as_str));
        assert_eq!(m.cmd(&add), OK);
        add[1] = "x";
        assert_eq!(m.cmd(&add), OK);
        // Reads on the master at some rounds, on the replica at others.
        if round % 3 == 0 {
            m.cmd(&["TDIGEST.QUANTILE", "t", "0.5"]);
        }
        if round % 5 == 0 {
            wait_for_replica(&mut m, &mut s, TIMEOUT);
            s.cmd(&["TDIGEST.CDF", "t", "7"]);
        }
        if round % 7 == 0 {
            assert_eq!(m.line("TDIGEST.MERGE m 2 t x"), OK);
        }
    }
    wait_for_replica(&mut m, &mut s, TIMEOUT);
    let want = state(&mut m);
    assert!(
        want[0].starts_with(b"*2\r\n+"),
        "{}",
        String::from_utf8_lossy(&want[0])
    );
    assert_eq!(state(&mut s), want, "replica");
    master.restart();
    let mut m = master.raw();
    assert_eq!(state(&mut m), want, "AOF replay");
}
