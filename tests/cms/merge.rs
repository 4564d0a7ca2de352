//! CMS.MERGE on a server: replies and errors in RESP2 and RESP3, the
//! destination's TTL kept, WATCH, events, the keys it declares, and what
//! replicas and the AOF get.

use std::time::Duration;

use crate::common::client::{error, int, ok, show};
use crate::common::{decode, ModuleKind, Resp, Server, ServerOpts};
use crate::propagation::{check_propagation, KEYS};
use crate::writes::events_seen;

#[test]
fn merge_replies_and_errors_in_both_protocols() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    for resp3 in [false, true] {
        let mut r = server.raw();
        if resp3 {
            r.hello3();
        }
        r.line("FLUSHALL");
        for line in [
            "CMS.INITBYDIM d 10 3",
            "CMS.INITBYDIM a 10 3",
            "CMS.INITBYDIM b 10 3",
            "CMS.INITBYDIM two 10 3 CELL_SIZE 2",
            "CMS.INITBYDIM one 10 3 CELL_SIZE 1",
            "CMS.INITBYDIM one2 10 3 CELL_SIZE 1",
            "SET str v",
        ] {
            ok(&mut r, line);
        }
        r.line("CMS.INCRBY a x 5 y 2");
        r.line("CMS.INCRBY b x 1 z 7");
        ok(&mut r, "CMS.MERGE d 2 a b WEIGHTS 2 1");
        assert_eq!(r.line("CMS.QUERY d x y z"), b"*3\r\n:11\r\n:4\r\n:7\r\n");
        let info = if resp3 { "%4" } else { "*8" };
        assert_eq!(
            show(&r.line("CMS.INFO d")),
            show(
                format!(
                    "{info}\r\n+width\r\n:10\r\n+depth\r\n:3\r\n+count\r\n:22\r\n+cell_size\r\n:4\r\n"
                )
                .as_bytes()
            )
        );
        for (line, want) in [
            ("CMS.MERGE nokey 1 a", "CMS: key does not exist"),
            (
                "CMS.MERGE str 1 a",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            ("CMS.MERGE d x a", "CMS: invalid numkeys"),
            ("CMS.MERGE d 0 a", "CMS: Number of keys must be positive"),
            ("CMS.MERGE d 2 a", "CMS: wrong number of keys"),
            (
                "CMS.MERGE d 1 a WEIGHTS",
                "CMS: wrong number of keys/weights",
            ),
            (
                "CMS.MERGE d 2 a nokey WEIGHTS 1 x",
                "CMS: invalid weight value",
            ),
            ("CMS.MERGE d 1 nokey", "CMS: key does not exist"),
            ("CMS.MERGE d 1 two", "CMS: cell size is not equal"),
            ("CMS.MERGE two 1 d", "CMS: cell size is not equal"),
            ("CMS.MERGE d 1 a WEIGHTS -1", "CMS: MERGE overflow"),
            ("CMS.MERGE one 1 a", "CMS: cell size is not equal"),
        ] {
            assert_eq!(error(&mut r, line), want, "{line}");
        }
        assert!(error(&mut r, "CMS.MERGE d 1")
            .starts_with("ERR wrong number of arguments for 'cms.merge' command"));
        // Against the destination's cell maximum (255), all or nothing.
        r.line("CMS.INCRBY one2 x 200");
        ok(&mut r, "CMS.MERGE one 1 one2");
        assert_eq!(
            error(&mut r, "CMS.MERGE one 2 one one2"),
            "CMS: MERGE overflow"
        );
        assert_eq!(r.line("CMS.QUERY one x"), b"*1\r\n:200\r\n");
        // Nothing changed by the refused merges.
        assert_eq!(r.line("CMS.QUERY d x y z"), b"*3\r\n:11\r\n:4\r\n:7\r\n");
    }
}

