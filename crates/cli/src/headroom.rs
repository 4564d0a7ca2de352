//! Whether a destination has the memory for a migration, checked before
//! anything is written: a copy that runs out of memory half way leaves a
//! server short of memory for its own work, and nothing usable.
//!
//! Each node must hold the filters that land on it, plus the transfer
//! buffers of one LOADCHUNK at a time (the chunk arrives in the client's
//! query buffer and is copied into its argument: about twice its size).
//! The limits a node is checked against are its `maxmemory` (when set) and,
//! on FerroBloom, the memory guard's allowance and per-filter cap (`INFO bf`),
//! which would refuse the filter anyway.

use redis::Connection;

use crate::fmt;
use crate::{Failure, Result};

/// What a node reports about its memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMemory {
    /// `host:port` of the node.
    pub name: String,
    pub used: u64,
    /// 0: no maxmemory.
    pub maxmemory: u64,
    /// FerroBloom's `bf_memory_allowed`: what the guard lets the server use.
    pub guard_allowed: Option<u64>,
    /// FerroBloom's `bf_max_filter_bytes` (0: no cap).
    pub max_filter_bytes: Option<u64>,
}

/// What a migration needs from one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// Bit array bytes of every filter that lands on the node.
    pub filters: u64,
    /// The largest of them, with its name (readable form).
    pub largest: Option<(String, u64)>,
    /// Filters landing on the node.
    pub count: usize,
}

impl Need {
    pub fn add(&mut self, name: String, bytes: u64) {
        self.filters = self.filters.saturating_add(bytes);
        self.count += 1;
        if self.largest.as_ref().is_none_or(|(_, b)| bytes > *b) {
            self.largest = Some((name, bytes));
        }
    }
}

/// Why `node` cannot take what `need` asks, with transfer buffers for
/// chunks of `chunk_size` bytes; None when it can.
pub fn shortfall(node: &NodeMemory, need: &Need, chunk_size: u64) -> Option<String> {
    if need.count == 0 {
        return None;
    }
    if let (Some(cap), Some((name, bytes))) = (node.max_filter_bytes, &need.largest) {
        if cap > 0 && *bytes > cap {
            return Some(format!(
                "{}: {name} needs {} and the destination's bf.max-filter-bytes is {}; \
                 raise it (CONFIG SET bf.max-filter-bytes) or leave this filter out",
                node.name,
                fmt::bytes(*bytes),
                fmt::bytes(cap)
            ));
        }
    }
    let transfer = chunk_size.saturating_mul(2);
    let wanted = node
        .used
        .saturating_add(need.filters)
        .saturating_add(transfer);
    let limits = [
        (node.maxmemory, "maxmemory"),
        (
            node.guard_allowed.unwrap_or(0),
            "the memory FerroBloom's guard allows (bf_memory_allowed)",
        ),
    ];
    let (limit, what) = limits
        .into_iter()
        .filter(|(l, _)| *l > 0)
        .min_by_key(|(l, _)| *l)?;
    (wanted > limit).then(|| {
        format!(
            "{}: {} {} {} (plus {} of transfer buffers for {} chunks) and {} are in use, \
             over {what}, {}; nothing was copied. Free memory, raise the limit, copy fewer \
             filters (--key, --pattern) or use a smaller --chunk-size",
            node.name,
            fmt::count(need.count as u64, "filter"),
            if need.count == 1 { "needs" } else { "need" },
            fmt::bytes(need.filters),
            fmt::bytes(transfer),
            fmt::bytes(chunk_size),
            fmt::bytes(node.used),
            fmt::bytes(limit)
        )
    })
}

