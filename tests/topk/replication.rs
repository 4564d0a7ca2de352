//! The deterministic decay on real servers: with decay 0.9 and colliding
//! buckets, a replica (fed half by a full resynchronisation, half by the
//! command stream) and a server reloaded half-way list exactly what a
//! server fed the same commands without interruption lists.

use std::collections::HashMap;
use std::time::Duration;

use super::*;
use common::replication::{replicate, wait_for_replica};

const RESERVE: &str = "TOPK.RESERVE t 10 12 3 0.9";

/// 3,000 Zipf-distributed items (rank r drawn with probability ∝ 1/r),
/// from a fixed xorshift stream so every run sends the same.
fn zipf_items() -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..3000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            // Log-uniform over 1..=500: P(r) ∝ 1/r.
            let rank = 500f64.powf(u) as u64;
            format!("item:{rank}")
        })
        .collect()
}

/// The adds as commands: TOPK.ADD of 7 items, then TOPK.INCRBY of the
/// next 3 by 1, 2 and 3.
fn commands(items: &[String]) -> Vec<Vec<String>> {
    items
        .chunks(10)
        .flat_map(|chunk| {
            let (add, incr) = chunk.split_at(chunk.len().min(7));
            let mut a = vec!["TOPK.ADD".to_owned(), "t".to_owned()];
            a.extend(add.iter().cloned());
            let mut b = vec!["TOPK.INCRBY".to_owned(), "t".to_owned()];
            for (n, item) in incr.iter().enumerate() {
                b.extend([item.clone(), (n + 1).to_string()]);
            }
            let mut out = vec![a];
            if b.len() > 2 {
                out.push(b);
            }
            out
        })
        .collect()
}

fn list(r: &mut RawClient) -> Vec<u8> {
    r.line("TOPK.LIST t WITHCOUNT")
}

fn digest(r: &mut RawClient) -> Vec<u8> {
    r.line("DEBUG DIGEST-VALUE t")
}

/// Whether the listed counts differ from the exact ones: the decay and the
/// collisions took part (else the test would prove nothing).
fn decayed(listed: &[u8], items: &[String]) -> bool {
    let mut exact: HashMap<&str, u64> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        *exact.entry(item).or_default() += if i % 10 < 7 { 1 } else { (i % 10 - 6) as u64 };
    }
    let Resp::Array(parts) = decode(listed) else {
        panic!("{}", esc(listed))
    };
    assert_eq!(parts.len(), 20, "10 items listed: {}", esc(listed));
    parts.chunks(2).any(|pair| {
        let (Resp::Bulk(item), Resp::Int(count)) = (&pair[0], &pair[1]) else {
            panic!("{}", esc(listed))
        };
        exact[std::str::from_utf8(item).unwrap()] != *count as u64
    })
}

/// What a server fed every command without interruption lists.
fn reference(items: &[String], cmds: &[Vec<String>]) -> (Vec<u8>, Vec<u8>) {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line(RESERVE), OK);
    f.pipeline(cmds);
    let listed = list(&mut f);
    assert!(decayed(&listed, items), "no decay: {}", esc(&listed));
    (listed, digest(&mut f))
}

#[test]
fn a_server_reloaded_half_way_lists_the_same() {
    let items = zipf_items();
    let cmds = commands(&items);
    let (want_list, want_digest) = reference(&items, &cmds);

    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line(RESERVE), OK);
    let half = cmds.len() / 2;
    f.pipeline(&cmds[..half]);
    assert_eq!(f.line("DEBUG RELOAD"), OK);
    f.pipeline(&cmds[half..]);
    assert_eq!(esc(&list(&mut f)), esc(&want_list));
    assert_eq!(digest(&mut f), want_digest);
}

#[test]
fn a_replica_lists_what_its_master_lists() {
    let items = zipf_items();
    let cmds = commands(&items);
    let (want_list, want_digest) = reference(&items, &cmds);

    let master = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let replica = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut m = master.raw();
    assert_eq!(m.line(RESERVE), OK);
    let half = cmds.len() / 2;
    // The first half reaches the replica in the full resynchronisation's
    // RDB, the second as commands.
    m.pipeline(&cmds[..half]);
    replicate(&master, &replica, Duration::from_secs(20));
    m.pipeline(&cmds[half..]);
    let mut s = replica.raw();
    wait_for_replica(&mut m, &mut s, Duration::from_secs(20));
    assert_eq!(esc(&list(&mut m)), esc(&want_list));
    assert_eq!(esc(&list(&mut s)), esc(&want_list));
    assert_eq!(digest(&mut m), want_digest);
    assert_eq!(digest(&mut s), want_digest);
}
