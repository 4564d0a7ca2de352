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
    /// Whether the command comes from an AOF or RDB load (a part of
    /// [`Env::replicated_or_loading`]): nothing it propagates goes
    /// anywhere.
    fn loading(&self) -> bool;
    /// Whether this server is a master (not a replica). A t-digest read
    /// by a client on a master may leave a compress owed to replicas, and
    /// a master saves its digests as its clients see them
    /// (`tdigest::value`).
    fn is_master(&self) -> bool;
    /// Whether the user running the command may run `argv` (the command
    /// and its keys, by its ACL rules); None when no user can be told (the
    /// master link, a load, a module's call without one).
    fn user_may_run(&self, argv: &[&[u8]]) -> Option<bool>;
    /// The memory readings the guard decides on.
    fn memory(&self) -> &dyn ServerMemory;
    /// Writes a warning to the server log.
    fn log_warning(&self, message: &str);
    /// The server's clock in milliseconds (Unix time): when the generations
    /// of windowed filters begin and end, on the master.
    fn now_ms(&self) -> u64;
}
