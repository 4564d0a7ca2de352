//! Argument grammars of BF.RESERVE, BF.INSERT, BF.PLAN and BF.INFO, with
//! RedisBloom 2.8.2's quirks (whole-argv option scanning in RESERVE,
//! first-letter options in INSERT) and its check order, so the first error
//! a client sees is the same.
//!
//! Creation parameters have one vocabulary, [`ChainParams`]: the defaults
//! a grammar starts from (settings, or the replica rule) and what it
//! returns are both that.

use std::ffi::CStr;

use ferrobloom_core::{ChainParams, Policy};

use super::replies;
use crate::command::{ArgSource, CommandError};

/// The expansion as RedisBloom stores it: 32 bits. A value that wraps to 0
/// would make a filter that breaks at its first scale-out, so it is refused.
fn stored_expansion(value: i64) -> Option<u32> {
    let wrapped = value as u64 as u32;
    (value >= 1 && wrapped != 0).then_some(wrapped)
}

/// A parsed BF.RESERVE.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reserve {
    pub params: ChainParams,
}

fn find_token(args: &impl ArgSource, from: usize, token: &[u8]) -> Option<usize> {
    (from..args.count()).find(|&i| args.arg(i).eq_ignore_ascii_case(token))
}

/// `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]
/// [POLICY exact|pow2]`.
pub fn parse_reserve(
    args: &impl ArgSource,
    defaults: &ChainParams,
) -> Result<Reserve, CommandError> {
    // POLICY is FerroBloom's; looked for only after the capacity so that no
    // command RedisBloom accepts (a key named "policy") changes meaning.
    let policy_at = find_token(args, 4, b"POLICY");
    let max_args = if policy_at.is_some() { 9 } else { 7 };
    if !(4..=max_args).contains(&args.count()) {
        return Err(CommandError::Arity);
    }
    let error = args
        .double(2)
        .ok_or(CommandError::Static(replies::BAD_ERROR_RATE))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(CommandError::Static(replies::ERROR_RATE_RANGE));
    }
    let capacity = args
        .int(3)
        .ok_or(CommandError::Static(replies::BAD_CAPACITY))?;
    if capacity <= 0 {
        return Err(CommandError::Static(replies::CAPACITY_RANGE));
    }
    // RedisBloom scans the whole argv, command name and key included.
    let mut nonscaling = find_token(args, 0, b"NONSCALING").is_some();
    // A non-scaling filter still stores a growth: RedisBloom's fixed 2.
    let mut growth = 2;
    let expansion_at = find_token(args, 0, b"EXPANSION");
    if expansion_at.is_none() && !nonscaling {
        nonscaling = defaults.nonscaling;
        growth = defaults.growth;
    }
    if let Some(at) = expansion_at {
        if at + 1 == args.count() {
            return Err(CommandError::Static(replies::NO_EXPANSION));
        }
        if nonscaling {
            return Err(CommandError::Static(replies::NONSCALING_EXPANSION));
        }
        let value = args
            .int(at + 1)
            .ok_or(CommandError::Static(replies::BAD_EXPANSION))?;
        growth = stored_expansion(value).ok_or(CommandError::Static(replies::EXPANSION_RANGE))?;
    }
    let policy = match policy_at {
        None => defaults.policy,
        Some(at) if at + 1 < args.count() => {
            Policy::parse(args.arg(at + 1)).ok_or(CommandError::Static(replies::BAD_POLICY))?
        }
        Some(_) => return Err(CommandError::Static(replies::BAD_POLICY)),
    };
    Ok(Reserve {
        params: chain_params(capacity as u64, error, growth, nonscaling, policy),
    })
}

/// A parsed BF.INSERT: creation parameters and where the items start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Insert {
    pub params: ChainParams,
    pub nocreate: bool,
    pub items_from: usize,
}

