//! Bad input never takes the server down: garbage, arity errors, huge and
//! negative numbers and binary junk to every command; impossible sizes;
//! truncated and garbled RESTORE payloads (spec §6.4, §6.5); and the
//! module's load-time arguments (§8), good and bad.
//!
//! After each onslaught the server must answer PING, the filters created
//! before it must answer exactly as before, and the log must not contain
//! "panicked".

mod common;

use std::time::{Duration, Instant};

use common::client::show;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::bloom::chain::{options, AddOutcome, Chain, MAX_LINKS};
use ferrobloom_core::bloom::dump::{self, TYPE_ID_BASE};
use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::bloom::rdb;
use ferrobloom_core::bloom::scandump;
use ferrobloom_core::bloom::sizing::{LinkSpec, Policy};
use ferrobloom_core::dump_format::{crc64_jones, module_type_id, DumpWriter};
use ferrobloom_core::rdb_io::RdbOutput;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn start() -> Server {
    Server::start(ServerOpts::new(ModuleKind::FerroBloom))
}

#[track_caller]
fn expect<A: AsRef<[u8]>>(raw: &mut RawClient, args: &[A], want: &[u8]) {
    let got = raw.cmd(args);
    assert!(
        got == want,
        "{:?}\n   got: {}\n  want: {}",
        args.iter().map(|a| show(a.as_ref())).collect::<Vec<_>>(),
        show(&got),
        show(want)
    );
}

#[track_caller]
fn expect_line(raw: &mut RawClient, line: &str, want: &[u8]) {
    expect(raw, &line.split_whitespace().collect::<Vec<_>>(), want);
}

#[track_caller]
fn expect_prefix<A: AsRef<[u8]>>(raw: &mut RawClient, args: &[A], prefix: &str) -> Vec<u8> {
    let got = raw.cmd(args);
    assert!(
        got.starts_with(prefix.as_bytes()),
        "{:?}\n   got: {}\n  want: {prefix}...",
        args.iter().map(|a| show(a.as_ref())).collect::<Vec<_>>(),
        show(&got)
    );
    got
}

/// A creation that fails: too large to size (`ERR could not create
/// filter`) or refused by the memory guard.
#[track_caller]
fn expect_creation_refused<A: AsRef<[u8]>>(raw: &mut RawClient, args: &[A]) -> Vec<u8> {
    let got = raw.cmd(args);
    assert!(
        got.starts_with(b"-ERR could not create filter")
            || got.starts_with(b"-ERR Insufficient memory to create filter: "),
        "{:?}\n   got: {}",
        args.iter().map(|a| show(a.as_ref())).collect::<Vec<_>>(),
        show(&got)
    );
    got
}

const OK: &[u8] = b"+OK\r\n";

/// Filters that must come out of every test unchanged, and what they
/// answer: BF.DEBUG, BF.INFO, DUMP, BF.MEXISTS and the SCANDUMP stream.
struct Witness {
    keys: Vec<&'static str>,
    answers: Vec<Vec<Vec<u8>>>,
}

impl Witness {
    fn create(raw: &mut RawClient) -> Witness {
        let mut madd: Vec<String> = vec!["BF.MADD".into(), "keep-chain".into()];
        madd.extend((0..100).map(|i| i.to_string()));
        let setup: Vec<Vec<String>> = vec![
            words("BF.RESERVE keep-chain 0.01 10"),
            madd,
            words("BF.RESERVE keep-ns 0.001 50 NONSCALING"),
            words("BF.MADD keep-ns a b c"),
            words("BF.INSERT keep-auto CAPACITY 100 ERROR 0.01 ITEMS x"),
            words("SET keep-string v"),
        ];
        for reply in raw.pipeline(&setup) {
            assert!(!reply.starts_with(b"-"), "{}", show(&reply));
        }
        let keys = vec!["keep-chain", "keep-ns", "keep-auto"];
        let answers = keys.iter().map(|k| Self::answers(raw, k)).collect();
        Witness { keys, answers }
    }

    fn answers(raw: &mut RawClient, key: &str) -> Vec<Vec<u8>> {
        let mut out = vec![
            raw.cmd(&["BF.DEBUG", key]),
            raw.cmd(&["BF.INFO", key]),
            raw.cmd(&["DUMP", key]),
            raw.cmd(&["BF.MEXISTS", key, "0", "1", "50", "99", "a", "x", "nope"]),
        ];
        let mut iter = 0i64;
        loop {
            let reply = raw.cmd(&["BF.SCANDUMP", key, &iter.to_string()]);
            let Resp::Array(items) = decode(&reply) else {
                panic!("SCANDUMP {key}: {}", show(&reply))
            };
            let Resp::Int(next) = items[0] else {
                panic!("SCANDUMP {key}: {}", show(&reply))
            };
            out.push(reply);
            if next == 0 {
                return out;
            }
            iter = next;
        }
    }

