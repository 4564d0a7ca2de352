//! TOPK.* on real servers: the same command sequences answered byte for
//! byte as RedisBloom 2.8.2 answers them (decay 1 or no collisions, RESP2
//! and RESP3, errors included), the vectors' scenarios, and the fixed
//! defects (binary items, INCRBY's frame, k ≡ 0 mod 2^32).

use super::common::doubles_in_one_form;
use super::*;

/// Sequences whose replies involve no chance: decay 1, or buckets wide
/// enough for no collision.
const SEQUENCES: &[&[&str]] = &[
    &[
        "TOPK.RESERVE t 2 1000 3 0.9",
        "TOPK.ADD t foo bar foo baz baz baz qux",
        "TOPK.INCRBY t qux 5 zero 0",
        "TOPK.LIST t WITHCOUNT",
        "TOPK.LIST t",
        "TOPK.LIST t w",
        "TOPK.QUERY t qux baz foo zero nothing",
        "TOPK.COUNT t qux baz foo zero nothing",
        "TOPK.INFO t",
    ],
    &[
        "TOPK.RESERVE t 4 2 2 1",
        "TOPK.ADD t p q r s t p q p",
        "TOPK.LIST t WITHCOUNT",
        "TOPK.INCRBY t p 100000 q 3 s 0",
        "TOPK.LIST t withcount",
        "TOPK.COUNT t p q r s t u",
        "TOPK.QUERY t p q r s t u",
        "TOPK.INFO t",
    ],
    &[
        "TOPK.RESERVE d 3",
        "TOPK.INFO d",
        "TOPK.RESERVE big 4294967297 9 2 0.5",
        "TOPK.INFO big",
        "TOPK.RESERVE d 3",
        "SET s x",
        "TOPK.RESERVE s 3",
        "TOPK.ADD s a",
        "TOPK.INCRBY s a 1",
        "TOPK.QUERY s a",
        "TOPK.COUNT s a",
        "TOPK.LIST s",
        "TOPK.INFO s",
        "TOPK.ADD nokey a",
        "TOPK.INCRBY nokey a 1",
        "TOPK.QUERY nokey a",
        "TOPK.COUNT nokey a",
        "TOPK.LIST nokey",
        "TOPK.LIST nokey foo",
        "TOPK.INFO nokey",
        "TOPK.RESERVE e",
        "TOPK.RESERVE e 3 8 7",
        "TOPK.RESERVE e 3 8 7 0.9 1",
        "TOPK.RESERVE e x",
        "TOPK.RESERVE e 0",
        "TOPK.RESERVE e -3",
        "TOPK.RESERVE e 3 0 7 0.9",
        "TOPK.RESERVE e 3 4294967296 7 0.9",
        "TOPK.RESERVE e 3 8 x 0.9",
        "TOPK.RESERVE e 3 8 7 0",
        "TOPK.RESERVE e 3 8 7 nan",
        "TOPK.RESERVE e 3 8 7 1.0000001",
        "TOPK.RESERVE e 3 8 7 1",
        "TOPK.ADD e",
        "TOPK.INCRBY e a",
        "TOPK.INCRBY e a 1 b",
        "TOPK.QUERY e",
        "TOPK.COUNT e",
        "TOPK.LIST",
        "TOPK.LIST e WITHCOUNT x",
        "TOPK.LIST e foo",
        "TOPK.INFO",
        "TOPK.INFO e x",
        "TOPK.LIST e",
    ],
];

fn split(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

#[test]
fn replies_match_redisbloom_in_resp2_and_resp3() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    // The oracle runs on Redis 7.0; on another server FerroBloom's doubles
    // (TOPK.INFO's decay) are printed in that server's form.
    let same_server = rb.version() == fb.version();
    for resp3 in [false, true] {
        for (n, sequence) in SEQUENCES.iter().enumerate() {
            let mut r = rb.raw();
            let mut f = fb.raw();
            if resp3 {
                r.hello3();
                f.hello3();
            }
            assert_eq!(r.line("FLUSHALL"), OK);
            assert_eq!(f.line("FLUSHALL"), OK);
            for line in sequence.iter() {
                let want = r.cmd(&split(line));
                let got = f.cmd(&split(line));
                let protocol = if resp3 { 3 } else { 2 };
                if same_server {
                    assert_eq!(
                        esc(&got),
                        esc(&want),
                        "sequence {n}, RESP{protocol}: {line}"
                    );
                } else {
                    assert_eq!(
                        doubles_in_one_form(&got),
                        doubles_in_one_form(&want),
                        "sequence {n}, RESP{protocol}: {line}"
                    );
                }
            }
        }
    }
}