fn lower_at(token: &[u8], i: usize) -> Option<u8> {
    token.get(i).map(u8::to_ascii_lowercase)
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
/// [NONSCALING] [POLICY exact|pow2] ITEMS item...`, options recognised by
/// their first letter as RedisBloom does.
pub fn parse_insert(args: &impl ArgSource, defaults: &ChainParams) -> Result<Insert, CommandError> {
    if args.count() < 4 {
        return Err(CommandError::Arity);
    }
    let mut error = defaults.error;
    let mut capacity = defaults.capacity as i64;
    let mut expansion = None;
    let mut nonscaling_token = false;
    let mut nocreate = false;
    let mut policy = defaults.policy;
    let mut items_from = None;

    let mut i = 2;
    while i < args.count() {
        let token = args.arg(i);
        let has_value = i + 1 < args.count();
        match lower_at(token, 0) {
            Some(b'i') => {
                items_from = Some(i + 1);
                break;
            }
            Some(b'c') => {
                if !has_value {
                    return Err(CommandError::Arity);
                }
                capacity = args
                    .int(i + 1)
                    .ok_or(CommandError::Static(replies::INSERT_BAD_CAPACITY))?;
                i += 2;
            }
            Some(b'e') => {
                if !has_value {
                    return Err(CommandError::Arity);
                }
                if lower_at(token, 1) == Some(b'r') {
                    error = args
                        .double(i + 1)
                        .ok_or(CommandError::Static(replies::INSERT_BAD_ERROR_RATE))?;
                } else {
                    expansion = Some(
                        args.int(i + 1)
                            .ok_or(CommandError::Static(replies::INSERT_BAD_EXPANSION))?,
                    );
                }
                i += 2;
            }
            Some(b'n') => {
                if lower_at(token, 2) == Some(b'c') {
                    nocreate = true;
                } else {
                    nonscaling_token = true;
                }
                i += 1;
            }
            // FerroBloom's: 'p' is no option of RedisBloom's, which answers
            // "Unknown argument received" to it.
            Some(b'p') if token.eq_ignore_ascii_case(b"POLICY") => {
                if !has_value {
                    return Err(CommandError::Arity);
                }
                policy = Policy::parse(args.arg(i + 1))
                    .ok_or(CommandError::Static(replies::BAD_POLICY))?;
                i += 2;
            }
            _ => return Err(CommandError::Static(replies::INSERT_UNKNOWN_ARGUMENT)),
        }
    }
    let items_from = match items_from {
        Some(at) if at < args.count() => at,
        _ => return Err(CommandError::Arity),
    };
    // Without EXPANSION the defaults decide whether the filter scales; an
    // explicit one must be at least 1, as in RedisBloom.
    let (growth, nonscaling) = match expansion {
        None => (
            Some(defaults.growth),
            nonscaling_token || defaults.nonscaling,
        ),
        Some(value) => (stored_expansion(value), nonscaling_token),
    };
    let valid = error > 0.0 && error < 1.0 && capacity >= 1;
    match (valid, growth) {
        (true, Some(growth)) => Ok(Insert {
            params: chain_params(capacity as u64, error, growth, nonscaling, policy),
            nocreate,
            items_from,
        }),
        _ => Err(CommandError::Static(replies::INSERT_BAD_ARGUMENT)),
    }
}

/// A parsed BF.PLAN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanRequest {
    pub params: ChainParams,
    /// Items to plan for (default: the capacity).
    pub items: u64,
}

/// `BF.PLAN capacity error_rate [EXPANSION n] [NONSCALING] [POLICY
/// exact|pow2] [ITEMS n]`: options in any order and case.
pub fn parse_plan(
    args: &impl ArgSource,
    defaults: &ChainParams,
) -> Result<PlanRequest, CommandError> {
    if args.count() < 3 {
        return Err(CommandError::Arity);
    }
    let capacity = match args.int(1) {
        Some(c) if c >= 1 => c as u64,
        _ => return Err(CommandError::Static(replies::PLAN_BAD_CAPACITY)),
    };
    let error = match args.double(2) {
        Some(e) if e > 0.0 && e < 1.0 => e,
        _ => return Err(CommandError::Static(replies::PLAN_BAD_ERROR_RATE)),
    };
    let mut plan = PlanRequest {
        params: ChainParams {
            capacity,
            error,
            ..*defaults
        },
        items: capacity,
    };
    let mut explicit_scaling = false;
    let mut i = 3;
    while i < args.count() {
        let token = args.arg(i);
        let value = (i + 1 < args.count()).then(|| i + 1);
        if token.eq_ignore_ascii_case(b"NONSCALING") {
            plan.params.nonscaling = true;
            explicit_scaling = true;
            i += 1;
            continue;
        }
        let Some(v) = value else {
            return Err(CommandError::Arity);
        };
        if token.eq_ignore_ascii_case(b"EXPANSION") {
            plan.params.growth = args
                .int(v)
                .and_then(stored_expansion)
                .ok_or(CommandError::Static(replies::EXPANSION_RANGE))?;
            // An explicit expansion scales, as in BF.RESERVE, unless
            // NONSCALING is given too.
            if !explicit_scaling {
                plan.params.nonscaling = false;
            }
        } else if token.eq_ignore_ascii_case(b"POLICY") {
            plan.params.policy =
                Policy::parse(args.arg(v)).ok_or(CommandError::Static(replies::BAD_POLICY))?;
        } else if token.eq_ignore_ascii_case(b"ITEMS") {
            plan.items = match args.int(v) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(CommandError::Static(replies::PLAN_BAD_ITEMS)),
            };
        } else {
            return Err(CommandError::Static(replies::PLAN_UNKNOWN_ARGUMENT));
        }
        i += 2;
    }
    Ok(plan)
}

