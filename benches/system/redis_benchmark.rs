//! The client load: `redis-benchmark`, run as a child process and killed
//! by its PID if it hangs.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::config::Config;

/// Parallel connections (`-c`).
pub const CLIENTS: u64 = 4;
/// Commands per round trip (`-P`) in the pipelined runs.
pub const PIPELINE: u64 = 32;
const TIMEOUT: Duration = Duration::from_secs(900);

/// One redis-benchmark run against 127.0.0.1:`port`.
pub struct Run<'a> {
    pub port: u16,
    /// Requests (`-n`).
    pub requests: u64,
    /// The `__rand_int__` range (`-r`).
    pub range: u64,
    pub pipeline: u64,
    /// The command and its arguments.
    pub args: &'a [String],
}

/// Runs redis-benchmark and returns requests/s. Fails loudly when it
/// exits non-zero (it stops at the first error reply).
pub fn requests_per_second(cfg: &Config, run: &Run) -> f64 {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out_path = dir.join(format!("redis-benchmark-{}.out", std::process::id()));
    let child = spawn(cfg, run, &out_path);
    let status = wait(child, run.args);
    let text = fs::read_to_string(&out_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    assert!(
        status.success(),
        "redis-benchmark {:?} failed ({status}):\n{text}",
        run.args
    );
    parse_rps(&text)
        .unwrap_or_else(|| panic!("redis-benchmark {:?}: no requests/s in:\n{text}", run.args))
}

/// Starts redis-benchmark with stdout and stderr into `out_path`.
fn spawn(cfg: &Config, run: &Run, out_path: &Path) -> Child {
    let out = fs::File::create(out_path).expect("redis-benchmark output file");
    let err = out.try_clone().expect("clone output file");
    Command::new(&cfg.redis_benchmark)
        .args(["-h", "127.0.0.1", "-p", &run.port.to_string()])
        .args([
            "-n",
            &run.requests.to_string(),
            "-r",
            &run.range.to_string(),
        ])
        .args(["-c", &CLIENTS.to_string(), "-P", &run.pipeline.to_string()])
        .arg("--csv")
        .args(run.args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e}; run `make deps`",
                cfg.redis_benchmark.display()
            )
        })
}

/// Waits for the child, killing it (our own child, by PID) after TIMEOUT.
fn wait(mut child: Child, args: &[String]) -> ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait for redis-benchmark") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-benchmark {args:?} did not finish in {TIMEOUT:?}");
        }
        sleep(Duration::from_millis(20));
    }
}

/// The requests/s of `--csv` output: `"test","rps",...` then
/// `"<command>","12345.67",...`.
fn parse_rps(text: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with("\"test\""))
        .find_map(|l| l.split(',').nth(1)?.trim_matches('"').parse::<f64>().ok())
}
