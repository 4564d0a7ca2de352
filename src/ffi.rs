//! The one place where the module touches the Redis module API for
//! commands: contexts, arguments, keys and replies, behind safe types.
//!
//! Invariants every `unsafe` block here relies on (numbered, cited by the
//! SAFETY notes):
//! 1. The API function pointers are filled by RedisModule_Init before any
//!    command runs, and the functions used exist on every supported server
//!    (Redis 7.0+, Valkey 8+); `api!` panics (caught at the boundary) if one
//!    is missing rather than calling through a null pointer.
//! 2. A `Ctx` wraps the context Redis passed to the running command; it is
//!    valid for the whole call, and only on the main thread.
//! 3. `argv` holds `argc` valid strings that live until the command
//!    returns, so byte slices borrowed from them live as long as `Args`.
//! 4. A `Key` owns an open key handle and closes it exactly once on drop;
//!    the value pointer of a key of our type is a `Box<Filter>` leaked by
//!    `Key::set_filter` or by the RDB loader, owned by Redis until `free`.

use std::ffi::{c_int, c_long, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleKey, RedisModuleString};

use crate::filter::Filter;

/// Calls a module API function, panicking (caught at the command
/// boundary) if the server does not export it.
macro_rules! api {
    ($name:ident) => {
        match redis_module::raw::$name {
            Some(f) => f,
            None => panic!(concat!("module API function missing: ", stringify!($name))),
        }
    };
}
pub(crate) use api;

/// The registered `MBbloom--` type, set once at load.
pub static BLOOM_TYPE: AtomicPtr<raw::RedisModuleType> = AtomicPtr::new(std::ptr::null_mut());

pub fn bloom_type() -> *mut raw::RedisModuleType {
    BLOOM_TYPE.load(Ordering::Relaxed)
}

pub const REDISMODULE_OK: c_int = raw::REDISMODULE_OK as c_int;
const CTX_FLAGS_RESP3: c_int = 1 << 22;

/// Log levels of RedisModule_Log.
#[derive(Clone, Copy)]
pub enum LogLevel {
    Notice,
    Warning,
}

