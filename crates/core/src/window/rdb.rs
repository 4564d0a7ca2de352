//! The RDB value of a windowed filter (FerroBloom's own type, `FBwindows`,
//! encoding version 3; plain Bloom filters keep RedisBloom's `MBbloom--`).
//!
//! ```text
//! unsigned  layout version (3)
//! double    error rate
//! unsigned  capacity
//! unsigned  span kind (0: items, 1: milliseconds), unsigned span
//! unsigned  generations, unsigned policy (0: exact, 1: power of two)
//! unsigned  scaling (1) or NONSCALING (0)                      [2, 3]
//! unsigned  origin (ms), unsigned epoch, unsigned active slot
//! unsigned  generations retired, unsigned items forgotten
//! per slot (generations + 2):
//!   unsigned state (0: clean, 1: live, 2: retired [1, 2 only]),
//!   unsigned its epoch (live) or bytes cleared (retired), unsigned items
//!   string bits                                              [1, 2 only]
//!   unsigned grown arrays; per grown array: unsigned items,  [2, 3]
//!   string bits
//! string    the cells: every slot's first bit array, interleaved  [3 only]
//! string    per block of 4,096 cells, its stale slots (16 bytes) [3 only]
//! unsigned  the sweep's next block, unsigned its credit (cells)   [3 only]
//! ```
//!
//! Versions 1 and 2 kept one bit array per slot, and a retired slot was
//! cleared from its start; they load into the interleaved cells of
//! [`super::cells`], a retired slot's bits left out (it loads clean). Version 1 has no scaling flag
//! and no grown arrays: filters saved by versions without scaling windows
//! load as NONSCALING, keeping the fixed memory they were created with.
//!
//! Nothing in a loaded value is trusted: the shape is recomputed from the
//! parameters and every slot must match it; the epochs, states and counts
//! must be ones the filter could have reached.

use super::cells::{Cells, Mask, SweepState, MARK_BYTES};
use super::filter::{Slot, SlotState, WindowFilter, WindowParts};
use super::sizing::{WindowParams, WindowSpec, MAX_GENERATIONS, MAX_GROWN_LINKS};
use super::span::{Span, MAX_ITEMS, MAX_TIME_MS};
use crate::bitarray::BitArray;
use crate::bloom::link::Link;
use crate::bloom::sizing::Policy;
use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The encoding version of the module type (what is written; 1 to 3 are
/// read).
pub const ENCODING_VERSION: i32 = 3;
/// The module type's name (9 characters, as the module API requires).
pub const TYPE_NAME: &[u8; 9] = b"FBwindows";

/// Each encoding version's layout version: the first field, checked.
const LAYOUT_VERSION: u64 = 3;

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
        };
        out.write_unsigned(state);
        out.write_unsigned(value);
        out.write_unsigned(slot.first_items);
        out.write_unsigned(slot.grown.len() as u64);
        for link in &slot.grown {
            out.write_unsigned(link.items);
            out.write_bytes(link.data().as_bytes());
        }
    }
    out.write_bytes(f.cells().data().as_bytes());
    let sweep = f.cells().sweep_state();
    let marks: Vec<u8> = sweep.stale.iter().flat_map(|m| m.to_le_bytes()).collect();
    out.write_bytes(&marks);
    out.write_unsigned(sweep.sweep_at);
    out.write_unsigned(sweep.sweep_credit);
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
    let cells_count = spec.link.modulus();
    let (slots, cells) = if layout < 3 {
        load_separate_arrays(input, &spec, layout, epoch)?
    } else {
        let mut slots = Vec::with_capacity(spec.slots as usize);
        for _ in 0..spec.slots {
            let state = match read_state(input, &spec, epoch, 0)? {
                Stored::Clean => SlotState::Clean,
                Stored::Live(epoch) => SlotState::Live { epoch },
                Stored::Retired(_) => return Err(invalid("bad generation state")),
            };
            let items = input.read_unsigned()?;
            let grown = read_grown(input, &spec, state, items)?;
            slots.push(Slot {
                first_items: items,
                first_ones: 0,
                grown,
                state,
            });
        }
        let data = input.read_bit_array()?;
        if data.len() as u64 != spec.link.bytes * u64::from(spec.slots) {
            return Err(invalid("cells size does not match the window"));
        }
        let cells = Cells::from_data(spec.slots, cells_count, spec.link.hashes, data)
            .ok_or(invalid("bad cells shape"))?;
        let marks = input.read_bit_array()?;
        if marks.len() as u64 != cells.mark_bytes() {
            return Err(invalid("stale marks do not match the cells"));
        }
        let stale: Vec<Mask> = marks
            .as_bytes()
            .chunks_exact(MARK_BYTES as usize)
            .map(|m| Mask::from_le_bytes(m.try_into().expect("16 bytes")))
            .collect();
        let sweep = SweepState {
            stale,
            sweep_at: input.read_unsigned()?,
            sweep_credit: input.read_unsigned()?,
        };
        let cells = cells.with_stale(sweep).ok_or(invalid("bad stale marks"))?;
        if !cells.padding_is_clear() {
            return Err(invalid("bits set past the last cell"));
        }
        (slots, cells)
    };
    finish(
        spec,
        cells,
        slots,
        Header {
            active,
            epoch,
            origin_ms,
            rotations,
            forgotten,
        },
    )
}