fn info_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads a node's memory figures (`INFO memory`, and `INFO bf` where the
/// server has it).
pub fn read(name: &str, conn: &mut Connection) -> Result<NodeMemory> {
    let fail = |e: redis::RedisError| {
        Failure::new(format!(
            "{name}: INFO memory: {}",
            crate::reply::describe_error(&e)
        ))
    };
    let memory: String = redis::cmd("INFO").arg("memory").query(conn).map_err(fail)?;
    // RedisBloom has no `bf` section: the reply is then empty.
    let bf: String = redis::cmd("INFO").arg("bf").query(conn).unwrap_or_default();
    Ok(NodeMemory {
        name: name.to_string(),
        used: info_field(&memory, "used_memory").unwrap_or(0),
        maxmemory: info_field(&memory, "maxmemory").unwrap_or(0),
        guard_allowed: info_field(&bf, "bf_memory_allowed"),
        max_filter_bytes: info_field(&bf, "bf_max_filter_bytes"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(used: u64, maxmemory: u64) -> NodeMemory {
        NodeMemory {
            name: "n:1".into(),
            used,
            maxmemory,
            guard_allowed: None,
            max_filter_bytes: None,
        }
    }

    fn need(sizes: &[u64]) -> Need {
        let mut n = Need::default();
        for (i, s) in sizes.iter().enumerate() {
            n.add(format!("f{i}"), *s);
        }
        n
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn no_limit_no_shortfall() {
        assert_eq!(
            shortfall(&node(1 << 40, 0), &need(&[1 << 40]), 4 * MIB),
            None
        );
    }

    #[test]
    fn maxmemory_counts_filters_and_transfer_buffers() {
        // 24 MiB filter, 1 MiB used, 4 MiB chunks: 33 MiB.
        let n = need(&[24 * MIB]);
        assert_eq!(shortfall(&node(MIB, 50 * MIB), &n, 4 * MIB), None);
        assert_eq!(shortfall(&node(MIB, 33 * MIB), &n, 4 * MIB), None);
        let why = shortfall(&node(MIB, 33 * MIB - 1), &n, 4 * MIB).unwrap();
        assert!(why.contains("over maxmemory"), "{why}");
        assert!(why.contains("nothing was copied"), "{why}");
        // One filter needs, two filters need.
        assert!(why.contains(": 1 filter needs 24.0 MiB"), "{why}");
        let two = need(&[12 * MIB, 12 * MIB]);
        let why = shortfall(&node(MIB, 33 * MIB - 1), &two, 4 * MIB).unwrap();
        assert!(why.contains(": 2 filters need 24.0 MiB"), "{why}");
        // 16 MiB chunks do not fit where 4 MiB chunks do.
        assert!(shortfall(&node(MIB, 50 * MIB), &n, 16 * MIB).is_some());
    }

    #[test]
    fn the_smaller_limit_decides() {
        let mut n = node(0, 100 * MIB);
        n.guard_allowed = Some(10 * MIB);
        let why = shortfall(&n, &need(&[9 * MIB]), MIB).unwrap();
        assert!(why.contains("bf_memory_allowed"), "{why}");
        n.guard_allowed = Some(1 << 40);
        assert_eq!(shortfall(&n, &need(&[9 * MIB]), MIB), None);
    }

    #[test]
    fn the_filter_cap_names_the_filter() {
        let mut n = node(0, 0);
        n.max_filter_bytes = Some(4 * MIB);
        let why = shortfall(&n, &need(&[MIB, 5 * MIB, 2 * MIB]), MIB).unwrap();
        assert!(why.contains("f1 needs 5.0 MiB"), "{why}");
        n.max_filter_bytes = Some(0);
        assert_eq!(shortfall(&n, &need(&[5 * MIB]), MIB), None);
        assert_eq!(shortfall(&n, &Need::default(), MIB), None);
    }

    #[test]
    fn info_fields() {
        let text = "# Memory\r\nused_memory:123\r\nused_memory_human:1K\r\nmaxmemory:0\r\n";
        assert_eq!(info_field(text, "used_memory"), Some(123));
        assert_eq!(info_field(text, "maxmemory"), Some(0));
        assert_eq!(info_field(text, "bf_memory_allowed"), None);
    }
}
