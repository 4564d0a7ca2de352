//! Module settings: what new filters look like, the memory cap and the fill
//! thresholds. Set at load from arguments (RedisBloom 2.8's `ERROR_RATE e
//! INITIAL_SIZE n`, and FerroBloom's own names), then through Redis' module
//! configuration (`CONFIG SET bf.error-rate 0.001`, `bf.*` lines in
//! redis.conf). Changes affect filters created afterwards.

use std::sync::RwLock;

use ferrobloom_core::{ChainParams, Policy};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Error rate of auto-created filters and BF.INSERT without ERROR.
    pub error_rate: f64,
    /// Capacity of auto-created filters and BF.INSERT without CAPACITY.
    pub initial_size: u64,
    /// Growth of new filters; 0 creates them non-scaling.
    pub expansion: u32,
    /// Allocation policy of new filters.
    pub policy: Policy,
    /// Largest BF.INFO Size one filter may reach; 0 for no limit.
    pub max_filter_bytes: u64,
    /// Fill ratio (items / capacity) counted and notified as a warning.
    pub fill_warning: f64,
    /// Fill ratio counted and notified as an alert.
    pub fill_alert: f64,
    /// Whether bit arrays of 4 MiB or more ask for transparent huge pages.
    pub huge_pages: bool,
    /// GENERATIONS of a windowed filter created without it.
    pub window_generations: u32,
    /// A Cuckoo filter add fails (`Maximum expansions reached`) when the
    /// filter already has this many sub-filters (RedisBloom's load argument
    /// `CF_MAX_EXPANSIONS`).
    pub cf_max_expansions: u64,
}

/// The default per-filter cap, 4 GiB: a filter for 100 million items at
/// 0.001 takes 198 MB and still fits after three scale-outs (1.5 billion
/// items, 3.6 GB), while a mistyped capacity (an extra zero or three) is
/// refused before it allocates (docs/sizing.md).
pub const DEFAULT_MAX_FILTER_BYTES: u64 = 4 << 30;

/// The fill ratios counted and notified by default as a warning and as an
/// alert.
pub const DEFAULT_FILL_WARNING: f64 = 0.75;
pub const DEFAULT_FILL_ALERT: f64 = 0.90;

impl Settings {
    pub const DEFAULT: Settings = Settings {
        error_rate: 0.01,
        initial_size: 100,
        expansion: 2,
        policy: Policy::Exact,
        max_filter_bytes: DEFAULT_MAX_FILTER_BYTES,
        fill_warning: DEFAULT_FILL_WARNING,
        fill_alert: DEFAULT_FILL_ALERT,
        huge_pages: true,
        window_generations: ferrobloom_core::window::DEFAULT_GENERATIONS,
        cf_max_expansions: ferrobloom_core::cuckoo::sizing::DEFAULT_MAX_EXPANSIONS,
    };

    /// What new filters get where a command does not say: the one place
    /// where a configured expansion of 0 becomes "non-scaling" (the filter
    /// then still stores RedisBloom's fixed growth, 2).
    pub fn creation_params(&self) -> ChainParams {
        ChainParams {
            capacity: self.initial_size,
            error: self.error_rate,
            growth: if self.expansion == 0 {
                2
            } else {
                self.expansion
            },
            nonscaling: self.expansion == 0,
            policy: self.policy,
        }
    }
}

static SETTINGS: RwLock<Settings> = RwLock::new(Settings::DEFAULT);

/// The current settings.
pub fn settings() -> Settings {
    *SETTINGS.read().unwrap_or_else(|e| e.into_inner())
}

/// Applies a change to the settings.
pub fn update(change: impl FnOnce(&mut Settings)) {
    change(&mut SETTINGS.write().unwrap_or_else(|e| e.into_inner()));
}

/// Largest accepted initial size and cap (fits Redis' numeric configs).
pub const MAX_NUMERIC: u64 = i64::MAX as u64;

