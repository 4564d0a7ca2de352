//! CMS.INITBYDIM, CMS.INITBYPROB and CMS.INCRBY on a server: RedisBloom
//! 2.8.2's replies where RedisBloom 8.12 agrees with it, 8.12's where it
//! differs (spec §3.9), in RESP2 and RESP3; WATCH, events, the memory
//! guard, COMMAND INFO.

use std::time::{Duration, Instant};

use crate::common::client::{error, keyevent, ok, show};
use crate::common::stored::sketch_vectors;
use crate::common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

/// A command and 2.8.2's RESP2 and RESP3 reply bytes.
type Vector = (Vec<String>, String, String);

/// The CMS.* cases of the `replies` vectors (2.8.2's exact bytes, RESP2
/// and RESP3), with the setup they run after.
fn reply_vectors() -> (Vec<Vec<String>>, Vec<Vector>) {
    let json = sketch_vectors();
    let words = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    let setup = json["replies"]["setup"]
        .as_array()
        .unwrap()
        .iter()
        .map(words)
        .filter(|c| c[0] == "SET" || c[0].starts_with("CMS."))
        .collect();
    let vectors = json["replies"]["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let text = |k: &str| v[k].as_str().unwrap().to_string();
            (words(&v["command"]), text("resp2"), text("resp3"))
        })
        .filter(|(c, _, _)| c[0].starts_with("CMS."))
        .collect();
    (setup, vectors)
}

/// What 8.12 answers where it differs from 2.8.2's vector, or None to
/// expect 2.8.2's bytes: INFO has a fourth pair; a negative increment is
/// applied (sent here as the only such case, so the state stays 2.8.2's
/// for the next vectors: it is skipped); an increment that would pass a
/// cell's maximum is refused and changes nothing, so `big` stays 0 and the
/// count 10 where 2.8.2 saturated it.
fn expected_8_12(command: &[String], resp2: &str) -> Option<Option<String>> {
    let line = command.join(" ");
    match line.as_str() {
        "CMS.INCRBY cms a -1" | "CMS.INCRBY cms big 4294967295 a 0" => Some(None),
        "CMS.QUERY cms a b big nothing" => Some(Some("*4\r\n:6\r\n:4\r\n:0\r\n:0\r\n".into())),
        "CMS.QUERY cms2 a b big" => Some(Some("*3\r\n:6\r\n:4\r\n:0\r\n".into())),
        _ if command[0] == "CMS.INFO" && resp2.starts_with('*') => Some(Some(
            resp2.replacen("*6", "*8", 1).replace(":4294967305", ":10") + "+cell_size\r\n:4\r\n",
        )),
        _ => None,
    }
}

#[test]
fn replies_are_redisbloom_s_where_8_12_agrees() {
    let (setup, vectors) = reply_vectors();
    assert!(vectors.len() >= 40, "{} vectors", vectors.len());
    for resp3 in [false, true] {
        let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
        let mut r = server.raw();
        if resp3 {
            r.hello3();
        }
        for command in &setup {
            assert!(!r.cmd(command).starts_with(b"-"), "{command:?}");
        }
        let mut checked = 0;
        for (command, resp2, resp3_bytes) in &vectors {
            let want = match expected_8_12(command, resp2) {
                Some(None) => continue,
                Some(Some(v)) if resp3 => v.replacen("*8", "%4", 1),
                Some(Some(v)) => v,
                None if resp3 => resp3_bytes.clone(),
                None => resp2.clone(),
            };
            let got = r.cmd(command);
            assert_eq!(
                show(&got),
                show(want.as_bytes()),
                "{command:?} resp3={resp3}"
            );
            checked += 1;
        }
        assert!(checked >= 38);
    }
}

