//! Harness shared by the differential tests (tests/differential.rs for
//! Bloom filters, tests/differential_cuckoo.rs for Cuckoo filters,
//! tests/differential_cms.rs for Count-Min sketches,
//! tests/differential_topk.rs for Top-K; tests/rdb_both_ways.rs uses its
//! Top-K payload reader): seeded
//! random numbers (`rng`), command and reply printing (`text`), a server
//! pair member (`Side`) with its replication stream read through SYNC and
//! its AOF rewrite (`side`), the generic comparison loop behind the
//! per-type `DiffType` trait (`runner`), Top-K payloads compared with
//! 2.8.2's pointer bytes masked (`topk_dump`), and the seed selection from
//! the environment (`DIFF_SEED`).

use std::time::{SystemTime, UNIX_EPOCH};

pub type Args = Vec<Vec<u8>>;

pub fn b(s: impl AsRef<[u8]>) -> Vec<u8> {
    s.as_ref().to_vec()
}

macro_rules! args {
    ($($x:expr),* $(,)?) => {
        Vec::<Vec<u8>>::from([$($crate::common::differential::b($x)),*])
    };
}
pub(crate) use args;

mod metadata;
mod rng;
mod runner;
mod side;
mod text;
mod topk_dump;

pub use metadata::{compare_command_metadata, Metadata};
pub use rng::Rng;
pub use runner::{run_random, Chunk, DiffType, Op, Pair, Runner};
pub use side::{log_tail, parse_commands, read_line, resp_len, ReplStream, Side};
pub use text::{eq_ic, parse_int, quote, show_cmd, show_reply, show_stream};
pub use topk_dump::{
    comparable_value, nul_cut, topk_dump, topk_payloads_agree, TopkDump, TopkFields,
};

/// The Lua script that returns a command's reply as it is.
pub const LUA_PCALL: &str = "return redis.pcall(unpack(ARGV))";

/// The Lua script that calls in RESP3 and returns what Lua cannot pass
/// on unchanged as text: a map comes back in the table's order, which
/// varies from call to call on the same server (observed on 2.8.2 alone),
/// so the script reports that it got one; a boolean as `true`/`false`.
pub const LUA_RESP3: &str = "redis.setresp(3); local r = redis.pcall(unpack(ARGV)); \
     if type(r) == 'table' and r.map then return 'map' end; \
     if type(r) == 'boolean' then return tostring(r) end; return r";

pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

pub fn seeds(fixed: &[u64]) -> Vec<u64> {
    if let Some(seed) = env_u64("DIFF_SEED") {
        return vec![seed];
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64;
    let mut time_seed = Rng(now ^ u64::from(std::process::id()));
    let mut seeds = fixed.to_vec();
    seeds.push(time_seed.next() >> 16);
    seeds
}
