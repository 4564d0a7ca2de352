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