    /// The server is up, and the witnesses answer as before.
    #[track_caller]
    fn check(&self, server: &mut Server) {
        assert!(server.is_running(), "redis-server died:\n{}", server.log());
        let mut raw = server.raw();
        expect_line(&mut raw, "PING", b"+PONG\r\n");
        for (key, answers) in self.keys.iter().zip(&self.answers) {
            assert!(
                &Self::answers(&mut raw, key) == answers,
                "{key} answers differently now"
            );
        }
        expect_line(&mut raw, "GET keep-string", b"$1\r\nv\r\n");
        // The log includes stderr, where a Rust panic is reported; a panic
        // caught in a command handler is also logged as an internal error.
        let log = server.log();
        assert!(!log.contains("panicked"), "panic in the log:\n{log}");
        assert!(
            !log.contains("internal error"),
            "internal error in the log:\n{log}"
        );
    }
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

// ---------------------------------------------------------------------------
// Garbage to every command
// ---------------------------------------------------------------------------

const COMMANDS: [&str; 11] = [
    "BF.RESERVE",
    "BF.ADD",
    "BF.MADD",
    "BF.INSERT",
    "BF.EXISTS",
    "BF.MEXISTS",
    "BF.INFO",
    "BF.CARD",
    "BF.DEBUG",
    "BF.SCANDUMP",
    "BF.LOADCHUNK",
];

/// Argument words the fuzzer draws from. Valid integers stay small (at
/// most 145) so that no accepted capacity, expansion or chain of scale-outs
/// the fuzz can reach allocates much; integers that do not fit in 64 bits
/// are fine. Huge valid numbers are sent by the hand-written commands of
/// `garbage_never_crashes`, in combinations that cannot fit any machine.
const TOKENS: &[&str] = &[
    // Numbers.
    "0",
    "1",
    "2",
    "3",
    "7",
    "100",
    "-1",
    "-0",
    "+5",
    "05",
    "1.5",
    "1e3",
    "0x10",
    "17",
    "33",
    "145",
    "-9223372036854775808",
    "-4294967296",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "0.01",
    "0.5",
    "0.999",
    "1e-300",
    "4.9e-324",
    "1e-400",
    "1e500",
    "-0.5",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "0x1p-7",
    ".5",
    "1.",
    // Option words and first-letter variants.
    "EXPANSION",
    "expansion",
    "NONSCALING",
    "nonscaling",
    "NOCREATE",
    "ITEMS",
    "items",
    "I",
    "CAPACITY",
    "ERROR",
    "E",
    "N",
    "NOC",
    "C",
    "capacity",
    "error",
    "SIZE",
    "FILTERS",
    "ITEMS",
    "EXPANSION",
    "Capacity ",
    // Keys of the fuzz (never the witnesses).
    "f1",
    "f2",
    "fz",
    "keep-string",
    // Junk.
    "",
    " ",
    "abc",
    "\0",
    "\0\0\0\0",
    "\u{ff}",
    "-",
    "*",
    "\r\n",
    "$-1",
    "*-1\r\n",
];

fn random_token(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0 => {
            // Binary junk of random length.
            let len = rng.gen_range(0..200);
            (0..len).map(|_| rng.gen()).collect()
        }
        1 => {
            // A random-looking LOADCHUNK header: 20 + 53 n bytes.
            let links = rng.gen_range(0..4);
            (0..20 + 53 * links).map(|_| rng.gen()).collect()
        }
        _ => TOKENS[rng.gen_range(0..TOKENS.len())].as_bytes().to_vec(),
    }
}

#[test]
fn garbage_never_crashes() {
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);

    // Arity: every command with 0 to 9 arguments of plain words.
    let mut commands: Vec<Vec<Vec<u8>>> = Vec::new();
    for name in COMMANDS {
        for argc in 0..10 {
            let mut cmd = vec![name.as_bytes().to_vec()];
            cmd.extend((0..argc).map(|i| format!("a{i}").into_bytes()));
            commands.push(cmd);
        }
    }
    // Random argument lists, with a fuzz key in position 1.
    let mut rng = StdRng::seed_from_u64(0x0b10_0f11_7e75);
    let keys: [&[u8]; 6] = [b"f1", b"f2", b"fz", b"keep-string", b"", b"\x00\xff"];
    for round in 0..6000 {
        let name = COMMANDS[round % COMMANDS.len()];
        let name = if rng.gen_bool(0.2) {
            name.to_lowercase()
        } else {
            name.to_string()
        };
        let mut cmd = vec![name.into_bytes()];
        let argc = rng.gen_range(0..9);
        for i in 0..argc {
            if i == 0 {
                cmd.push(keys[rng.gen_range(0..keys.len())].to_vec());
            } else {
                cmd.push(random_token(&mut rng));
            }
        }
        commands.push(cmd);
    }
    // Hand-written nasties.
    let nasty = [
        "BF.RESERVE n1 0.01 9223372036854775807",
        "BF.RESERVE n1 4.9e-324 9223372036854775807 NONSCALING",
        "BF.RESERVE n1 0.999 1000000000000000000 NONSCALING",
        "BF.RESERVE n1 1e-300 100 EXPANSION 9223372036854775807 NONSCALING",
        "BF.INSERT n2 CAPACITY 9223372036854775807 ITEMS a",
        "BF.INSERT n2 CAPACITY 1000000000000000000 ERROR 1e-300 ITEMS a",
        "BF.RESERVE n3 0.01 100 EXPANSION 4294967296",
        "BF.INSERT n3 EXPANSION 4294967296 ITEMS a",
        "BF.RESERVE n4 0.01 100 EXPANSION 4294967297",
        "BF.MADD n4 a b c",
        "BF.INSERT n5 CAPACITY 100 EXPANSION 9223372036854775807 ITEMS a b",
        "BF.SCANDUMP n5 4294967297",
        "BF.SCANDUMP keep-chain 9223372036854775807",
        "BF.SCANDUMP keep-chain -9223372036854775808",
        "BF.LOADCHUNK fz -9223372036854775808 x",
        "BF.LOADCHUNK fz 9223372036854775807 x",
        "BF.INFO keep-chain EXPANSION EXPANSION",
        "BF.MEXISTS fz",
        "BF.DEBUG fz fz",
    ];
    for line in nasty {
        commands.push(
            line.split_whitespace()
                .map(|w| w.as_bytes().to_vec())
                .collect(),
        );
    }
    let replies = raw.pipeline(&commands);
    assert_eq!(replies.len(), commands.len());
    for (cmd, reply) in commands.iter().zip(&replies) {
        // Well-formed, and errors are single lines, never an internal error.
        let value = decode(reply);
        if let Resp::Error(text) = &value {
            assert!(!text.is_empty() && !text.contains('\n'), "{}", show(reply));
            assert!(!text.contains("internal error"), "{}", show(reply));
        }
        // Arity errors name the command in lowercase.
        if reply.starts_with(b"-ERR wrong number of arguments") {
            let name = String::from_utf8_lossy(&cmd[0]).to_lowercase();
            assert!(
                reply
                    == format!("-ERR wrong number of arguments for '{name}' command\r\n")
                        .as_bytes(),
                "{}",
                show(reply)
            );
        }
    }
    // The hand-written nasties that would create something big are errors.
    let first = replies.len() - nasty.len();
    for reply in &replies[first..first + 8] {
        assert!(reply.starts_with(b"-"), "{}", show(reply));
    }
    expect_line(&mut raw, "EXISTS n1 n2 n3", b":0\r\n");
    expect_line(&mut raw, "BF.INFO n4 EXPANSION", b"*1\r\n:1\r\n");
    expect_line(&mut raw, "BF.INFO n5 EXPANSION", b"*1\r\n:4294967295\r\n");
    witness.check(&mut server);
    // Whatever the fuzz created is a usable filter.
    let mut raw = server.raw();
    for key in ["f1", "f2", "fz"] {
        let kind = raw.cmd(&["TYPE", key]);
        if kind == b"+MBbloom--\r\n" {
            assert!(raw.cmd(&["BF.DEBUG", key]).starts_with(b"*"));
            raw.cmd(&["BF.ADD", key, "after-fuzz"]);
            let reply = raw.cmd(&["DUMP", key]);
            let Resp::Bulk(payload) = decode(&reply) else {
                panic!("{}", show(&reply))
            };
            expect(
                &mut raw,
                &[b"RESTORE".as_slice(), b"copy", b"0", &payload, b"REPLACE"],
                OK,
            );
        }
    }
    expect_line(&mut raw, "DEBUG RELOAD", OK);
    witness.check(&mut server);
}

