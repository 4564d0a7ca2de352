//! System benchmark: FerroBloom against RedisBloom 2.8.2, each loaded into
//! the same `redis-server` binary, running the same workloads alternately
//! (round 1: FerroBloom then RedisBloom, round 2: RedisBloom then
//! FerroBloom, ...), so that drifting machine load hits both alike.
//!
//! Per workload it records the server-side `usec_per_call` of the command
//! (`INFO commandstats`, reset with `CONFIG RESETSTAT` before each measured
//! run) and, for the item commands, client throughput from `redis-benchmark`
//! without and with pipelining. Each round gives a FerroBloom/RedisBloom
//! ratio; the report shows min/median/max over rounds.
//!
//! Phases `small`, `cuckoo`, `cms`, `topk`, `tdigest`, `big`, `tracking` and `window` (see `workloads`);
//! servers are started per phase and killed by PID afterwards. Phase
//! `window` compares approaches rather than modules: a windowed filter, a
//! plain filter and 30 daily filters, each ratio to RedisBloom's 30 daily
//! filters; it has its own section in the report and is not on the chart.
//!
//! Writes `performance.md` and `performance.png` (docs/ by default) and the
//! raw rounds as `target/bench-system/rounds.csv`. `make bench` runs it;
//! the environment variables it reads are listed in `config`.
//!
//! The parts: `config` (what to run, from the environment), `servers`
//! (redis-server processes), `client` (commands and reply checks),
//! `filters` (sizing, creating and loading filters), `workloads` (the
//! phases), `redis_benchmark` (the client load), `measurement`
//! (commandstats and timings), `results` (rounds and their statistics),
//! `targets` (the speed targets, in one table), `environment` (machine
//! and versions), `report`, `chart` and `rounds_csv` (the outputs).

#[path = "../../tests/common/mod.rs"]
mod common;

mod chart;
mod client;
mod config;
mod environment;
mod filters;
mod format;
mod measurement;
mod redis_benchmark;
mod report;
mod results;
mod rounds_csv;
mod servers;
mod targets;
mod workloads;

use std::fs;
use std::path::Path;
use std::time::Instant;

use config::Config;
use environment::Environment;
use results::Results;

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not, and
    // must not start a 20-minute run.
    if !std::env::args().any(|a| a == "--bench") {
        println!("system benchmark: skipped (run it with `cargo bench --bench system`)");
        return;
    }
    let started = Instant::now();
    let cfg = Config::from_env();
    println!(
        "system benchmark: {} round(s){}, phases {:?}, output {}",
        cfg.rounds,
        if cfg.quick { ", quick" } else { "" },
        cfg.phases,
        cfg.out_dir.display()
    );
    assert!(
        cfg.redis_benchmark.is_file(),
        "{} not found; run `make deps`",
        cfg.redis_benchmark.display()
    );
    targets::print();
    let mut env = environment::environment(&cfg);
    let mut results = Results::default();
    let mut tracking = Results::default();
    let mut window = Results::default();
    if cfg.runs("small") {
        workloads::phase_small(&cfg, &mut results);
    }
    if cfg.runs("cuckoo") {
        workloads::phase_cuckoo(&cfg, &mut results);
    }
    if cfg.runs("cms") {
        workloads::phase_cms(&cfg, &mut results);
    }
    if cfg.runs("topk") {
        workloads::phase_topk(&cfg, &mut results);
    }
    if cfg.runs("tdigest") {
        workloads::phase_tdigest(&cfg, &mut results);
    }
    if cfg.runs("big") {
        workloads::phase_big(&cfg, &mut results);
    }
    if cfg.runs("tracking") {
        workloads::phase_tracking(&cfg, &mut tracking);
    }
    if cfg.runs("window") {
        workloads::phase_window(&cfg, &mut window);
    }
    env.load_end = environment::loadavg();

    rounds_csv::write_csv(&cfg, &results, &tracking, &window);
    fs::create_dir_all(&cfg.out_dir).expect("create the output directory");
    let png = cfg.out_dir.join("performance.png");
    let chart_drawn = draw_chart(&cfg, &env, &png, &mut results);
    let md = report::markdown(&report::Report {
        cfg: &cfg,
        env: &env,
        results: &results,
        tracking: &tracking,
        window: &window,
        chart: chart_drawn.then_some("performance.png"),
    });
    let md_path = cfg.out_dir.join("performance.md");
    fs::write(&md_path, &md).expect("write performance.md");
    println!("\n{md}");
    println!(
        "wrote {}, {} and {} in {:.1?}",
        md_path.display(),
        png.display(),
        cfg.csv.display(),
        started.elapsed()
    );
}

/// Draws the chart of the FerroBloom / RedisBloom metrics; a failure is
/// noted in the report instead of stopping it.
fn draw_chart(cfg: &Config, env: &Environment, png: &Path, results: &mut Results) -> bool {
    let title = format!(
        "FerroBloom vs RedisBloom {}, {} round(s){}",
        env.redisbloom.split(' ').next().unwrap_or(""),
        cfg.rounds,
        if cfg.quick { ", quick run" } else { "" }
    );
    match chart::draw(png, &title, &results.metrics) {
        Ok(()) => true,
        Err(e) => {
            results.note(format!("chart not drawn: {e}"));
            false
        }
    }
}
