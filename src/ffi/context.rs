//! The context of the running command: opening its key, and rendering its
//! [`Outcome`] (the reply tree, the propagation, the keyspace events).

use std::ffi::{c_int, c_long, CStr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use ferrobloom_core::tdigest::format::{write_7_0, Buf70};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::args::{Args, RString};
use super::key::Key;
use super::{api, log, optional_api, LogLevel, REDISMODULE_OK};
use crate::command::{Batch, BatchReply, CommandError, Outcome, Propagation, Reply, RewriteArg};
use crate::notify::Events;

const CTX_FLAGS_RESP3: c_int = 1 << 22;

/// Whether the server prints RESP2 doubles with `%.17g` (Redis before
/// 7.2; 7.2 and Valkey print the shortest digits). Set once at load.
static PRINTS_17G: AtomicBool = AtomicBool::new(false);

/// Records the server's version (`0x00MMmmpp`, `RedisModule_GetServerVersion`).
pub fn set_server_version(version: c_int) {
    PRINTS_17G.store(version < 0x00_07_02_00, Relaxed);
}

/// The context of the running command.
pub struct Ctx {
    pub(super) raw: *mut RedisModuleCtx,
}

impl Ctx {
    pub fn as_ptr(&self) -> *mut RedisModuleCtx {
        self.raw
    }

    pub fn flags(&self) -> c_int {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_GetContextFlags)(self.raw) }
    }

    /// Whether the client speaks RESP3.
    pub fn is_resp3(&self) -> bool {
        self.flags() & CTX_FLAGS_RESP3 != 0
    }

    /// Whether the command comes from the master link or an AOF/RDB load.
    pub fn is_replicated_or_loading(&self) -> bool {
        self.flags()
            & (raw::REDISMODULE_CTX_FLAGS_REPLICATED as c_int
                | raw::REDISMODULE_CTX_FLAGS_LOADING as c_int)
            != 0
    }

    /// Whether the server is a replica that refuses clients' writes.
    pub fn is_read_only_replica(&self) -> bool {
        let flags = raw::REDISMODULE_CTX_FLAGS_SLAVE as c_int
            | raw::REDISMODULE_CTX_FLAGS_READONLY as c_int;
        self.flags() & flags == flags
    }

    /// Whether the running client's user may run `argv` (its command and
    /// keys, by its ACL rules); None when the server names no user for
    /// the client (the master link, a load, a module's call) or lacks the
    /// calls (they exist from Redis 7.0).
    pub fn user_may_run(&self, argv: &[&[u8]]) -> Option<bool> {
        let current = optional_api!(RedisModule_GetCurrentUserName)?;
        let by_name = optional_api!(RedisModule_GetModuleUserFromUserName)?;
        let check = optional_api!(RedisModule_ACLCheckCommandPermissions)?;
        let free_user = optional_api!(RedisModule_FreeModuleUser)?;
        // SAFETY: (1), (2); the name (possibly null: no user) is freed
        // below with the same context.
        let name = unsafe { current(self.raw) };
        if name.is_null() {
            return None;
        }
        // SAFETY: (1); name is a live string.
        let user = unsafe { by_name(name) };
        // SAFETY: (1), (2); created above, not used again.
        unsafe { api!(RedisModule_FreeString)(self.raw, name) };
        if user.is_null() {
            return None;
        }
        let mut strings: Vec<*mut RedisModuleString> = argv
            .iter()
            // SAFETY: (1), (2); each buffer is valid for its length and
            // copied; the strings are freed below.
            .map(|a| unsafe {
                api!(RedisModule_CreateString)(self.raw, a.as_ptr().cast(), a.len())
            })
            .collect();
        // SAFETY: (1); user is a live module user, strings holds
        // argv.len() live strings.
        let allowed =
            unsafe { check(user, strings.as_mut_ptr(), strings.len() as c_int) } == REDISMODULE_OK;
        for s in strings {
            // SAFETY: (1), (2); created above, not used again.
            unsafe { api!(RedisModule_FreeString)(self.raw, s) };
        }
        // SAFETY: (1); the user returned by GetModuleUserFromUserName,
        // freed once.
        unsafe { free_user(user) };
        Some(allowed)
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        log(self.raw, level, message);
    }

    /// Opens `name` for reading, or for writing: closing a key opened for
    /// writing signals it as modified (WATCH, client-side caching), as
    /// RedisBloom's write commands do.
    pub fn open(&self, name: &RString<'_>, write: bool) -> Key<'_> {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        // SAFETY: (1), (2); name is a live argument string (3). The handle
        // (possibly null for a missing key opened read-only) is owned by the
        // returned Key (4).
        let key = unsafe { api!(RedisModule_OpenKey)(self.raw, name.raw, mode as c_int) };
        Key::new(key)
    }

    /// Sends the outcome of a command run with `args`: the reply, then the
    /// propagation, then the events (for the key, argument 1). `command` is
    /// the registered name an arity error names.
    ///
    /// Inlined into each command's handler and taking the outcome by value,
    /// so what a command never produces (a rewrite, events, a tree) costs
    /// nothing there: the single-value replies of the hot commands are sent
    /// directly, and nothing is left to drop.
    #[inline(always)]
    pub fn render(&self, outcome: Outcome<'_>, command: &CStr, args: &Args<'_>) {
        let Outcome {
            reply,
            propagate,
            events,
        } = outcome;
        match reply {
            Reply::Bool(v) => self.reply_bool(v),
            Reply::Integer(v) => {
                // SAFETY: (1), (2).
                unsafe { api!(RedisModule_ReplyWithLongLong)(self.raw, v) };
            }
            Reply::Batch(batch) => self.reply_batch(&batch, command, &mut None),
            tree => self.reply_tree(tree, command),
        }
        match propagate {
            Propagation::Nothing => {}
            Propagation::Verbatim => {
                // SAFETY: (1), (2).
                unsafe { api!(RedisModule_ReplicateVerbatim)(self.raw) };
            }
            Propagation::Rewrite {
                command,
                args: rewrite,
            } => self.replicate(command, &rewrite, args),
            preceded => self.propagate_preceded(preceded, args),
        }
        if !events.is_empty() {
            self.notify_events(events, args);
        }
    }

    /// A propagation of several commands, in order: Redis wraps what one
    /// command replicates more than once in MULTI/EXEC, so replicas and
    /// the AOF apply them together.
    #[inline(never)]
    fn propagate_preceded(&self, propagation: Propagation, args: &Args<'_>) {
        match propagation {
            Propagation::Nothing => {}
            Propagation::Verbatim => {
                // SAFETY: (1), (2).
                unsafe { api!(RedisModule_ReplicateVerbatim)(self.raw) };
            }
            Propagation::Rewrite {
                command,
                args: rewrite,
            } => self.replicate(command, &rewrite, args),
            Propagation::Preceded(p) => {
                let crate::command::Preceded {
                    command,
                    args: rewrite,
                    then,
                } = *p;
                self.replicate(command, &rewrite, args);
                self.propagate_preceded(then, args);
            }
        }
    }

    #[inline(always)]
    fn reply_bool(&self, value: bool) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithBool)(self.raw, c_int::from(value)) };
    }

    /// A reply that is not a single value: walked out of line.
    #[inline(never)]
    fn reply_tree(&self, reply: Reply<'_>, command: &CStr) {
        self.reply(&reply, command, &mut None);
    }

    /// Sends `events` for the key when the server enables module events.
    #[inline(never)]
    fn notify_events(&self, events: Events, args: &Args<'_>) {
        if self.module_events_enabled() {
            let key = args.get(1);
            for event in events.iter() {
                self.notify(event.name(), &key);
            }
        }
    }

    /// An error reply: the one place where a command's error is sent.
    pub fn reply_error(&self, error: &CommandError, command: &CStr) {
        let text = error.reply_text(command);
        // SAFETY: (1), (2); the text is NUL-terminated.
        unsafe { api!(RedisModule_ReplyWithError)(self.raw, text.as_ptr()) };
    }

    /// Sends one reply node; `resp3` is read from the context the first
    /// time a node's shape depends on the protocol.
    fn reply(&self, reply: &Reply<'_>, command: &CStr, resp3: &mut Option<bool>) {
        let raw = self.raw;
        // SAFETY (every call below): (1), (2); strings are NUL-terminated and
        // buffers valid for their lengths; Redis copies them.
        unsafe {
            match reply {
                Reply::Ok => {
                    api!(RedisModule_ReplyWithSimpleString)(raw, c"OK".as_ptr());
                }
                Reply::Integer(v) => {
                    api!(RedisModule_ReplyWithLongLong)(raw, *v);
                }
                Reply::Bool(v) => {
                    api!(RedisModule_ReplyWithBool)(raw, c_int::from(*v));
                }
                Reply::Null => {
                    api!(RedisModule_ReplyWithNull)(raw);
                }

                Reply::Simple(text) => {
                    api!(RedisModule_ReplyWithSimpleString)(raw, text.as_ptr());
                }
                Reply::Bulk(bytes) => self.reply_bulk(bytes),
                Reply::Double(v) => {
                    if *resp3.get_or_insert_with(|| self.is_resp3()) {
                        api!(RedisModule_ReplyWithDouble)(raw, *v);
                    } else {
                        self.reply_bulk(crate::command::format_double(*v).as_bytes());
                    }
                }
                Reply::ServerDouble(v) => self.reply_server_double(*v, resp3),
                Reply::Error(e) => self.reply_error(e, command),
                Reply::Array(items) => {
                    api!(RedisModule_ReplyWithArray)(raw, items.len() as c_long);
                    for item in items {
                        self.reply(item, command, resp3);
                    }
                }
                Reply::Batch(items) => self.reply_batch(items, command, resp3),
                // A map of n pairs in RESP3; Redis sends an array of 2n in
                // RESP2.
                Reply::Map(fields) => {
                    api!(RedisModule_ReplyWithMap)(raw, fields.len() as c_long);
                    for (name, value) in fields {
                        api!(RedisModule_ReplyWithSimpleString)(raw, name.as_ptr());
                        self.reply(value, command, resp3);
                    }
                }
                Reply::Field(name, value) => {
                    if *resp3.get_or_insert_with(|| self.is_resp3()) {
                        api!(RedisModule_ReplyWithMap)(raw, 1);
                        api!(RedisModule_ReplyWithSimpleString)(raw, name.as_ptr());
                    } else {
                        api!(RedisModule_ReplyWithArray)(raw, 1);
                    }
                    self.reply(value, command, resp3);
                }
            }
        }
    }

    /// An array of a batch's replies (sent from `render`, not through
    /// the tree walk: most batches are the one reply of a hot command).
    #[inline(never)]
    fn reply_batch(&self, batch: &Batch, command: &CStr, resp3: &mut Option<bool>) {
        let raw = self.raw;
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithArray)(raw, batch.len() as c_long) };
        for item in batch.iter() {
            match item {
                BatchReply::Bool(v) => self.reply_bool(v),
                // SAFETY: (1), (2).
                BatchReply::Int(v) => unsafe {
                    api!(RedisModule_ReplyWithLongLong)(raw, v);
                },
                BatchReply::Double(v) => self.reply_server_double(v, resp3),
                BatchReply::NoRoom => self.reply_no_room(resp3),
                // SAFETY: (1), (2).
                BatchReply::Null => unsafe {
                    api!(RedisModule_ReplyWithNull)(raw);
                },
                BatchReply::Bytes(bytes) => self.reply_bulk(bytes),
                BatchReply::Error(e) => self.reply_error(e, command),
            }
        }
    }

    /// `:-1` in RESP2, `#f` in RESP3.
    fn reply_no_room(&self, resp3: &mut Option<bool>) {
        if *resp3.get_or_insert_with(|| self.is_resp3()) {
            self.reply_bool(false);
        } else {
            // SAFETY: (1), (2).
            unsafe { api!(RedisModule_ReplyWithLongLong)(self.raw, -1) };
        }
    }

    /// A double as the server's `RedisModule_ReplyWithDouble` sends it.
    /// Redis 7.0 prints a RESP2 double with C's `%.17g` (glibc's
    /// multiprecision `printf_fp`: most of the time of a reply of ten
    /// quantiles); the same bytes are formatted here, exactly (see
    /// `tdigest::format::write_7_0` and its test against the C library),
    /// and sent as the bulk string the server would send. RESP3 and newer
    /// servers (whose own formatting is fast) get the server's.
    fn reply_server_double(&self, v: f64, resp3: &mut Option<bool>) {
        if PRINTS_17G.load(Relaxed) && !*resp3.get_or_insert_with(|| self.is_resp3()) {
            let mut buf: Buf70 = [0; 32];
            self.reply_bulk(write_7_0(v, &mut buf).as_bytes());
        } else {
            // SAFETY: (1), (2).
            unsafe { api!(RedisModule_ReplyWithDouble)(self.raw, v) };
        }
    }

    fn reply_bulk(&self, bytes: &[u8]) {
        // SAFETY: (1), (2); the buffer is valid for its length and copied.
        unsafe {
            api!(RedisModule_ReplyWithStringBuffer)(self.raw, bytes.as_ptr().cast(), bytes.len())
        };
    }

    /// Propagates `command` with `rewrite` (instead of the command as
    /// received) to replicas and the AOF.
    fn replicate(&self, command: &CStr, rewrite: &[RewriteArg], args: &Args<'_>) {
        let mut created = Vec::new();
        let argv: Vec<*mut RedisModuleString> = rewrite
            .iter()
            .map(|a| match a {
                RewriteArg::Input(i) => args.get(*i).raw,
                RewriteArg::Text(t) => {
                    // SAFETY: (1), (2); the string is freed below.
                    let s = unsafe {
                        api!(RedisModule_CreateString)(self.raw, t.as_ptr().cast(), t.len())
                    };
                    created.push(s);
                    s
                }
            })
            .collect();
        // SAFETY: (1), (2), (3); "v" takes an array of strings and its length;
        // Redis keeps its own references to them.
        unsafe {
            api!(RedisModule_Replicate)(
                self.raw,
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_ptr(),
                argv.len(),
            )
        };
        for s in created {
            // SAFETY: (1), (2); created above, not used again.
            unsafe { api!(RedisModule_FreeString)(self.raw, s) };
        }
    }

    /// Whether `notify-keyspace-events` enables the module class (`d`).
    fn module_events_enabled(&self) -> bool {
        // SAFETY: (1); reads a server setting.
        let flags = unsafe { api!(RedisModule_GetNotifyKeyspaceEvents)() };
        flags & raw::REDISMODULE_NOTIFY_MODULE as c_int != 0
    }

    /// Sends a keyspace notification of class "module" (`d` in
    /// notify-keyspace-events) for `key`.
    fn notify(&self, event: &CStr, key: &RString<'_>) {
        // SAFETY: (1), (2), (3); the class is a valid notification class.
        unsafe {
            api!(RedisModule_NotifyKeyspaceEvent)(
                self.raw,
                raw::REDISMODULE_NOTIFY_MODULE as c_int,
                event.as_ptr(),
                key.raw,
            )
        };
    }
}
