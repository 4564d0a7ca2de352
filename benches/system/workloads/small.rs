//! Phase `small`: the item commands on the default filter and on the
//! reserved 10M and 100M filters, then memory per item.

use super::items::{measure_round, rebuild_if_near_full, ItemWorkload};
use super::{filter_100m, filter_10m, Reserved, KEY_100M, KEY_10M, KEY_DEFAULT, KEY_MEMORY};
use super::{CAP_100M, CAP_10M};
use crate::client::{bf_info, call, memory_usage};
use crate::config::Config;
use crate::filters::prefill;
use crate::results::{Kind, Results};
use crate::servers::Pair;

/// The workloads on the reserved filters, in the report's order: single
/// items, then batches of 100, then the floor of any call.
fn reserved_workloads(cfg: &Config) -> Vec<ItemWorkload> {
    let filters = [filter_10m(cfg), filter_100m(cfg)];
    let mut all = Vec::new();
    for (items, calls, add, exists) in [
        (1, cfg.single, "BF.ADD", "BF.EXISTS"),
        (100, cfg.multi, "BF.MADD", "BF.MEXISTS"),
    ] {
        for f in &filters {
            all.push(ItemWorkload::on_reserved(f, add, items, calls));
            all.push(ItemWorkload::on_reserved(f, exists, items, calls));
        }
    }
    // The floor of any call: dispatch, key lookup, an integer reply.
    all.push(ItemWorkload {
        name: "BF.CARD 100M (baseline)".into(),
        range: super::RANGE,
        ..ItemWorkload::on_reserved(&filters[1], "BF.CARD", 0, cfg.single)
    });
    all
}

pub fn phase_small(cfg: &Config, results: &mut Results) {
    println!("\n== item commands: FerroBloom vs RedisBloom");
    let pair = Pair::ferrobloom_vs_redisbloom(cfg);
    let default_add = ItemWorkload::on_default("BF.ADD", cfg.single);
    let default_exists = ItemWorkload::on_default("BF.EXISTS", cfg.single);
    let reserved = reserved_workloads(cfg);
    let adds_per_round = |key: &str| -> u64 {
        reserved
            .iter()
            .filter(|w| w.adds && w.key == key)
            .map(ItemWorkload::items_per_round)
            .sum()
    };

    for round in 0..cfg.rounds {
        println!("round {}/{}", round + 1, cfg.rounds);
        // The reserved filters are kept across rounds, and rebuilt when
        // this round's adds could push them past 90% of their capacity.
        for filter in [filter_10m(cfg), filter_100m(cfg)] {
            rebuild_and_say(&pair, round, &filter, adds_per_round(filter.key));
        }
        assert_same_sizes(&pair, round);

        // 1. The default filter, created by the first BF.ADD, scaling out.
        pair.both(round, |_, s| call(&mut s.raw(), &["DEL", KEY_DEFAULT]));
        measure_round(cfg, &pair, &default_add, round, results);
        check_default_scaled_out(&pair, round);
        measure_round(cfg, &pair, &default_exists, round, results);

        // 2, 3. Reserved filters, single items and batches of 100.
        for w in &reserved {
            measure_round(cfg, &pair, w, round, results);
        }

        measure_memory(cfg, &pair, round, results);
    }
}

fn rebuild_and_say(pair: &Pair, round: usize, filter: &Reserved, adds: u64) {
    if let Some(took) = rebuild_if_near_full(pair, round, filter, adds) {
        println!(
            "  {}: reserved and loaded {} items in {took:.1?}",
            filter.key, filter.prefill
        );
    }
}

fn assert_same_sizes(pair: &Pair, round: usize) {
    let sizes = pair.both(round, |_, s| {
        let mut c = s.raw();
        (
            bf_info(&mut c, KEY_10M).size,
            bf_info(&mut c, KEY_100M).size,
        )
    });
    assert_eq!(
        sizes[0], sizes[1],
        "filter sizes differ between the servers"
    );
}

fn check_default_scaled_out(pair: &Pair, round: usize) {
    let infos = pair.both(round, |_, s| bf_info(&mut s.raw(), KEY_DEFAULT));
    assert!(infos[0].filters > 1, "the default filter did not scale out");
    if round == 0 {
        println!(
            "  {KEY_DEFAULT}: {} sub-filters, {} items, {} bytes",
            infos[1].filters, infos[1].items, infos[1].size
        );
    }
}

/// Memory per item (workload 7): a default filter loaded with the same items on
/// both (per item held), and the reserved filters (per item of capacity:
/// their random adds differ slightly between the servers, as
/// redis-benchmark overshoots -n by up to clients × pipeline).
fn measure_memory(cfg: &Config, pair: &Pair, round: usize, results: &mut Results) {
    // Per side, per filter: (MEMORY USAGE, items it is divided by).
    let mem = pair.both(round, |_, s| {
        let mut c = s.raw();
        call(&mut c, &["DEL", KEY_MEMORY]);
        prefill(&mut c, KEY_MEMORY, 0, cfg.memory_items);
        // At error 0.01 about 1% of new items are taken for present.
        let items = bf_info(&mut c, KEY_MEMORY).items;
        assert!(
            items as u64 >= cfg.memory_items * 95 / 100,
            "{KEY_MEMORY}: {items} of {} items added",
            cfg.memory_items
        );
        [
            (memory_usage(&mut c, KEY_MEMORY), items as u64),
            (memory_usage(&mut c, KEY_10M), CAP_10M),
            (memory_usage(&mut c, KEY_100M), CAP_100M),
        ]
    });
    let labels = [
        format!("default filter holding {} items", cfg.memory_items),
        "10M filter, per item of capacity".to_string(),
        "100M filter, per item of capacity".to_string(),
    ];
    for (k, label) in labels.iter().enumerate() {
        let per_item = |side: usize| mem[side][k].0 as f64 / mem[side][k].1 as f64;
        results.record(
            "Memory per item",
            label,
            "bytes",
            Kind::Cost,
            (per_item(0), per_item(1)),
        );
        println!(
            "  memory per item, {label}: {:.3} vs {:.3} bytes (MEMORY USAGE {} vs {})",
            per_item(0),
            per_item(1),
            mem[0][k].0,
            mem[1][k].0
        );
        if round == 0 && mem[0][k] != mem[1][k] {
            results.note(format!(
                "MEMORY USAGE differs ({label}): FerroBloom {} bytes for {} items, \
                 RedisBloom {} bytes for {} items",
                mem[0][k].0, mem[0][k].1, mem[1][k].0, mem[1][k].1
            ));
        }
    }
}
