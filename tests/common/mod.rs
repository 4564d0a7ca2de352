//! Integration-test harness: runs `redis-server` child processes on free
//! loopback ports, each in its own directory, with a Bloom module loaded.
//!
//! Module paths come from the environment that `make test` sets:
//! `FERROBLOOM_MODULE` (default `target/release/libferrobloom.so`) and
//! `REDISBLOOM_SO` (default: the path recorded in
//! `target/oracle-venv/REDISBLOOM_SO` by `scripts/oracle.sh`).
//! The server binary is `REDIS_SERVER` or `/usr/bin/redis-server`; servers
//! with the RedisBloom oracle use `REDISBLOOM_SERVER` or
//! `/usr/bin/redis-server` (the Redis 7.0 it was observed on), never
//! `REDIS_SERVER`.
//!
//! Beside the server: `client` (a command line and its expected reply,
//! `wait_until`, `show`), `info` (fields of INFO), `replication` (replicas
//! and AOF rewrites, waited for), `dump` (the DUMP envelope), `reply`
//! (decoded replies taken apart), `stored` (a key's DUMP, RESTORE and
//! MEMORY USAGE, the sketch vectors, RDB and AOF round trips), `version`
//! (what differs between servers), `resp` (the raw client) and
//! `differential` (the comparison with RedisBloom 2.8.2).
#![allow(dead_code, unused_imports)]

pub mod client;
pub mod differential;
mod dump;
pub mod info;
pub mod replication;
pub mod reply;
mod resp;
pub mod stored;
mod version;
pub use dump::{dump_parts, hex, restamp_dump};
pub use resp::{decode, double_in_one_form, doubles_in_one_form, encode, RawClient, Resp};
pub use version::{bf_key_spec_flags, ServerVersion};

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};
use std::{env, fs};

const START_TIMEOUT: Duration = Duration::from_secs(10);
const LOADING_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const PORT_ATTEMPTS: usize = 20;

/// Which module `--loadmodule` gets.
#[derive(Clone, Debug)]
pub enum ModuleKind {
    FerroBloom,
    /// The reference implementation (RedisBloom 2.8.2).
    RedisBloom,
    None,
    Path(PathBuf),
}

impl ModuleKind {
    /// The module file to load; panics if it does not exist.
    pub fn path(&self) -> Option<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = match self {
            ModuleKind::None => return None,
            ModuleKind::Path(p) => p.clone(),
            ModuleKind::FerroBloom => env_path("FERROBLOOM_MODULE")
                .unwrap_or_else(|| root.join("target/release/libferrobloom.so")),
            ModuleKind::RedisBloom => env_path("REDISBLOOM_SO").unwrap_or_else(|| {
                let file = root.join("target/oracle-venv/REDISBLOOM_SO");
                let text = fs::read_to_string(&file).unwrap_or_else(|e| {
                    panic!(
                        "{}: {e}; run `make test` (or scripts/oracle.sh)",
                        file.display()
                    )
                });
                PathBuf::from(text.trim())
            }),
        };
        assert!(
            path.is_file(),
            "module {self:?} not found at {}; run `make test` (it builds the module and installs the oracle)",
            path.display()
        );
        Some(path)
    }
}

fn env_path(var: &str) -> Option<PathBuf> {
    env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[derive(Clone, Debug)]
pub struct ServerOpts {
    pub module: ModuleKind,
    /// Arguments after the module path, e.g. `["ERROR_RATE", "0.01"]`.
    pub module_args: Vec<String>,
    /// Passed as `--name value`, after the defaults (so they override them).
    pub extra_config: Vec<(String, String)>,
    /// Default: `$REDIS_SERVER` (`$REDISBLOOM_SERVER` for the oracle), else
    /// `/usr/bin/redis-server`.
    pub server_binary: Option<PathBuf>,
    /// Files written into the server directory before the first start
    /// (path relative to the directory, contents).
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// Cluster mode with a bus port chosen with each start attempt's port
    /// (`cluster_node`).
    pub cluster_node: bool,
}

impl Default for ServerOpts {
    fn default() -> Self {
        ServerOpts::new(ModuleKind::FerroBloom)
    }
}

impl ServerOpts {
    pub fn new(module: ModuleKind) -> Self {
        ServerOpts {
            module,
            module_args: Vec::new(),
            extra_config: Vec::new(),
            server_binary: None,
            files: Vec::new(),
            cluster_node: false,
        }
    }

    pub fn module_args(mut self, args: &[&str]) -> Self {
        self.module_args = args.iter().map(|s| s.to_string()).collect();
        self
    }

    pub fn config(mut self, name: &str, value: &str) -> Self {
        self.extra_config.push((name.into(), value.into()));
        self
    }

    /// Runs the server as a cluster node (`cluster-enabled yes`). Its bus
    /// port is picked afresh with every start attempt's client port, so a
    /// bus port another process took meanwhile costs one retry, not the
    /// test (the default bus port, port + 10000, may not exist). A restart
    /// keeps both ports.
    pub fn cluster_node(mut self) -> Self {
        self.cluster_node = true;
        self
    }

    pub fn server_binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.server_binary = Some(path.into());
        self
    }

    /// Places a file in the server directory before the first start, e.g.
    /// `.file("dump.rdb", bytes)` to load an RDB, or
    /// `.file("appendonlydir/appendonly.aof.manifest", bytes)` (parent
    /// directories are created). `restart()` does not write them again.
    pub fn file(mut self, relative_path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) -> Self {
        let path = relative_path.into();
        assert!(
            path.is_relative(),
            "{} must be relative to the server directory",
            path.display()
        );
        self.files.push((path, contents.into()));
        self
    }
}

