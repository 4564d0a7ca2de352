//! Plain Bloom filters (MBbloom--): copied as their BF.SCANDUMP stream,
//! verified by the stream, BF.INFO and BF.CARD.

use super::super::copy::{self, Ends, Stream};
use super::super::protocol::{bloom_counters, Info};
use super::{Family, Job, Prepared};
use crate::conn::{Server, BLOOM_TYPE};
use crate::Result;

pub struct Bloom;

impl Stream for Bloom {
    fn prefix(&self) -> &'static str {
        "BF"
    }

    fn data_bytes(&self, header: &[u8]) -> Option<u64> {
        header_data_bytes(header)
    }

    fn counters(&self, server: &mut Server, key: &[u8]) -> Result<(Info, u64)> {
        bloom_counters(server, key)
    }

    fn counter_names(&self) -> &'static str {
        "BF.INFO/BF.CARD"
    }

    fn card_name(&self) -> &'static str {
        "BF.CARD"
    }

    fn verified_with(&self) -> &'static str {
        "BF.CARD and BF.INFO"
    }
}

impl Family for Bloom {
    fn type_name(&self) -> &'static str {
        BLOOM_TYPE
    }

    fn name(&self) -> &'static str {
        "Bloom filters"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        copy::prepare(self, src, key)
    }

    fn holds_partial(&self, dst: &mut Server, job: &Job) -> Result<bool> {
        copy::holds_partial(self, dst, job)
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        copy::stream(self, ends, job).map(Ok)
    }
}

/// The data bytes a SCANDUMP header describes (sum of its link sizes).
fn header_data_bytes(header: &[u8]) -> Option<u64> {
    use ferrobloom_core::bloom::scandump::{HEADER_FIXED, HEADER_PER_LINK};
    let links = u32::from_le_bytes(header.get(8..12)?.try_into().ok()?) as usize;
    if header.len() != HEADER_FIXED + HEADER_PER_LINK * links {
        return None;
    }
    (0..links).try_fold(0u64, |acc, i| {
        let at = HEADER_FIXED + HEADER_PER_LINK * i;
        let bytes = u64::from_le_bytes(header.get(at..at + 8)?.try_into().ok()?);
        acc.checked_add(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes() {
        // The header of the `sd` example of docs/commands.md: one 8-byte link.
        let mut h = Vec::new();
        h.extend_from_slice(&2u64.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&5u32.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        h.extend_from_slice(&8u64.to_le_bytes());
        h.extend_from_slice(&[0u8; 45]);
        assert_eq!(h.len(), 73);
        assert_eq!(header_data_bytes(&h), Some(8));
        assert_eq!(header_data_bytes(&h[..72]), None);
    }
}
