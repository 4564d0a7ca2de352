//! What every data type is to the server, with no Redis in it: the
//! [`DataType`] trait a value implements (its name, encoding version, RDB
//! load and save, AOF rewrite, memory usage, free effort, DEBUG DIGEST,
//! COPY and the parts active defragmentation may move), and the vocabulary
//! those callbacks speak: [`AofRecord`] and [`DigestSink`]. Each type folder
//! implements the trait in its `datatype.rs`; `ffi::datatype` turns any
//! implementation into the callbacks Redis calls.

use std::ffi::CStr;

use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest};
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::received::LoadProgress;
use ferrobloom_core::BitArray;

use crate::command::Env;
use crate::guard::{self, CommandGuard};

/// A value stored under a module data type of its own. `Send` because
/// Redis may free a value on its lazy-free thread.
pub trait DataType: Sized + Send + 'static {
    /// The type name, exactly nine characters; part of every RDB file and
    /// DUMP payload holding the type.
    const NAME: &'static CStr;

    /// The encoding version written with every value.
    const ENCODING_VERSION: i32;

    /// What the log and the memory guard's warnings call the type's values
    /// ("Bloom filter").
    const WHAT: &'static str;

    /// Decodes a value from RDB or RESTORE data (`encver` is the version
    /// it was written with).
    fn decode(input: &mut dyn RdbInput, encver: i32) -> Result<Box<Self>, RdbError>;

    /// Writes the value for RDB or DUMP.
    fn rdb_save(&self, out: &mut dyn RdbOutput);

    /// The commands an AOF rewrite writes for the value, given to `emit`
    /// one record at a time.
    fn aof_rewrite(&self, emit: &mut dyn FnMut(AofRecord<'_>));

    /// MEMORY USAGE, in bytes.
    fn mem_usage(&self) -> usize;

    /// The effort of freeing the value: above Redis' threshold (64) it is
    /// freed off the main thread.
    fn free_effort(&self) -> usize;

    /// DEBUG DIGEST: what the value holds, ending with one `end_sequence`.
    fn digest(&self, sink: &mut dyn DigestSink);

    /// The memory the value holds, as the memory guard counts a new value
    /// of its size: `bytes` allocated, `filter_size_after` its reported
    /// size (checked against `bf.max-filter-bytes`).
    fn footprint(&self) -> AllocRequest;

    /// An independent deep copy; None when it cannot be allocated.
    fn deep_copy(&self) -> Option<Box<Self>>;

    /// Active defragmentation moves a value's arrays one at a time, by
    /// index from 0: whether there is an array at `index`.
    fn has_part(&mut self, index: usize) -> bool;

    /// Hands the array at `index` to `relocate`, which may move it, and
    /// keeps what it returns.
    fn relocate_part(&mut self, index: usize, relocate: impl FnOnce(BitArray) -> BitArray);

    /// Reads a value from RDB or RESTORE data. Never refused (the data
    /// would be lost), but a value over a limit is named in the log. The
    /// error is the line to log.
    fn rdb_load(
        input: &mut dyn RdbInput,
        encver: i32,
        key: &[u8],
        env: &impl Env,
    ) -> Result<Box<Self>, String> {
        let value =
            Self::decode(input, encver).map_err(|e| load_error_message(Self::WHAT, key, e))?;
        let size = value.footprint();
        guard::check_loaded(env, Self::WHAT, key, size.bytes, size.filter_size_after);
        Ok(value)
    }

    /// COPY to the key `to`: a deep copy, admitted by the memory guard like
    /// any new value (never refused when the COPY comes from a master or an
    /// AOF). None when refused: Redis then answers `ERR module key failed
    /// to copy`, and the reason is logged.
    fn copy(&self, to: &[u8], env: &impl Env) -> Option<Box<Self>> {
        guarded_copy(env, to, Self::WHAT, self.footprint(), || self.deep_copy())
    }
}

/// What an AOF rewrite writes for a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AofRecord<'a> {
    /// `<command> key iter bytes`: one step of the type's LOADCHUNK
    /// sequence (e.g. `BF.LOADCHUNK`), so the AOF replays in RedisBloom too.
    Chunk {
        command: &'static CStr,
        iter: i64,
        bytes: &'a [u8],
    },
    /// `RESTORE key 0 payload`: a value whose state only its DUMP payload
    /// carries (a filter whose LOADCHUNK sequence is incomplete: the bits
    /// adds set in bytes not received yet must stay mergeable; a windowed
    /// filter, which has no LOADCHUNK of its own).
    Restore(&'a [u8]),
}

/// Where DEBUG DIGEST values go.
pub trait DigestSink {
    fn add_int(&mut self, value: u64);
    fn add_bytes(&mut self, bytes: &[u8]);
    fn end_sequence(&mut self);
}

/// A filter still loading through LOADCHUNK digests differently from the
/// same bits complete (a chunk would be merged into one and written over
/// the other); a complete filter's digest is unchanged.
pub fn digest_progress(loading: Option<&LoadProgress>, sink: &mut dyn DigestSink) {
    if let Some(progress) = loading {
        sink.add_int(progress.total());
        sink.add_bytes(&progress.encode());
    }
}

/// The log line of a value that could not be loaded from RDB or RESTORE
/// data: the key (when the server tells it), so an operator can find it,
/// and the reason. `what` names the type's values ("Bloom filter").
fn load_error_message(what: &str, key: &[u8], error: RdbError) -> String {
    let what = if key.is_empty() {
        format!("a {what}")
    } else {
        format!("the {what} '{}'", guard::printable(key))
    };
    let why = match error {
        RdbError::Io => "the data ends early or cannot be read (Io)".to_string(),
        RdbError::Invalid(reason) => reason.to_string(),
    };
    format!("refusing {what} in RDB/RESTORE data: {why}")
}

/// COPY of a value to the key `to`: `clone` runs only once the memory
/// guard admits `request` as it admits any new value of the type (`what`
/// names them). None when refused or when the copy cannot be allocated:
/// Redis then answers `ERR module key failed to copy`, and the reason is
/// logged.
fn guarded_copy<V>(
    env: &impl Env,
    to: &[u8],
    what: &'static str,
    request: AllocRequest,
    clone: impl FnOnce() -> Option<Box<V>>,
) -> Option<Box<V>> {
    let refused = match CommandGuard::new(env, to, what).admit(request) {
        Ok(()) => match clone() {
            Some(copy) => return Some(copy),
            None => guard::allocation_failed_message(request.bytes),
        },
        Err(refusal) => guard::refusal_message(&refusal, env.memory()),
    };
    env.log_warning(&format!(
        "COPY of a {what} to '{}' refused: {}",
        guard::printable(to),
        refused.trim_start_matches("ERR ")
    ));
    None
}

#[cfg(test)]
mod tests {
    use ferrobloom_core::cuckoo::{CuckooFilter, CuckooParams};
    use ferrobloom_core::rdb_io::RdbError;
    use ferrobloom_core::window::{Span, WindowFilter, WindowParams, WindowSpec};
    use ferrobloom_core::{AllocRequest, Chain, ChainParams, Policy, Unguarded};

    use super::*;
    use crate::bloom::Filter;
    use crate::command::testing::TestEnv;
    use crate::cuckoo::Cuckoo;
    use crate::window::Window;

    fn records<T: DataType>(value: &T) -> Vec<(Option<(String, i64)>, usize)> {
        let mut out = Vec::new();
        value.aof_rewrite(&mut |record| {
            out.push(match record {
                AofRecord::Chunk {
                    command,
                    iter,
                    bytes,
                } => (
                    Some((command.to_str().unwrap().to_string(), iter)),
                    bytes.len(),
                ),
                AofRecord::Restore(payload) => (None, payload.len()),
            })
        });
        out
    }

    fn bloom() -> Filter {
        let params = ChainParams {
            capacity: 1000,
            error: 0.01,
            growth: 2,
            nonscaling: false,
            policy: Policy::Exact,
        };
        *Filter::new(Chain::new(&params, &Unguarded).unwrap())
    }

    #[test]
    fn filters_are_rewritten_as_their_loadchunk_sequence() {
        let bloom = records(&bloom());
        assert!(bloom.len() >= 2, "{bloom:?}");
        assert_eq!(bloom[0].0, Some(("BF.LOADCHUNK".to_string(), 1)));
        assert!(bloom
            .iter()
            .all(|(chunk, _)| matches!(chunk, Some((c, _)) if c == "BF.LOADCHUNK")));

        let cuckoo = CuckooFilter::new(&CuckooParams::default(), &Unguarded).unwrap();
        let cuckoo = records(&*Cuckoo::new(cuckoo));
        assert!(cuckoo.len() >= 2, "{cuckoo:?}");
        assert_eq!(cuckoo[0].0, Some(("CF.LOADCHUNK".to_string(), 1)));
        assert!(cuckoo
            .iter()
            .all(|(chunk, _)| matches!(chunk, Some((c, _)) if c == "CF.LOADCHUNK")));
    }

    #[test]
    fn a_window_is_rewritten_as_one_restore() {
        let params = WindowParams {
            error: 0.01,
            capacity: 1000,
            span: Span::parse(b"1h").unwrap(),
            generations: 4,
            policy: Policy::Exact,
            scaling: true,
        };
        let filter = WindowFilter::new(WindowSpec::new(&params).unwrap(), 0, &Unguarded).unwrap();
        let window = Window::new(filter);
        let rewritten = records(&*window);
        assert_eq!(rewritten.len(), 1, "{rewritten:?}");
        assert_eq!(rewritten[0].0, None);
        assert!(rewritten[0].1 > 0);
    }

    #[test]
    fn load_errors_name_the_key_and_the_reason() {
        assert_eq!(
            load_error_message("Bloom filter", b"", RdbError::Io),
            "refusing a Bloom filter in RDB/RESTORE data: the data ends early or cannot be read (Io)"
        );
        assert_eq!(
            load_error_message("Cuckoo filter", b"bad", RdbError::Invalid("bucket size 0")),
            "refusing the Cuckoo filter 'bad' in RDB/RESTORE data: bucket size 0"
        );
    }

    const REQUEST: AllocRequest = AllocRequest {
        bytes: 1 << 20,
        filter_size_after: 1 << 20,
    };

    #[test]
    fn a_copy_is_made_once_admitted() {
        let env = TestEnv::client();
        let copy = guarded_copy(&env, b"dst", "Bloom filter", REQUEST, || Some(Box::new(7)));
        assert_eq!(copy, Some(Box::new(7)));
        assert!(env.warnings.borrow().is_empty());

        let failed = guarded_copy::<u8>(&env, b"dst", "Cuckoo filter", REQUEST, || None);
        assert_eq!(failed, None);
        assert_eq!(
            *env.warnings.borrow(),
            [format!(
                "COPY of a Cuckoo filter to 'dst' refused: {}",
                guard::allocation_failed_message(REQUEST.bytes).trim_start_matches("ERR ")
            )]
        );
    }

    #[test]
    fn a_refused_copy_is_never_made_and_is_logged() {
        let env = TestEnv::with(|env| env.memory.maxmemory = Some((1000, 2000)));
        let copy = guarded_copy::<u8>(&env, b"dst", "windowed filter", REQUEST, || {
            panic!("copied although refused")
        });
        assert_eq!(copy, None);
        let warnings = env.warnings.borrow();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("COPY of a windowed filter to 'dst' refused: "),
            "{warnings:?}"
        );
        assert!(!warnings[0].contains("refused: ERR"), "{warnings:?}");
    }
}
