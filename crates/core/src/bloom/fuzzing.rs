//! The bodies of the fuzz targets (fuzz/): each decodes untrusted bytes the
//! way the module does and, when they are accepted, exercises the result
//! and checks its invariants. A panic is a finding. Shared with the
//! regression test that replays saved crash inputs.

use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind, Unguarded};
use crate::bloom::chain::{Chain, ChainParams};
use crate::bloom::sizing::Policy;
use crate::bloom::{dump, scandump};
use crate::dump_format;

/// Filters above this size are refused so fuzzing explores shapes, not
/// memory.
pub const LIMIT: u64 = 16 << 20;

/// The guard of every fuzz target: refuses more than [`LIMIT`] bytes.
pub struct SmallOnly;

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

fn check_fill(chain: &Chain) {
    for link in chain.links() {
        assert_eq!(link.ones(), link.data().count_ones(), "fill count drifted");
        assert!(
            link.modulus() <= link.data().bit_len(),
            "modulus outside the array"
        );
    }
}

/// Uses every operation of an accepted chain.
fn exercise(chain: &mut Chain, seed: &[u8]) {
    check_fill(chain);
    let _ = chain.debug_lines();
    let _ = chain.reported_size();
    let _ = scandump::encode_header(chain);
    for item in seed.chunks(3).take(8) {
        let h = chain.hash(item);
        let before = chain.items();
        match chain.add(h, &SmallOnly) {
            crate::bloom::chain::AddOutcome::Added => {
                assert_eq!(chain.items(), before + 1);
                assert!(chain.contains(h), "an added item must be found");
            }
            _ => assert_eq!(chain.items(), before),
        }
    }
    check_fill(chain);
}

/// BF.LOADCHUNK of a header on a new key.
pub fn header(data: &[u8]) {
    if let Ok(header) = scandump::decode_header(data) {
        if let Ok(mut chain) = header.instantiate(&SmallOnly) {
            assert_eq!(
                scandump::encode_header(&chain),
                data,
                "a header re-encodes to itself"
            );
            exercise(&mut chain, data);
        }
    }
}

/// BF.LOADCHUNK data chunks at arbitrary iterators into a multi-link chain.
/// Input: 3 bytes of shape, then records of (iterator as LE i64, length
/// byte, bytes).
pub fn chunk(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let params = ChainParams {
        capacity: 1 + u64::from(data[0] % 16),
        error: 0.01,
        growth: 1 + u32::from(data[1] % 3),
        nonscaling: false,
        policy: if data[2] & 1 == 0 {
            Policy::Exact
        } else {
            Policy::Pow2
        },
    };
    let mut chain = Chain::new(&params, &Unguarded).expect("a small filter");
    for i in 0..40u32 {
        let h = chain.hash(&i.to_le_bytes());
        chain.add(h, &Unguarded);
    }
    let mut rest = &data[3..];
    while rest.len() >= 9 {
        let iter = i64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        let len = usize::from(rest[8]).min(rest.len() - 9);
        let bytes = &rest[9..9 + len];
        let _ = scandump::load_chunk(&mut chain, iter, bytes);
        let (next, out) = scandump::data_chunk(&chain, iter.max(1));
        assert!(next == 0 || next > iter.max(1), "iterators move forward");
        assert!(out.len() as u64 <= scandump::MAX_CHUNK);
        rest = &rest[9 + len..];
    }
    exercise(&mut chain, data);
}

/// An RDB / RESTORE value (every encoding version). The DUMP trailer is
/// appended here so that mutations reach the decoder instead of failing
/// the checksum.
pub fn rdb(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(mut chain) = dump::load_payload(&payload) {
        if chain.data_bytes() <= LIMIT {
            exercise(&mut chain, data);
        }
    }
}

/// Rebuilds `chain` as BF.SCANDUMP → BF.LOADCHUNK and the AOF rewrite do
/// (header, then every chunk) and requires the same DUMP payload.
fn round_trip(chain: &Chain) {
    if chain.data_bytes() > LIMIT / 4 {
        return;
    }
    let want = dump::dump_payload(chain, dump_format::RDB_VERSION_7_0);
    let header = scandump::encode_header(chain);
    let mut rebuilt = scandump::decode_header(&header)
        .expect("a chain's own header decodes")
        .instantiate(&SmallOnly)
        .expect("a chain's own header loads");
    let mut iter = 1i64;
    loop {
        let (next, data) = scandump::data_chunk(chain, iter);
        if next == 0 {
            break;
        }
        assert!(next > iter, "iterators move forward");
        scandump::load_chunk(&mut rebuilt, next, data).expect("a chain's own chunk loads");
        iter = next;
    }
    assert_eq!(
        dump::dump_payload(&rebuilt, dump_format::RDB_VERSION_7_0),
        want,
        "SCANDUMP/LOADCHUNK changed the value"
    );
}

/// SCANDUMP → LOADCHUNK round trips: of a DUMP payload body the loader
/// accepts (as [`rdb`] decodes it), and of a chain built by adds from the
/// same bytes (three bytes of shape, then items of two bytes).
pub fn round_trips(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(chain) = dump::load_payload(&payload) {
        round_trip(&chain);
    }
    if data.len() < 3 {
        return;
    }
    let params = ChainParams {
        capacity: 1 + u64::from(data[0] % 32),
        error: [0.1, 0.01, 0.001, 0.5][usize::from(data[1] & 3)],
        growth: 1 + u32::from(data[1] >> 2 & 3),
        nonscaling: data[1] & 0x80 != 0,
        policy: if data[2] & 1 == 0 {
            Policy::Exact
        } else {
            Policy::Pow2
        },
    };
    let Ok(mut chain) = Chain::new(&params, &SmallOnly) else {
        return;
    };
    for item in data[3..].chunks(2) {
        let h = chain.hash(item);
        let _ = chain.add(h, &SmallOnly);
    }
    round_trip(&chain);
}