/// Writes one line to the server log.
pub fn log(ctx: *mut RedisModuleCtx, level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Notice => c"notice",
        LogLevel::Warning => c"warning",
    };
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    if let Some(log) = unsafe { raw::RedisModule_Log } {
        // SAFETY: (1) the function exists; ctx is a valid context or null,
        // which RedisModule_Log accepts; "%s" consumes exactly one C string.
        unsafe { log(ctx, level.as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
    }
}

/// Whether the command running in `ctx` comes from the master link or an
/// AOF/RDB load.
pub fn is_replicated_or_loading(ctx: *mut RedisModuleCtx) -> bool {
    // SAFETY: (1), (2): ctx is the running command's context.
    let f = unsafe { api!(RedisModule_GetContextFlags)(ctx) };
    f & (raw::REDISMODULE_CTX_FLAGS_REPLICATED as c_int
        | raw::REDISMODULE_CTX_FLAGS_LOADING as c_int)
        != 0
}

/// A double in the shortest form that reads back exactly: plain decimals
/// for ordinary magnitudes (`0.01`, `1234.5`), exponent form for the rest
/// (`5.4e-18`), never hundreds of digits.
pub fn format_double(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-4..1e16).contains(&magnitude) || !value.is_finite() {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

/// The context of the running command.
pub struct Ctx {
    raw: *mut RedisModuleCtx,
}

impl Ctx {
    pub fn as_ptr(&self) -> *mut RedisModuleCtx {
        self.raw
    }

    pub fn reply_integer(&self, value: i64) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithLongLong)(self.raw, value) };
    }

    /// `:1`/`:0` in RESP2, `#t`/`#f` in RESP3.
    pub fn reply_bool(&self, value: bool) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithBool)(self.raw, c_int::from(value)) };
    }

    /// An error reply; `message` is sent after `-` as is, so it carries its
    /// own code (`ERR ...`) or none (`Bad capacity`), as RedisBloom's do.
    pub fn reply_error(&self, message: &CStr) {
        // SAFETY: (1), (2); message is NUL-terminated.
        unsafe { api!(RedisModule_ReplyWithError)(self.raw, message.as_ptr()) };
    }

    /// An error reply built at run time.
    pub fn reply_error_text(&self, message: &str) {
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        self.reply_error(&text);
    }

    pub fn reply_simple(&self, text: &CStr) {
        // SAFETY: (1), (2); text is NUL-terminated.
        unsafe { api!(RedisModule_ReplyWithSimpleString)(self.raw, text.as_ptr()) };
    }

    pub fn reply_ok(&self) {
        self.reply_simple(c"OK");
    }

    pub fn reply_bulk(&self, bytes: &[u8]) {
        // SAFETY: (1), (2); the buffer is valid for its length and copied.
        unsafe {
            api!(RedisModule_ReplyWithStringBuffer)(self.raw, bytes.as_ptr().cast(), bytes.len())
        };
    }

    pub fn reply_array(&self, len: usize) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithArray)(self.raw, len as c_long) };
    }

    /// An array whose length is set later with [`Ctx::set_array_length`].
    pub fn reply_postponed_array(&self) {
        // SAFETY: (1), (2).
        unsafe {
            api!(RedisModule_ReplyWithArray)(
                self.raw,
                raw::REDISMODULE_POSTPONED_ARRAY_LEN as c_long,
            )
        };
    }

    /// Sets the length of the last postponed array.
    pub fn set_array_length(&self, len: usize) {
        // SAFETY: (1), (2); a postponed array was opened by this command.
        unsafe { api!(RedisModule_ReplySetArrayLength)(self.raw, len as c_long) };
    }

    /// A map of `len` pairs (RESP3), or an array of `2 * len` (RESP2).
    pub fn reply_map(&self, len: usize) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithMap)(self.raw, len as c_long) };
    }

    /// A double: RESP3's double type, or in RESP2 a bulk string in the
    /// shortest form that reads back exactly (`0.01`, `1e-5`).
    pub fn reply_double(&self, value: f64, resp3: bool) {
        if resp3 {
            // SAFETY: (1), (2).
            unsafe { api!(RedisModule_ReplyWithDouble)(self.raw, value) };
        } else {
            self.reply_bulk(format_double(value).as_bytes());
        }
    }

    pub fn reply_null(&self) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplyWithNull)(self.raw) };
    }

    /// Whether the client speaks RESP3.
    pub fn is_resp3(&self) -> bool {
        self.flags() & CTX_FLAGS_RESP3 != 0
    }

    pub fn flags(&self) -> c_int {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_GetContextFlags)(self.raw) }
    }

    /// Whether the command comes from the master link or an AOF/RDB load,
    /// where refusing would lose data.
    pub fn is_replicated_or_loading(&self) -> bool {
        is_replicated_or_loading(self.raw)
    }

    /// Propagates `command` with `args` (instead of the command as received)
    /// to replicas and the AOF.
    pub fn replicate(&self, command: &CStr, args: &[ReplicaArg<'_>]) {
        let mut created = Vec::new();
        let argv: Vec<*mut RedisModuleString> = args
            .iter()
            .map(|a| match a {
                ReplicaArg::Arg(s) => s.raw,
                ReplicaArg::Text(t) => {
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

    /// Propagates the command as received to replicas and the AOF.
    pub fn replicate_verbatim(&self) {
        // SAFETY: (1), (2).
        unsafe { api!(RedisModule_ReplicateVerbatim)(self.raw) };
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        log(self.raw, level, message);
    }

    /// Opens `name` for reading.
    pub fn open_read(&self, name: &RString<'_>) -> Key<'_> {
        self.open(name, raw::REDISMODULE_READ as c_int)
    }

    /// Opens `name` for writing: closing it signals the key as modified
    /// (WATCH, client-side caching), as RedisBloom's write commands do.
    pub fn open_write(&self, name: &RString<'_>) -> Key<'_> {
        self.open(
            name,
            (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
        )
    }

    /// Whether `notify-keyspace-events` enables the module class (`d`).
    pub fn module_events_enabled(&self) -> bool {
        // SAFETY: (1); reads a server setting.
        let flags = unsafe { api!(RedisModule_GetNotifyKeyspaceEvents)() };
        flags & raw::REDISMODULE_NOTIFY_MODULE as c_int != 0
    }

    /// Sends a keyspace notification of class "module" (`d` in
    /// notify-keyspace-events) for `key`.
    pub fn notify(&self, event: &CStr, key: &RString<'_>) {
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

    fn open(&self, name: &RString<'_>, mode: c_int) -> Key<'_> {
        // SAFETY: (1), (2); name is a live argument string (3). The handle
        // (possibly null for a missing key opened read-only) is owned by the
        // returned Key (4).
        let raw = unsafe { api!(RedisModule_OpenKey)(self.raw, name.raw, mode) };
        Key {
            raw,
            kind: kind_of(raw),
            _ctx: PhantomData,
        }
    }
}

/// An argument of a rewritten command to propagate.
pub enum ReplicaArg<'a> {
    /// One of the command's own arguments.
    Arg(RString<'a>),
    Text(String),
}

/// A borrowed argument string.
#[derive(Clone, Copy)]
pub struct RString<'a> {
    raw: *mut RedisModuleString,
    _args: PhantomData<&'a ()>,
}

impl<'a> RString<'a> {
    /// The bytes, borrowed without copying.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        let mut len = 0usize;
        // SAFETY: (1), (3): the string is alive for 'a; the pointer/length
        // pair Redis returns describes its buffer.
        unsafe {
            let ptr = api!(RedisModule_StringPtrLen)(self.raw, &mut len);
            if len == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(ptr.cast::<u8>(), len)
            }
        }
    }

    /// Redis' own integer parsing (string2ll): what RedisBloom accepts.
    pub fn to_i64(self) -> Option<i64> {
        let mut value = 0i64;
        // SAFETY: (1), (3).
        let status = unsafe { api!(RedisModule_StringToLongLong)(self.raw, &mut value) };
        (status == REDISMODULE_OK).then_some(value)
    }

    /// Redis' own double parsing: strtod syntax, no NaN, no overflow, no
    /// underflow to zero, no surrounding spaces.
    pub fn to_f64(self) -> Option<f64> {
        let mut value = 0f64;
        // SAFETY: (1), (3).
        let status = unsafe { api!(RedisModule_StringToDouble)(self.raw, &mut value) };
        (status == REDISMODULE_OK).then_some(value)
    }
}

/// The arguments of the running command (argv[0] is the command name).
#[derive(Clone, Copy)]
pub struct Args<'a> {
    argv: &'a [*mut RedisModuleString],
}

impl<'a> Args<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        self.argv.len()
    }

    #[inline]
    pub fn get(&self, i: usize) -> RString<'a> {
        RString {
            raw: self.argv[i],
            _args: PhantomData,
        }
    }

    #[inline]
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        self.get(i).bytes()
    }

    /// The strings from `start` on.
    pub fn from(&self, start: usize) -> impl ExactSizeIterator<Item = RString<'a>> + 'a {
        let argv = self.argv;
        (start..argv.len()).map(move |i| RString {
            raw: argv[i],
            _args: PhantomData,
        })
    }
}

/// What an open key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Missing,
    Bloom,
    Other,
}

