//! The bodies of the Cuckoo filter's fuzz targets: untrusted bytes decoded
//! as the module decodes them (a LOADCHUNK header, a data chunk, a DUMP
//! payload body) and, when accepted, exercised with their invariants
//! checked. A panic is a finding.

use super::dump::{dump_payload, load_payload};
use super::filter::{CompactMode, CuckooFilter, InsertOutcome};
use super::hash::CuckooHash;
use super::scandump::{self, create_from_header, load_chunk, Header};
use super::sizing::{sub_filter_buckets, CuckooParams, MAX_BUCKETS};
use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind};
use crate::dump_format;

/// Filters above this size are refused, so fuzzing explores shapes, not
/// memory (the Bloom targets' limit).
pub const LIMIT: u64 = crate::bloom::fuzzing::LIMIT;

struct SmallOnly;

impl AllocGuard for SmallOnly {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if request.bytes > LIMIT {
            Err(Refusal {
                kind: RefusalKind::FilterCap,
                needed: request.bytes,
                limit: LIMIT,
                in_use: 0,
            })
        } else {
            Ok(())
        }
    }
}

fn check_shape(f: &CuckooFilter) {
    assert!(f.sub_filter_count() >= 1, "a filter without sub-filters");
    assert!(f.bucket_size() >= 1, "bucket size 0");
    assert!(f.max_iterations() >= 1, "max iterations 0");
    for (i, sub) in f.sub_filters().iter().enumerate() {
        let n = sub.buckets();
        assert!(n.is_power_of_two() && n <= MAX_BUCKETS, "bucket count {n}");
        assert_eq!(
            Some(n),
            sub_filter_buckets(f.base_buckets(), f.expansion(), i as u32),
            "sub-filter {i} is not N0 x E^i (the AOF header could not rebuild it)"
        );
        assert_eq!(
            sub.bytes(),
            n * u64::from(f.bucket_size()),
            "sub-filter length"
        );
    }
}

/// Uses every operation of an accepted filter.
fn exercise(mut f: CuckooFilter, seed: &[u8]) {
    check_shape(&f);
    let _ = f.reported_size();
    let _ = Header::of(&f).encode();
    let _ = scandump::chunks(&f).count();
    let mut stored = Vec::new();
    for item in seed.chunks(3).take(8) {
        let h = CuckooHash::of(item);
        match f.insert(h, &SmallOnly) {
            InsertOutcome::Inserted => {
                assert!(f.contains(h), "an added item must be found");
                assert!(f.count(h) >= 1);
                stored.push(h);
            }
            InsertOutcome::Exists => unreachable!("insert never answers exists"),
            InsertOutcome::NoRoom => assert_eq!(f.expansion(), 0),
            InsertOutcome::GrowthFailed(_) => {}
        }
        let _ = f.insert_unique(h, &SmallOnly);
    }
    f.compact(CompactMode::Stop);
    for h in &stored {
        assert!(f.contains(*h), "compaction lost an item");
    }
    f.compact(CompactMode::Continue);
    assert_eq!(f.deletes(), 0);
    for h in &stored {
        assert!(f.delete(*h), "a stored item could not be deleted");
    }
    check_shape(&f);
    // A payload is built in a growing vector: its buffer could pass the
    // limit the replays check for filters near it.
    if f.total_bytes() > LIMIT / 4 {
        return;
    }
    let payload = dump_payload(&f, dump_format::RDB_VERSION_7_0);
    let g = load_payload(&payload).expect("a filter's own payload loads");
    assert_eq!(dump_payload(&g, dump_format::RDB_VERSION_7_0), payload);
}

/// A LOADCHUNK header (`CF.LOADCHUNK key 1 <data>`).
pub fn header(data: &[u8]) {
    if let Ok(f) = create_from_header(data, &SmallOnly) {
        assert_eq!(data.len(), scandump::HEADER_LEN);
        assert_eq!(
            Header::of(&f).encode()[..],
            data[..],
            "the header round-trips"
        );
        exercise(f, data);
    }
}