/// RedisBloom 8.12's increments (spec §3.9), replies in both protocols.
#[test]
fn incrby_is_signed_and_atomic_per_pair() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    for resp3 in [false, true] {
        let mut r = server.raw();
        if resp3 {
            r.hello3();
        }
        r.line("FLUSHALL");
        ok(&mut r, "CMS.INITBYDIM k 100 5");
        assert_eq!(r.line("CMS.INCRBY k a 10"), b"*1\r\n:10\r\n");
        assert_eq!(
            show(&r.line("CMS.INCRBY k a -100 b 3 a -4")),
            show(b"*3\r\n-CMS: INCRBY underflow\r\n:3\r\n:6\r\n")
        );
        assert_eq!(
            error(&mut r, "CMS.INCRBY k a 1 b -9223372036854775808"),
            "CMS: invalid increment"
        );
        assert_eq!(
            error(&mut r, "CMS.INCRBY k a 1 b 1e3"),
            "CMS: Cannot parse number"
        );
        assert_eq!(r.line("CMS.QUERY k a b"), b"*2\r\n:6\r\n:3\r\n");

        ok(&mut r, "CMS.INITBYDIM one 1 1 CELL_SIZE 1");
        assert_eq!(r.line("CMS.INCRBY one a 255"), b"*1\r\n:255\r\n");
        assert_eq!(
            show(&r.line("CMS.INCRBY one a 1")),
            show(b"*1\r\n-CMS: INCRBY overflow\r\n")
        );
        let info = if resp3 {
            "%4\r\n+width\r\n:1\r\n+depth\r\n:1\r\n+count\r\n:255\r\n+cell_size\r\n:1\r\n"
        } else {
            "*8\r\n+width\r\n:1\r\n+depth\r\n:1\r\n+count\r\n:255\r\n+cell_size\r\n:1\r\n"
        };
        assert_eq!(show(&r.line("CMS.INFO one")), show(info.as_bytes()));

        ok(&mut r, "CMS.INITBYDIM five 5 2");
        let line = "CMS.INCRBY five a 2147483647 b 10 c 7 d 5";
        r.line(line);
        assert_eq!(r.line(line), b"*4\r\n:4294967294\r\n:27\r\n:34\r\n:10\r\n");
        assert_eq!(
            show(&r.line(line)),
            show(b"*4\r\n-CMS: INCRBY overflow\r\n:44\r\n:51\r\n:15\r\n")
        );

        ok(&mut r, "CMS.INITBYPROB big 0.01 0.01 CELL_SIZE 8");
        assert_eq!(
            r.line("CMS.INCRBY big x 9223372036854775807"),
            b"*1\r\n:9223372036854775807\r\n"
        );
        assert_eq!(
            show(&r.line("CMS.INCRBY big y 1")),
            show(b"*1\r\n-CMS: INCRBY overflow\r\n")
        );
        for (line, want) in [
            (
                "CMS.INITBYDIM c 10 3 CELL_SIZE 3",
                "CMS: CELL_SIZE must be 1, 2, 4 or 8",
            ),
            ("CMS.INITBYDIM c 10 3 SIZE 4", "CMS: unknown argument"),
            ("CMS.INITBYDIM c 0 3 CELL_SIZE 3", "CMS: invalid width"),
            ("CMS.INITBYPROB big 0.01 0.01", "CMS: key already exists"),
        ] {
            assert_eq!(error(&mut r, line), want, "{line}");
        }
        assert!(error(&mut r, "CMS.INITBYDIM c 10 3 CELL_SIZE")
            .starts_with("ERR wrong number of arguments for 'cms.initbydim'"));
        assert_eq!(r.line("EXISTS c"), b":0\r\n");
    }
}

/// 2.8.2 aborts Redis 7.0 here ("Redis aborting for OUT OF MEMORY"); the
/// memory guard answers with 2.8.2's words and the numbers.
#[test]
fn an_impossible_sketch_is_an_error_not_an_abort() {
    let mut server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    for line in [
        "CMS.INITBYPROB x 1e-18 0.5",
        "CMS.INITBYDIM x 1000000000 1000000000",
    ] {
        let e = error(&mut r, line);
        assert!(
            e.starts_with("CMS: Insufficient memory to create the key: "),
            "{line}: {e}"
        );
    }
    assert_eq!(r.line("EXISTS x"), b":0\r\n");
    assert_eq!(r.line("PING"), b"+PONG\r\n");
    assert!(server.is_running());
}

