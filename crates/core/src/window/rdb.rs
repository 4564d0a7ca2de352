//! The RDB value of a windowed filter (FerroBloom's own type, `FBwindows`,
//! encoding version 1; plain Bloom filters keep RedisBloom's `MBbloom--`).
//!
//! ```text
//! unsigned  layout version (1)
//! double    error rate
//! unsigned  capacity
//! unsigned  span kind (0: items, 1: milliseconds), unsigned span
//! unsigned  generations, unsigned policy (0: exact, 1: power of two)
//! unsigned  origin (ms), unsigned epoch, unsigned active slot
//! unsigned  generations retired, unsigned items forgotten
//! per slot (generations + 2):
//!   unsigned state (0: clean, 1: live, 2: retired), unsigned its epoch
//!   (live) or bytes cleared (retired), unsigned items, string bits
//! ```
//!
//! Nothing in a loaded value is trusted: the shape is recomputed from the
//! parameters and every slot must match it; the epochs, states and counts
//! must be ones the filter could have reached.

use super::filter::{Slot, SlotState, WindowFilter, WindowParts};
use super::sizing::{WindowParams, WindowSpec, MAX_GENERATIONS};
use super::span::{Span, MAX_ITEMS, MAX_TIME_MS};
use crate::bloom::link::Link;
use crate::bloom::sizing::Policy;
use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The encoding version of the module type.
pub const ENCODING_VERSION: i32 = 1;
/// The module type's name (9 characters, as the module API requires).
pub const TYPE_NAME: &[u8; 9] = b"FBwindows";

const LAYOUT_VERSION: u64 = 1;

const CLEAN: u64 = 0;
const LIVE: u64 = 1;
const RETIRED: u64 = 2;

