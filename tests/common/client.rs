//! Short forms for sending a command line and checking its reply, used by
//! the tests that talk to one server through a `RawClient`.

use super::{decode, ModuleKind, RawClient, Resp, ServerOpts};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Options of a server with FerroBloom loaded and nothing else set.
pub fn ferrobloom() -> ServerOpts {
    ServerOpts::new(ModuleKind::FerroBloom)
}

/// A whitespace-separated command line, its reply decoded.
#[track_caller]
pub fn run(r: &mut RawClient, line: &str) -> Resp {
    decode(&r.line(line))
}

/// A command line whose reply must be an integer.
#[track_caller]
pub fn int(r: &mut RawClient, line: &str) -> i64 {
    match run(r, line) {
        Resp::Int(v) => v,
        other => panic!("{line}: {other:?}"),
    }
}

/// A command line whose reply must be `+OK`.
#[track_caller]
pub fn ok(r: &mut RawClient, line: &str) {
    assert_eq!(run(r, line), Resp::Simple("OK".into()), "{line}");
}

/// A command line whose reply must be an error; its text.
#[track_caller]
pub fn error(r: &mut RawClient, line: &str) -> String {
    match run(r, line) {
        Resp::Error(e) => e,
        other => panic!("{line}: expected an error, got {other:?}"),
    }
}

/// DEBUG DIGEST-VALUE of `key`, the raw reply: equal digests are equal
/// values, whichever server holds them.
pub fn digest(r: &mut RawClient, key: &str) -> Vec<u8> {
    r.cmd(&["DEBUG", "DIGEST-VALUE", key])
}

/// Reply bytes for a failure message: escaped, at most 300 bytes.
pub fn show(bytes: &[u8]) -> String {
    bytes[..bytes.len().min(300)].escape_ascii().to_string()
}

/// Polls `done` every 10 ms until it holds; panics after `timeout`.
#[track_caller]
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        sleep(Duration::from_millis(10));
    }
}

/// Each command line of `cases` fails with exactly its error text.
#[track_caller]
pub fn assert_errors(r: &mut RawClient, cases: &[(&str, &str)]) {
    for &(line, want) in cases {
        assert_eq!(error(r, line), want, "{line}");
    }
}

/// COMMAND INFO's flags and first key of the command `name`.
#[track_caller]
pub fn command_flags(r: &mut RawClient, name: &str) -> (Vec<String>, i64) {
    let Resp::Array(info) = run(r, &format!("COMMAND INFO {name}")) else {
        panic!()
    };
    let Resp::Array(command) = &info[0] else {
        panic!("{info:?}")
    };
    // A set in RESP3.
    let (Resp::Array(flags) | Resp::Set(flags)) = &command[2] else {
        panic!("{command:?}")
    };
    let flags = flags.iter().map(|f| f.as_str().unwrap()).collect();
    let Resp::Int(first_key) = command[3] else {
        panic!("{command:?}")
    };
    (flags, first_key)
}

/// A type's STATS and PLAN are registered as reads: STATS reads every
/// cell of its key, so it is not `fast` (flags exactly `readonly module`,
/// first key 1); PLAN has no key and writes nothing.
#[track_caller]
pub fn assert_stats_and_plan_are_reads(r: &mut RawClient, stats: &str, plan: &str) {
    assert_eq!(
        command_flags(r, stats),
        (vec!["readonly".into(), "module".into()], 1)
    );
    let (plan_flags, first_key) = command_flags(r, plan);
    assert!(
        plan_flags.contains(&"readonly".to_string()),
        "{plan_flags:?}"
    );
    assert!(!plan_flags.contains(&"write".to_string()), "{plan_flags:?}");
    assert_eq!(first_key, 0);
}

/// The event and key of a keyspace notification (a `pmessage` or `message`
/// from a `__keyevent@<db>__:<event>` channel, pushed in RESP3); `None`
/// for any other reply.
pub fn keyevent(reply: &[u8]) -> Option<(String, String)> {
    let (Resp::Push(parts) | Resp::Array(parts)) = decode(reply) else {
        return None;
    };
    let channel = parts.get(2).and_then(Resp::as_str)?;
    let key = parts.get(3).and_then(Resp::as_str)?;
    let event = channel.rsplit(':').next().unwrap().to_string();
    Some((event, key))
}