/// One setting, by its configuration name (without the `bf.` prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    ErrorRate,
    InitialSize,
    Expansion,
    Policy,
    MaxFilterBytes,
    FillWarning,
    FillAlert,
    HugePages,
    WindowGenerations,
    CfMaxExpansions,
}

impl Name {
    pub const ALL: [Name; 10] = [
        Name::ErrorRate,
        Name::InitialSize,
        Name::Expansion,
        Name::Policy,
        Name::MaxFilterBytes,
        Name::FillWarning,
        Name::FillAlert,
        Name::HugePages,
        Name::WindowGenerations,
        Name::CfMaxExpansions,
    ];

    pub fn config_name(self) -> &'static str {
        match self {
            Name::ErrorRate => "error-rate",
            Name::InitialSize => "initial-size",
            Name::Expansion => "expansion",
            Name::Policy => "policy",
            Name::MaxFilterBytes => "max-filter-bytes",
            Name::FillWarning => "fill-warning",
            Name::FillAlert => "fill-alert",
            Name::HugePages => "huge-pages",
            Name::WindowGenerations => "window-generations",
            Name::CfMaxExpansions => "cf-max-expansions",
        }
    }

    /// Finds a load argument name: the config name with `-` or `_`, with or
    /// without the `bf.` prefix, or RedisBloom 8's `bf-error-rate`,
    /// `bf-initial-size`, `bf-expansion-factor`; any case.
    pub fn parse(text: &[u8]) -> Option<Name> {
        let lower: Vec<u8> = text
            .iter()
            .map(|c| {
                if *c == b'_' {
                    b'-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        // RedisBloom 8's configuration names.
        match lower.as_slice() {
            b"bf-error-rate" => return Some(Name::ErrorRate),
            b"bf-initial-size" => return Some(Name::InitialSize),
            b"bf-expansion-factor" => return Some(Name::Expansion),
            b"cf-max-expansions" => return Some(Name::CfMaxExpansions),
            _ => {}
        }
        let bare = lower.strip_prefix(b"bf.").unwrap_or(&lower);
        Name::ALL
            .into_iter()
            .find(|n| n.config_name().as_bytes() == bare)
    }
}

/// Validates `value` for setting `name` and stores it in `settings`. The
/// error says what is accepted.
pub fn set(settings: &mut Settings, name: Name, value: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(value).unwrap_or("");
    let ratio = |what: &str| -> Result<f64, String> {
        match text.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
            _ => Err(format!(
                "{what} must be a number between 0 and 1 (exclusive)"
            )),
        }
    };
    let threshold = |what: &str| -> Result<f64, String> {
        match text.parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
            _ => Err(format!("{what} must be a number in (0, 1]")),
        }
    };
    let integer = |what: &str, min: u64, max: u64| -> Result<u64, String> {
        match text.parse::<u64>() {
            Ok(v) if v >= min && v <= max && v.to_string() == text => Ok(v),
            _ => Err(format!("{what} must be an integer from {min} to {max}")),
        }
    };
    match name {
        Name::ErrorRate => settings.error_rate = ratio("error-rate")?,
        Name::InitialSize => settings.initial_size = integer("initial-size", 1, MAX_NUMERIC)?,
        Name::Expansion => {
            settings.expansion = integer("expansion", 0, u64::from(u32::MAX))? as u32
        }
        Name::Policy => {
            settings.policy =
                Policy::parse(value).ok_or("policy must be exact or pow2".to_string())?
        }
        Name::MaxFilterBytes => {
            settings.max_filter_bytes =
                memory(text).filter(|v| *v <= MAX_NUMERIC).ok_or_else(|| {
                    format!(
                        "max-filter-bytes must be a size from 0 to {MAX_NUMERIC} bytes \
                         (units k, kb, m, mb, g, gb allowed)"
                    )
                })?
        }
        Name::FillWarning => settings.fill_warning = threshold("fill-warning")?,
        Name::FillAlert => settings.fill_alert = threshold("fill-alert")?,
        Name::WindowGenerations => {
            settings.window_generations = integer(
                "window-generations",
                1,
                u64::from(ferrobloom_core::window::MAX_GENERATIONS),
            )? as u32
        }
        Name::CfMaxExpansions => {
            settings.cf_max_expansions = integer(
                "cf-max-expansions",
                1,
                ferrobloom_core::cuckoo::sizing::MAX_SUB_FILTERS,
            )?
        }
        Name::HugePages => {
            settings.huge_pages = match text.to_ascii_lowercase().as_str() {
                "yes" | "true" | "1" => true,
                "no" | "false" | "0" => false,
                _ => return Err("huge-pages must be yes or no".into()),
            }
        }
    }
    Ok(())
}

