//! TDIGEST.CREATE, TDIGEST.RESET and TDIGEST.ADD.

use std::ffi::CStr;

use ferrobloom_core::tdigest::{CreateError, TDigest};

use super::counted::record;
use super::{replies, TDigestValue};
use crate::command::{
    arity, ArgSource, CommandError, Env, KeySlot, KeyState, KeyedCommand, NotCreated, Outcome,
    Propagation, Reply, RewriteArg,
};
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// The digest held by the key, or the error for a missing key or another
/// type.
fn held<'k>(key: &'k mut impl KeySlot<TDigestValue>) -> Result<&'k mut TDigestValue, Outcome<'k>> {
    match key.state_mut() {
        KeyState::Held(v) => Ok(v),
        KeyState::Missing => Err(Outcome::error(replies::KEY_DOES_NOT_EXIST)),
        KeyState::Other => Err(Outcome::error(replies::WRONGTYPE)),
    }
}

/// `TDIGEST.CREATE key [COMPRESSION c]`, checked in 2.8.2's order (spec
/// §5.8): arity, the key, the keyword, the integer, its sign, the size.
pub struct Create;

impl KeyedCommand for Create {
    const NAME: &'static CStr = c"tdigest.create";
    const WRITES: bool = true;
    type Value = TDigestValue;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        if args.count() == 2 || args.count() == 4 {
            Ok(())
        } else {
            arity(args, 0, 0)
        }
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<TDigestValue>,
        env: &impl Env,
    ) -> Outcome<'k> {
        if !matches!(key.kind(), KeyState::Missing) {
            return Outcome::error(match key.kind() {
                KeyState::Other => replies::WRONGTYPE,
                _ => replies::KEY_EXISTS,
            });
        }
        let compression = if args.count() == 4 {
            let keyword = |i: usize| args.arg(i).eq_ignore_ascii_case(b"COMPRESSION");
            if !keyword(2) && !keyword(3) {
                return Outcome::error(replies::WRONG_KEYWORD);
            }
            match replies::parse_integer(args.arg(3)) {
                None => return Outcome::error(replies::PARSING_COMPRESSION),
                Some(c) if c <= 0 => return Outcome::error(replies::COMPRESSION_NOT_POSITIVE),
                Some(c) => c,
            }
        } else {
            100
        };
        let guard = CommandGuard::new(env, args.arg(1), super::WHAT);
        let digest = match TDigest::new(compression as f64, &guard) {
            Ok(d) => d,
            Err(CreateError::Refused(refusal)) => {
                let mut events = Events::default();
                events.add(Event::GuardRefused);
                let e = NotCreated::Refused(refusal).into_error(replies::ALLOCATION_FAILED, env);
                return Outcome::failed(e, events);
            }
            Err(_) => return Outcome::error(replies::ALLOCATION_FAILED),
        };
        match key.store(TDigestValue::created(digest)) {
            Some(_) => Outcome::verbatim(Reply::Ok, record::create()),
            None => Outcome::error(replies::ALLOCATION_FAILED),
        }
    }
}

/// `TDIGEST.RESET key`: empty again, compression and capacity kept.
pub struct Reset;

impl KeyedCommand for Reset {
    const NAME: &'static CStr = c"tdigest.reset";
    const WRITES: bool = true;
    type Value = TDigestValue;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 2, 2)
    }

    fn run<'k>(
        (): (),
        _: &impl ArgSource,
        key: &'k mut impl KeySlot<TDigestValue>,
        _: &impl Env,
    ) -> Outcome<'k> {
        match held(key) {
            Ok(v) => {
                // P goes with the points: replicas reset the same.
                v.before_write(false).ok();
                v.digest_mut().reset();
                Outcome::verbatim(Reply::Ok, record::reset(v))
            }
            Err(e) => e,
        }
    }
}

/// `TDIGEST.ADD key value [value ...]`: every value parsed before any is
/// added.
pub struct Add;

impl KeyedCommand for Add {
    const NAME: &'static CStr = c"tdigest.add";
    const WRITES: bool = true;
    type Value = TDigestValue;
    type Request = ();

    fn parse(args: &impl ArgSource, _: &impl Env) -> Result<(), CommandError> {
        arity(args, 3, usize::MAX)
    }

    fn run<'k>(
        (): (),
        args: &impl ArgSource,
        key: &'k mut impl KeySlot<TDigestValue>,
        env: &impl Env,
    ) -> Outcome<'k> {
        let v = match held(key) {
            Ok(v) => v,
            Err(e) => return e,
        };
        let mut values = Vec::with_capacity(args.count() - 2);
        for i in 2..args.count() {
            match args.double(i) {
                None => return Outcome::error(replies::PARSING_VAL),
                Some(x) if !x.is_finite() => return Outcome::error(replies::VAL_NOT_FINITE),
                Some(x) => values.push(x),
            }
        }
        // A read on this master compressed the clients' digest: it
        // becomes the stored one, and replicas compress first too.
        let owed = match v.before_write(!env.replicated_or_loading()) {
            Ok(owed) => owed,
            Err(_) => return Outcome::error(replies::OVERFLOW),
        };
        let mut outcome = add_all(v, &values);
        if owed {
            outcome.propagate = outcome
                .propagate
                .preceded_by(MARKER, vec![RewriteArg::Input(1), RewriteArg::text("0")]);
        }
        outcome
    }
}

/// The compressing read sent before a write when a read compressed the
/// clients' digest on this master (`tdigest::value`): replicas and AOF
/// loads compress their stored digest on it, RedisBloom 2.8.2 replicas as
/// on any read.
pub const MARKER: &CStr = c"TDIGEST.QUANTILE";

/// Adds `values` in order.
fn add_all(v: &mut TDigestValue, values: &[f64]) -> Outcome<'static> {
    let td = v.digest_mut();
    for (n, &x) in values.iter().enumerate() {
        if td.add(x).is_err() {
            // The earlier values stay (as in 2.8.2); replicas get the
            // same values so they hold the same digest.
            let events = record::add(v, n, true);
            if n == 0 {
                return Outcome::error(replies::OVERFLOW);
            }
            return Outcome {
                reply: Reply::Error(replies::OVERFLOW.into()),
                propagate: Propagation::Rewrite {
                    command: c"TDIGEST.ADD",
                    args: (1..2 + n).map(RewriteArg::Input).collect(),
                },
                events,
            };
        }
    }
    Outcome::verbatim(Reply::Ok, record::add(v, values.len(), false))
}
