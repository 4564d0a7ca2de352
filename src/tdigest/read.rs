//! TDIGEST.MIN, MAX, QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK,
//! TRIMMED_MEAN and INFO.
//!
//! The seven reads 2.8.2 compresses on (QUANTILE, CDF, RANK, REVRANK,
//! BYRANK, BYREVRANK, TRIMMED_MEAN) evaluate compress(S) and do what
//! [`TDigestValue::read_effect`] decides (see `tdigest::value`): on a
//! master, for a user who may write the key, the clients' digest becomes
//! compress(S) (P), and the next write sends the compress to replicas
//! first; from the master link or a load, the stored digest is compressed
//! (and, on a replica, the read goes to its own AOF). A read never
//! propagates on a master. MIN and MAX do not compress; INFO answers the
//! clients' digest.

use std::ffi::CStr;

use ferrobloom_core::tdigest::{Compressed, ReadError, TDigest};

use super::value::ReadEffect;
use super::{replies, TDigestValue};
use crate::command::{
    arity, Absent, ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome,
    Propagation, Reply,
};
use crate::guard::CommandGuard;

/// A missing key is `ERR T-Digest: key does not exist` (checked before any
/// other argument), another type `WRONGTYPE`.
pub(super) fn absent(key: Absent) -> Reply<'static> {
    Reply::Error(match key {
        Absent::Missing => CommandError::Static(replies::KEY_DOES_NOT_EXIST),
        Absent::Other => CommandError::Static(replies::WRONGTYPE),
    })
}

/// A double as the server prints it (RESP2 bulk, RESP3 double), so 7.0
/// and 7.2+ print what 2.8.2 prints there.
fn double(v: f64) -> Reply<'static> {
    Reply::ServerDouble(v)
}

fn read_error(e: ReadError) -> Reply<'static> {
    match e {
        ReadError::Compress(_) => Reply::Error(replies::OVERFLOW.into()),
        ReadError::Scratch(_) => Reply::Error(replies::ALLOCATION_FAILED.into()),
    }
}

/// The write a user must be allowed for its reads to compress the
/// clients' digest: adding to the key.
fn may_write(args: &impl ArgSource, env: &impl Env) -> Option<bool> {
    env.user_may_run(&[b"TDIGEST.ADD", args.arg(1), b"0"])
}

/// A compressing read: `f` on compress(S), and the read's effect.
fn evaluate(
    v: &mut TDigestValue,
    args: &impl ArgSource,
    env: &impl Env,
    f: impl FnOnce(Compressed<'_>) -> Reply<'static>,
) -> Outcome<'static> {
    let effect = v.read_effect(env.replicated_or_loading(), env.is_master(), || {
        may_write(args, env)
    });
    if effect == ReadEffect::CompressStored {
        let changed = match v.compress_stored() {
            Ok(changed) => changed,
            Err(_) => return Outcome::error(replies::OVERFLOW),
        };
        let view = v.digest().view().expect("compressed above");
        return Outcome {
            reply: f(view),
            // A replica's own AOF gets what its master sent (a load's
            // propagation goes nowhere).
            propagate: if changed && !env.loading() {
                Propagation::Verbatim
            } else {
                Propagation::Nothing
            },
            events: Default::default(),
        };
    }
    let guard = CommandGuard::new(env, args.arg(1), super::WHAT);
    let reply = match v.compressed(&guard) {
        Ok(c) => f(c),
        Err(e) => return Outcome::reply(read_error(e)),
    };
    if effect == ReadEffect::Pend {
        v.set_pending();
    }
    Outcome::reply(reply)
}

/// Every argument from 2 parsed by `parse`, or the first error.
fn values<T>(
    args: &impl ArgSource,
    parse: impl Fn(&[u8], Option<f64>) -> Result<T, &'static CStr>,
) -> Result<Vec<T>, Reply<'static>> {
    // Sized once: collecting from a fallible iterator would grow the
    // vector from a guess, an allocation per doubling on every call.
    let mut out = Vec::with_capacity(args.count().saturating_sub(2));
    for i in 2..args.count() {
        out.push(parse(args.arg(i), args.double(i)).map_err(|e| Reply::Error(e.into()))?);
    }
    Ok(out)
}

