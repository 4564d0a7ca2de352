//! The machine and the versions a run measured, for the report.

use std::fs;
use std::process::{Command, Stdio};

use crate::client::{call, info, info_field};
use crate::common::{ModuleKind, RawClient, Resp};
use crate::config::{Config, ROOT};
use crate::servers;

pub struct Environment {
    pub cpu: String,
    pub cores: usize,
    pub ram: String,
    pub kernel: String,
    pub os: String,
    pub redis: String,
    pub redisbloom: String,
    pub ferrobloom: String,
    pub date: String,
    pub load_start: String,
    pub load_end: String,
}

fn read(path: &str) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(ROOT)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ver` of the `bf` module in MODULE LIST, as x.y.z.
fn module_version(c: &mut RawClient) -> String {
    let Resp::Array(modules) = call(c, &["MODULE", "LIST"]) else {
        return "?".into();
    };
    for m in modules {
        let Resp::Array(fields) = m else { continue };
        let get = |k: &str| {
            fields
                .chunks(2)
                .find(|p| p[0].as_str().as_deref() == Some(k))
                .map(|p| p[1].clone())
        };
        if let (Some(Resp::Bulk(name)), Some(Resp::Int(v))) = (get("name"), get("ver")) {
            if name == b"bf" {
                return format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
            }
        }
    }
    "?".into()
}

/// The module file, relative to the repository when inside it.
fn module_path(kind: ModuleKind) -> String {
    let path = kind.path().unwrap_or_default();
    let shown = path.strip_prefix(ROOT).unwrap_or(&path);
    format!("`{}`", shown.display())
}

fn cpu() -> String {
    let cpuinfo = read("/proc/cpuinfo");
    info_field(&cpuinfo.replace('\t', ""), "model name").unwrap_or_else(|| "unknown".into())
}

fn ram() -> String {
    read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into())
}

fn os() -> String {
    read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default()
}

/// The commit measured, and whether the tree had uncommitted changes.
fn commit() -> (String, bool) {
    let commit = command_output("git", &["rev-parse", "--short=12", "HEAD"])
        .unwrap_or_else(|| "unknown".into());
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    (commit, dirty)
}

/// (redis version, RedisBloom's module version, FerroBloom's), asked of
/// a server of each module, stopped again when this returns.
fn server_versions(cfg: &Config) -> (String, String, String) {
    let server = servers::start(cfg, ModuleKind::RedisBloom);
    let mut c = server.raw();
    let redis = info_field(&info(&mut c, "server"), "redis_version").unwrap_or_default();
    let rb = module_version(&mut c);
    drop(c);
    let fb = servers::start(cfg, ModuleKind::FerroBloom);
    let fb_version = module_version(&mut fb.raw());
    (redis, rb, fb_version)
}

pub fn environment(cfg: &Config) -> Environment {
    let (commit, dirty) = commit();
    let (redis, redisbloom, fb_version) = server_versions(cfg);
    Environment {
        cpu: cpu(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        ram: ram(),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        os: os(),
        redis: format!("{redis} ({})", cfg.redis_server.display()),
        redisbloom: format!(
            "{redisbloom} (MODULE LIST ver), {}",
            module_path(ModuleKind::RedisBloom)
        ),
        ferrobloom: format!(
            "{} {commit}{} (reports ver {fb_version}), {}",
            env!("CARGO_PKG_VERSION"),
            if dirty {
                " with uncommitted changes"
            } else {
                ""
            },
            module_path(ModuleKind::FerroBloom)
        ),
        date: command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
        load_start: loadavg(),
        load_end: String::new(),
    }
}
