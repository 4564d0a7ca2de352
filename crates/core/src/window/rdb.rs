//! The RDB value of a windowed filter (FerroBloom's own type, `FBwindows`,
//! encoding version 2; plain Bloom filters keep RedisBloom's `MBbloom--`).
//!
//! ```text
//! unsigned  layout version (2)
//! double    error rate
//! unsigned  capacity
//! unsigned  span kind (0: items, 1: milliseconds), unsigned span
//! unsigned  generations, unsigned policy (0: exact, 1: power of two)
//! unsigned  scaling (1) or NONSCALING (0)                      [2 only]
//! unsigned  origin (ms), unsigned epoch, unsigned active slot
//! unsigned  generations retired, unsigned items forgotten
//! per slot (generations + 2):
//!   unsigned state (0: clean, 1: live, 2: retired), unsigned its epoch
//!   (live) or bytes cleared (retired), unsigned items, string bits
//!   unsigned grown arrays; per grown array: unsigned items,  [2 only]
//!   string bits
//! ```
//!
//! Encoding version 1 (layout 1) is the same without the fields marked
//! `[2 only]`: filters saved by versions without scaling windows load as
//! NONSCALING, keeping the fixed memory they were created with.
//!
//! Nothing in a loaded value is trusted: the shape is recomputed from the
//! parameters and every slot must match it; the epochs, states and counts
//! must be ones the filter could have reached.

use super::filter::{Slot, SlotState, WindowFilter, WindowParts};
use super::sizing::{WindowParams, WindowSpec, MAX_GENERATIONS, MAX_GROWN_LINKS};
use super::span::{Span, MAX_ITEMS, MAX_TIME_MS};
use crate::bloom::link::Link;
use crate::bloom::sizing::Policy;
use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The encoding version of the module type (what is written; 1 and 2 are
/// read).
pub const ENCODING_VERSION: i32 = 2;
/// The module type's name (9 characters, as the module API requires).
pub const TYPE_NAME: &[u8; 9] = b"FBwindows";

/// Each encoding version's layout version: the first field, checked.
const LAYOUT_VERSION: u64 = 2;

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
    out.write_unsigned(u64::from(params.scaling));
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
        out.write_unsigned(slot.grown.len() as u64);
        for link in &slot.grown {
            out.write_unsigned(link.items);
            out.write_bytes(link.data().as_bytes());
        }
    }
}

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<WindowFilter, RdbError> {
    if !(1..=ENCODING_VERSION).contains(&encver) {
        return Err(invalid("unknown encoding version of a windowed filter"));
    }
    let layout = input.read_unsigned()?;
    if layout != encver as u64 || layout > LAYOUT_VERSION {
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
    let scaling = match layout {
        1 => false,
        _ => match input.read_unsigned()? {
            0 => false,
            1 => true,
            _ => return Err(invalid("bad scaling flag")),
        },
    };
    let params = WindowParams {
        error,
        capacity,
        span,
        generations,
        policy,
        scaling,
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
        let grown = match layout {
            1 => Vec::new(),
            _ => read_grown(input, &spec, state, &link)?,
        };
        slots.push(Slot { link, grown, state });
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

/// The bit arrays a live generation grew: only a scaling time window's,
/// each the size [`WindowSpec::growth_link`] gives, each grown only when
/// the one before it held its capacity.
fn read_grown(
    input: &mut dyn RdbInput,
    spec: &WindowSpec,
    state: SlotState,
    first: &Link,
) -> Result<Vec<Link>, RdbError> {
    let count = input.read_unsigned()?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let can_grow = spec.params.scaling
        && spec.params.span.is_time()
        && matches!(state, SlotState::Live { .. })
        && count <= u64::from(MAX_GROWN_LINKS);
    if !can_grow {
        return Err(invalid("grown bit arrays where none can be"));
    }
    let mut grown: Vec<Link> = Vec::with_capacity(count as usize);
    for n in 1..=count as u32 {
        let before = grown.last().unwrap_or(first);
        if before.items < before.entries {
            return Err(invalid("a generation grew before its bit array was full"));
        }
        let link_spec = spec
            .growth_link(n)
            .map_err(|_| invalid("bad grown bit array"))?;
        let items = input.read_unsigned()?;
        let data = input.read_bit_array()?;
        if data.len() as u64 != link_spec.bytes {
            return Err(invalid("grown bit array size does not match the window"));
        }
        let link = Link::from_parts(
            link_spec.entries,
            link_spec.error,
            link_spec.bpe,
            link_spec.hashes,
            link_spec.bits,
            link_spec.n2,
            items,
            data,
        )
        .map_err(|_| invalid("bad grown bit array modulus"))?;
        grown.push(link);
    }
    Ok(grown)
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
            scaling: true,
        })
        .unwrap();
        let mut f = WindowFilter::new(spec, 5_000, &Unguarded).unwrap();
        for i in 0..adds {
            if let Span::Time { .. } = span {
                f.rotate_to(f.epoch_at(5_000 + i * 7));
            }
            f.add(f.hash(format!("{i}").as_bytes()), &Unguarded)
                .unwrap();
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

    /// The encoding version 1 layout, as versions without scaling windows
    /// wrote it.
    fn save_v1(f: &WindowFilter, out: &mut dyn RdbOutput) {
        let params = f.spec().params;
        out.write_unsigned(1);
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
        out.write_unsigned(0);
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

    /// Values saved before windows could scale load, as NONSCALING (the
    /// fixed memory they were made with), and save as version 2.
    #[test]
    fn version_1_values_load_as_nonscaling() {
        for span in [Span::Items { count: 100 }, Span::Time { ms: 2_000 }] {
            let f = filled(span, 500);
            let id = crate::dump_format::module_type_id(TYPE_NAME, 1).unwrap();
            let mut w = crate::dump_format::DumpWriter::new(id);
            save_v1(&f, &mut w);
            let old = w.finish(crate::dump_format::RDB_VERSION_7_0);
            let g = load_payload(&old).unwrap();
            assert!(!g.spec().params.scaling);
            assert_eq!(g.epoch(), f.epoch());
            for (x, y) in f.slots().iter().zip(g.slots()) {
                assert_eq!(x.state, y.state);
                assert_eq!(x.link.data().as_bytes(), y.link.data().as_bytes());
            }
            let again = dump_payload(&g, crate::dump_format::RDB_VERSION_7_0);
            let h = load_payload(&again).unwrap();
            assert!(!h.spec().params.scaling);
            // A version 2 body under a version 1 id (or the reverse) is
            // refused.
            let mut w = crate::dump_format::DumpWriter::new(id);
            save(&f, &mut w);
            assert!(load_payload(&w.finish(crate::dump_format::RDB_VERSION_7_0)).is_err());
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