/// What the key behind an open handle holds.
fn kind_of(key: *mut RedisModuleKey) -> KeyKind {
    if key.is_null() {
        return KeyKind::Missing;
    }
    // SAFETY: (1), (4): the handle is open.
    unsafe {
        match api!(RedisModule_KeyType)(key) as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => KeyKind::Missing,
            raw::REDISMODULE_KEYTYPE_MODULE
                if api!(RedisModule_ModuleTypeGetType)(key) == bloom_type() =>
            {
                KeyKind::Bloom
            }
            _ => KeyKind::Other,
        }
    }
}

/// An open key, closed on drop. Its kind is read once, at opening.
pub struct Key<'c> {
    raw: *mut RedisModuleKey,
    kind: KeyKind,
    _ctx: PhantomData<&'c Ctx>,
}

impl Key<'_> {
    #[inline]
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    fn value(&self) -> Option<NonNull<Filter>> {
        if self.kind != KeyKind::Bloom {
            return None;
        }
        // SAFETY: (1), (4): the key holds a value of our type.
        NonNull::new(unsafe { api!(RedisModule_ModuleTypeGetValue)(self.raw) }.cast::<Filter>())
    }

    /// The filter, if the key holds one.
    pub fn filter(&self) -> Option<&Filter> {
        // SAFETY: (4): the value is a live Box<Filter> owned by the key,
        // not freed or replaced while this borrow of the key lasts.
        self.value().map(|p| unsafe { &*p.as_ptr() })
    }

    /// The filter for writing, if the key holds one (key opened for write).
    pub fn filter_mut(&mut self) -> Option<&mut Filter> {
        // SAFETY: (4), and &mut self makes the borrow exclusive; commands run
        // on the main thread only.
        self.value().map(|p| unsafe { &mut *p.as_ptr() })
    }

    /// Stores a new filter in an empty key opened for writing.
    pub fn set_filter(&mut self, filter: Box<Filter>) -> Option<&mut Filter> {
        let value = Box::into_raw(filter);
        // SAFETY: (1), (4); on success Redis owns the box and frees it through
        // the type's free callback.
        let status =
            unsafe { api!(RedisModule_ModuleTypeSetValue)(self.raw, bloom_type(), value.cast()) };
        if status == REDISMODULE_OK {
            self.kind = KeyKind::Bloom;
            // SAFETY: just stored; valid while the key is open.
            Some(unsafe { &mut *value })
        } else {
            // SAFETY: Redis did not take the value; reclaim and drop it.
            drop(unsafe { Box::from_raw(value) });
            None
        }
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: (1), (4): closed exactly once.
            unsafe { api!(RedisModule_CloseKey)(self.raw) };
        }
    }
}

/// Runs a command implementation with panics contained: a panic never
/// unwinds into Redis; the client gets an error and the server log a line.
#[inline(always)]
pub fn run_command(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    command: impl FnOnce(&Ctx, Args<'_>),
) -> c_int {
    let c = Ctx { raw: ctx };
    let argv: &[*mut RedisModuleString] = if argv.is_null() || argc <= 0 {
        &[]
    } else {
        // SAFETY: (3): Redis passes argc valid string pointers.
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    };
    let args = Args { argv };
    if catch_unwind(AssertUnwindSafe(|| command(&c, args))).is_err() {
        c.log(
            LogLevel::Warning,
            "internal error in a BF command; the command was aborted",
        );
        c.reply_error(c"ERR internal error");
    }
    REDISMODULE_OK
}

/// Declares an `extern "C"` command handler running `$body` through
/// [`run_command`].
macro_rules! command_handler {
    ($name:ident => $body:path) => {
        pub extern "C" fn $name(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::ffi::c_int,
        ) -> std::ffi::c_int {
            $crate::ffi::run_command(ctx, argv, argc, $body)
        }
    };
}
pub(crate) use command_handler;