/// A slot's state as stored.
enum Stored {
    Clean,
    Live(u64),
    /// Versions 1 and 2: bytes cleared from the start of its array.
    Retired(u64),
}

/// A slot's state and its value, checked against the filter's epoch (a
/// retired slot's bytes cleared against `array_bytes`).
fn read_state(
    input: &mut dyn RdbInput,
    spec: &WindowSpec,
    epoch: u64,
    array_bytes: u64,
) -> Result<Stored, RdbError> {
    let g = u64::from(spec.params.generations);
    let state = input.read_unsigned()?;
    let value = input.read_unsigned()?;
    Ok(match state {
        CLEAN => Stored::Clean,
        // Live generations are the last G + 1 epochs at most.
        LIVE if value <= epoch && epoch - value <= g => Stored::Live(value),
        RETIRED if value <= array_bytes => Stored::Retired(value),
        _ => return Err(invalid("bad generation state")),
    })
}

/// Versions 1 and 2: one bit array per slot, each checked as it was
/// written, then moved into the cells (a cell takes bit `p` of each). The
/// cells are allocated only once every array has been read: a payload
/// must hold the bytes of a window before the window is allocated.
fn load_separate_arrays(
    input: &mut dyn RdbInput,
    spec: &WindowSpec,
    layout: u64,
    epoch: u64,
) -> Result<(Vec<Slot>, Cells), RdbError> {
    let mut live_arrays = Vec::new();
    let mut slots = Vec::with_capacity(spec.slots as usize);
    for s in 0..spec.slots {
        let stored = read_state(input, spec, epoch, spec.link.bytes)?;
        let items = input.read_unsigned()?;
        let data = input.read_bit_array()?;
        if data.len() as u64 != spec.link.bytes {
            return Err(invalid("generation size does not match the window"));
        }
        let clean_prefix = match stored {
            Stored::Clean => spec.link.bytes,
            Stored::Retired(cleared) => cleared,
            Stored::Live(_) => 0,
        };
        if data.as_bytes()[..clean_prefix as usize]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(invalid("a cleared generation has bits set"));
        }
        if matches!(stored, Stored::Clean) && items != 0 {
            return Err(invalid("a clean generation holds items"));
        }
        let state = match stored {
            Stored::Live(epoch) => {
                live_arrays.push((s, data));
                SlotState::Live { epoch }
            }
            // A retired generation is out of the window: what it held is
            // not looked up again, and its slot loads clean.
            Stored::Clean | Stored::Retired(_) => SlotState::Clean,
        };
        let grown = match layout {
            1 => Vec::new(),
            _ => read_grown(input, spec, state, items)?,
        };
        slots.push(Slot {
            first_items: if state == SlotState::Clean { 0 } else { items },
            first_ones: 0,
            grown,
            state,
        });
    }
    let mut cells = WindowFilter::new_cells(spec).map_err(|_| invalid("cells not allocated"))?;
    for (s, data) in live_arrays {
        set_slot_bits(&mut cells, s, &data);
    }
    Ok((slots, cells))
}

