//! TDIGEST.MERGE: a new digest made of the destination (unless OVERRIDE)
//! and the sources, replacing the destination, or nothing changes. A
//! command on many keys: the FFI layer opens the destination for reading
//! and hands over a [`Sources`] that opens the others; the destination is
//! made writable ([`KeySlot::open_for_writing`]) only once the merge is
//! built, so a refused MERGE signals no key as modified (a WATCH on its
//! destination holds, as in 2.8.2).
//!
//! Differences from 2.8.2, both chosen: an existing destination keeps its
//! TTL (2.8.2 removes it); without OVERRIDE, a destination also listed as
//! a source is merged once (2.8.2 counts its data twice). Once the merge
//! succeeded, the sources are compressed in place, as 2.8.2 leaves them:
//! replicas and the AOF, which get the command verbatim, do the same (a
//! failed merge changes nothing anywhere).

use std::ffi::CStr;

use ferrobloom_core::tdigest::{merge, MergeError, TDigest};

use super::counted::record;
use super::{replies, TDigestValue};
use crate::command::{
    arity, ArgSource, CommandError, Env, KeySlot, KeyState, Outcome, Reply, Sources,
};
use crate::guard::CommandGuard;

/// The first source's argument index.
const SOURCES_AT: usize = 3;

/// What MERGE's arguments ask for.
struct Request {
    numkeys: usize,
    compression: Option<i64>,
    override_dest: bool,
}

pub struct Merge;

impl Merge {
    pub const NAME: &'static CStr = c"tdigest.merge";

    /// The destination, then the `numkeys` arguments after numkeys (as
    /// many as there are), none of them when numkeys is not a positive
    /// integer.
    pub fn key_positions(args: &impl ArgSource) -> impl Iterator<Item = usize> {
        let n = args.count();
        let sources = match (n > SOURCES_AT).then(|| args.int(2)).flatten() {
            Some(k) if k > 0 => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                SOURCES_AT..n.min(SOURCES_AT.saturating_add(k))
            }
            _ => 0..0,
        };
        (n > 1).then_some(1).into_iter().chain(sources)
    }

    /// Only the count: the destination's type is checked first.
    pub fn parse(args: &impl ArgSource) -> Result<(), CommandError> {
        arity(args, 4, usize::MAX)
    }

    pub fn run<'k>(
        args: &impl ArgSource,
        dest: &'k mut impl KeySlot<TDigestValue>,
        sources: &impl Sources<TDigestValue>,
        env: &impl Env,
    ) -> Outcome<'k> {
        match Self::merge(args, dest, sources, env) {
            Ok(()) => Outcome::verbatim(Reply::Ok, record::merge()),
            Err(e) => Outcome::error(e),
        }
    }

    /// numkeys, then the tail after the sources, in 2.8.2's order (spec
    /// §5.8 rows 3-6).
    fn request(args: &impl ArgSource) -> Result<Request, CommandError> {
        let numkeys = match replies::parse_integer(args.arg(2)) {
            None => return Err(replies::PARSING_NUMKEYS.into()),
            Some(k) if k <= 0 => return Err(replies::NUMKEYS_NOT_POSITIVE.into()),
            Some(k) => k as u64,
        };
        if numkeys > (args.count() - SOURCES_AT) as u64 {
            return Err(CommandError::Arity);
        }
        let numkeys = numkeys as usize;
        let tail = SOURCES_AT + numkeys..args.count();
        let is = |i: usize, word: &[u8]| args.arg(i).eq_ignore_ascii_case(word);
        let mut compression = None;
        if let Some(at) = tail.clone().find(|&i| is(i, b"COMPRESSION")) {
            if at + 1 == args.count() {
                return Err(CommandError::Arity);
            }
            compression = Some(match replies::parse_integer(args.arg(at + 1)) {
                None => return Err(replies::PARSING_COMPRESSION.into()),
                Some(c) if c <= 0 => return Err(replies::COMPRESSION_NOT_POSITIVE.into()),
                Some(c) => c,
            });
        }
        let override_dest = tail.clone().any(|i| is(i, b"OVERRIDE"));
        if !tail.is_empty() && compression.is_none() && !override_dest {
            return Err(replies::WRONG_KEYWORD.into());
        }
        Ok(Request {
            numkeys,
            compression,
            override_dest,
        })
    }

    fn merge(
        args: &impl ArgSource,
        dest: &mut impl KeySlot<TDigestValue>,
        sources: &impl Sources<TDigestValue>,
        env: &impl Env,
    ) -> Result<(), CommandError> {
        if matches!(dest.kind(), KeyState::Other) {
            return Err(replies::WRONGTYPE.into());
        }
        let request = Self::request(args)?;
        let dest_name = args.arg(1);
        let dest_exists = matches!(dest.kind(), KeyState::Held(()));
        let mut keys = Vec::with_capacity(request.numkeys);
        // Where the destination is listed among the sources (merged there,
        // as often as it is listed, with OVERRIDE: 2.8.2 merges every
        // source in argument order).
        let mut dest_listed: Vec<usize> = Vec::new();
        for k in 0..request.numkeys {
            let at = SOURCES_AT + k;
            let name = args.arg(at);
            if name == dest_name {
                if !dest_exists {
                    return Err(replies::KEY_DOES_NOT_EXIST.into());
                }
                dest_listed.push(keys.len());
                continue;
            }
            let key = sources.open(at, name);
            match key.state() {
                KeyState::Held(_) => keys.push(key),
                KeyState::Missing => return Err(replies::KEY_DOES_NOT_EXIST.into()),
                KeyState::Other => return Err(replies::WRONGTYPE.into()),
            }
        }
        let mut srcs: Vec<&TDigest> = keys
            .iter()
            .map(|k| match k.state() {
                KeyState::Held(v) => v.digest(),
                _ => unreachable!("checked above"),
            })
            .collect();
        let old = match dest.state() {
            KeyState::Held(v) => Some(v.digest()),
            _ => None,
        };
        // With OVERRIDE a listed destination is one of the sources; without
        // it, the destination is merged first and only once.
        let merged_dest = if request.override_dest { None } else { old };
        if let (true, Some(d)) = (request.override_dest, old) {
            // Each position counts the listings inserted before it.
            for (before, at) in dest_listed.into_iter().enumerate() {
                srcs.insert(at + before, d);
            }
        }
        let compression = merge::result_compression(
            request.compression.map(|c| c as f64),
            request.override_dest,
            old,
            &srcs,
        );
        let guard = CommandGuard::new(env, dest_name, super::WHAT);
        let result =
            merge::merge(compression, merged_dest, &srcs, &guard).map_err(|e| match e {
                MergeError::Create(_) => CommandError::from(replies::DEST_ALLOCATION_FAILED),
                MergeError::Overflow => {
                    record::merge_overflow();
                    replies::OVERFLOW.into()
                }
            })?;
        drop(srcs);
        for key in &mut keys {
            if let KeyState::Held(v) = key.state_mut() {
                // Unreachable failure (the merge compressed a copy of it).
                let _ = v.compress_stored();
            }
        }
        drop(keys);
        dest.open_for_writing();
        match dest.state_mut() {
            // Replaced in place: the key keeps its TTL.
            KeyState::Held(v) => {
                // The old value (its view and P with it) is dropped.
                *v = *TDigestValue::new(result);
                Ok(())
            }
            _ => dest
                .store(TDigestValue::created(result))
                .map(|_| ())
                .ok_or(replies::DEST_ALLOCATION_FAILED.into()),
        }
    }
}