/// A memory size as Redis reads one: digits with an optional unit, `k`/`m`/
/// `g` powers of 1000, `kb`/`mb`/`gb` powers of 1024, any case.
pub fn memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    let factor: u64 = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(factor)
}

/// Checks relations between settings.
pub fn check(settings: &Settings) -> Result<(), String> {
    if settings.fill_warning > settings.fill_alert {
        return Err(format!(
            "fill-warning ({}) must not be above fill-alert ({})",
            settings.fill_warning, settings.fill_alert
        ));
    }
    Ok(())
}

/// A load argument as the parser needs it.
pub trait LoadArg {
    fn bytes(&self) -> &[u8];
    /// Redis integer parsing.
    fn int(&self) -> Option<i64>;
    /// Redis double parsing.
    fn double(&self) -> Option<f64>;
}

/// Parses load arguments (name/value pairs, names in any case, later pairs
/// win) into `settings`. RedisBloom 2.8.2's names keep its exact checks and
/// messages (the line logged before the module refuses to load).
pub fn apply_load_args(args: &[&dyn LoadArg], settings: &mut Settings) -> Result<(), String> {
    if args.len() == 1 && args[0].bytes().is_empty() {
        // RedisBloom's packaging tools pass one empty argument.
        return Ok(());
    }
    if args.len() % 2 != 0 {
        return Err("Invalid number of arguments passed".into());
    }
    for pair in args.chunks_exact(2) {
        let (name, value) = (pair[0].bytes(), pair[1]);
        if name.eq_ignore_ascii_case(b"ERROR_RATE") {
            let e = value.double().ok_or("Invalid argument for 'ERROR_RATE'")?;
            if e <= 0.0 {
                return Err("ERROR_RATE must be > 0".into());
            }
            if e >= 1.0 {
                return Err("ERROR_RATE must be < 1".into());
            }
            settings.error_rate = e;
        } else if name.eq_ignore_ascii_case(b"INITIAL_SIZE") {
            let n = value.int().ok_or("Invalid argument for 'INITIAL_SIZE'")?;
            if n <= 0 {
                return Err("INITIAL_SIZE must be > 0".into());
            }
            settings.initial_size = n as u64;
        } else if name.eq_ignore_ascii_case(b"CF_MAX_EXPANSIONS") {
            // RedisBloom 2.8.2's checks and messages; values above the
            // most sub-filters a filter can have mean "no limit".
            let n = value
                .int()
                .ok_or("Invalid argument for 'CF_MAX_EXPANSIONS'")?;
            if n < 1 {
                return Err("CF_MAX_EXPANSIONS must be an integer >= 1".into());
            }
            settings.cf_max_expansions =
                (n as u64).min(ferrobloom_core::cuckoo::sizing::MAX_SUB_FILTERS);
        } else if let Some(setting) = Name::parse(name) {
            set(settings, setting, value.bytes())?;
        } else {
            return Err("Unrecognized option".into());
        }
    }
    check(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Arg(&'static str);
    impl LoadArg for Arg {
        fn bytes(&self) -> &[u8] {
            self.0.as_bytes()
        }
        fn int(&self) -> Option<i64> {
            self.0
                .parse()
                .ok()
                .filter(|n: &i64| n.to_string() == self.0)
        }
        fn double(&self) -> Option<f64> {
            self.0.parse().ok().filter(|v: &f64| !v.is_nan())
        }
    }

    fn apply(list: &[&'static str]) -> Result<Settings, String> {
        let args: Vec<Arg> = list.iter().map(|s| Arg(s)).collect();
        let refs: Vec<&dyn LoadArg> = args.iter().map(|a| a as &dyn LoadArg).collect();
        let mut s = Settings::DEFAULT;
        apply_load_args(&refs, &mut s).map(|_| s)
    }

    #[test]
    fn redisbloom_arguments() {
        let s = apply(&["error_rate", "0.001", "INITIAL_SIZE", "1000"]).unwrap();
        assert_eq!((s.error_rate, s.initial_size), (0.001, 1000));
        let s = apply(&["ERROR_RATE", "0.1", "ERROR_RATE", "0.2"]).unwrap();
        assert_eq!(s.error_rate, 0.2);
        assert!(apply(&["CF_MAX_EXPANSIONS", "3"]).is_ok());
        assert!(apply(&[""]).is_ok());
        assert!(apply(&[]).is_ok());
    }

    #[test]
    fn ferrobloom_arguments() {
        let s = apply(&[
            "expansion",
            "0",
            "POLICY",
            "pow2",
            "bf.max-filter-bytes",
            "1048576",
            "fill_warning",
            "0.5",
            "fill-alert",
            "0.8",
            "window-generations",
            "12",
        ])
        .unwrap();
        assert_eq!(s.window_generations, 12);
        assert_eq!(s.expansion, 0);
        assert_eq!(s.policy, Policy::Pow2);
        assert_eq!(s.max_filter_bytes, 1 << 20);
        assert_eq!(memory("1mb"), Some(1 << 20));
        assert_eq!(memory("2GB"), Some(2 << 30));
        assert_eq!(memory("5k"), Some(5000));
        assert_eq!(memory("0"), Some(0));
        assert_eq!(memory("01"), None);
        assert_eq!(memory("1tb"), None);
        assert_eq!(memory("mb"), None);
        assert_eq!((s.fill_warning, s.fill_alert), (0.5, 0.8));
    }

    #[test]
    fn refusals_name_the_problem() {
        let err = |l: &[&'static str]| apply(l).unwrap_err();
        assert_eq!(err(&["ERROR_RATE", "0"]), "ERROR_RATE must be > 0");
        assert_eq!(err(&["ERROR_RATE", "1"]), "ERROR_RATE must be < 1");
        assert_eq!(
            err(&["ERROR_RATE", "x"]),
            "Invalid argument for 'ERROR_RATE'"
        );
        assert_eq!(err(&["INITIAL_SIZE", "0"]), "INITIAL_SIZE must be > 0");
        assert_eq!(
            err(&["INITIAL_SIZE", "07"]),
            "Invalid argument for 'INITIAL_SIZE'"
        );
        assert_eq!(
            err(&["CF_MAX_EXPANSIONS", "0"]),
            "CF_MAX_EXPANSIONS must be an integer >= 1"
        );
        assert_eq!(
            err(&["bf-error-rate", "2"]),
            "error-rate must be a number between 0 and 1 (exclusive)"
        );
        assert_eq!(err(&["bf_capacity", "2"]), "Unrecognized option");
        assert_eq!(err(&["ERROR_RATE"]), "Invalid number of arguments passed");
        assert_eq!(err(&["x"]), "Invalid number of arguments passed");
        assert!(err(&["policy", "big"]).contains("exact or pow2"));
        for bad in ["0", "65", "-1", "8.5", ""] {
            assert_eq!(
                err(&["window-generations", bad]),
                "window-generations must be an integer from 1 to 64",
                "{bad:?}"
            );
        }
        assert!(err(&["expansion", "-1"]).contains("expansion"));
        assert!(err(&["fill-warning", "0.95"]).contains("must not be above"));
        assert!(err(&["fill-alert", "1.5"]).contains("fill-alert"));
    }
}