/// Copies the bits of one slot's own array (positions past the cells are
/// never looked up, and dropped) into its bit of each cell.
fn set_slot_bits(cells: &mut Cells, slot: u32, data: &BitArray) {
    let limit = cells.cells();
    for (w, chunk) in data.as_bytes().chunks(8).enumerate() {
        let mut buf = [0u8; 8];
        buf[..chunk.len()].copy_from_slice(chunk);
        let mut word = u64::from_le_bytes(buf);
        while word != 0 {
            let p = w as u64 * 64 + u64::from(word.trailing_zeros());
            word &= word - 1;
            if p < limit {
                cells.set(p, slot);
            }
        }
    }
}

/// The filter's own fields, read before the slots.
struct Header {
    active: u64,
    epoch: u64,
    origin_ms: u64,
    rotations: u64,
    forgotten: u64,
}

/// Checks what only the whole value shows (bits of clean and cleared
/// slots, items, the active slot, distinct epochs) and builds the filter.
fn finish(
    spec: WindowSpec,
    cells: Cells,
    mut slots: Vec<Slot>,
    h: Header,
) -> Result<WindowFilter, RdbError> {
    for (i, slot) in slots.iter_mut().enumerate() {
        slot.first_ones = cells.count_slot(i as u32, 0..cells.cells());
        if slot.state == SlotState::Clean && (slot.first_ones != 0 || slot.first_items != 0) {
            return Err(invalid("a clean generation holds items"));
        }
        if let (Span::Items { .. }, SlotState::Live { .. }) = (spec.params.span, slot.state) {
            if slot.first_items > spec.generation_span {
                return Err(invalid("a generation holds more items than its share"));
            }
        }
    }
    let epoch = h.epoch;
    let active = usize::try_from(h.active)
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
    if let Span::Items { .. } = spec.params.span {
        if slots[active].first_items >= spec.generation_span {
            return Err(invalid("the active generation is past its share"));
        }
    }
    Ok(WindowFilter::from_parts(WindowParts {
        spec,
        cells,
        slots,
        active,
        epoch,
        origin_ms: h.origin_ms,
        rotations: h.rotations,
        forgotten: h.forgotten,
    }))
}

