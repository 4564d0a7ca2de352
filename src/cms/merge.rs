//! CMS.MERGE: the destination becomes the weighted sum of the sources
//! (spec §3.6, with RedisBloom 8.12's cell size check), or nothing
//! changes. A command on many keys: the FFI layer opens the destination
//! and hands over a [`Sources`] that opens the others.

use std::ffi::CStr;

use ferrobloom_core::cms::merge::{check_compatible, merge};
use ferrobloom_core::cms::Operand;

use super::grammar;
use super::{replies, Sketch};
use crate::command::{ArgSource, CommandError, KeySlot, KeyState, Outcome, Reply, Sources};
use crate::notify::{Event, Events};

pub struct Merge;

impl Merge {
    pub const NAME: &'static CStr = c"cms.merge";

    /// The argument indexes of every key the command reads, for a server
    /// that asks the command itself (Redis Cluster's slot check on Redis
    /// 7.0 does, for a command flagged `getkeys-api`): the destination,
    /// then the `numkeys` arguments after numkeys (as many as there are),
    /// none of them when numkeys is not a positive integer.
    pub fn key_positions(args: &impl ArgSource) -> impl Iterator<Item = usize> {
        let n = args.count();
        let sources = match (n > grammar::MERGE_SOURCES_AT)
            .then(|| args.int(2))
            .flatten()
        {
            Some(k) if k > 0 => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                grammar::MERGE_SOURCES_AT..n.min(grammar::MERGE_SOURCES_AT.saturating_add(k))
            }
            _ => 0..0,
        };
        (n > 1).then_some(1).into_iter().chain(sources)
    }

    /// Only the count: the destination is checked before the other
    /// arguments (§3.6 row 2).
    pub fn parse(args: &impl ArgSource) -> Result<(), CommandError> {
        grammar::merge_arity(args)
    }

    /// Checks, in 2.8.2's order: the destination; numkeys and the shape
    /// of the rest; then per source its weight, its key, its width and
    /// depth, its cell size (8.12); then the overflow pre-check over every
    /// cell and N. A source named as the destination is the destination
    /// as it was (never opened twice); every cell is computed from the same
    /// index of every source, so that is safe in place.
    pub fn run<'k>(
        args: &impl ArgSource,
        dest: &'k mut impl KeySlot<Sketch>,
        sources: &impl Sources<Sketch>,
    ) -> Outcome<'k> {
        match Self::merge(args, dest, sources) {
            Ok(()) => Outcome::verbatim(Reply::Ok, Events::of(&[Event::SketchMerged])),
            Err(e) => Outcome::error(e),
        }
    }

    fn merge(
        args: &impl ArgSource,
        dest: &mut impl KeySlot<Sketch>,
        sources: &impl Sources<Sketch>,
    ) -> Result<(), CommandError> {
        let dest = match dest.state_mut() {
            KeyState::Held(s) => s,
            KeyState::Missing => return Err(replies::KEY_DOES_NOT_EXIST.into()),
            KeyState::Other => return Err(replies::WRONGTYPE.into()),
        };
        let request = grammar::parse_merge(args)?;
        let dest_name = args.arg(1);
        let mut keys = Vec::with_capacity(request.numkeys);
        let mut weights = Vec::with_capacity(request.numkeys);
        for k in 0..request.numkeys {
            weights.push(request.weight(args, k)?);
            let at = request.source_at(k);
            let name = args.arg(at);
            if name == dest_name {
                keys.push(None);
                continue;
            }
            let key = sources.open(at, name);
            match key.state() {
                KeyState::Held(source) => check_compatible(dest.sketch(), source.sketch())
                    .map_err(replies::merge_error)?,
                KeyState::Missing => return Err(replies::KEY_DOES_NOT_EXIST.into()),
                KeyState::Other => return Err(replies::WRONGTYPE.into()),
            }
            keys.push(Some(key));
        }
        let operands: Vec<(Operand<'_>, i64)> = keys
            .iter()
            .zip(&weights)
            .map(|(key, &w)| match key.as_ref().map(|k| k.state()) {
                None => (Operand::Dest, w),
                Some(KeyState::Held(s)) => (Operand::Other(s.sketch()), w),
                Some(_) => unreachable!("checked above"),
            })
            .collect();
        dest.merge_into(|sketch| merge(sketch, &operands))
            .map_err(|e| replies::merge_error(e).into())
    }
}
