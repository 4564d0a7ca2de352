//! CF.STATS: how full a Cuckoo filter is, what it answers wrongly, and what
//! its next growth costs. A map in RESP3, a flat name/value array in RESP2,
//! like CF.INFO. It reads every slot (O(size)).

use std::ffi::CStr;

use ferrobloom_core::cuckoo::stats;

use super::Cuckoo;
use crate::bloom::read::arity;
use crate::command::{ArgSource, CommandError, Env, KeySlot, KeyedCommand, Outcome, Reply};

pub struct Stats;

impl KeyedCommand for Stats {
    const NAME: &'static CStr = c"cf.stats";
    const WRITES: bool = false;
    type Value = Cuckoo;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 2, 2)
    }

    fn run<'k>(
        (): (),
        _: &impl ArgSource,
        key: &'k mut impl KeySlot<Cuckoo>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let cuckoo = match key.state().existing() {
            Ok(c) => c,
            Err(e) => return Outcome::error(e),
        };
        Outcome::reply(stats_reply(cuckoo, env))
    }
}

/// `ok`, `warning` when the newest sub-filter's slots are filled past the
/// fill-warning threshold (inserts start to need kick-outs, then a new
/// sub-filter), `alert` past fill-alert when the filter cannot grow
/// (EXPANSION 0 or `cf-max-expansions` reached): inserts will then fail.
fn fill_level(newest_load: f64, can_grow: bool, env: &impl Env) -> &'static CStr {
    let settings = env.settings();
    if !can_grow && newest_load >= settings.fill_alert {
        c"alert"
    } else if newest_load >= settings.fill_warning {
        c"warning"
    } else {
        c"ok"
    }
}

fn stats_reply(cuckoo: &Cuckoo, env: &impl Env) -> Reply<'static> {
    let f = cuckoo.filter();
    let s = stats::stats(f);
    let max_expansions = env.settings().cf_max_expansions;
    let expansions_left = if f.expansion() == 0 {
        0
    } else {
        max_expansions.saturating_sub(f.sub_filter_count())
    };
    let next_bytes = match f.next_sub_filter_buckets() {
        Ok(n) if expansions_left > 0 => n.saturating_mul(u64::from(f.bucket_size())),
        _ => 0,
    };
    let newest_load = s.sub_filters.last().map_or(0.0, |n| n.load);
    let per_sub_filter = s
        .sub_filters
        .iter()
        .map(|sub| {
            Reply::Map(vec![
                (c"buckets", Reply::count(sub.buckets)),
                (c"bytes", Reply::count(sub.bytes)),
                (c"occupied_slots", Reply::count(sub.occupied)),
                (c"load_factor", Reply::Double(sub.load)),
                (c"estimated_fpr", Reply::Double(sub.fpr)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (c"size", Reply::count(f.reported_size())),
        (c"bytes", Reply::count(f.total_bytes())),
        (c"sub_filters", Reply::count(f.sub_filter_count())),
        (c"buckets", Reply::count(f.base_buckets())),
        (c"bucket_size", Reply::count(u64::from(f.bucket_size()))),
        (
            c"max_iterations",
            Reply::count(u64::from(f.max_iterations())),
        ),
        (c"expansion", Reply::count(u64::from(f.expansion()))),
        (c"items", Reply::count(f.items())),
        (c"deletes", Reply::count(f.deletes())),
        (c"slots", Reply::count(s.slots)),
        (c"occupied_slots", Reply::count(s.occupied)),
        (c"load_factor", Reply::Double(s.load)),
        (c"newest_load_factor", Reply::Double(newest_load)),
        (
            c"fill_level",
            Reply::Simple(fill_level(newest_load, expansions_left > 0, env)),
        ),
        (c"estimated_fpr", Reply::Double(s.fpr)),
        (c"expansions_left", Reply::count(expansions_left)),
        (c"next_sub_filter_bytes", Reply::count(next_bytes)),
        (c"per_sub_filter", Reply::Array(per_sub_filter)),
    ])
}
