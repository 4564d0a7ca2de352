//! TDIGEST.MIN, MAX, QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK,
//! TRIMMED_MEAN and INFO.
//!
//! The evaluations read a compressed view of the digest: the digest itself
//! when it is compressed, else a scratch copy (`TDigest::with_compressed`).
//! The stored digest is never changed by a read, so a replica and an AOF
//! replay hold exactly what the master holds. The answers are those of
//! 2.8.2 for the same stored digest; 2.8.2 compresses the stored digest on
//! these reads, which changes its INFO counters and, with adds between
//! reads, its later answers.

use std::ffi::CStr;

use ferrobloom_core::tdigest::{Compressed, ReadError};
use ferrobloom_core::Unguarded;

use super::{replies, TDigestValue};
use crate::command::{arity, Absent, ArgSource, CommandError, Env, ReadCommand, Reply};

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

/// `f` on a compressed view of the digest.
fn evaluate(v: &TDigestValue, f: impl FnOnce(Compressed<'_>) -> Reply<'static>) -> Reply<'static> {
    match v.digest().with_compressed(&Unguarded, f) {
        Ok(reply) => reply,
        Err(ReadError::Compress(_)) => Reply::Error(replies::OVERFLOW.into()),
        Err(ReadError::Scratch(_)) => Reply::Error(replies::ALLOCATION_FAILED.into()),
    }
}

/// Every argument from 2 parsed by `parse`, or the first error.
fn values<T>(
    args: &impl ArgSource,
    parse: impl Fn(&[u8], Option<f64>) -> Result<T, &'static CStr>,
) -> Result<Vec<T>, Reply<'static>> {
    (2..args.count())
        .map(|i| parse(args.arg(i), args.double(i)).map_err(|e| Reply::Error(e.into())))
        .collect()
}

macro_rules! read_command {
    ($name:ident, $cmd:literal, $arity:expr, $read:expr) => {
        pub struct $name;

        impl ReadCommand for $name {
            const NAME: &'static CStr = $cmd;
            const ARITY: (usize, usize) = $arity;
            type Value = TDigestValue;

            fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
                arity(args, Self::ARITY.0, Self::ARITY.1)
            }

            fn read(v: &TDigestValue, args: &impl ArgSource, _: &impl Env) -> Reply<'static> {
                $read(v, args)
            }

            fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
                absent(key)
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
fn min(v: &TDigestValue, _: &impl ArgSource) -> Reply<'static> {
    double(v.digest().min())
}

fn max(v: &TDigestValue, _: &impl ArgSource) -> Reply<'static> {
    double(v.digest().max())
}

/// Every fraction checked in order before any is evaluated.
fn quantile(v: &TDigestValue, args: &impl ArgSource) -> Reply<'static> {
    let qs = match values(args, |_, d| match d {
        None => Err(replies::PARSING_QUANTILE),
        Some(q) if !(0.0..=1.0).contains(&q) => Err(replies::QUANTILE_RANGE),
        Some(q) => Ok(q),
    }) {
        Ok(qs) => qs,
        Err(e) => return e,
    };
    evaluate(v, |c| {
        Reply::Array(c.quantiles(&qs).into_iter().map(double).collect())
    })
}

/// ±inf are values too (0 and 1).
fn cdf(v: &TDigestValue, args: &impl ArgSource) -> Reply<'static> {
    let xs = match values(args, |_, d| d.ok_or(replies::PARSING_CDF)) {
        Ok(xs) => xs,
        Err(e) => return e,
    };
    evaluate(v, |c| {
        Reply::Array(xs.iter().map(|&x| double(c.cdf(x))).collect())
    })
}

/// RANK (`REV` false) and REVRANK (`REV` true).
fn ranks<const REV: bool>(v: &TDigestValue, args: &impl ArgSource) -> Reply<'static> {
    let xs = match values(args, |_, d| d.ok_or(replies::PARSING_VALUE)) {
        Ok(xs) => xs,
        Err(e) => return e,
    };
    evaluate(v, |c| {
        Reply::Array(
            xs.iter()
                .map(|&x| Reply::Integer(if REV { c.rev_rank(x) } else { c.rank(x) }))
                .collect(),
        )
    })
}

/// BYRANK (`REV` false) and BYREVRANK (`REV` true).
fn by_ranks<const REV: bool>(v: &TDigestValue, args: &impl ArgSource) -> Reply<'static> {
    let rs = match values(args, |b, _| match replies::parse_integer(b) {
        None => Err(replies::PARSING_RANK),
        Some(r) if r < 0 => Err(replies::RANK_NEGATIVE),
        Some(r) => Ok(r),
    }) {
        Ok(rs) => rs,
        Err(e) => return e,
    };
    evaluate(v, |c| {
        Reply::Array(
            rs.iter()
                .map(|&r| double(if REV { c.by_rev_rank(r) } else { c.by_rank(r) }))
                .collect(),
        )
    })
}

/// The cuts checked in 2.8.2's order.
fn trimmed_mean(v: &TDigestValue, args: &impl ArgSource) -> Reply<'static> {
    let Some(lo) = args.double(2) else {
        return Reply::Error(replies::PARSING_LOW.into());
    };
    let Some(hi) = args.double(3) else {
        return Reply::Error(replies::PARSING_HIGH.into());
    };
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
        return Reply::Error(replies::CUTS_RANGE.into());
    }
    if lo >= hi {
        return Reply::Error(replies::CUTS_ORDER.into());
    }
    evaluate(v, |c| double(c.trimmed_mean(lo, hi)))
}

/// No compress: the counters as stored.
fn info(v: &TDigestValue, _: &impl ArgSource) -> Reply<'static> {
    let i = v.digest().info();
    Reply::Map(vec![
        (c"Compression", Reply::Integer(i.compression)),
        (c"Capacity", Reply::Integer(i.capacity)),
        (c"Merged nodes", Reply::Integer(i.merged_nodes)),
        (c"Unmerged nodes", Reply::Integer(i.unmerged_nodes)),
        (c"Merged weight", Reply::Integer(i.merged_weight)),
        (c"Unmerged weight", Reply::Integer(i.unmerged_weight)),
        (c"Observations", Reply::Integer(i.observations)),
        (c"Total compressions", Reply::Integer(i.total_compressions)),
        (c"Memory usage", Reply::Integer(i.memory_usage)),
    ])
}
