//! What the tool's integration tests share: the servers they start (the
//! workspace's harness, tests/common, which each test file declares as
//! `common` at its root), running the built binary, and a command's reply.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::common::{double_in_one_form, ModuleKind, Server, ServerOpts};
use redis::{ConnectionLike, Value};
use serde_json::Value as Json;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The harness looks for the modules relative to the package it is built
/// in; point it at the workspace's when the environment does not.
pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("FERROBLOOM_MODULE").is_none() {
            std::env::set_var(
                "FERROBLOOM_MODULE",
                root().join("target/release/libferrobloom.so"),
            );
        }
        if std::env::var_os("REDISBLOOM_SO").is_none() {
            let file = root().join("target/oracle-venv/REDISBLOOM_SO");
            if let Ok(text) = std::fs::read_to_string(file) {
                std::env::set_var("REDISBLOOM_SO", text.trim());
            }
        }
    });
}

pub fn ferrobloom() -> Server {
    setup();
    Server::start(ServerOpts::new(ModuleKind::FerroBloom))
}

pub fn redisbloom() -> Server {
    setup();
    Server::start(ServerOpts::new(ModuleKind::RedisBloom))
}

/// A fresh working directory for one test (state files land there).
pub fn workdir(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Json {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }
}

pub fn cli_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrobloom"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("FERROBLOOM_URL")
        .env_remove("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("run ferrobloom");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!(
        "$ ferrobloom {}\n[exit {}]\n{}{}",
        args.join(" "),
        run.code,
        run.stdout,
        run.stderr
    );
    run
}

pub fn cli(args: &[&str]) -> Run {
    cli_in(&std::env::temp_dir(), args, &[])
}

/// The JSON the tool prints for `args`, which must succeed.
#[track_caller]
pub fn cli_json(args: &[&str]) -> Json {
    let run = cli(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json()
}

/// `migrate --from from --to to` with `extra` options, run in `dir` (its
/// state files land there).
pub fn migrate(dir: &Path, from: &str, to: &str, extra: &[&str]) -> Run {
    let mut args = vec!["migrate", "--from", from, "--to", to];
    args.extend(extra);
    cli_in(dir, &args, &[])
}

/// The run succeeded and its stdout says `text`.
#[track_caller]
pub fn assert_succeeded_saying(run: &Run, text: &str) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(text), "{}", run.stdout);
}

/// The run failed with exit status `code` and its stderr says `text`.
#[track_caller]
pub fn assert_failed_saying(run: &Run, code: i32, text: &str) {
    assert_eq!(run.code, code, "{}", run.stderr);
    assert_stderr_says(run, text);
}

/// The run's stderr says `text`.
#[track_caller]
pub fn assert_stderr_says(run: &Run, text: &str) {
    assert!(run.stderr.contains(text), "{}", run.stderr);
}

/// `migrate` of `extra` from `from` to `to` is refused (exit 3) before
/// anything is copied: stderr says so and each of `reasons`, stdout is
/// empty and `to` holds as many keys as before.
#[track_caller]
pub fn assert_migrate_refused_alone(
    dir: &Path,
    from: &str,
    to: &Server,
    extra: &[&str],
    reasons: &[&str],
) {
    let mut c = to.conn();
    let before: i64 = q(&mut c, &["DBSIZE"]);
    let run = migrate(dir, from, &to.url(), extra);
    assert_failed_saying(&run, 3, "(0 copied and verified)");
    for reason in reasons {
        assert_stderr_says(&run, reason);
    }
    assert_eq!(run.stdout, "");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), before);
}

/// TYPE of each of `keys`.
pub fn key_types(c: &mut impl ConnectionLike, keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| q(c, &["TYPE", k])).collect()
}

/// No key of a copy in progress (`ferrobloom-migrate:*`) is left behind.
#[track_caller]
pub fn assert_no_partial_copies(c: &mut impl ConnectionLike) {
    let left: Vec<Vec<u8>> = q(c, &["KEYS", "ferrobloom-migrate:*"]);
    assert!(left.is_empty(), "{left:?}");
}

/// The entry of `stats --json` for `key`.
#[track_caller]
pub fn filter_entry<'a>(j: &'a Json, key: &str) -> &'a Json {
    j["filters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == key)
        .unwrap_or_else(|| panic!("{key} in {j}"))
}

pub fn q<T: redis::FromRedisValue>(c: &mut impl ConnectionLike, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
}