/// The single field BF.INFO may be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
}

impl InfoField {
    pub fn parse(token: &[u8]) -> Option<InfoField> {
        const FIELDS: [(&[u8], InfoField); 5] = [
            (b"CAPACITY", InfoField::Capacity),
            (b"SIZE", InfoField::Size),
            (b"FILTERS", InfoField::Filters),
            (b"ITEMS", InfoField::Items),
            (b"EXPANSION", InfoField::Expansion),
        ];
        FIELDS
            .iter()
            .find(|(name, _)| token.eq_ignore_ascii_case(name))
            .map(|&(_, field)| field)
    }

    /// The label BF.INFO prints for the field.
    pub fn label(self) -> &'static CStr {
        match self {
            InfoField::Capacity => c"Capacity",
            InfoField::Size => c"Size",
            InfoField::Filters => c"Number of filters",
            InfoField::Items => c"Number of items inserted",
            InfoField::Expansion => c"Expansion rate",
        }
    }

    pub const ALL: [InfoField; 5] = [
        InfoField::Capacity,
        InfoField::Size,
        InfoField::Filters,
        InfoField::Items,
        InfoField::Expansion,
    ];
}

/// The creation parameters both creating grammars return.
pub(super) fn chain_params(
    capacity: u64,
    error: f64,
    growth: u32,
    nonscaling: bool,
    policy: Policy,
) -> ChainParams {
    ChainParams {
        capacity,
        error,
        growth,
        nonscaling,
        policy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::TestArgs;

    const DEFAULTS: ChainParams = ChainParams {
        error: 0.01,
        capacity: 100,
        growth: 2,
        nonscaling: false,
        policy: Policy::Exact,
    };

    fn reserve(line: &str) -> Result<Reserve, CommandError> {
        parse_reserve(&TestArgs::new(line), &DEFAULTS)
    }

    fn insert(line: &str) -> Result<Insert, CommandError> {
        parse_insert(&TestArgs::new(line), &DEFAULTS)
    }

    /// Each line is refused with its error (RedisBloom's check order).
    fn refusals<T: std::fmt::Debug + PartialEq>(
        parse: impl Fn(&str) -> Result<T, CommandError>,
        cases: &[(&str, &'static CStr)],
    ) {
        for &(line, error) in cases {
            assert_eq!(parse(line), Err(CommandError::Static(error)), "{line}");
        }
    }

    fn refused(s: &'static CStr) -> Result<Reserve, CommandError> {
        Err(CommandError::Static(s))
    }

    #[test]
    fn reserve_check_order() {
        assert_eq!(reserve("BF.RESERVE r 0.01"), Err(CommandError::Arity));
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 a b c d"),
            Err(CommandError::Arity)
        );
        assert_eq!(
            reserve("BF.RESERVE r abc 100"),
            refused(replies::BAD_ERROR_RATE)
        );
        assert_eq!(
            reserve("BF.RESERVE r 1 100"),
            refused(replies::ERROR_RATE_RANGE)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 abc"),
            refused(replies::BAD_CAPACITY)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 0"),
            refused(replies::CAPACITY_RANGE)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION"),
            refused(replies::NO_EXPANSION)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION abc"),
            refused(replies::BAD_EXPANSION)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION 0"),
            refused(replies::EXPANSION_RANGE)
        );
        assert_eq!(
            reserve("BF.RESERVE c 0.01 100 NONSCALING EXPANSION 2"),
            refused(replies::NONSCALING_EXPANSION)
        );
        assert_eq!(
            reserve("BF.RESERVE c 0.01 100 EXPANSION NONSCALING"),
            refused(replies::NONSCALING_EXPANSION)
        );
        assert_eq!(
            reserve("BF.RESERVE c 0.01 100 NONSCALING EXPANSION"),
            refused(replies::NO_EXPANSION)
        );
    }

    #[test]
    fn reserve_whole_argv_scan() {
        assert!(
            reserve("BF.RESERVE nonscaling 0.01 100")
                .unwrap()
                .params
                .nonscaling
        );
        assert_eq!(
            reserve("BF.RESERVE expansion 0.01 100"),
            refused(replies::BAD_EXPANSION)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 foo EXPANSION 3")
                .unwrap()
                .params
                .growth,
            3
        );
        assert!(reserve("BF.RESERVE r 0.01 100 a b c").is_ok());
    }

    #[test]
    fn reserve_expansion_is_32_bits() {
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION 4294967297")
                .unwrap()
                .params
                .growth,
            1
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION 9223372036854775807")
                .unwrap()
                .params
                .growth,
            u32::MAX
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION 4294967296"),
            refused(replies::EXPANSION_RANGE)
        );
    }

    #[test]
    fn reserve_policy_token() {
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 POLICY pow2")
                .unwrap()
                .params
                .policy,
            Policy::Pow2
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 EXPANSION 3 POLICY pow2 x")
                .unwrap()
                .params
                .policy,
            Policy::Pow2
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 POLICY nope"),
            refused(replies::BAD_POLICY)
        );
        assert_eq!(
            reserve("BF.RESERVE r 0.01 100 POLICY"),
            refused(replies::BAD_POLICY)
        );
        // A key named "policy" means nothing special.
        assert_eq!(
            reserve("BF.RESERVE policy 0.01 100").unwrap().params.policy,
            Policy::Exact
        );
    }

    #[test]
    fn insert_grammar() {
        for line in [
            "BF.INSERT k",
            "BF.INSERT k a",
            "BF.INSERT k ITEMS",
            "BF.INSERT k ERROR 0.01",
            "BF.INSERT k CAPACITY",
        ] {
            assert_eq!(insert(line), Err(CommandError::Arity), "{line}");
        }
        let ok = insert("BF.INSERT k ITEMS a").unwrap();
        assert_eq!(
            (ok.items_from, ok.params.capacity, ok.params.growth),
            (3, 100, 2)
        );
        assert!(insert("BF.INSERT k NOCREATE ITEMS a").unwrap().nocreate);
        refusals(
            insert,
            &[
                ("BF.INSERT k foo ITEMS a", replies::INSERT_UNKNOWN_ARGUMENT),
                (
                    "BF.INSERT k CAPACITY 1.5 ITEMS a",
                    replies::INSERT_BAD_CAPACITY,
                ),
                (
                    "BF.INSERT k ERROR abc ITEMS a",
                    replies::INSERT_BAD_ERROR_RATE,
                ),
                (
                    "BF.INSERT k EXPANSION abc ITEMS a",
                    replies::INSERT_BAD_EXPANSION,
                ),
            ],
        );
        for bad in [
            "CAPACITY 0",
            "CAPACITY -5",
            "ERROR 0",
            "ERROR 1",
            "EXPANSION 0",
            "EXPANSION -1",
        ] {
            assert_eq!(
                insert(&format!("BF.INSERT k {bad} ITEMS a")),
                Err(CommandError::Static(replies::INSERT_BAD_ARGUMENT)),
                "{bad}"
            );
        }
        refusals(
            insert,
            &[
                (
                    "BF.INSERT k CAPACITY 0 foo ITEMS a",
                    replies::INSERT_UNKNOWN_ARGUMENT,
                ),
                (
                    "BF.INSERT k CAPACITY 0 ERROR abc ITEMS a",
                    replies::INSERT_BAD_ERROR_RATE,
                ),
                ("BF.INSERT k CAPACITY ITEMS a", replies::INSERT_BAD_CAPACITY),
            ],
        );
    }

    #[test]
    fn insert_first_letter_options() {
        let i = insert("BF.INSERT k E 3 NX I a").unwrap();
        assert_eq!(
            (i.params.growth, i.params.nonscaling, i.nocreate),
            (3, true, false)
        );
        let i = insert("BF.INSERT k NOC iXYZ a").unwrap();
        assert!(i.nocreate && !i.params.nonscaling);
        let i = insert("BF.INSERT k EXPANSION 3 NONSCALING ITEMS a").unwrap();
        assert!(i.params.nonscaling && i.params.growth == 3);
        let i = insert("BF.INSERT k er 0.5 c 7 ITEMS a").unwrap();
        assert_eq!((i.params.error, i.params.capacity), (0.5, 7));
        assert_eq!(
            insert("BF.INSERT k EXPANSION 4294967296 ITEMS a"),
            Err(CommandError::Static(replies::INSERT_BAD_ARGUMENT))
        );
        assert_eq!(
            insert("BF.INSERT k POLICY pow2 ITEMS a")
                .unwrap()
                .params
                .policy,
            Policy::Pow2
        );
        assert_eq!(
            insert("BF.INSERT k PX 1 ITEMS a"),
            Err(CommandError::Static(replies::INSERT_UNKNOWN_ARGUMENT))
        );
    }

    #[test]
    fn plan_grammar() {
        let plan = |l: &str| parse_plan(&TestArgs::new(l), &DEFAULTS);
        let p = plan("BF.PLAN 1000 0.01").unwrap();
        assert_eq!(
            (
                p.params.capacity,
                p.items,
                p.params.growth,
                p.params.nonscaling
            ),
            (1000, 1000, 2, false)
        );
        let p = plan("BF.PLAN 1000 0.01 items 5000 policy POW2 expansion 4 nonscaling").unwrap();
        assert_eq!(
            (
                p.items,
                p.params.policy,
                p.params.growth,
                p.params.nonscaling
            ),
            (5000, Policy::Pow2, 4, true)
        );
        // A configured expansion of 0, decoded as the settings do.
        let zero = crate::config::Settings {
            expansion: 0,
            ..crate::config::Settings::DEFAULT
        }
        .creation_params();
        let p = parse_plan(&TestArgs::new("BF.PLAN 100 0.01 EXPANSION 3"), &zero).unwrap();
        assert!(!p.params.nonscaling);
        let p = parse_plan(&TestArgs::new("BF.PLAN 100 0.01"), &zero).unwrap();
        assert!(p.params.nonscaling);
        let i = parse_insert(&TestArgs::new("BF.INSERT k EXPANSION 3 ITEMS a"), &zero).unwrap();
        assert!(!i.params.nonscaling);
        let i = parse_insert(&TestArgs::new("BF.INSERT k ITEMS a"), &zero).unwrap();
        assert!(i.params.nonscaling);
        assert_eq!(plan("BF.PLAN 1000"), Err(CommandError::Arity));
        assert_eq!(plan("BF.PLAN 1000 0.01 ITEMS"), Err(CommandError::Arity));
        refusals(
            plan,
            &[
                ("BF.PLAN 0 0.01", replies::PLAN_BAD_CAPACITY),
                ("BF.PLAN 10 1", replies::PLAN_BAD_ERROR_RATE),
                ("BF.PLAN 10 0.1 ITEMS -1", replies::PLAN_BAD_ITEMS),
                ("BF.PLAN 10 0.1 FOO 1", replies::PLAN_UNKNOWN_ARGUMENT),
                ("BF.PLAN 10 0.1 EXPANSION 0", replies::EXPANSION_RANGE),
            ],
        );
    }

    #[test]
    fn info_fields() {
        assert_eq!(InfoField::parse(b"capacity"), Some(InfoField::Capacity));
        assert_eq!(InfoField::parse(b"ITEMS"), Some(InfoField::Items));
        assert_eq!(InfoField::parse(b"Capacity "), None);
        assert_eq!(InfoField::parse(b"foo"), None);
    }
}
