//! The big filter's data: its SCANDUMP stream (header and chunk layout),
//! the pseudo-random bits written into it with LOADCHUNK, and a hash that
//! checks what comes back.

use std::time::{Duration, Instant};

use super::KEY_BIG;
use crate::client::{expect_ok, show};
use crate::common::RawClient;
use crate::filters::reserve;

/// The SCANDUMP stream of a freshly reserved big filter: its header and
/// the (iterator, length) of each data chunk.
pub struct Layout {
    pub header: Vec<u8>,
    pub chunks: Vec<(i64, usize)>,
}

/// A whole SCANDUMP stream, read back.
pub struct Dump {
    pub layout: Layout,
    /// `hash_bytes` over the data chunks.
    pub hash: u64,
    /// Time spent in the SCANDUMP calls.
    pub waited: Duration,
}

/// One SCANDUMP reply: `*2 :iter $len data` (data `$-1` or empty at the end).
fn parse_scandump(raw: &[u8]) -> (i64, &[u8]) {
    let bad = || -> ! { panic!("BF.SCANDUMP replied {}", show(raw)) };
    let line = |at: usize| -> (&[u8], usize) {
        let end = at
            + raw[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .unwrap_or_else(|| bad());
        (&raw[at..end], end + 2)
    };
    let num = |b: &[u8]| -> i64 {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| bad())
    };
    if !raw.starts_with(b"*2\r\n:") {
        bad();
    }
    let (it, at) = line(5);
    let iter = num(it);
    let (len, at) = line(at);
    if len.first() != Some(&b'$') {
        bad();
    }
    let n = num(&len[1..]);
    if n < 0 {
        return (iter, &[]);
    }
    let n = n as usize;
    if raw.len() != at + n + 2 {
        bad();
    }
    (iter, &raw[at..at + n])
}

/// Streams the whole SCANDUMP of `key`.
pub fn scandump(c: &mut RawClient, key: &str) -> Dump {
    let mut layout = Layout {
        header: Vec::new(),
        chunks: Vec::new(),
    };
    let mut hash = HASH_SEED;
    let mut waited = Duration::ZERO;
    let mut iter = 0i64;
    loop {
        let it = iter.to_string();
        let t = Instant::now();
        let raw = c.cmd(&["BF.SCANDUMP", key, &it]);
        waited += t.elapsed();
        let (next, data) = parse_scandump(&raw);
        if next == 0 {
            break;
        }
        if iter == 0 {
            layout.header = data.to_vec();
        } else {
            layout.chunks.push((next, data.len()));
            hash = hash_bytes(hash, data);
        }
        iter = next;
    }
    assert!(!layout.header.is_empty(), "{key}: SCANDUMP gave no header");
    Dump {
        layout,
        hash,
        waited,
    }
}

const HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;

fn hash_bytes(mut h: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Chunk `index`'s content: pseudo-random bytes with half of the bits set,
/// like a filter at capacity (so that RDB compression does not flatter).
fn chunk_data(index: usize, buf: &mut [u8]) {
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ ((index as u64 + 1) * 0x9e37_79b9_7f4a_7c15);
    for w in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        w.copy_from_slice(&bytes[..w.len()]);
    }
}

/// Calls `f` with each chunk's iterator and content, in stream order.
fn for_each_chunk(layout: &Layout, mut f: impl FnMut(i64, &[u8])) {
    let max = layout.chunks.iter().map(|c| c.1).max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    for (i, &(iter, len)) in layout.chunks.iter().enumerate() {
        chunk_data(i, &mut buf[..len]);
        f(iter, &buf[..len]);
    }
}

/// Reserves the big filter and writes every chunk with LOADCHUNK.
pub fn load_big(c: &mut RawClient, capacity: u64, layout: &Layout) {
    reserve(c, KEY_BIG, capacity);
    for_each_chunk(layout, |iter, data| {
        let it = iter.to_string();
        let args: [&[u8]; 4] = [b"BF.LOADCHUNK", KEY_BIG.as_bytes(), it.as_bytes(), data];
        expect_ok(c, &args);
    });
}

/// The hash a SCANDUMP of what `load_big` wrote must give.
pub fn expected_big_hash(layout: &Layout) -> u64 {
    let mut hash = HASH_SEED;
    for_each_chunk(layout, |_, data| hash = hash_bytes(hash, data));
    hash
}
