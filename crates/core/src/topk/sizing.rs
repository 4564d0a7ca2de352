//! TOPK.RESERVE's arguments as RedisBloom 2.8.2 checks them (spec §4.2),
//! with its error texts, and the byte counts of a sketch, checked for
//! overflow before anything is allocated.

/// TOPK.RESERVE's defaults when only `k` is given.
pub const DEFAULT_WIDTH: u32 = 8;
pub const DEFAULT_DEPTH: u32 = 7;
pub const DEFAULT_DECAY: f64 = 0.9;

/// The largest increment TOPK.INCRBY accepts (the command checks it; the
/// sketch itself takes any `u32`, at a cost linear in the increment).
pub const MAX_INCREMENT: u32 = 100_000;

/// Bytes of one bucket {fp u32, count u32} in memory and in the RDB.
pub const BUCKET_BYTES: u64 = 8;
/// Bytes of one heap record in the RDB (2.8.2's x86-64 struct image).
pub const RECORD_BYTES: u64 = 24;

/// TOPK.INCRBY's error for an increment that is not an integer in
/// `0..=100000`: 2.8.2's text, with its run of 28 spaces (a C line
/// continuation inside the literal).
pub const INCREMENT_ERROR: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";

/// Why TOPK.RESERVE refuses its arguments, in 2.8.2's check order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamError {
    K,
    Width,
    Depth,
    Decay,
    /// W·D·8 bytes do not fit the address space, or the guard or the
    /// allocator said no.
    InsufficientMemory,
}

impl ParamError {
    /// The reply, as RedisModule_ReplyWithError takes it.
    pub fn message(self) -> &'static str {
        match self {
            ParamError::K => "TopK: invalid k",
            ParamError::Width => "TopK: invalid width",
            ParamError::Depth => "TopK: invalid depth",
            ParamError::Decay => "TopK: invalid decay value. must be '<= 1' & '> 0'",
            ParamError::InsufficientMemory => {
                "ERR Insufficient memory to create topk data structure"
            }
        }
    }
}

/// The parameters of a sketch, each within its range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub k: u32,
    pub width: u32,
    pub depth: u32,
    pub decay: f64,
}

impl Params {
    /// TOPK.RESERVE with only `k`: width 8, depth 7, decay 0.9.
    pub fn with_defaults(k: u32) -> Params {
        Params {
            k,
            width: DEFAULT_WIDTH,
            depth: DEFAULT_DEPTH,
            decay: DEFAULT_DECAY,
        }
    }
}

/// `k` as parsed by RedisModule_StringToLongLong. Below 1 is invalid.
/// Above 2^32 − 1 2.8.2 keeps the low 32 bits (4294967297 is k 1): kept
/// here for compatibility (TOPK.INFO answers as 2.8.2 does), except where
/// the low 32 bits are 0, where 2.8.2 aborts the server and this refuses.
pub fn k_from_arg(k: i64) -> Result<u32, ParamError> {
    if k < 1 || k as u32 == 0 {
        return Err(ParamError::K);
    }
    Ok(k as u32)
}

/// Width: an integer in 1..=2^32 − 1 (no truncation, unlike `k`).
pub fn width_from_arg(width: i64) -> Result<u32, ParamError> {
    u32::try_from(width)
        .ok()
        .filter(|&w| w >= 1)
        .ok_or(ParamError::Width)
}

/// Depth: an integer in 1..=2^32 − 1.
pub fn depth_from_arg(depth: i64) -> Result<u32, ParamError> {
    u32::try_from(depth)
        .ok()
        .filter(|&d| d >= 1)
        .ok_or(ParamError::Depth)
}

/// Decay: 0 < decay ≤ 1 (NaN fails both comparisons).
pub fn decay_from_arg(decay: f64) -> Result<f64, ParamError> {
    if decay > 0.0 && decay <= 1.0 {
        Ok(decay)
    } else {
        Err(ParamError::Decay)
    }
}

/// The bytes a sketch holds, as its RDB value counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes {
    /// W·D·8.
    pub buckets: u64,
    /// k·24.
    pub heap: u64,
}

/// W·D·8 and k·24, or `InsufficientMemory` when the buckets would not fit
/// the address space (2.8.2's check 7: both dimensions 2^32 − 1). k·24
/// cannot overflow: k < 2^32.
pub fn bytes(k: u32, width: u32, depth: u32) -> Result<Bytes, ParamError> {
    let buckets = (u64::from(width) * u64::from(depth))
        .checked_mul(BUCKET_BYTES)
        .filter(|&b| b <= isize::MAX as u64)
        .ok_or(ParamError::InsufficientMemory)?;
    Ok(Bytes {
        buckets,
        heap: u64::from(k) * RECORD_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_keeps_2_8_2_truncation_except_zero() {
        assert_eq!(k_from_arg(0), Err(ParamError::K));
        assert_eq!(k_from_arg(-1), Err(ParamError::K));
        assert_eq!(k_from_arg(1), Ok(1));
        assert_eq!(k_from_arg(4294967295), Ok(u32::MAX));
        assert_eq!(k_from_arg(4294967296), Err(ParamError::K));
        assert_eq!(k_from_arg(4294967297), Ok(1));
        assert_eq!(k_from_arg(3 << 32), Err(ParamError::K));
        assert_eq!(k_from_arg(i64::MAX), Ok(u32::MAX));
    }

    #[test]
    fn dimensions_and_decay() {
        assert_eq!(width_from_arg(0), Err(ParamError::Width));
        assert_eq!(width_from_arg(4294967296), Err(ParamError::Width));
        assert_eq!(width_from_arg(4294967295), Ok(u32::MAX));
        assert_eq!(depth_from_arg(-3), Err(ParamError::Depth));
        assert_eq!(depth_from_arg(7), Ok(7));
        for bad in [0.0, -0.5, 1.0000001, f64::NAN, f64::INFINITY] {
            assert_eq!(decay_from_arg(bad), Err(ParamError::Decay), "{bad}");
        }
        assert_eq!(decay_from_arg(1.0), Ok(1.0));
        assert_eq!(decay_from_arg(5e-324), Ok(5e-324));
    }

    #[test]
    fn byte_counts() {
        assert_eq!(
            bytes(10, 8, 7),
            Ok(Bytes {
                buckets: 448,
                heap: 240
            })
        );
        assert_eq!(
            bytes(1, u32::MAX, u32::MAX),
            Err(ParamError::InsufficientMemory)
        );
        assert_eq!(
            bytes(u32::MAX, 1, 1).unwrap().heap,
            24 * u64::from(u32::MAX)
        );
    }
}