/// The vectors' deterministic scenarios: every reply and LIST, COUNT and
/// QUERY as 2.8.2 sent them.
#[test]
fn vector_scenarios_answer_as_recorded() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let json = sketch_vectors();
    let scenarios = json["topk_scenarios"]["vectors"].as_array().unwrap();
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    let text = |v: &serde_json::Value| v.as_str().unwrap().as_bytes().to_vec();
    let mut checked = 0;
    for (n, s) in scenarios.iter().enumerate() {
        if s["deterministic"] != true {
            continue;
        }
        checked += 1;
        let mut f = fb.raw();
        assert_eq!(f.line("FLUSHALL"), OK);
        let reserve = strings(&s["reserve"]);
        assert_eq!(f.cmd(&reserve), OK, "scenario {n}");
        for op in s["ops"].as_array().unwrap() {
            let cmd = strings(&op["cmd"]);
            assert_eq!(
                esc(&f.cmd(&cmd)),
                esc(&text(&op["resp2"])),
                "scenario {n}: {cmd:?}"
            );
        }
        let key = reserve[1].as_str();
        assert_eq!(
            esc(&f.cmd(&["TOPK.LIST", key])),
            esc(&text(&s["list"])),
            "{n}"
        );
        assert_eq!(
            esc(&f.cmd(&["TOPK.LIST", key, "WITHCOUNT"])),
            esc(&text(&s["list_withcount"])),
            "{n}"
        );
        let probe = strings(&s["probe_items"]);
        let with = |command: &str| {
            let mut c = vec![command.to_owned(), key.to_owned()];
            c.extend(probe.iter().cloned());
            c
        };
        assert_eq!(
            esc(&f.cmd(&with("TOPK.COUNT"))),
            esc(&text(&s["count"])),
            "{n}"
        );
        assert_eq!(
            esc(&f.cmd(&with("TOPK.QUERY"))),
            esc(&text(&s["query_resp2"])),
            "{n}"
        );
        f.hello3();
        assert_eq!(
            esc(&f.cmd(&with("TOPK.QUERY"))),
            esc(&text(&s["query_resp3"])),
            "{n}"
        );
    }
    assert!(checked >= 2, "{checked} deterministic scenarios");
}

/// 2.8.2 cuts items at their first NUL in replies; FerroBloom sends them
/// whole, and keeps them through DEBUG RELOAD.
#[test]
fn binary_items_are_whole_in_replies_and_after_reload() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line("TOPK.RESERVE t 1 100 3 1"), OK);
    let item: &[u8] = b"a\0b";
    assert_eq!(
        f.cmd(&[b"TOPK.INCRBY".as_slice(), b"t", item, b"2"]),
        b"*1\r\n$-1\r\n"
    );
    assert_eq!(
        f.cmd(&[b"TOPK.ADD".as_slice(), b"t", b"a"]),
        b"*1\r\n$-1\r\n",
        "a differs from a\\0b"
    );
    assert_eq!(f.cmd(&["TOPK.LIST", "t"]), b"*1\r\n$3\r\na\0b\r\n");
    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    assert_eq!(f.cmd(&["TOPK.LIST", "t"]), b"*1\r\n$3\r\na\0b\r\n");
    assert_eq!(
        f.cmd(&["TOPK.INCRBY", "t", "c", "9"]),
        b"*1\r\n$3\r\na\0b\r\n",
        "the expelled item whole"
    );
}