/// A reply of one double per value, from the reused batch buffer (a read
/// of ten fractions, a dashboard's call, allocates nothing for its reply).
fn doubles<T: Copy>(values: &[T], mut f: impl FnMut(T) -> f64) -> Reply<'static> {
    let mut reply = Batch::of_counts(values.len());
    values.iter().for_each(|&v| reply.push_double(f(v)));
    Reply::Batch(reply)
}

macro_rules! read_command {
    ($name:ident, $cmd:literal, $arity:expr, $read:expr) => {
        pub struct $name;

        /// A read with the key's value for writing: a compressing read may
        /// change the view, P, or (from the master link) the digest.
        impl KeyedCommand for $name {
            const NAME: &'static CStr = $cmd;
            const WRITES: bool = false;
            type Value = TDigestValue;
            type Request = ();

            fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                arity(args, $arity.0, $arity.1)
            }

            fn run<'k>(
                (): (),
                args: &impl ArgSource,
                key: &'k mut impl KeySlot<TDigestValue>,
                env: &impl Env,
            ) -> Outcome<'k> {
                match key.state_mut() {
                    KeyState::Held(v) => $read(v, args, env),
                    KeyState::Missing => Outcome::reply(absent(Absent::Missing)),
                    KeyState::Other => Outcome::reply(absent(Absent::Other)),
                }
            }
        }
    };
}

read_command!(Min, c"tdigest.min", (2, 2), min);
read_command!(Max, c"tdigest.max", (2, 2), max);
read_command!(Quantile, c"tdigest.quantile", (3, usize::MAX), quantile);
read_command!(Cdf, c"tdigest.cdf", (3, usize::MAX), cdf);
read_command!(Rank, c"tdigest.rank", (3, usize::MAX), ranks::<false>);
read_command!(RevRank, c"tdigest.revrank", (3, usize::MAX), ranks::<true>);
read_command!(
    ByRank,
    c"tdigest.byrank",
    (3, usize::MAX),
    by_ranks::<false>
);
read_command!(
    ByRevRank,
    c"tdigest.byrevrank",
    (3, usize::MAX),
    by_ranks::<true>
);
read_command!(TrimmedMean, c"tdigest.trimmed_mean", (4, 4), trimmed_mean);
read_command!(Info, c"tdigest.info", (2, 2), info);

/// No compress: the smallest value added (`nan` when empty).
fn min(v: &mut TDigestValue, _: &impl ArgSource, _: &impl Env) -> Outcome<'static> {
    Outcome::reply(double(v.digest().min()))
}

fn max(v: &mut TDigestValue, _: &impl ArgSource, _: &impl Env) -> Outcome<'static> {
    Outcome::reply(double(v.digest().max()))
}

/// Every fraction checked in order before any is evaluated.
fn quantile(v: &mut TDigestValue, args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
    let qs = match values(args, |_, d| match d {
        None => Err(replies::PARSING_QUANTILE),
        Some(q) if !(0.0..=1.0).contains(&q) => Err(replies::QUANTILE_RANGE),
        Some(q) => Ok(q),
    }) {
        Ok(qs) => qs,
        Err(e) => return Outcome::reply(e),
    };
    evaluate(v, args, env, |c| {
        let mut reply = Batch::of_counts(qs.len());
        c.each_quantile(&qs, |q| reply.push_double(q));
        Reply::Batch(reply)
    })
}

/// ±inf are values too (0 and 1).
fn cdf(v: &mut TDigestValue, args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
    let xs = match values(args, |_, d| d.ok_or(replies::PARSING_CDF)) {
        Ok(xs) => xs,
        Err(e) => return Outcome::reply(e),
    };
    evaluate(v, args, env, |c| doubles(&xs, |x| c.cdf(x)))
}

/// RANK (`REV` false) and REVRANK (`REV` true).
fn ranks<const REV: bool>(
    v: &mut TDigestValue,
    args: &impl ArgSource,
    env: &impl Env,
) -> Outcome<'static> {
    let xs = match values(args, |_, d| d.ok_or(replies::PARSING_VALUE)) {
        Ok(xs) => xs,
        Err(e) => return Outcome::reply(e),
    };
    // 2.8.2 compresses only for a value inside [min, max] of a digest
    // that is not empty: the others are answered from the counts alone.
    if xs
        .iter()
        .all(|&x| rank_from_counts::<REV>(v.digest(), x).is_some())
    {
        let mut reply = Batch::of_counts(xs.len());
        for &x in &xs {
            reply.push_integer(rank_from_counts::<REV>(v.digest(), x).expect("checked"));
        }
        return Outcome::reply(Reply::Batch(reply));
    }
    evaluate(v, args, env, |c| {
        let mut reply = Batch::of_counts(xs.len());
        for &x in &xs {
            reply.push_integer(if REV { c.rev_rank(x) } else { c.rank(x) });
        }
        Reply::Batch(reply)
    })
}

