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
use redis::{Connection, Value};
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

pub fn q<T: redis::FromRedisValue>(c: &mut Connection, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
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

/// Three FerroBloom masters sharing the slots. The cluster bus ports are
/// chosen here (the default, port + 10000, may not exist).
pub fn cluster() -> Vec<Server> {
    setup();
    let bus: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes: Vec<Server> = bus
        .iter()
        .map(|b| {
            Server::start(
                ServerOpts::new(ModuleKind::FerroBloom)
                    .config("cluster-enabled", "yes")
                    .config("cluster-port", &b.to_string()),
            )
        })
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
    for (n, b) in nodes.iter().zip(&bus).skip(1) {
        q::<()>(
            &mut first,
            &[
                "CLUSTER",
                "MEET",
                "127.0.0.1",
                &n.port().to_string(),
                &b.to_string(),
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