/// A BF.LOADCHUNK header of a chain of `items` items in one link of
/// `bytes` bytes holding `link_items` of `entries`, with the error, bpe and
/// hashes of a link of error 0.005.
fn one_link_header(items: u64, bytes: u64, link_items: u64, entries: u64) -> Vec<u8> {
    let h = scandump::Header {
        items,
        options: 5,
        growth: 2,
        links: vec![scandump::LinkHeader {
            bytes,
            bits: bytes * 8,
            items: link_items,
            error: 0.005,
            bpe: 11.027753418256411,
            hashes: 8,
            entries,
            n2: 0,
        }],
    }
    .encode();
    assert_eq!(h.len(), 73);
    h
}

#[test]
fn impossible_sizes_fail_fast() {
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    let used = |raw: &mut RawClient| -> u64 {
        let info = decode(&raw.cmd(&["INFO", "memory"])).as_str().unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = used(&mut raw);
    // [FREE] (§9.2): 2.8.2 aborts the whole server (Redis OOM) on these, or
    // makes an 8-byte filter when capacity x bpe >= 2^64; FerroBloom
    // refuses them with `ERR could not create filter`.
    let cases: &[&[&str]] = &[
        &["BF.RESERVE", "k", "0.01", "1000000000000000000"],
        &["BF.RESERVE", "k", "0.01", "2000000000000000000"],
        &["BF.RESERVE", "k", "0.01", "9223372036854775807"],
        &["BF.RESERVE", "k", "0.001", "100000000000000", "NONSCALING"],
        &["BF.RESERVE", "k", "4.9e-324", "100000000000", "NONSCALING"],
        &[
            "BF.INSERT",
            "k",
            "CAPACITY",
            "1000000000000000000",
            "ITEMS",
            "a",
        ],
        &[
            "BF.INSERT",
            "k",
            "CAPACITY",
            "9223372036854775807",
            "ERROR",
            "0.5",
            "ITEMS",
            "a",
        ],
    ];
    for cmd in cases {
        let started = Instant::now();
        let reply = expect_creation_refused(&mut raw, cmd);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{cmd:?} took {:?}",
            started.elapsed()
        );
        assert!(reply.ends_with(b"\r\n") && !reply[..reply.len() - 2].contains(&b'\n'));
    }
    expect_line(&mut raw, "EXISTS k", b":0\r\n");
    // A LOADCHUNK header asking for a petabyte-sized link.
    let bytes = 1u64 << 50;
    let header = one_link_header(0, bytes, 0, 1 << 52);
    let started = Instant::now();
    expect_prefix(
        &mut raw,
        &[b"BF.LOADCHUNK".as_slice(), b"k", b"1", &header],
        "-ERR received bad data: ",
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    expect_line(&mut raw, "EXISTS k", b":0\r\n");
    // A full link of 2^50 entries (8 bytes, loaded from a header): its
    // scale-out needs petabytes.
    let n = 1u64 << 50;
    let header = one_link_header(n, 8, n, n);
    expect(
        &mut raw,
        &[b"BF.LOADCHUNK".as_slice(), b"g", b"1", &header],
        OK,
    );
    let started = Instant::now();
    let reply = raw.cmd(&["BF.MADD", "g", "one-more", "and-another"]);
    assert!(started.elapsed() < Duration::from_secs(1));
    let Resp::Array(items) = decode(&reply) else {
        panic!("{}", show(&reply))
    };
    assert_eq!(items.len(), 2, "{}", show(&reply));
    for item in items {
        let Resp::Error(text) = item else {
            panic!("{}", show(&reply))
        };
        assert!(
            text.starts_with("ERR problem inserting into filter: "),
            "{text}"
        );
    }
    expect_line(&mut raw, "BF.INFO g FILTERS", b"*1\r\n:1\r\n");
    // Nothing big was allocated, and the server still works.
    assert!(used(&mut raw) < before + 10_000_000, "used_memory grew");
    expect_line(&mut raw, "BF.ADD fine x", b":1\r\n");
    witness.check(&mut server);
}

// ---------------------------------------------------------------------------
// RESTORE of damaged payloads
// ---------------------------------------------------------------------------

const BAD_FORMAT: &[u8] = b"-ERR Bad data format\r\n";

/// Replaces the CRC of a DUMP payload whose body (all but the last 8
/// bytes) was changed.
fn with_crc(mut payload: Vec<u8>) -> Vec<u8> {
    let body = payload.len() - 8;
    let crc = crc64_jones(&payload[..body]);
    payload[body..].copy_from_slice(&crc.to_le_bytes());
    payload
}

/// A payload of `body` (after the type byte and module id) with the
/// trailer of Redis 7.0.
fn payload_from_body(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&10u16.to_le_bytes());
    payload.extend_from_slice(&[0; 8]);
    with_crc(payload)
}