/// In place: the destination keeps its TTL (spec §7.4), and a WATCH on it
/// fails the transaction; a watched source does not.
#[test]
fn merge_keeps_the_ttl_and_touches_the_destination() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut r, mut other) = (server.raw(), server.raw());
    ok(&mut r, "CMS.INITBYDIM d 10 3");
    ok(&mut r, "CMS.INITBYDIM a 10 3");
    assert_eq!(int(&mut r, "EXPIRE d 1000"), 1);
    ok(&mut r, "CMS.MERGE d 1 a");
    assert!(int(&mut r, "TTL d") > 900);
    for (watched, invalidated) in [("d", true), ("a", false)] {
        ok(&mut r, &format!("WATCH {watched}"));
        ok(&mut other, "CMS.MERGE d 1 a WEIGHTS 3");
        ok(&mut r, "MULTI");
        r.line("PING");
        let aborted = r.line("EXEC") == b"*-1\r\n";
        assert_eq!(aborted, invalidated, "WATCH {watched}");
    }
}

#[test]
fn merge_sends_its_event_when_it_merged() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    ok(&mut r, "CONFIG SET notify-keyspace-events Ed");
    ok(&mut r, "CMS.INITBYDIM d 10 3");
    ok(&mut r, "CMS.INITBYDIM a 10 3");
    r.line("CMS.INCRBY a x 1");
    let mut sub = server.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for line in [
        "CMS.MERGE d 1 a WEIGHTS -1",
        "CMS.MERGE d 1 nokey",
        "CMS.MERGE d 2 a d",
        "CMS.INITBYDIM end 1 1",
    ] {
        r.line(line);
    }
    assert_eq!(
        events_seen(&mut sub, "end", Duration::from_secs(5)),
        ["cms.merge d"]
    );
}

/// Every key it reads is declared: COMMAND GETKEYS lists the sources, and
/// the key specs say how each is used (the destination written, the
/// sources read).
#[test]
fn merge_declares_every_key() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    let keys = |r: &mut crate::common::RawClient, line: &str| -> Vec<String> {
        match decode(&r.line(&format!("COMMAND GETKEYS {line}"))) {
            Resp::Array(keys) => keys.iter().filter_map(Resp::as_str).collect(),
            other => panic!("{line}: {other:?}"),
        }
    };
    assert_eq!(
        keys(&mut r, "CMS.MERGE d 2 a b WEIGHTS 1 2"),
        ["d", "a", "b"]
    );
    assert_eq!(keys(&mut r, "CMS.MERGE d 1 weights"), ["d", "weights"]);
    let info = decode(&r.line("COMMAND INFO cms.merge"));
    let text = format!("{info:?}");
    let spec_words = words(&info);
    let Resp::Array(entries) = info else { panic!() };
    let Resp::Array(entry) = &entries[0] else {
        panic!()
    };
    let (Resp::Set(flags) | Resp::Array(flags)) = &entry[2] else {
        panic!("{entry:?}")
    };
    let flags: Vec<String> = flags.iter().filter_map(Resp::as_str).collect();
    assert_eq!(flags, ["write", "denyoom", "module", "movablekeys"]);
    for word in ["keynum", "RO", "RW", "update", "access"] {
        assert!(spec_words.iter().any(|w| w == word), "{word} in {text}");
    }
}

/// Every string of a reply, depth first.
fn words(reply: &Resp) -> Vec<String> {
    match reply {
        Resp::Array(items) | Resp::Set(items) => items.iter().flat_map(words).collect(),
        other => other.as_str().into_iter().collect(),
    }
}

/// Merges (refused ones too, and the destination as a source) reach
/// replicas and AOF replays as the master applied them.
#[test]
fn replicas_and_aof_replays_hold_the_merged_sketches() {
    let extra = [
        "CMS.INITBYDIM m 10 3",
        "CMS.MERGE m 2 a a WEIGHTS 3 -1",
        "CMS.MERGE m 1 a WEIGHTS -1",
        "CMS.MERGE m 3 m a m WEIGHTS 2 1 -1",
        "CMS.INITBYDIM s2 4 2 CELL_SIZE 1",
        "CMS.MERGE s2 2 small small",
        "CMS.MERGE small 1 s2",
        "CMS.INCRBY m x 1 y -1000",
    ];
    let mut keys = KEYS.to_vec();
    keys.extend(["m", "s2"]);
    check_propagation(&extra, &keys);
}
