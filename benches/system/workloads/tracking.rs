//! Phase `tracking`: what fill tracking costs, as BF.ADD on the 10M filter
//! of FerroBloom against a build without it (`--features untracked-fill`).

use super::filter_10m;
use super::items::{measure_round, rebuild_if_near_full, ItemWorkload};
use crate::common::{decode, ModuleKind, RawClient, Resp};
use crate::config::Config;
use crate::results::Results;
use crate::servers::Pair;

/// The first `set_fraction` in BF.STATS (a FerroBloom command: the share
/// of set bits of the first link, from the tracked count), if it answers.
fn set_fraction(c: &mut RawClient, key: &str) -> Option<f64> {
    fn find(r: &Resp) -> Option<f64> {
        let items: Vec<&Resp> = match r {
            Resp::Array(v) => v.iter().collect(),
            Resp::Map(m) => m.iter().flat_map(|(k, v)| [k, v]).collect(),
            _ => return None,
        };
        for (i, f) in items.iter().enumerate() {
            if f.as_str().as_deref() == Some("set_fraction") {
                return match items.get(i + 1)? {
                    Resp::Double(s) => s.parse().ok(),
                    other => other.as_str()?.parse().ok(),
                };
            }
            if let Some(v) = find(f) {
                return Some(v);
            }
        }
        None
    }
    find(&decode(&c.cmd(&["BF.STATS", key])))
}

pub fn phase_tracking(cfg: &Config, tracking: &mut Results) {
    println!("\n== fill tracking: FerroBloom vs FerroBloom --features untracked-fill");
    if !cfg.untracked_module.is_file() {
        tracking.note(format!(
            "fill tracking not measured: {} is missing (build it with \
             `cargo build --release -p ferrobloom --features untracked-fill --target-dir target/untracked`, \
             as `make bench` does)",
            cfg.untracked_module.display()
        ));
        return;
    }
    let pair = Pair::start(
        cfg,
        ["tracked", "untracked"],
        [
            ModuleKind::FerroBloom,
            ModuleKind::Path(cfg.untracked_module.clone()),
        ],
    );
    let filter = filter_10m(cfg);
    let w = ItemWorkload::on_reserved(&filter, "BF.ADD", 1, cfg.single);
    for round in 0..cfg.tracking_rounds {
        println!("round {}/{}", round + 1, cfg.tracking_rounds);
        if rebuild_if_near_full(&pair, round, &filter, w.items_per_round()).is_some() {
            check_untracked(cfg, &pair, round, filter.key, tracking);
        }
        measure_round(cfg, &pair, &w, round, tracking);
    }
}

/// The untracked build must really not count: its share of set bits
/// stays 0 however many items it holds.
fn check_untracked(cfg: &Config, pair: &Pair, round: usize, key: &str, tracking: &mut Results) {
    match pair.both(round, |_, s| set_fraction(&mut s.raw(), key)) {
        [Some(tracked), Some(untracked)] => {
            assert!(
                tracked > 0.0,
                "the tracked build counts no set bits after adds"
            );
            assert!(
                untracked == 0.0,
                "{} counts set bits (set_fraction {untracked}): not an untracked-fill build",
                cfg.untracked_module.display()
            );
        }
        _ => tracking.note(
            "BF.STATS did not answer: could not check that the untracked build \
             does not count set bits"
                .into(),
        ),
    }
}