fn dump_of(raw: &mut RawClient, key: &str) -> Vec<u8> {
    let reply = raw.cmd(&["DUMP", key]);
    match decode(&reply) {
        Resp::Bulk(payload) => payload,
        _ => panic!("DUMP {key}: {}", show(&reply)),
    }
}

/// RESTOREs payload i into key `<prefix><i>`; returns the replies.
fn restore_all(raw: &mut RawClient, prefix: &str, payloads: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let commands: Vec<Vec<Vec<u8>>> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                b"RESTORE".to_vec(),
                format!("{prefix}{i}").into_bytes(),
                b"0".to_vec(),
                p.clone(),
            ]
        })
        .collect();
    raw.pipeline(&commands)
}

/// A restored key must be a working filter.
fn exercise(raw: &mut RawClient, key: &str) {
    let commands: Vec<Vec<String>> = vec![
        words(&format!("BF.DEBUG {key}")),
        words(&format!("BF.INFO {key}")),
        words(&format!("BF.CARD {key}")),
        words(&format!("BF.MEXISTS {key} a b c")),
        words(&format!("BF.MADD {key} a b c d e f g h i j")),
        words(&format!("BF.SCANDUMP {key} 0")),
        words(&format!("BF.SCANDUMP {key} 1")),
        words(&format!("DUMP {key}")),
    ];
    for (cmd, reply) in commands.iter().zip(raw.pipeline(&commands)) {
        decode(&reply);
        assert!(
            !reply.starts_with(b"-"),
            "{cmd:?} on a restored key: {}",
            show(&reply)
        );
    }
}

#[test]
fn restore_of_truncated_and_garbled_payloads() {
    assert_eq!(crc64_jones(b"123456789"), 0xe9c6d914c4b8d9ca);
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    // Real payloads: one link; three links; an LZF-compressed link;
    // non-scaling; the 4-link test_debug chain.
    let setup = [
        "BF.RESERVE p1 0.1 5",
        "BF.MADD p1 a b",
        "BF.RESERVE p2 0.01 2",
        "BF.MADD p2 a b c d e f g",
        "BF.RESERVE p3 0.01 100",
        "BF.ADD p3 item",
        "BF.RESERVE p4 0.01 20 NONSCALING",
        "BF.MADD p4 x y z",
    ];
    for line in setup {
        assert!(!raw.line(line).starts_with(b"-"));
    }
    let mut payloads: Vec<Vec<u8>> = ["p1", "p2", "p3", "p4", "keep-chain"]
        .iter()
        .map(|k| dump_of(&mut raw, k))
        .collect();
    assert!(
        payloads[2].windows(1).any(|w| w[0] == 0xc3),
        "p3 is not LZF-compressed"
    );
    for p in &payloads {
        // Recomputing the CRC of an intact payload changes nothing.
        assert_eq!(&with_crc(p.clone()), p);
    }

    // A wrong CRC is refused by Redis before the module sees anything.
    let mut bad_crc = payloads[0].clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    expect(
        &mut raw,
        &[b"RESTORE".as_slice(), b"x", b"0", &bad_crc],
        b"-ERR DUMP payload version or checksum are wrong\r\n",
    );

    // Truncated anywhere (CRC recomputed): always refused.
    let mut truncated = Vec::new();
    for p in &payloads {
        let body = &p[..p.len() - 10];
        for cut in 1..body.len() {
            truncated.push(payload_from_body(&body[..cut]));
        }
    }
    for (payload, reply) in truncated.iter().zip(restore_all(&mut raw, "t", &truncated)) {
        assert!(
            reply == BAD_FORMAT,
            "truncated payload {}: {}",
            show(payload),
            show(&reply)
        );
    }
    expect_line(&mut raw, "DBSIZE", b":8\r\n");

    // One more field, or a field of the wrong type: refused.
    let p = &payloads[0];
    let body = &p[..p.len() - 11];
    let mut extra = body.to_vec();
    extra.extend_from_slice(&[0x02, 0x01, 0x00]);
    let mut wrong_type = body.to_vec();
    let at = 10; // the first field's opcode (unsigned) becomes "double"
    assert_eq!(wrong_type[at], 0x02);
    wrong_type[at] = 0x04;
    wrong_type.push(0x00);
    for payload in [payload_from_body(&extra), payload_from_body(&wrong_type)] {
        expect(
            &mut raw,
            &[b"RESTORE".as_slice(), b"t", b"0", &payload],
            BAD_FORMAT,
        );
    }

    // Every body byte garbled (CRC recomputed), in three ways: refused, or
    // accepted as a filter that works.
    payloads.truncate(4);
    let mut garbled = Vec::new();
    for p in &payloads {
        let body_len = p.len() - 10;
        for at in 0..body_len {
            for mask in [0xff, 0x01, 0x80] {
                let mut g = p.clone();
                g[at] ^= mask;
                garbled.push(with_crc(g));
            }
        }
    }
    let mut accepted = 0;
    for (i, (payload, reply)) in garbled
        .iter()
        .zip(restore_all(&mut raw, "g", &garbled))
        .enumerate()
    {
        let key = format!("g{i}");
        if reply == OK {
            accepted += 1;
            exercise(&mut raw, &key);
            expect(&mut raw, &["DEL", &key], b":1\r\n");
        } else {
            assert!(
                reply == BAD_FORMAT,
                "garbled payload #{i} {}: {}",
                show(payload),
                show(&reply)
            );
        }
    }
    assert!(
        accepted > 0 && accepted < garbled.len(),
        "{accepted} of {}",
        garbled.len()
    );
    witness.check(&mut server);
}