/// RANK (REVRANK when `REV`) of `x` when it needs no centroid: an empty
/// digest, or `x` outside [min, max] (a NaN is inside: it compares false).
fn rank_from_counts<const REV: bool>(td: &TDigest, x: f64) -> Option<i64> {
    let size = td.total_weight();
    if size == 0 {
        Some(-2)
    } else if x < td.min_raw() {
        Some(if REV { size } else { -1 })
    } else if x > td.max_raw() {
        Some(if REV { -1 } else { size })
    } else {
        None
    }
}

/// BYRANK (BYREVRANK when `REV`) of `r` when it needs no centroid: an
/// empty digest, rank 0 or a rank past the last observation.
fn by_rank_from_counts<const REV: bool>(td: &TDigest, r: i64) -> Option<f64> {
    let size = td.total_weight() as f64;
    if size == 0.0 {
        Some(f64::NAN)
    } else if r == 0 {
        Some(if REV { td.max_raw() } else { td.min_raw() })
    } else if r as f64 >= size {
        Some(if REV {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    } else {
        None
    }
}

/// BYRANK (`REV` false) and BYREVRANK (`REV` true).
fn by_ranks<const REV: bool>(
    v: &mut TDigestValue,
    args: &impl ArgSource,
    env: &impl Env,
) -> Outcome<'static> {
    let rs = match values(args, |b, _| match replies::parse_integer(b) {
        None => Err(replies::PARSING_RANK),
        Some(r) if r < 0 => Err(replies::RANK_NEGATIVE),
        Some(r) => Ok(r),
    }) {
        Ok(rs) => rs,
        Err(e) => return Outcome::reply(e),
    };
    // As for RANK: 2.8.2 compresses only for a rank between the first and
    // the last observation.
    let digest = v.digest();
    if rs
        .iter()
        .all(|&r| by_rank_from_counts::<REV>(digest, r).is_some())
    {
        let reply = doubles(&rs, |r| {
            by_rank_from_counts::<REV>(digest, r).expect("checked")
        });
        return Outcome::reply(reply);
    }
    evaluate(v, args, env, |c| {
        doubles(&rs, |r| if REV { c.by_rev_rank(r) } else { c.by_rank(r) })
    })
}

/// The cuts checked in 2.8.2's order.
fn trimmed_mean(v: &mut TDigestValue, args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
    let Some(lo) = args.double(2) else {
        return Outcome::error(replies::PARSING_LOW);
    };
    let Some(hi) = args.double(3) else {
        return Outcome::error(replies::PARSING_HIGH);
    };
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
        return Outcome::error(replies::CUTS_RANGE);
    }
    if lo >= hi {
        return Outcome::error(replies::CUTS_ORDER);
    }
    evaluate(v, args, env, |c| double(c.trimmed_mean(lo, hi)))
}

/// No compress: the counters of the clients' digest (compress(S) after a
/// read on this master, as 2.8.2 shows them then; S's otherwise).
fn info(v: &mut TDigestValue, args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
    let guard = CommandGuard::new(env, args.arg(1), super::WHAT);
    let i = match v.info(env.is_master(), &guard) {
        Ok(i) => i,
        Err(e) => return Outcome::reply(read_error(e)),
    };
    Outcome::reply(Reply::Map(vec![
        (c"Compression", Reply::Integer(i.compression)),
        (c"Capacity", Reply::Integer(i.capacity)),
        (c"Merged nodes", Reply::Integer(i.merged_nodes)),
        (c"Unmerged nodes", Reply::Integer(i.unmerged_nodes)),
        (c"Merged weight", Reply::Integer(i.merged_weight)),
        (c"Unmerged weight", Reply::Integer(i.unmerged_weight)),
        (c"Observations", Reply::Integer(i.observations)),
        (c"Total compressions", Reply::Integer(i.total_compressions)),
        (c"Memory usage", Reply::Integer(i.memory_usage)),
    ]))
}
