//! Every state a client's commands reach reloads unchanged, per type, on a
//! real server: for random command sequences on Bloom, Cuckoo and windowed
//! filters, DUMP → RESTORE, SCANDUMP → LOADCHUNK (Bloom and Cuckoo; a
//! windowed filter has no SCANDUMP) and an AOF rewrite → reload all give a
//! value with the same DEBUG DIGEST-VALUE. The sequences come from a fixed
//! seed, so a failure names a case that can be replayed.

mod common;

use std::time::Duration;

use common::replication::wait_for_aof_rewrite;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

/// Cases per type: enough to cover every option, few enough for seconds.
const CASES: u64 = 30;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

type Command = Vec<String>;
/// A type's case builder: the commands that make `key` from a random source.
type Builder = fn(&mut Rng, &str) -> Vec<Command>;

fn words(line: &str) -> Command {
    line.split_whitespace().map(str::to_string).collect()
}

/// 1 to `most` items from a small universe, so that adds repeat and
/// deletes hit.
fn items(rng: &mut Rng, universe: u64, most: u64) -> Vec<String> {
    let n = 1 + rng.below(most);
    (0..n)
        .map(|_| format!("i{}", rng.below(universe)))
        .collect()
}

fn bloom_case(rng: &mut Rng, key: &str) -> Vec<Command> {
    let error = ["0.1", "0.01", "0.001"][rng.below(3) as usize];
    let mut reserve = words(&format!("BF.RESERVE {key} {error} {}", 1 + rng.below(200)));
    if rng.chance(30) {
        reserve.push("NONSCALING".into());
    } else if rng.chance(50) {
        reserve.extend(words(&format!("EXPANSION {}", 1 + rng.below(4))));
    }
    let mut cmds = vec![reserve];
    for _ in 0..rng.below(6) {
        let batch = items(rng, 2000, 150);
        let mut c = match rng.below(3) {
            0 => words(&format!("BF.ADD {key}")),
            1 => words(&format!("BF.MADD {key}")),
            _ => words(&format!("BF.INSERT {key} NOCREATE ITEMS")),
        };
        if c[0] == "BF.ADD" {
            c.push(batch[0].clone());
        } else {
            c.extend(batch);
        }
        cmds.push(c);
    }
    cmds
}

fn cuckoo_case(rng: &mut Rng, key: &str) -> Vec<Command> {
    let bucket_size = 1 + rng.below(4);
    let mut reserve = words(&format!(
        "CF.RESERVE {key} {} BUCKETSIZE {bucket_size}",
        2 * bucket_size + rng.below(60)
    ));
    if rng.chance(50) {
        reserve.extend(words(&format!("MAXITERATIONS {}", 1 + rng.below(30))));
    }
    if rng.chance(70) {
        reserve.extend(words(&format!("EXPANSION {}", rng.below(5))));
    }
    let mut cmds = vec![reserve];
    let universe = 40 + rng.below(200);
    for _ in 0..rng.below(12) {
        let c = match rng.below(6) {
            0 => {
                let mut c = words(&format!("CF.INSERT {key} NOCREATE ITEMS"));
                c.extend(items(rng, universe, 120));
                c
            }
            1 => {
                let mut c = words(&format!("CF.INSERTNX {key} NOCREATE ITEMS"));
                c.extend(items(rng, universe, 60));
                c
            }
            2 => words(&format!("CF.ADD {key} i{}", rng.below(universe))),
            3 => words(&format!("CF.ADDNX {key} i{}", rng.below(universe))),
            4 => words(&format!("CF.COMPACT {key}")),
            _ => words(&format!("CF.DEL {key} i{}", rng.below(universe))),
        };
        // Deletes come in runs, so that automatic compactions happen.
        let repeat = if c[0] == "CF.DEL" {
            1 + rng.below(40)
        } else {
            1
        };
        for _ in 0..repeat {
            let mut again = c.clone();
            if again[0] == "CF.DEL" {
                again[2] = format!("i{}", rng.below(universe));
            }
            cmds.push(again);
        }
    }
    cmds
}

fn window_case(rng: &mut Rng, key: &str) -> Vec<Command> {
    let capacity = 20 + rng.below(200);
    // An item window, or a time window too long for the clock to move it
    // while the test runs.
    let window = if rng.chance(50) {
        format!("{}", capacity + rng.below(100))
    } else {
        "30d".to_string()
    };
    let mut reserve = words(&format!(
        "BF.RESERVE {key} 0.01 {capacity} WINDOW {window} GENERATIONS {}",
        1 + rng.below(8)
    ));
    if rng.chance(40) {
        reserve.extend(words("POLICY pow2"));
    }
    if rng.chance(30) {
        reserve.push("NONSCALING".into());
    }
    let mut cmds = vec![reserve];
    for _ in 0..rng.below(6) {
        let mut c = if rng.chance(50) {
            words(&format!("BF.MADD {key}"))
        } else {
            words(&format!("BF.INSERT {key} NOCREATE ITEMS"))
        };
        c.extend(items(rng, 5000, 200));
        cmds.push(c);
    }
    cmds
}

