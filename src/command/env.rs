//! What a command needs from the server besides its key.

use crate::config::Settings;
use crate::guard::ServerMemory;

/// The server as a command sees it. Each method is asked only when the
/// command needs the answer, so an add to an existing filter that allocates
/// nothing asks for nothing.
pub trait Env {
    /// The module settings (defaults of new filters, the memory cap).
    fn settings(&self) -> Settings;
    /// Whether the command comes from the master link or an AOF/RDB load:
    /// then the replica rule decides creation defaults, and the memory guard
    /// never refuses (refusing would lose data).
    fn replicated_or_loading(&self) -> bool;
    /// Whether a client (not the master link, not a load) sent the command
    /// to a read-only replica: CF.COMPACT, flagged read-only as in
    /// RedisBloom so that the server lets it through, refuses then (it
    /// moves fingerprints, and a replica whose layout differs from its
    /// master's would no longer be byte-identical).
    fn client_on_read_only_replica(&self) -> bool;
    /// The memory readings the guard decides on.
    fn memory(&self) -> &dyn ServerMemory;
    /// Writes a warning to the server log.
    fn log_warning(&self, message: &str);
    /// The server's clock in milliseconds (Unix time): when the generations
    /// of windowed filters begin and end, on the master.
    fn now_ms(&self) -> u64;
}