/// 2.8.2 stops writing after the bad increment's error, so the client reads
/// the next reply as the missing elements; here every announced element
/// is sent, and the next reply is its own.
#[test]
fn incrby_with_a_bad_increment_keeps_the_connection_in_step() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line("TOPK.RESERVE t 3"), OK);
    let replies = f.pipeline(&[
        vec!["TOPK.INCRBY", "t", "a", "1", "b", "x", "c", "1"],
        vec!["PING"],
    ]);
    let error = "-TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000\r\n";
    assert_eq!(
        esc(&replies[0]),
        esc(format!("*3\r\n$-1\r\n{error}{error}").as_bytes())
    );
    assert_eq!(replies[1], b"+PONG\r\n");
    assert_eq!(f.line("TOPK.LIST t WITHCOUNT"), b"*2\r\n$1\r\na\r\n:1\r\n");
}

/// 2.8.2 truncates k to 32 bits and aborts the server when they are all 0.
#[test]
fn k_of_a_multiple_of_2_to_the_32_is_invalid() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    for k in ["4294967296", "8589934592"] {
        assert_eq!(f.cmd(&["TOPK.RESERVE", "t", k]), b"-TopK: invalid k\r\n");
    }
    assert_eq!(f.line("EXISTS t"), b":0\r\n");
    assert_eq!(
        f.line("TOPK.RESERVE t 3 4294967295 4294967295 0.9"),
        b"-ERR Insufficient memory to create topk data structure\r\n"
    );
    // 4294967295 heap records (103 GB): the memory guard refuses them,
    // where 2.8.2 allocates lazily or aborts.
    let refused = f.line("TOPK.RESERVE t 4294967295");
    assert!(
        refused.starts_with(b"-ERR Insufficient memory to create topk data structure: "),
        "{}",
        esc(&refused)
    );
    assert_eq!(f.line("EXISTS t"), b":0\r\n");
    assert_eq!(f.line("PING"), b"+PONG\r\n");
}

/// The flags of 2.8.2 (§2.1), except TOPK.COUNT, read only here; the
/// `topk` ACL category.
#[test]
fn flags_and_acl_category() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    for (command, flags) in [
        ("topk.reserve", "write"),
        ("topk.add", "write"),
        ("topk.incrby", "write"),
        ("topk.query", "readonly"),
        ("topk.count", "readonly"),
        ("topk.list", "readonly"),
        ("topk.info", "readonly"),
    ] {
        let info = esc(&f.cmd(&["COMMAND", "INFO", command]));
        assert!(info.contains(&format!("+{flags}")), "{command}: {info}");
        let opposite = if flags == "write" {
            "+readonly"
        } else {
            "+write"
        };
        assert!(!info.contains(opposite), "{command}: {info}");
    }
    // Where the server has module categories (Redis 7.2+, Valkey) the
    // commands are in `topk` (Redis 7.4 lists no module command in any
    // category; Valkey does); Redis 7.0 has none, as for RedisBloom.
    let listed = f.line("ACL CAT topk");
    if fb.version().module_category_names() {
        let Resp::Array(names) = decode(&listed) else {
            panic!("{}", esc(&listed))
        };
        if fb.version().valkey {
            // The seven of 2.8.2, TOPK.STATS and TOPK.PLAN.
            assert_eq!(names.len(), 9, "{}", esc(&listed));
        }
    } else {
        assert_eq!(esc(&listed), esc(b"-ERR Unknown category 'topk'\r\n"));
    }
}

#[test]
fn writes_send_keyspace_events() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = fb.raw();
    assert_eq!(r.line("CONFIG SET notify-keyspace-events Ed"), OK);
    let mut sub = fb.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    r.line("TOPK.RESERVE t 1 100 3 1");
    r.line("TOPK.ADD t a");
    r.line("TOPK.INCRBY t b 5");
    r.line("PING");
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while seen.len() < 3 && std::time::Instant::now() < deadline {
        let reply = sub.read_reply().unwrap();
        let text = esc(&reply);
        for name in ["topk.reserve", "topk.add", "topk.expelled"] {
            if text.contains(&format!("__keyevent@0__:{name}")) && !seen.contains(&name) {
                seen.push(name);
            }
        }
    }
    assert_eq!(seen, ["topk.reserve", "topk.add", "topk.expelled"]);
}