fn digest(r: &mut RawClient, key: &str) -> Vec<u8> {
    r.cmd(&["DEBUG", "DIGEST-VALUE", key])
}

/// SCANDUMP `key` into `to` with LOADCHUNK, as a client copies a filter;
/// returns whether anything was exported.
fn scandump_copy(r: &mut RawClient, prefix: &str, key: &str, to: &str) -> bool {
    let mut iterator = 0i64;
    let mut any = false;
    loop {
        let reply = decode(&r.cmd(&[&format!("{prefix}.SCANDUMP"), key, &iterator.to_string()]));
        let Resp::Array(parts) = reply else {
            panic!("{prefix}.SCANDUMP {key} {iterator}: {reply:?}");
        };
        let (Resp::Int(next), data) = (&parts[0], &parts[1]) else {
            panic!("{prefix}.SCANDUMP {key}: {parts:?}");
        };
        if *next == 0 {
            return any;
        }
        let Resp::Bulk(data) = data else {
            panic!("{prefix}.SCANDUMP {key}: {parts:?}");
        };
        let loaded = r.cmd(&[
            format!("{prefix}.LOADCHUNK").as_bytes(),
            to.as_bytes(),
            next.to_string().as_bytes(),
            data,
        ]);
        assert_eq!(loaded, b"+OK\r\n", "{prefix}.LOADCHUNK {to} {next}");
        any = true;
        iterator = *next;
    }
}

#[test]
fn random_states_of_every_type_reload_unchanged() {
    let server = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut r = server.raw();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Every key that must come back from the AOF, with its digest.
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();
    // Cases that grew past one sub-filter / one link, and Cuckoo filters
    // emptied again: the sequences must reach them.
    let (mut grown, mut emptied) = (0, 0);
    let kinds: [(&str, Builder, Option<&str>); 3] = [
        ("bloom", bloom_case, Some("BF")),
        ("cuckoo", cuckoo_case, Some("CF")),
        ("window", window_case, None),
    ];
    for (kind, build, scandump) in kinds {
        for case in 0..CASES {
            let key = format!("{kind}:{case}");
            let cmds = build(&mut rng, &key);
            let replies = r.pipeline(&cmds);
            assert_eq!(replies[0], b"+OK\r\n", "{key}: {:?}", cmds[0]);
            let want = digest(&mut r, &key);
            let info = r.cmd(&[&format!("{}.DEBUG", &cmds[0][0][..2]), &key]);
            let info = String::from_utf8_lossy(&info).to_string();
            if info.contains("filters:") && !info.contains("filters:1 ") {
                grown += 1;
            }
            if info.matches("bytes:").count() > 1 {
                grown += 1;
            }
            if info.contains(" items:0 ") {
                emptied += 1;
            }
            let what = format!("{key} after {} commands ({:?} ...)", cmds.len(), cmds[0]);

            let payload = match decode(&r.cmd(&["DUMP", &key])) {
                Resp::Bulk(p) => p,
                other => panic!("DUMP {key}: {other:?}"),
            };
            let restored = format!("{key}:restored");
            assert_eq!(
                r.cmd(&[b"RESTORE".as_slice(), restored.as_bytes(), b"0", &payload]),
                b"+OK\r\n",
                "RESTORE of {what}"
            );
            assert_eq!(digest(&mut r, &restored), want, "DUMP/RESTORE of {what}");
            expected.push((restored, want.clone()));

            if let Some(prefix) = scandump {
                let copied = format!("{key}:chunks");
                if scandump_copy(&mut r, prefix, &key, &copied) {
                    assert_eq!(
                        digest(&mut r, &copied),
                        want,
                        "SCANDUMP/LOADCHUNK of {what}"
                    );
                    expected.push((copied, want.clone()));
                } else {
                    // RedisBloom 2.8.2 exports nothing of a Cuckoo filter
                    // whose item counter is 0 (clients see `[0, nil]`).
                    assert_eq!(prefix, "CF", "{what}: nothing exported");
                    let info = String::from_utf8_lossy(&r.cmd(&["CF.DEBUG", &key])).to_string();
                    assert!(info.contains(" items:0 "), "{what}: {info}");
                }
            }
            expected.push((key, want));
        }
    }
    assert!(
        grown >= 10 && emptied >= 1,
        "{grown} grown, {emptied} emptied"
    );
    assert_eq!(r.cmd(&["BGREWRITEAOF"]).first(), Some(&b'+'));
    wait_for_aof_rewrite(&mut r, Duration::from_secs(30));
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    for (key, want) in &expected {
        assert_eq!(
            &digest(&mut r, key),
            want,
            "{key} after the AOF rewrite and reload"
        );
    }
    assert_eq!(
        r.cmd(&["DBSIZE"]),
        format!(":{}\r\n", expected.len()).as_bytes()
    );
}
