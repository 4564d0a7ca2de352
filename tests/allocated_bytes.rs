//! `INFO bf`'s `bf_allocated_bytes`: the bytes the allocator really holds
//! for the module's values (jemalloc's size classes, the value boxes, the
//! vectors), next to the sizes RedisBloom reports (`bf_bytes`,
//! `bf_cuckoo_bytes`), which leave those out.

mod common;

use common::info::info_u64;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

/// Sends `commands` pipelined and checks every reply is OK.
fn pipelined_ok(r: &mut RawClient, commands: &[String]) {
    let args: Vec<Vec<String>> = commands
        .iter()
        .map(|c| c.split(' ').map(str::to_string).collect())
        .collect();
    for reply in r.pipeline(&args) {
        assert_eq!(decode(&reply), Resp::Simple("OK".into()));
    }
}

#[test]
fn allocated_bytes_follow_the_allocator_for_every_type() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    let n = 5_000u64;
    let cases = [
        ("b", "BF.RESERVE {} 0.01 100", "bf_bytes"),
        ("c", "CF.RESERVE {} 4", "bf_cuckoo_bytes"),
        (
            "w",
            "BF.RESERVE {} 0.01 100 WINDOW 100 GENERATIONS 4",
            "bf_window_bytes",
        ),
    ];
    for (prefix, command, reported_field) in cases {
        let base_allocated = info_u64(&mut r, "bf", "bf_allocated_bytes");
        let base_used = info_u64(&mut r, "memory", "used_memory");
        let base_reported = info_u64(&mut r, "bf", reported_field);
        let commands: Vec<String> = (0..n)
            .map(|i| command.replace("{}", &format!("{prefix}{i}")))
            .collect();
        pipelined_ok(&mut r, &commands);
        let allocated = info_u64(&mut r, "bf", "bf_allocated_bytes") - base_allocated;
        let used = info_u64(&mut r, "memory", "used_memory") - base_used;
        let reported = info_u64(&mut r, "bf", reported_field) - base_reported;
        // The allocator gives more than the reported sizes (size classes,
        // the value's box and vectors), and used_memory also holds the
        // server's own key structures.
        assert!(allocated > reported, "{prefix}: {allocated} <= {reported}");
        assert!(
            allocated < used,
            "{prefix}: {allocated} >= used_memory growth {used}"
        );
        assert!(
            allocated / n >= 64 && used / n - allocated / n < 256,
            "{prefix}: per filter {} allocated, {} used",
            allocated / n,
            used / n
        );
    }
    // Freed values give their bytes back: what remains is the module's own
    // small buffers. SYNC: Valkey 8 flushes in the background by default
    // (lazyfree-lazy-user-flush yes), which frees them later.
    assert_eq!(decode(&r.line("FLUSHALL SYNC")), Resp::Simple("OK".into()));
    assert!(info_u64(&mut r, "bf", "bf_allocated_bytes") < 64 * 1024);
}