/// The bit arrays a live generation grew: only a scaling time window's,
/// each the size [`WindowSpec::growth_link`] gives, each grown only when
/// the one before it held its capacity.
fn read_grown(
    input: &mut dyn RdbInput,
    spec: &WindowSpec,
    state: SlotState,
    first_items: u64,
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
        let (items, entries) = match grown.last() {
            Some(l) => (l.items, l.entries),
            None => (first_items, spec.link.entries),
        };
        if items < entries {
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
    use crate::alloc_guard::Unguarded;
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
            assert_eq!(x.first_items, y.first_items);
            assert_eq!(x.first_ones, y.first_ones);
        }
        assert_eq!(a.cells().data().as_bytes(), b.cells().data().as_bytes());
    }

    /// Slot `slot`'s own bit array, as versions 1 and 2 wrote it: bit `p`
    /// is the slot's bit of cell `p`.
    fn slot_array(f: &WindowFilter, slot: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; f.spec().link.bytes as usize];
        for p in 0..f.cells().cells() {
            if f.cells().get(p, slot as u32) {
                bytes[(p / 8) as usize] |= 1 << (p % 8);
            }
        }
        bytes
    }

    fn legacy_state(state: SlotState) -> (u64, u64) {
        match state {
            SlotState::Clean => (CLEAN, 0),
            SlotState::Live { epoch } => (LIVE, epoch),
        }
    }

    /// The encoding version 2 layout: one array per slot; slot `retired`
    /// (if any) written as a retired generation cleared up to byte 8.
    fn save_v2(f: &WindowFilter, out: &mut dyn RdbOutput, retired: Option<usize>) {
        save_header(f, out, 2);
        for (i, slot) in f.slots().iter().enumerate() {
            let mut array = slot_array(f, i);
            let (state, value) = if Some(i) == retired {
                array[..8].fill(0);
                (RETIRED, 8)
            } else {
                legacy_state(slot.state)
            };
            out.write_unsigned(state);
            out.write_unsigned(value);
            out.write_unsigned(slot.first_items);
            out.write_bytes(&array);
            out.write_unsigned(slot.grown.len() as u64);
            for link in &slot.grown {
                out.write_unsigned(link.items);
                out.write_bytes(link.data().as_bytes());
            }
        }
    }

    fn save_header(f: &WindowFilter, out: &mut dyn RdbOutput, layout: u64) {
        let params = f.spec().params;
        out.write_unsigned(layout);
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
        if layout >= 2 {
            out.write_unsigned(u64::from(params.scaling));
        }
        out.write_unsigned(f.origin_ms());
        out.write_unsigned(f.epoch());
        out.write_unsigned(f.active_slot() as u64);
        out.write_unsigned(f.rotations());
        out.write_unsigned(f.forgotten());
    }

    /// What a value saved by version 2 holds is what the filter holds: the
    /// same answers, the same bits in each slot, and a round trip.
    #[test]
    fn version_2_values_load_into_cells() {
        for span in [Span::Items { count: 100 }, Span::Time { ms: 2_000 }] {
            let f = filled(span, 700);
            let id = crate::dump_format::module_type_id(TYPE_NAME, 2).unwrap();
            let mut w = crate::dump_format::DumpWriter::new(id);
            save_v2(&f, &mut w, None);
            let old = w.finish(crate::dump_format::RDB_VERSION_7_0);
            let g = load_payload(&old).unwrap();
            assert_eq!(g.spec().params.scaling, f.spec().params.scaling);
            assert_eq!(g.epoch(), f.epoch());
            for (i, (x, y)) in f.slots().iter().zip(g.slots()).enumerate() {
                assert_eq!(x.first_items, y.first_items);
                assert_eq!(x.first_ones, y.first_ones);
                assert_eq!(slot_array(&f, i), slot_array(&g, i));
                assert_eq!(x.state, y.state);
            }
            for i in 0..2000u32 {
                let h = f.hash(&i.to_le_bytes());
                assert_eq!(f.contains(h, f.epoch()), g.contains(h, g.epoch()));
            }
            // A generation saved as retired (its first bytes cleared, the
            // rest still set) loads clean: out of the window, and its slot
            // ready for the next one.
            let older = (0..f.slots().len())
                .find(|&i| i != f.active_slot() && f.slots()[i].first_ones > 0)
                .expect("an older generation with bits");
            let mut w = crate::dump_format::DumpWriter::new(id);
            save_v2(&f, &mut w, Some(older));
            let g = load_payload(&w.finish(crate::dump_format::RDB_VERSION_7_0)).unwrap();
            assert_eq!(g.slots()[older].state, SlotState::Clean);
            assert_eq!(g.slots()[older].first_ones, 0);
            assert_eq!(g.cells().count_slot(older as u32, 0..g.cells().cells()), 0);
        }
    }

    /// The encoding version 1 layout, as versions without scaling windows
    /// wrote it.
    fn save_v1(f: &WindowFilter, out: &mut dyn RdbOutput) {
        save_header(f, out, 1);
        for (i, slot) in f.slots().iter().enumerate() {
            let (state, value) = legacy_state(slot.state);
            out.write_unsigned(state);
            out.write_unsigned(value);
            out.write_unsigned(slot.first_items);
            out.write_bytes(&slot_array(f, i));
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
            for (i, x) in f.slots().iter().enumerate() {
                assert_eq!(slot_array(&f, i), slot_array(&g, i));
                assert_eq!(x.first_items, g.slots()[i].first_items);
            }
            let again = dump_payload(&g, crate::dump_format::RDB_VERSION_7_0);
            let h = load_payload(&again).unwrap();
            assert!(!h.spec().params.scaling);
            // A version 3 body under a version 1 id (or the reverse) is
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
