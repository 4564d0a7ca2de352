//! COPY of a Cuckoo filter: every sub-filter's bytes copied directly into
//! a new block, so the copy costs one more filter's memory and no more
//! (no encoding of the whole value on the way).

use super::filter::{CuckooFilter, Parts, SubFilter};
use crate::bitarray::{AllocError, BitArray};

impl CuckooFilter {
    /// An independent copy, field for field and byte for byte; an
    /// allocation the allocator refuses (where it can say so) comes back
    /// as an error, and what was copied until then is freed.
    pub fn try_clone(&self) -> Result<CuckooFilter, AllocError> {
        let mut subs = Vec::new();
        subs.try_reserve_exact(self.sub_filters().len())
            .map_err(|_| AllocError { bytes: 0 })?;
        for sub in self.sub_filters() {
            let data = BitArray::from_bytes(sub.as_bytes())?;
            subs.push(SubFilter::with_data(sub.buckets(), data));
        }
        Ok(CuckooFilter::from_parts(Parts {
            bucket_size: self.bucket_size(),
            max_iterations: self.max_iterations(),
            expansion: self.expansion(),
            base_buckets: self.base_buckets(),
            items: self.items(),
            deletes: self.deletes(),
            subs,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
    use crate::cuckoo::dump::dump_payload;
    use crate::cuckoo::{CuckooFilter, CuckooHash, CuckooParams};

    struct Admit;
    impl AllocGuard for Admit {
        fn admit(&self, _: AllocRequest) -> Result<(), Refusal> {
            Ok(())
        }
    }

    #[test]
    fn a_copy_is_the_same_value_and_independent() {
        let params = CuckooParams {
            capacity: 64,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 2,
        };
        let mut f = CuckooFilter::new(&params, &Admit).unwrap();
        for i in 0..300u32 {
            f.insert(CuckooHash::of(&i.to_le_bytes()), &Admit);
        }
        f.delete(CuckooHash::of(&7u32.to_le_bytes()));
        assert!(f.sub_filter_count() > 1);
        let mut copy = f.try_clone().unwrap();
        assert_eq!(dump_payload(&copy, 10), dump_payload(&f, 10));
        copy.insert(CuckooHash::of(b"only in the copy"), &Admit);
        assert_ne!(dump_payload(&copy, 10), dump_payload(&f, 10));
        assert_eq!(copy.items(), f.items() + 1);
    }
}