/// The body of a DUMP payload: 0x07, the module id, `fields`, EOF.
#[derive(Clone)]
enum Field {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

fn crafted(encver: u16, fields: &[Field]) -> Vec<u8> {
    let id = module_type_id(b"MBbloom--", encver).expect("type id");
    assert_eq!(id & !0x3ff, TYPE_ID_BASE);
    let mut w = DumpWriter::new(id);
    for f in fields {
        match f {
            Field::U(v) => w.write_unsigned(*v),
            Field::D(v) => w.write_double(*v),
            Field::S(v) => w.write_bytes(v),
        }
    }
    w.finish(10)
}

/// Encoding 4 fields of a chain of one link (items 2, 8 bytes, 5 hashes)
/// like `BF.RESERVE d 0.1 5; BF.MADD d a b`, with `change` applied.
fn one_link(change: impl FnOnce(&mut Vec<Field>)) -> Vec<Field> {
    use Field::*;
    let mut fields = vec![
        U(2),                                                    // 0 chain items
        U(1),                                                    // 1 nfilters
        U(5),                                                    // 2 options
        U(2),                                                    // 3 growth
        U(5),                                                    // 4 entries
        D(0.05),                                                 // 5 error
        U(5),                                                    // 6 hashes
        D(6.2352242295726885),                                   // 7 bpe
        U(64),                                                   // 8 bits
        U(0),                                                    // 9 n2
        S(vec![0x00, 0x44, 0x20, 0x8c, 0x10, 0x12, 0x00, 0x20]), // 10 bit array
        U(2),                                                    // 11 link items
    ];
    change(&mut fields);
    fields
}

#[test]
fn restore_of_invalid_filters() {
    // [FREE] (§6.4, §6.5): 2.8.2 accepts all of these and then crashes or
    // reads out of bounds; FerroBloom refuses them.
    use Field::*;
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    // The unchanged fields make the payload 2.8.2 writes (spec §6.2).
    let valid = crafted(4, &one_link(|_| {}));
    let reference = "07813016e5a289bef80402020201020502020205049a9999999999a93f0205044af7d49edef01840024040020005080044208c101200200202000a00834e3bf64e24cbe1";
    assert_eq!(
        valid.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        reference
    );
    expect(&mut raw, &[b"RESTORE".as_slice(), b"ok", b"0", &valid], OK);
    expect_line(&mut raw, "BF.MEXISTS ok a b c", b"*3\r\n:1\r\n:1\r\n:0\r\n");

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("nfilters 0", crafted(4, &[U(0), U(0), U(5), U(2)])),
        (
            "nfilters 2, one link",
            crafted(4, &one_link(|f| f[1] = U(2))),
        ),
        (
            "nfilters 2^40",
            crafted(4, &one_link(|f| f[1] = U(1 << 40))),
        ),
        (
            "size != sum of link sizes",
            crafted(4, &one_link(|f| f[0] = U(3))),
        ),
        ("options 0xff", crafted(4, &one_link(|f| f[2] = U(0xff)))),
        ("options 16", crafted(4, &one_link(|f| f[2] = U(16)))),
        ("error 0", crafted(4, &one_link(|f| f[5] = D(0.0)))),
        ("error 1.5", crafted(4, &one_link(|f| f[5] = D(1.5)))),
        ("error NaN", crafted(4, &one_link(|f| f[5] = D(f64::NAN)))),
        ("bpe NaN", crafted(4, &one_link(|f| f[7] = D(f64::NAN)))),
        ("bpe -1", crafted(4, &one_link(|f| f[7] = D(-1.0)))),
        ("hashes 0", crafted(4, &one_link(|f| f[6] = U(0)))),
        (
            "hashes 9 (bpe says 5)",
            crafted(4, &one_link(|f| f[6] = U(9))),
        ),
        ("hashes 2^32", crafted(4, &one_link(|f| f[6] = U(1 << 32)))),
        ("bits 0 and n2 0", crafted(4, &one_link(|f| f[8] = U(0)))),
        (
            "bits 128 with 8 bytes",
            crafted(4, &one_link(|f| f[8] = U(128))),
        ),
        ("n2 7 with 8 bytes", crafted(4, &one_link(|f| f[9] = U(7)))),
        ("n2 64", crafted(4, &one_link(|f| f[9] = U(64)))),
        (
            "empty bit array",
            crafted(4, &one_link(|f| f[10] = S(Vec::new()))),
        ),
        ("entries 0", crafted(4, &one_link(|f| f[4] = U(0)))),
        ("encoding version 5", crafted(5, &one_link(|_| {}))),
        (
            "a dead link only",
            crafted(
                4,
                &[
                    U(0),
                    U(1),
                    U(5),
                    U(0),
                    U(0),
                    D(0.0),
                    U(0),
                    D(0.0),
                    U(0),
                    U(0),
                    S(Vec::new()),
                    U(0),
                ],
            ),
        ),
    ];
    for (case, payload) in &cases {
        let started = Instant::now();
        let reply = raw.cmd(&[b"RESTORE".as_slice(), b"bad", b"0", payload]);
        assert!(reply == BAD_FORMAT, "{case}: {}", show(&reply));
        assert!(started.elapsed() < Duration::from_secs(1), "{case}");
    }
    expect_line(&mut raw, "EXISTS bad", b":0\r\n");

    // 2.8.2's own output after a failed scale-out (vectors.json →
    // rdb_dead_link): accepted, the trailing all-zero link dropped.
    let dead = "07813016e5a289bef80402020202020502000202047b14ae47e17a743f020804e9862fb2350e2640024040020005080244208c105209210202020004000000000000000002000400000000000000000200020005000200000a0065bb3ce38bc6679c";
    let dead: Vec<u8> = (0..dead.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&dead[i..i + 2], 16).unwrap())
        .collect();
    expect(&mut raw, &[b"RESTORE".as_slice(), b"dead", b"0", &dead], OK);
    let want_debug = b"*2\r\n$6\r\nsize:2\r\n$67\r\nbytes:8 bits:64 hashes:8 hashwidth:64 capacity:2 size:2 ratio:0.005\r\n";
    expect(&mut raw, &["BF.DEBUG", "dead"], want_debug);
    expect_line(&mut raw, "BF.INFO dead FILTERS", b"*1\r\n:1\r\n");
    expect_line(&mut raw, "BF.EXISTS dead some-random-item", b":0\r\n");
    witness.check(&mut server);
}

