//! The value stored under a key of type `TDIS-TYPE`.

use ferrobloom_core::tdigest::TDigest;

use super::counted::Counted;

#[derive(Debug)]
pub struct TDigestValue {
    digest: TDigest,
    /// What INFO bf counts for it (`super::counted`).
    pub(super) counted: Counted,
}

impl TDigestValue {
    pub fn new(digest: TDigest) -> Box<TDigestValue> {
        let counted = Counted::enter(&digest);
        Box::new(TDigestValue { digest, counted })
    }

    #[inline]
    pub fn digest(&self) -> &TDigest {
        &self.digest
    }

    #[inline]
    pub fn digest_mut(&mut self) -> &mut TDigest {
        &mut self.digest
    }

    /// The bytes of the node array (what the guard admitted for it).
    pub fn node_bytes(&self) -> u64 {
        16 * self.digest.capacity() as u64
    }
}

impl Drop for TDigestValue {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counter.
        crate::guard::release(self.node_bytes());
        self.counted.leave();
    }
}