/// A server that exited during start-up (`Server::try_start`).
#[derive(Debug)]
pub struct FailedStart {
    pub status: ExitStatus,
    /// The server log of that start attempt.
    pub log: String,
}

/// A running `redis-server`. Dropping it kills the process (by PID) and
/// removes its directory (kept, with its path printed, if the test panicked).
pub struct Server {
    opts: ServerOpts,
    module: Option<PathBuf>,
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
    /// Cluster bus port (0 unless `ServerOpts::cluster_node`).
    bus_port: u16,
    pid: u32,
    child: Option<Child>,
}

enum StartError {
    PortInUse,
    Exited(FailedStart),
}

impl Server {
    pub fn start(opts: ServerOpts) -> Server {
        Server::try_start(opts).unwrap_or_else(|failed| failed.panic())
    }

    /// Like `start`, but a server that exits during start-up (a module
    /// refusing to load, unloadable data...) is returned as an error with
    /// its exit status and log instead of a panic.
    pub fn try_start(opts: ServerOpts) -> Result<Server, FailedStart> {
        let module = opts.module.path();
        // The oracle is RedisBloom 2.8.2 as observed on Redis 7.0, whatever
        // server the suite runs FerroBloom on (`make test-valkey`).
        let server_var = match opts.module {
            ModuleKind::RedisBloom => "REDISBLOOM_SERVER",
            _ => "REDIS_SERVER",
        };
        let binary = opts
            .server_binary
            .clone()
            .or_else(|| env_path(server_var))
            .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-server"));
        assert!(
            binary.is_file(),
            "{} not found; run `make deps` (or set {server_var})",
            binary.display()
        );
        let dir = fresh_dir();
        for (path, contents) in &opts.files {
            let path = dir.join(path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
            }
            fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        }
        let mut server = Server {
            opts,
            module,
            binary,
            dir,
            port: 0,
            bus_port: 0,
            pid: 0,
            child: None,
        };
        for _ in 0..PORT_ATTEMPTS {
            server.port = free_port();
            if server.opts.cluster_node {
                server.bus_port = free_port();
            }
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(StartError::PortInUse) => {}
                Err(StartError::Exited(failed)) => return Err(failed),
            }
        }
        panic!("could not find a free port for redis-server");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Cluster bus port (`ServerOpts::cluster_node`), for CLUSTER MEET.
    pub fn bus_port(&self) -> u16 {
        assert!(self.opts.cluster_node, "not started as a cluster node");
        self.bus_port
    }