// ---------------------------------------------------------------------------
// Load-time arguments (§8)
// ---------------------------------------------------------------------------

fn with_args(args: &[&str]) -> ServerOpts {
    ServerOpts::new(ModuleKind::FerroBloom).module_args(args)
}

#[test]
fn load_arguments_change_auto_created_filters() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["ERROR_RATE", "0.001", "INITIAL_SIZE", "1000"],
            "bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:1 ratio:0.0005",
        ),
        (
            &["error_rate", "0.1", "initial_size", "7"],
            "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:7 size:1 ratio:0.05",
        ),
        (
            &["ERROR_RATE", "0.2", "ERROR_RATE", "0.1"],
            "bytes:80 bits:640 hashes:5 hashwidth:64 capacity:100 size:1 ratio:0.05",
        ),
        (
            &["ERROR_RATE", "0.5"],
            "bytes:40 bits:320 hashes:3 hashwidth:64 capacity:100 size:1 ratio:0.25",
        ),
        (
            &["INITIAL_SIZE", "1000", "CF_MAX_EXPANSIONS", "3"],
            "bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:1 ratio:0.005",
        ),
        (
            &[""],
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005",
        ),
    ];
    for (args, link) in cases {
        let server = Server::start(with_args(args));
        let mut raw = server.raw();
        expect_line(&mut raw, "BF.ADD k x", b":1\r\n");
        let want = format!("*2\r\n$6\r\nsize:1\r\n${}\r\n{link}\r\n", link.len());
        expect(&mut raw, &["BF.DEBUG", "k"], want.as_bytes());
        // BF.MADD and BF.INSERT without CAPACITY/ERROR use them too.
        expect_line(&mut raw, "BF.MADD m x", b"*1\r\n:1\r\n");
        expect(&mut raw, &["BF.DEBUG", "m"], want.as_bytes());
        expect_line(&mut raw, "BF.INSERT i ITEMS x", b"*1\r\n:1\r\n");
        expect(&mut raw, &["BF.DEBUG", "i"], want.as_bytes());
        expect_line(&mut raw, "BF.INFO k EXPANSION", b"*1\r\n:2\r\n");
        // BF.RESERVE is unaffected.
        expect_line(&mut raw, "BF.RESERVE r 0.01 100", OK);
        expect(
            &mut raw,
            &["BF.DEBUG", "r"],
            b"*2\r\n$6\r\nsize:0\r\n$73\r\nbytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005\r\n",
        );
        // MODULE LIST shows the arguments as given (Valkey 9 also lists its
        // Lua engine as a module).
        let Resp::Array(modules) = decode(&raw.cmd(&["MODULE", "LIST"])) else {
            panic!("MODULE LIST")
        };
        let bf = Resp::Bulk(b"bf".to_vec());
        let Some(Resp::Array(fields)) = modules
            .iter()
            .find(|m| matches!(m, Resp::Array(f) if f.get(1) == Some(&bf)))
        else {
            panic!("MODULE LIST: {modules:?}")
        };
        assert_eq!(
            modules.len(),
            if server.version().lua_is_a_module() {
                2
            } else {
                1
            },
            "MODULE LIST: {modules:?}"
        );
        let given: Vec<Resp> = args
            .iter()
            .map(|a| Resp::Bulk(a.as_bytes().to_vec()))
            .collect();
        assert_eq!(fields[7], Resp::Array(given), "{args:?}");
        assert!(!server.log().contains("panicked"));
    }
}

#[test]
fn huge_initial_size_is_refused_per_command() {
    // [FREE] (§9.2): 2.8.2 would abort on the first BF.ADD.
    let mut server = Server::start(with_args(&["INITIAL_SIZE", "1000000000000000000"]));
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    for cmd in [
        ["BF.ADD", "k", "x"].as_slice(),
        &["BF.MADD", "k", "x", "y"],
        &["BF.INSERT", "k", "ITEMS", "x"],
    ] {
        expect_creation_refused(&mut raw, cmd);
    }
    expect_line(&mut raw, "EXISTS k", b":0\r\n");
    expect_line(&mut raw, "BF.INSERT k CAPACITY 10 ITEMS x", b"*1\r\n:1\r\n");
    witness.check(&mut server);
}

