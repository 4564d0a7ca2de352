//! The value stored under a key of type `MBbloomCF`.

use ferrobloom_core::cuckoo::filter::CuckooFilter;

#[derive(Debug)]
pub struct Cuckoo {
    filter: CuckooFilter,
}

impl Cuckoo {
    pub fn new(filter: CuckooFilter) -> Box<Cuckoo> {
        Box::new(Cuckoo { filter })
    }

    #[inline]
    pub fn filter(&self) -> &CuckooFilter {
        &self.filter
    }
}