/// A RESP2 reply's name/value pairs.
#[track_caller]
pub fn resp2_pairs(v: &Value) -> Vec<(String, Value)> {
    let Value::Array(a) = v else { panic!("{v:?}") };
    a.chunks(2)
        .map(|p| {
            let name = match &p[0] {
                Value::BulkString(k) => String::from_utf8_lossy(k).into_owned(),
                Value::SimpleString(k) => k.clone(),
                other => panic!("{other:?}"),
            };
            (name, p[1].clone())
        })
        .collect()
}

/// `key`'s DUMP without its trailer (RDB version and CRC), which is the
/// server's: equal values on any two servers.
#[track_caller]
pub fn dump_value(c: &mut impl ConnectionLike, key: &str) -> Vec<u8> {
    let p: Vec<u8> = q(c, &["DUMP", key]);
    p[..p.len() - 10].to_vec()
}

/// A reply with its doubles in one form (common::double_in_one_form), to
/// compare a server that prints them as Redis 7.0 does (`%.17g`: the
/// RedisBloom oracle runs there) with one that prints them as 7.2+ and
/// Valkey do (the shortest form): 0.90000000000000002 and 0.9 are one
/// double. Anything else is kept as it is.
pub fn doubles_in_one_form(v: Value) -> Value {
    match v {
        Value::BulkString(b) => match std::str::from_utf8(&b).ok().and_then(double_in_one_form) {
            Some(t) => Value::BulkString(t.into_bytes()),
            None => Value::BulkString(b),
        },
        Value::SimpleString(t) => Value::SimpleString(double_in_one_form(&t).unwrap_or(t)),
        Value::Array(a) => Value::Array(a.into_iter().map(doubles_in_one_form).collect()),
        Value::Map(m) => Value::Map(
            m.into_iter()
                .map(|(k, v)| (doubles_in_one_form(k), doubles_in_one_form(v)))
                .collect(),
        ),
        other => other,
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Three FerroBloom masters sharing the slots.
pub fn cluster() -> Vec<Server> {
    setup();
    let nodes: Vec<Server> = (0..3)
        .map(|_| Server::start(ServerOpts::new(ModuleKind::FerroBloom).cluster_node()))
        .collect();
    let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
    for (n, (a, b)) in nodes.iter().zip(ranges) {
        let mut c = n.conn();
        q::<()>(
            &mut c,
            &["CLUSTER", "ADDSLOTSRANGE", &a.to_string(), &b.to_string()],
        );
    }
    let mut first = nodes[0].conn();
    for n in nodes.iter().skip(1) {
        q::<()>(
            &mut first,
            &[
                "CLUSTER",
                "MEET",
                "127.0.0.1",
                &n.port().to_string(),
                &n.bus_port().to_string(),
            ],
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = nodes.iter().all(|n| {
            let info: String = q(&mut n.conn(), &["CLUSTER", "INFO"]);
            let slots: Vec<Value> = q(&mut n.conn(), &["CLUSTER", "SLOTS"]);
            info.contains("cluster_state:ok")
                && info.contains("cluster_known_nodes:3")
                && slots.len() == 3
        });
        if ready {
            return nodes;
        }
        assert!(Instant::now() < deadline, "the cluster did not form");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The URL of `nodes` (the first is the seed) as the tool takes it.
pub fn cluster_url(nodes: &[Server]) -> String {
    format!("redis+cluster://127.0.0.1:{}", nodes[0].port())
}

/// A connection to the cluster of `nodes` that follows its redirections.
pub fn cluster_conn(nodes: &[Server]) -> redis::cluster::ClusterConnection {
    let client = redis::cluster::ClusterClient::new(vec![nodes[0].url()]).unwrap();
    client.get_connection().unwrap()
}

/// The cluster of `nodes` holds `keys` keys in all, on two masters at
/// least: the keys went by their slots, not all to one node.
#[track_caller]
pub fn assert_spread_over_masters(nodes: &[Server], keys: i64) {
    let per_node: Vec<i64> = nodes
        .iter()
        .map(|n| q(&mut n.conn(), &["DBSIZE"]))
        .collect();
    assert_eq!(per_node.iter().sum::<i64>(), keys, "{per_node:?}");
    assert!(
        per_node.iter().filter(|n| **n > 0).count() >= 2,
        "{per_node:?}"
    );
}