    /// PID of the current (or last) server process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The running server's family and version, from INFO server.
    pub fn version(&self) -> ServerVersion {
        let info = decode(&self.raw().cmd(&["INFO", "server"]))
            .as_str()
            .expect("INFO server");
        ServerVersion::parse(&info)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// redis-rs connection speaking RESP2.
    pub fn conn(&self) -> redis::Connection {
        open(&self.url())
    }

    /// redis-rs connection speaking RESP3 (`?protocol=resp3`).
    pub fn conn3(&self) -> redis::Connection {
        open(&format!("{}?protocol=resp3", self.url()))
    }

    /// Raw RESP2 client (call `hello3()` on it for RESP3).
    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.port)
    }

    /// The whole server log (all runs, restarts included), with what the
    /// server wrote to stderr.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// True while the server process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// SIGTERM, wait up to 10 s, then SIGKILL. No-op if not running.
    /// Note that redis saves an RDB on SIGTERM when save points are set.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: plain kill(2) on our own child's PID, which is not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            sleep(Duration::from_millis(10));
        }
        eprintln!("redis-server {} ignored SIGTERM; killing it", child.id());
        let _ = child.kill();
        let _ = child.wait();
    }

    /// SIGKILL: no shutdown, no save.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server (if running) and starts it again with the same
    /// directory, port and options, so it loads `dump.rdb` if present.
    /// The default is `--save ''`: call SAVE first to persist the data.
    pub fn restart(&mut self) {
        self.stop();
        for _ in 0..50 {
            match self.spawn() {
                Ok(()) => return,
                Err(StartError::PortInUse) => {}
                Err(StartError::Exited(failed)) => failed.panic(),
            }
            sleep(Duration::from_millis(100));
        }
        panic!(
            "port {} stayed busy; cannot restart redis-server",
            self.port
        );
    }

    fn spawn(&mut self) -> Result<(), StartError> {
        let log_file = self.dir.join("server.log");
        let log_start = fs::metadata(&log_file).map(|m| m.len()).unwrap_or(0) as usize;
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--port").arg(self.port.to_string());
        cmd.args(["--bind", "127.0.0.1", "--daemonize", "no"]);
        cmd.arg("--dir").arg(&self.dir);
        cmd.args(["--dbfilename", "dump.rdb", "--appendonly", "no"]);
        if !self.opts.extra_config.iter().any(|(k, _)| k == "save") {
            cmd.args(["--save", ""]);
        }
        cmd.arg("--logfile").arg(&log_file);
        if self.opts.cluster_node {
            cmd.args(["--cluster-enabled", "yes"]);
            cmd.arg("--cluster-port").arg(self.bus_port.to_string());
        }
        cmd.args(["--enable-debug-command", "yes"]);
        if let Some(module) = &self.module {
            cmd.arg("--loadmodule")
                .arg(module)
                .args(&self.opts.module_args);
        }
        for (name, value) in &self.opts.extra_config {
            cmd.arg(format!("--{name}")).arg(value);
        }
        // stderr goes to the log too: a Rust panic message ("thread ...
        // panicked at ...") is printed there, not through Redis' logger.
        let stderr = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_file)
            .unwrap_or_else(|e| panic!("open {}: {e}", log_file.display()));
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.binary.display()));
        self.pid = child.id();
        self.child = Some(child);
        self.wait_ready(log_start)
    }

    /// Waits until this very process answers PING (LOADING counts as alive).
    fn wait_ready(&mut self, log_start: usize) -> Result<(), StartError> {
        let started = Instant::now();
        let mut loading = false;
        loop {
            let child = self.child.as_mut().expect("child");
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                let log = self.log();
                let new_log = log.get(log_start..).unwrap_or(&log);
                if new_log.contains("Address already in use") {
                    return Err(StartError::PortInUse);
                }
                return Err(StartError::Exited(FailedStart {
                    status,
                    log: new_log.to_string(),
                }));
            }
            match self.ping() {
                Some(true) => return Ok(()),
                Some(false) => loading = true,
                None => {}
            }
            let limit = if loading {
                LOADING_TIMEOUT
            } else {
                START_TIMEOUT
            };
            if started.elapsed() > limit {
                let log = self.log();
                self.kill9();
                panic!(
                    "redis-server did not answer PING within {limit:?}; log:\n{}",
                    tail(log.get(log_start..).unwrap_or(&log), 40)
                );
            }
            sleep(Duration::from_millis(20));
        }
    }

    /// Some(true): our process answers PING; Some(false): it is loading data;
    /// None: not reachable yet (or another process owns the port).
    fn ping(&self) -> Option<bool> {
        let mut c = RawClient::try_connect(self.port, Duration::from_millis(200)).ok()?;
        let reply = c.try_cmd(&["PING"]).ok()?;
        if reply.starts_with(b"-LOADING") {
            return Some(false);
        }
        if reply != b"+PONG\r\n" {
            return None;
        }
        let info = decode(&c.try_cmd(&["INFO", "server"]).ok()?).as_str()?;
        let ours = format!("process_id:{}\r\n", self.pid);
        info.contains(&ours).then_some(true)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        if let Some(child) = self.child.as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                eprintln!(
                    "redis-server {} had exited on its own ({status}); log tail:\n{}",
                    self.pid,
                    tail(&self.log(), 20)
                );
            }
        }
        self.kill9();
        if panicking {
            eprintln!(
                "test failed; redis-server {} log tail (dir kept: {}):\n{}",
                self.pid,
                self.dir.display(),
                tail(&self.log(), 20)
            );
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn open(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// A port that was free a moment ago (the caller retries if it is taken).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// A new empty directory under cargo's per-target temporary directory.
fn fresh_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "redis-{}-{}-{n}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    dir
}

impl FailedStart {
    fn panic(self) -> ! {
        panic!(
            "redis-server exited during start-up ({}); log:\n{}",
            self.status,
            tail(&self.log, 40)
        )
    }
}

/// Whether a process with this PID exists (zombies included).
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