#[test]
fn bad_load_arguments_stop_the_server() {
    let cases: &[(&[&str], &str)] = &[
        (&["ERROR_RATE", "0"], "ERROR_RATE must be > 0"),
        (&["ERROR_RATE", "-0.5"], "ERROR_RATE must be > 0"),
        (&["ERROR_RATE", "1"], "ERROR_RATE must be < 1"),
        (&["ERROR_RATE", "2.5"], "ERROR_RATE must be < 1"),
        (&["ERROR_RATE", "abc"], "Invalid argument for 'ERROR_RATE'"),
        (&["ERROR_RATE", "nan"], "Invalid argument for 'ERROR_RATE'"),
        (&["INITIAL_SIZE", "0"], "INITIAL_SIZE must be > 0"),
        (&["INITIAL_SIZE", "-5"], "INITIAL_SIZE must be > 0"),
        (
            &["INITIAL_SIZE", "1.5"],
            "Invalid argument for 'INITIAL_SIZE'",
        ),
        (
            &["INITIAL_SIZE", "0x10"],
            "Invalid argument for 'INITIAL_SIZE'",
        ),
        (
            &["INITIAL_SIZE", "07"],
            "Invalid argument for 'INITIAL_SIZE'",
        ),
        (
            &["CF_MAX_EXPANSIONS", "0"],
            "CF_MAX_EXPANSIONS must be an integer >= 1",
        ),
        (&["FOO", "1"], "Unrecognized option"),
        (&["ERROR_RATE", "0.01", "FOO", "1"], "Unrecognized option"),
        (&["ERROR_RATE"], "Invalid number of arguments passed"),
        (&["x"], "Invalid number of arguments passed"),
        (
            &["ERROR_RATE", "0.01", "INITIAL_SIZE"],
            "Invalid number of arguments passed",
        ),
    ];
    for (args, message) in cases {
        let started = Instant::now();
        let failed = match Server::try_start(with_args(args)) {
            Ok(_) => panic!("the server started with module arguments {args:?}"),
            Err(failed) => failed,
        };
        assert!(!failed.status.success(), "{args:?}: {}", failed.status);
        assert!(
            failed.log.contains(&format!("<bf> {message}")),
            "{args:?}: the log does not name the problem ({message}):\n{}",
            failed.log
        );
        assert!(
            failed.log.contains("Module not loaded") || failed.log.contains("aborting"),
            "{}",
            failed.log
        );
        assert!(!failed.log.contains("panicked"), "{}", failed.log);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[test]
fn ferrobloom_settings_are_load_arguments_too() {
    // FerroBloom's settings (and RedisBloom 8's names) are accepted as load
    // arguments besides RedisBloom 2.8's ERROR_RATE / INITIAL_SIZE, and
    // show in CONFIG GET; an unknown name still stops the load.
    let server = Server::start(with_args(&[
        "EXPANSION",
        "0",
        "policy",
        "pow2",
        "bf-initial-size",
        "7",
        "fill_warning",
        "0.5",
    ]));
    let mut c = server.conn();
    let get = |c: &mut redis::Connection, name: &str| -> String {
        let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap();
        pair[1].clone()
    };
    assert_eq!(get(&mut c, "bf.expansion"), "0");
    assert_eq!(get(&mut c, "bf.policy"), "pow2");
    assert_eq!(get(&mut c, "bf.initial-size"), "7");
    assert_eq!(get(&mut c, "bf.fill-warning"), "0.5");
    // Expansion 0: auto-created filters do not scale (INFO expansion nil).
    let _: Vec<bool> = redis::cmd("BF.MADD")
        .arg("k")
        .arg("a")
        .query(&mut c)
        .unwrap();
    let info: Vec<Option<i64>> = redis::cmd("BF.INFO")
        .arg("k")
        .arg("EXPANSION")
        .query(&mut c)
        .unwrap();
    assert_eq!(info, vec![None]);
    drop(server);
    match Server::try_start(with_args(&["bf_capacity", "2"])) {
        Ok(_) => panic!("the server started with an unknown module argument"),
        Err(failed) => assert!(
            failed.log.contains("<bf> Unrecognized option"),
            "{}",
            failed.log
        ),
    }
}

// ---------------------------------------------------------------------------
// Bounded chains: no input may describe more links than scaling can make
// ---------------------------------------------------------------------------

/// The longest chain scaling can make (`MAX_LINKS` links): a first link of
/// capacity 1 at the largest error below 1, growth 1, filled with distinct
/// items until a scale-out fails. Returns it with the items it holds.
fn longest_chain() -> (Chain, Vec<Vec<u8>>) {
    let spec = LinkSpec::new(1, f64::from_bits(1.0f64.to_bits() - 1), Policy::Exact).unwrap();
    let first = Link::new(&spec).unwrap();
    let options = options::FORCE64 | options::NOROUND;
    let mut chain = Chain::from_parts(0, options, 1, vec![first]).unwrap();
    let mut added = Vec::new();
    for i in 0u64.. {
        let item = format!("item-{i}").into_bytes();
        match chain.add(chain.hash(&item), &Unguarded) {
            AddOutcome::Added => added.push(item),
            AddOutcome::Present => {}
            AddOutcome::ScaleFailed => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(chain.links().len(), MAX_LINKS);
    (chain, added)
}

/// `chain` with an empty copy of its newest link appended.
fn one_link_longer(chain: &Chain) -> Chain {
    let mut links: Vec<Link> = chain
        .links()
        .iter()
        .map(|l| l.try_clone().unwrap())
        .collect();
    let mut extra = links.last().unwrap().try_clone().unwrap();
    extra.items = 0;
    links.push(extra);
    Chain::from_parts(chain.items(), chain.options(), chain.growth(), links).unwrap()
}

/// `rdb::save` with the link count raised by one, so that one more link
/// can be appended by hand.
struct OneMoreLink<'a> {
    out: &'a mut DumpWriter,
    field: usize,
}

impl RdbOutput for OneMoreLink<'_> {
    fn write_unsigned(&mut self, value: u64) {
        // The second field is nfilters.
        let value = if self.field == 1 { value + 1 } else { value };
        self.field += 1;
        self.out.write_unsigned(value);
    }
    fn write_double(&mut self, value: f64) {
        self.field += 1;
        self.out.write_double(value);
    }
    fn write_bytes(&mut self, bytes: &[u8]) {
        self.field += 1;
        self.out.write_bytes(bytes);
    }
}

/// The DUMP payload of `chain` followed by the all-zero link RedisBloom
/// 2.8.2 saves after a failed scale-out.
fn dump_with_dead_link(chain: &Chain) -> Vec<u8> {
    let mut w = DumpWriter::new(TYPE_ID_BASE | rdb::ENCODING_VERSION as u64);
    rdb::save(
        chain,
        &mut OneMoreLink {
            out: &mut w,
            field: 0,
        },
    );
    w.write_unsigned(0); // entries
    w.write_double(0.0); // error
    w.write_unsigned(0); // hashes
    w.write_double(0.0); // bpe
    w.write_unsigned(0); // bits
    w.write_unsigned(0); // n2
    w.write_bytes(&[]);
    w.write_unsigned(0); // items
    w.finish(10)
}

/// Loads `chain` under `key` with BF.LOADCHUNK: its header, then every
/// data chunk.
fn loadchunk_all(raw: &mut RawClient, key: &str, chain: &Chain) {
    let header = scandump::encode_header(chain);
    expect(
        raw,
        &[b"BF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", &header],
        OK,
    );
    let mut iter = 1i64;
    loop {
        let (next, data) = scandump::data_chunk(chain, iter);
        if next == 0 {
            break;
        }
        let it = next.to_string();
        expect(
            raw,
            &[
                b"BF.LOADCHUNK".as_slice(),
                key.as_bytes(),
                it.as_bytes(),
                data,
            ],
            OK,
        );
        iter = next;
    }
}

#[test]
fn chains_longer_than_scaling_can_make_are_refused() {
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    let (longest, added) = longest_chain();
    let max = MAX_LINKS.to_string();
    let filters = format!("*1\r\n:{max}\r\n");

    // MAX_LINKS links of a few bytes each load and work: every item added
    // in-process is found, and the next new item cannot scale (the error
    // would underflow), as on the chain it was built from.
    loadchunk_all(&mut raw, "longest", &longest);
    expect_line(&mut raw, "BF.INFO longest FILTERS", filters.as_bytes());
    let mut mexists: Vec<&[u8]> = vec![b"BF.MEXISTS", b"longest"];
    mexists.extend(added.iter().map(Vec::as_slice));
    let reply = raw.cmd(&mexists);
    assert_eq!(
        reply,
        format!("*{}\r\n{}", added.len(), ":1\r\n".repeat(added.len())).into_bytes()
    );
    expect_line(
        &mut raw,
        "BF.ADD longest surely-new-item",
        b"-ERR problem inserting into filter\r\n",
    );
    let header = scandump::encode_header(&longest);
    let reply = raw.cmd(&["BF.SCANDUMP", "longest", "0"]);
    assert_eq!(
        decode(&reply),
        Resp::Array(vec![Resp::Int(1), Resp::Bulk(header)])
    );
    let longest_dump = dump_of(&mut raw, "longest");

    // One link more: refused as bad data, nothing created.
    let longer = one_link_longer(&longest);
    let header = scandump::encode_header(&longer);
    expect(
        &mut raw,
        &[b"BF.LOADCHUNK".as_slice(), b"longer", b"1", &header],
        b"-ERR received bad data\r\n",
    );
    expect_line(&mut raw, "EXISTS longer", b":0\r\n");

    // RESTORE: MAX_LINKS links and the dead link 2.8.2 writes after a
    // failed scale-out are its legitimate output, and load; one live link
    // more does not, neither into a new key nor over an existing one.
    let payload = dump_with_dead_link(&longest);
    expect(
        &mut raw,
        &[b"RESTORE".as_slice(), b"with-dead", b"0", &payload],
        OK,
    );
    expect_line(&mut raw, "BF.INFO with-dead FILTERS", filters.as_bytes());
    assert_eq!(dump_of(&mut raw, "with-dead"), longest_dump);
    let payload = dump::dump_payload(&longer, 10);
    for args in [
        vec![b"RESTORE".as_slice(), b"longer", b"0", &payload],
        vec![
            b"RESTORE".as_slice(),
            b"longest",
            b"0",
            &payload,
            b"REPLACE",
        ],
    ] {
        let reply = raw.cmd(&args);
        assert!(
            reply.starts_with(b"-") && show(&reply).contains("Bad data format"),
            "{}",
            show(&reply)
        );
    }
    let payload = dump_with_dead_link(&longer);
    expect(
        &mut raw,
        &[b"RESTORE".as_slice(), b"longer", b"0", &payload],
        BAD_FORMAT,
    );
    expect_line(&mut raw, "EXISTS longer", b":0\r\n");
    assert_eq!(dump_of(&mut raw, "longest"), longest_dump);
    witness.check(&mut server);
}

#[test]
fn absurd_link_sizes_are_bad_data_not_a_memory_question() {
    let mut server = start();
    let mut raw = server.raw();
    let witness = Witness::create(&mut raw);
    expect_line(&mut raw, "CONFIG SET bf.max-filter-bytes 1000", OK);
    // A link of 2^50 bytes whose positions are taken modulo 64 bits: bad
    // data, whatever the memory limits say.
    let link = Link::new(&LinkSpec::new(5, 0.005, Policy::Exact).unwrap()).unwrap();
    let shape = Chain::from_parts(0, 5, 2, vec![link]).unwrap();
    let mut header = scandump::Header::of(&shape);
    assert_eq!(header.links[0].bits, 64);
    header.links[0].bytes = 1 << 50;
    let absurd = header.encode();
    // The same with n2 6 (modulus 64 whatever bits says), and two links
    // whose sizes are each possible but add up past 2^64.
    header.links[0].bits = 1 << 53;
    header.links[0].n2 = 6;
    let absurd_n2 = header.encode();
    header.links[0].n2 = 0;
    header.links[0].bytes = (1 << 61) - 8;
    header.links[0].bits = ((1 << 61) - 8) * 8;
    header.links = vec![header.links[0]; 9];
    let overflowing = header.encode();
    for h in [&absurd, &absurd_n2, &overflowing] {
        expect(
            &mut raw,
            &[b"BF.LOADCHUNK".as_slice(), b"absurd", b"1", h],
            b"-ERR received bad data\r\n",
        );
    }
    expect_line(&mut raw, "EXISTS absurd", b":0\r\n");
    // The memory guard still decides for a shape that is possible: a link
    // of 2^20 bytes addressed by its 2^23 bits is over the 1000-byte cap.
    header.links = vec![header.links[0]];
    header.links[0].bytes = 1 << 20;
    header.links[0].bits = 1 << 23;
    let big = header.encode();
    expect_prefix(
        &mut raw,
        &[b"BF.LOADCHUNK".as_slice(), b"absurd", b"1", &big],
        "-ERR received bad data: the filter would take",
    );
    expect_line(&mut raw, "EXISTS absurd", b":0\r\n");
    expect_line(&mut raw, "CONFIG SET bf.max-filter-bytes 0", OK);
    witness.check(&mut server);
}
