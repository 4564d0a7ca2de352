//! CMS.INITBYDIM, CMS.INITBYPROB and CMS.INCRBY.

use std::ffi::CStr;

use ferrobloom_core::cms::IncrError;

use super::create::create;
use super::grammar::{self, Init};
use super::{replies, Sketch};
use crate::command::{
    ArgSource, Batch, CommandError, Env, KeySlot, KeyState, KeyedCommand, Outcome, Propagation,
    Reply, RewriteArg,
};
use crate::notify::{Event, Events};

/// The two creations: `PROB` false for CMS.INITBYDIM, true for
/// CMS.INITBYPROB.
pub struct InitBy<const PROB: bool>;

pub type InitByDim = InitBy<false>;
pub type InitByProb = InitBy<true>;

impl<const PROB: bool> KeyedCommand for InitBy<PROB> {
    const NAME: &'static CStr = if PROB {
        c"cms.initbyprob"
    } else {
        c"cms.initbydim"
    };
    const WRITES: bool = true;
    type Value = Sketch;
    type Request = ();

    /// Only the count: `key already exists` comes before the other
    /// arguments (spec §3.3).
    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::init_arity(args)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Sketch>,
        env: &impl Env,
    ) -> Outcome<'k> {
        // A key of any type, a string too.
        if !matches!(key.kind(), KeyState::Missing) {
            return Outcome::error(replies::KEY_EXISTS);
        }
        let parsed = if PROB {
            grammar::parse_init_by_prob(args)
        } else {
            grammar::parse_init_by_dim(args)
        };
        let init: Init = match parsed {
            Ok(init) => init,
            Err(e) => return Outcome::error(e),
        };
        let mut events = Events::default();
        match create(key, args.arg(1), init, env, &mut events) {
            // The dimensions are in the command: a replica makes the same.
            Ok(_) => Outcome::verbatim(Reply::Ok, events),
            Err(e) => Outcome::failed(e, events),
        }
    }
}

/// Increments of a CMS.INCRBY kept on the stack while parsed.
const STACK_PAIRS: usize = 16;

/// `CMS.INCRBY key item increment [item increment ...]`, with RedisBloom
/// 8.12's semantics: signed increments, all parsed before any is applied,
/// and each pair applied whole or not at all (an overflow or underflow is
/// that pair's element of the reply, and the next pairs still apply).
pub struct IncrBy;

impl KeyedCommand for IncrBy {
    const NAME: &'static CStr = c"cms.incrby";
    /// Opened for writing, so WATCH and client-side caching see the
    /// change (2.8.2 opens it read-only and neither does).
    const WRITES: bool = true;
    type Value = Sketch;
    type Request = ();

    /// Only the count: the key is checked before any increment (§3.4).
    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        grammar::incrby_arity(args)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<Sketch>,
        _: &impl Env,
    ) -> Outcome<'k> {
        let sketch = match key.state_mut() {
            KeyState::Held(s) => s,
            KeyState::Missing => return Outcome::error(replies::KEY_DOES_NOT_EXIST),
            KeyState::Other => return Outcome::error(replies::WRONGTYPE),
        };
        let pairs = (args.count() - 2) / 2;
        // Parsed once, all before any applies: on the stack for the usual
        // few pairs.
        let mut stack = [0i64; STACK_PAIRS];
        let mut heap = Vec::new();
        let increments = if pairs <= STACK_PAIRS {
            &mut stack[..pairs]
        } else {
            heap.resize(pairs, 0);
            &mut heap[..]
        };
        if let Err(e) = grammar::parse_increments(args, increments) {
            return Outcome::error(e);
        }
        // The replies in a reused buffer: nothing allocated per command.
        let mut elements = Batch::of_counts(pairs);
        let mut applied = AppliedPairs::default();
        let mut changed = false;
        for (p, &incr) in increments.iter().enumerate() {
            let at = 2 + 2 * p;
            match sketch.incrby(args.arg(at), incr) {
                Ok(estimate) => {
                    changed |= incr != 0;
                    applied.record(at, true);
                    elements.push_count(estimate);
                }
                Err(e) => refuse_pair(&mut elements, &mut applied, at, e),
            }
        }
        let mut events = Events::default();
        events.add_if(changed, Event::SketchIncremented);
        Outcome {
            reply: Reply::Batch(elements),
            propagate: applied.propagation(),
            events,
        }
    }
}

/// A pair the sketch refused (overflow or underflow): its error is its
/// reply element. Out of line, so that the loop every pair runs stays
/// small.
#[cold]
#[inline(never)]
fn refuse_pair(elements: &mut Batch, applied: &mut AppliedPairs, at: usize, e: IncrError) {
    applied.record(at, false);
    elements.push_error(replies::incr_error(e).into());
}

/// Which pairs of a CMS.INCRBY applied. A refused pair changed nothing, so
/// replicas and the AOF get the command as received when every pair
/// applied, a CMS.INCRBY of the applied pairs alone when some did not,
/// and nothing when none did: what goes out is what this server applied.
/// Nothing is allocated until a pair is refused.
#[derive(Default)]
struct AppliedPairs {
    /// The argument index of the first refused pair's item: every pair
    /// before it applied.
    first_refused: Option<usize>,
    /// The item indexes of the pairs applied after it.
    applied_after: Vec<usize>,
}

impl AppliedPairs {
    fn record(&mut self, item_at: usize, ok: bool) {
        match (self.first_refused, ok) {
            (None, true) => {}
            (None, false) => self.first_refused = Some(item_at),
            (Some(_), true) => self.applied_after.push(item_at),
            (Some(_), false) => {}
        }
    }

    #[inline]
    fn propagation(&self) -> Propagation {
        match self.first_refused {
            None => Propagation::Verbatim,
            Some(first_refused) => self.applied_only(first_refused),
        }
    }

    /// The rewrite to the applied pairs, once one was refused.
    #[cold]
    #[inline(never)]
    fn applied_only(&self, first_refused: usize) -> Propagation {
        let items = (2..first_refused)
            .step_by(2)
            .chain(self.applied_after.iter().copied());
        let mut args = vec![RewriteArg::Input(1)];
        for at in items {
            args.extend([RewriteArg::Input(at), RewriteArg::Input(at + 1)]);
        }
        if args.len() == 1 {
            return Propagation::Nothing;
        }
        Propagation::Rewrite {
            command: c"CMS.INCRBY",
            args,
        }
    }
}