pub fn save(f: &WindowFilter, out: &mut dyn RdbOutput) {
    let params = f.spec().params;
    out.write_unsigned(LAYOUT_VERSION);
    out.write_double(params.error);
    out.write_unsigned(params.capacity);
    match params.span {
        Span::Items { count } => {
            out.write_unsigned(0);
            out.write_unsigned(count);
        }
        Span::Time { ms } => {
            out.write_unsigned(1);
            out.write_unsigned(ms);
        }
    }
    out.write_unsigned(u64::from(params.generations));
    out.write_unsigned(match params.policy {
        Policy::Exact => 0,
        Policy::Pow2 => 1,
    });
    out.write_unsigned(f.origin_ms());
    out.write_unsigned(f.epoch());
    out.write_unsigned(f.active_slot() as u64);
    out.write_unsigned(f.rotations());
    out.write_unsigned(f.forgotten());
    for slot in f.slots() {
        let (state, value) = match slot.state {
            SlotState::Clean => (CLEAN, 0),
            SlotState::Live { epoch } => (LIVE, epoch),
            SlotState::Retired { cleared } => (RETIRED, cleared),
        };
        out.write_unsigned(state);
        out.write_unsigned(value);
        out.write_unsigned(slot.link.items);
        out.write_bytes(slot.link.data().as_bytes());
    }
}

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<WindowFilter, RdbError> {
    if encver != ENCODING_VERSION {
        return Err(invalid("unknown encoding version of a windowed filter"));
    }
    if input.read_unsigned()? != LAYOUT_VERSION {
        return Err(invalid("unknown layout of a windowed filter"));
    }
    let error = input.read_double()?;
    let capacity = input.read_unsigned()?;
    let span = match (input.read_unsigned()?, input.read_unsigned()?) {
        (0, count) if (1..=MAX_ITEMS).contains(&count) => Span::Items { count },
        (1, ms) if (1..=MAX_TIME_MS).contains(&ms) => Span::Time { ms },
        _ => return Err(invalid("bad window span")),
    };
    let generations = match input.read_unsigned()? {
        g if (1..=u64::from(MAX_GENERATIONS)).contains(&g) => g as u32,
        _ => return Err(invalid("bad generation count")),
    };
    let policy = match input.read_unsigned()? {
        0 => Policy::Exact,
        1 => Policy::Pow2,
        _ => return Err(invalid("bad allocation policy")),
    };
    let params = WindowParams {
        error,
        capacity,
        span,
        generations,
        policy,
    };
    let spec = WindowSpec::restored(&params).map_err(|_| invalid("bad window parameters"))?;
    let origin_ms = input.read_unsigned()?;
    let epoch = input.read_unsigned()?;
    // Far from overflow in any later epoch arithmetic.
    if epoch > u64::MAX / 4 {
        return Err(invalid("bad epoch"));
    }
    let active = input.read_unsigned()?;
    let rotations = input.read_unsigned()?;
    let forgotten = input.read_unsigned()?;
    let g = u64::from(generations);
    let mut slots = Vec::with_capacity(spec.slots as usize);
    for _ in 0..spec.slots {
        let state = input.read_unsigned()?;
        let value = input.read_unsigned()?;
        let items = input.read_unsigned()?;
        let data = input.read_bit_array()?;
        if data.len() as u64 != spec.link.bytes {
            return Err(invalid("generation size does not match the window"));
        }
        let state = match state {
            CLEAN => SlotState::Clean,
            // Live generations are the last G + 1 epochs at most.
            LIVE if value <= epoch && epoch - value <= g => SlotState::Live { epoch: value },
            RETIRED if value <= spec.link.bytes => SlotState::Retired { cleared: value },
            _ => return Err(invalid("bad generation state")),
        };
        let link = Link::from_parts(
            spec.link.entries,
            spec.link.error,
            spec.link.bpe,
            spec.link.hashes,
            spec.link.bits,
            spec.link.n2,
            items,
            data,
        )
        .map_err(|_| invalid("bad generation modulus"))?;
        let clean_prefix = match state {
            SlotState::Clean => spec.link.bytes,
            SlotState::Retired { cleared } => cleared,
            SlotState::Live { .. } => 0,
        };
        if link.data().as_bytes()[..clean_prefix as usize]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(invalid("a cleared generation has bits set"));
        }
        if state == SlotState::Clean && items != 0 {
            return Err(invalid("a clean generation holds items"));
        }
        if let (Span::Items { .. }, SlotState::Live { .. }) = (span, state) {
            if items > spec.generation_span {
                return Err(invalid("a generation holds more items than its share"));
            }
        }
        slots.push(Slot { link, state });
    }
    let active = usize::try_from(active)
        .ok()
        .filter(|&i| i < slots.len() && slots[i].state == SlotState::Live { epoch })
        .ok_or(invalid("the active generation is not live at the epoch"))?;
    let mut epochs: Vec<u64> = slots
        .iter()
        .filter_map(|s| match s.state {
            SlotState::Live { epoch } => Some(epoch),
            _ => None,
        })
        .collect();
    epochs.sort_unstable();
    if epochs.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("two generations of one epoch"));
    }
    if let Span::Items { .. } = span {
        if slots[active].link.items >= spec.generation_span {
            return Err(invalid("the active generation is past its share"));
        }
    }
    Ok(WindowFilter::from_parts(WindowParts {
        spec,
        slots,
        active,
        epoch,
        origin_ms,
        rotations,
        forgotten,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::chain::Unguarded;
    use crate::window::dump::{dump_payload, load_payload};

    fn filled(span: Span, adds: u64) -> WindowFilter {
        let spec = WindowSpec::new(&WindowParams {
            error: 0.01,
            capacity: 100,
            span,
            generations: 4,
            policy: Policy::Exact,
        })
        .unwrap();
        let mut f = WindowFilter::new(spec, 5_000, &Unguarded).unwrap();
        for i in 0..adds {
            if let Span::Time { .. } = span {
                f.rotate_to(f.epoch_at(5_000 + i * 7));
            }
            f.add(f.hash(format!("{i}").as_bytes()));
        }
        f
    }

    fn same(a: &WindowFilter, b: &WindowFilter) {
        assert_eq!(a.epoch(), b.epoch());
        assert_eq!(a.active_slot(), b.active_slot());
        assert_eq!(a.origin_ms(), b.origin_ms());
        assert_eq!(a.rotations(), b.rotations());
        assert_eq!(a.forgotten(), b.forgotten());
        for (x, y) in a.slots().iter().zip(b.slots()) {
            assert_eq!(x.state, y.state);
            assert_eq!(x.link.items, y.link.items);
            assert_eq!(x.link.ones(), y.link.ones());
            assert_eq!(x.link.data().as_bytes(), y.link.data().as_bytes());
        }
    }

    #[test]
    fn round_trips() {
        for (span, adds) in [
            (Span::Items { count: 100 }, 0),
            (Span::Items { count: 100 }, 1000),
            (Span::Time { ms: 2_000 }, 1000),
        ] {
            let f = filled(span, adds);
            let payload = dump_payload(&f, crate::dump_format::RDB_VERSION_7_0);
            let g = load_payload(&payload).unwrap();
            same(&f, &g);
            assert_eq!(
                dump_payload(&g, crate::dump_format::RDB_VERSION_7_0),
                payload
            );
        }
    }

    #[test]
    fn every_truncation_is_refused_and_every_bit_flip_is_refused_or_valid() {
        let f = filled(Span::Items { count: 40 }, 120);
        let payload = dump_payload(&f, crate::dump_format::RDB_VERSION_7_0);
        let body = &payload[..payload.len() - 10];
        let framed = |body: &[u8]| {
            let mut p = body.to_vec();
            p.extend_from_slice(&crate::dump_format::RDB_VERSION_7_0.to_le_bytes());
            let crc = crate::dump_format::crc64_jones(&p);
            p.extend_from_slice(&crc.to_le_bytes());
            p
        };
        assert!(load_payload(&framed(body)).is_ok());
        for cut in 0..body.len() {
            assert!(load_payload(&framed(&body[..cut])).is_err(), "cut at {cut}");
            crate::window::fuzzing::rdb(&body[..cut]);
        }
        let (mut loaded, mut refused) = (0, 0);
        // Every bit of the fields and the first slots' headers, then a
        // sample of the arrays' bits.
        let bits = (0..body.len() * 8).filter(|&i| i < 2048 || i % 61 == 0);
        for i in bits {
            let mut flipped = body.to_vec();
            flipped[i / 8] ^= 1 << (i % 8);
            match load_payload(&framed(&flipped)) {
                Ok(_) => loaded += 1,
                Err(_) => refused += 1,
            }
            crate::window::fuzzing::rdb(&flipped);
        }
        // Flips in live generations' bits are valid filters; flips in the
        // fields, in clean arrays and in framing are refused.
        assert!(loaded > 0 && refused > 0, "{loaded} {refused}");
    }
}
