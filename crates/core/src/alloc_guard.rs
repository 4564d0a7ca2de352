//! The allocation guard every type's engine asks before it allocates:
//! the request (bytes now, the value's size after), the refusal with the
//! numbers its error names, and the guard that admits everything (tests,
//! and loading persisted data, which is never refused).

/// A request for memory the chain is about to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocRequest {
    /// Bytes of the new bit array.
    pub bytes: u64,
    /// What the filter will report as its size (BF.INFO Size) afterwards.
    pub filter_size_after: u64,
}

/// A refusal by an [`AllocGuard`], with the numbers the error names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    /// The bytes that were needed (by the filter or the server, per kind).
    pub needed: u64,
    /// The limit they would exceed.
    pub limit: u64,
    /// Memory already in use, for limits shared with other data.
    pub in_use: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// The per-filter memory cap.
    FilterCap,
    /// The server's maxmemory.
    MaxMemory,
    /// More than this machine could ever provide.
    MachineMemory,
}

/// Decides whether an allocation may happen, before it happens.
pub trait AllocGuard {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal>;
}

/// A guard that admits everything (tests, and loading persisted data).
pub struct Unguarded;

impl AllocGuard for Unguarded {
    fn admit(&self, _: AllocRequest) -> Result<(), Refusal> {
        Ok(())
    }
}