/// Data chunks on a small filter: the first byte picks its shape, then
/// each record is an 8-byte iterator, a length byte and that many bytes.
pub fn chunk(data: &[u8]) {
    let Some((&shape, mut rest)) = data.split_first() else {
        return;
    };
    let params = CuckooParams {
        capacity: 64 << (shape & 7),
        bucket_size: 1 + (shape >> 3 & 3),
        max_iterations: 20,
        expansion: u16::from(shape >> 5),
    };
    let mut f = CuckooFilter::new(&params, &SmallOnly).expect("a small filter");
    for i in 0..u32::from(shape >> 6) {
        f.insert(CuckooHash::of(&i.to_le_bytes()), &SmallOnly);
    }
    let total = f.total_bytes();
    while rest.len() >= 9 {
        let iterator = i64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        let len = usize::from(rest[8]).min(rest.len() - 9);
        let chunk = &rest[9..9 + len];
        rest = &rest[9 + len..];
        if load_chunk(&mut f, iterator, chunk).is_ok() {
            let end = (iterator - 1) as u64;
            assert!(!chunk.is_empty() && end >= chunk.len() as u64 && end <= total);
        }
    }
    assert_eq!(f.total_bytes(), total, "a chunk resized the filter");
    exercise(f, data);
}

/// A DUMP payload body (everything before the RDB version and CRC).
pub fn rdb(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(f) = load_payload(&payload) {
        if f.total_bytes() <= LIMIT {
            exercise(f, data);
        }
    }
}

/// Rebuilds `f` as CF.SCANDUMP → CF.LOADCHUNK does, and as the AOF rewrite
/// does (header, then every chunk), and requires the same value: the same
/// DUMP payload. A filter whose item counter is 0 exports nothing to a
/// client (2.8.2's SCANDUMP answers `[0, nil]` at once); its AOF rewrite
/// still writes it.
fn round_trip(f: &CuckooFilter) {
    if f.total_bytes() > LIMIT / 4 {
        return;
    }
    let want = dump_payload(f, dump_format::RDB_VERSION_7_0);
    // The AOF rewrite's commands.
    let header = Header::of(f).encode();
    let mut g = create_from_header(&header, &SmallOnly).expect("a filter's own header loads");
    for (next, data) in scandump::chunks(f) {
        load_chunk(&mut g, next as i64, data).expect("a filter's own chunk loads");
    }
    assert_eq!(
        dump_payload(&g, dump_format::RDB_VERSION_7_0),
        want,
        "AOF rewrite changed the value"
    );
    // A client's SCANDUMP loop: each call finds its sub-filter from the
    // first one (as in RedisBloom), so many sub-filters cost their square.
    if f.sub_filter_count() > 1024 {
        return;
    }
    let mut iterator = 0u64;
    let mut rebuilt: Option<CuckooFilter> = None;
    loop {
        match scandump::scandump(f, iterator) {
            scandump::Step::Done => break,
            scandump::Step::Header(h) => {
                assert!(rebuilt.is_none(), "a second header");
                rebuilt = Some(create_from_header(&h, &SmallOnly).expect("header loads"));
                iterator = 1;
            }
            scandump::Step::Chunk { next, data } => {
                let r = rebuilt.as_mut().expect("a chunk before the header");
                load_chunk(r, next as i64, data).expect("chunk loads");
                assert!(next > iterator, "iterators move forward");
                iterator = next;
            }
        }
    }
    match rebuilt {
        Some(r) => assert_eq!(
            dump_payload(&r, dump_format::RDB_VERSION_7_0),
            want,
            "SCANDUMP/LOADCHUNK changed the value"
        ),
        None => assert_eq!(f.items(), 0, "SCANDUMP exported nothing"),
    }
}

/// SCANDUMP → LOADCHUNK round trips: of a DUMP payload body the loader
/// accepts (as [`rdb`] decodes it), and of a filter built by commands from
/// the same bytes (first byte: shape; then one operation per byte).
pub fn round_trips(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(f) = load_payload(&payload) {
        check_shape(&f);
        round_trip(&f);
    }
    let Some((&shape, ops)) = data.split_first() else {
        return;
    };
    let bucket_size = 1 + (shape >> 2 & 3);
    let params = CuckooParams {
        capacity: u64::from(2 * bucket_size) << (shape & 3),
        bucket_size,
        max_iterations: 1 + u16::from(shape >> 4 & 3) * 10,
        expansion: [1, 2, 0, 4][usize::from(shape >> 6)],
    };
    let mut f = CuckooFilter::new(&params, &SmallOnly).expect("a small filter");
    for (i, &op) in ops.iter().enumerate() {
        let h = CuckooHash::of(&[op & 0x3f]);
        match op >> 6 {
            0 | 1 => {
                f.insert(h, &SmallOnly);
            }
            2 => {
                f.delete(h);
            }
            _ if i % 2 == 0 => f.compact(CompactMode::Continue),
            _ => {
                f.insert_unique(h, &SmallOnly);
            }
        }
    }
    check_shape(&f);
    round_trip(&f);
}