/// CMS.INCRBY opens its key for writing: a WATCH on it fails the
/// transaction (2.8.2 opens it read-only and the transaction runs).
#[test]
fn incrby_invalidates_watch() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut watcher, mut other) = (server.raw(), server.raw());
    ok(&mut watcher, "CMS.INITBYDIM k 10 3");
    for (line, invalidates) in [
        ("CMS.QUERY k a", false),
        ("CMS.INCRBY k a 1", true),
        ("CMS.INCRBY k a -5", true),
        ("CMS.INITBYDIM k 10 3", true),
    ] {
        ok(&mut watcher, "WATCH k");
        other.line(line);
        ok(&mut watcher, "MULTI");
        assert_eq!(watcher.line("PING"), b"+QUEUED\r\n");
        let exec = watcher.line("EXEC");
        let aborted = exec == b"*-1\r\n";
        assert_eq!(aborted, invalidates, "{line}: {}", show(&exec));
    }
}

/// The pushes of a RESP3 subscriber's client: the events seen within
/// `timeout`, in order.
pub fn events_seen(sub: &mut RawClient, until: &str, timeout: Duration) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let Ok(reply) = sub.read_reply() else { break };
        let Some((event, key)) = keyevent(&reply) else {
            continue;
        };
        if key == until {
            break;
        }
        seen.push(format!("{event} {key}"));
    }
    seen
}

/// `cms.create` and `cms.incrby` for what changed, nothing for what did
/// not; Redis' own `new` for the new key.
#[test]
fn writes_send_keyspace_events_when_something_changed() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    ok(&mut r, "CONFIG SET notify-keyspace-events Edn");
    let mut sub = server.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for line in [
        "CMS.INITBYDIM k 10 3 CELL_SIZE 1",
        "CMS.INITBYDIM k 10 3",
        "CMS.INCRBY k a 200",
        "CMS.INCRBY k a 100",
        "CMS.INCRBY k a 0",
        "CMS.INCRBY k a x",
        "CMS.INCRBY k a -300",
        "CMS.INCRBY k b 1 a -300",
        "CMS.INITBYPROB big 1e-18 0.5",
        "SET end x",
    ] {
        r.line(line);
    }
    let seen = events_seen(&mut sub, "end", Duration::from_secs(5));
    assert_eq!(
        seen,
        [
            "new k",
            "cms.create k",
            "cms.incrby k",
            "cms.incrby k",
            "bf.guard-refused big"
        ]
    );
}

/// Flags as RedisBloom registers them; key specs naming what each does.
#[test]
fn command_info_of_the_writes() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    for name in ["cms.initbydim", "cms.initbyprob", "cms.incrby"] {
        let info = decode(&r.cmd(&["COMMAND", "INFO", name]));
        let Resp::Array(entries) = info else {
            panic!("{info:?}")
        };
        let Resp::Array(entry) = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!(entry[1], Resp::Int(-1), "{name} arity");
        let (Resp::Set(flags) | Resp::Array(flags)) = &entry[2] else {
            panic!("{entry:?}")
        };
        let flags: Vec<String> = flags.iter().filter_map(Resp::as_str).collect();
        assert_eq!(flags, ["write", "denyoom", "module"], "{name}");
        assert_eq!(&entry[3..6], [Resp::Int(1), Resp::Int(1), Resp::Int(1)]);
        let categories = format!("{:?}", entry[6]);
        let version = server.version();
        if version.module_category_names() {
            assert!(categories.contains("@cms"), "{name}: {categories}");
        }
        if version.module_acl_categories() {
            assert!(categories.contains("@write"), "{name}: {categories}");
        }
    }
}

/// A RESP3 client caching a sketch's answers hears that CMS.INCRBY
/// changed it (2.8.2 opens the key read-only: no invalidation).
#[test]
fn incrby_invalidates_client_side_caches() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut cache, mut writer) = (server.raw(), server.raw());
    ok(&mut writer, "CMS.INITBYDIM k 10 3");
    cache.hello3();
    ok(&mut cache, "CLIENT TRACKING on");
    let invalidated = |cache: &mut RawClient, writer: &mut RawClient, line: &str| {
        assert_eq!(cache.line("CMS.QUERY k a"), b"*1\r\n:0\r\n");
        writer.line(line);
        let mut first = cache.line("PING");
        let pushed = first.starts_with(b">");
        if pushed {
            first = cache.read_reply().unwrap();
        }
        assert_eq!(first, b"+PONG\r\n");
        pushed
    };
    assert!(!invalidated(&mut cache, &mut writer, "CMS.QUERY k a"));
    assert!(invalidated(&mut cache, &mut writer, "CMS.INCRBY k a 0"));
    assert!(invalidated(&mut cache, &mut writer, "CMS.INCRBY k zz 1"));
}
