//! The BF.* commands: argument checks in RedisBloom's order, then the key,
//! then the filter. Handlers are raw `extern "C"` functions: no wrapper
//! allocation, arguments borrowed in place.

use std::ffi::{c_int, CStr};

use redis_module::raw::{RedisModuleCmdFunc, RedisModuleCtx};

use crate::ffi::{api, Args};
use crate::grammar::ArgSource;

mod create;
mod dump;
mod observe;
mod read;
mod write;

/// `ERR wrong number of arguments for '<name>' command` as a static C
/// string, with the command's lowercase name whatever the client typed.
macro_rules! arity_error {
    ($name:literal) => {{
        const TEXT: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(
            concat!("ERR wrong number of arguments for '", $name, "' command\0").as_bytes(),
        ) {
            Ok(text) => text,
            Err(_) => panic!("arity error text"),
        };
        TEXT
    }};
}
pub(crate) use arity_error;

/// One command as registered (lowercase, as RedisBloom registers them: the
/// name shows in COMMAND INFO and INFO commandstats).
struct Command {
    name: &'static CStr,
    handler: RedisModuleCmdFunc,
    /// RedisBloom's flags: `write deny-oom` or `readonly fast`.
    flags: &'static CStr,
    /// Key positions (first, last, step); 0,0,0 for keyless commands.
    keys: (c_int, c_int, c_int),
    /// In the `fast` ACL category (where categories can be set): work
    /// bounded by the item count, not the filter size.
    fast: bool,
}

const WRITE: &CStr = c"write deny-oom";
const READ: &CStr = c"readonly fast";

/// A command on one key (positions 1, 1, 1).
const fn keyed(name: &'static CStr, handler: Handler, flags: &'static CStr, fast: bool) -> Command {
    Command {
        name,
        handler: Some(handler),
        flags,
        keys: (1, 1, 1),
        fast,
    }
}

type Handler = unsafe extern "C" fn(
    *mut RedisModuleCtx,
    *mut *mut redis_module::raw::RedisModuleString,
    c_int,
) -> c_int;

const COMMANDS: &[Command] = &[
    keyed(c"bf.reserve", write::reserve, WRITE, false),
    keyed(c"bf.add", write::add, WRITE, true),
    keyed(c"bf.madd", write::madd, WRITE, true),
    keyed(c"bf.insert", write::insert, WRITE, true),
    keyed(c"bf.exists", read::exists, READ, true),
    keyed(c"bf.mexists", read::mexists, READ, true),
    keyed(c"bf.info", read::info, READ, true),
    keyed(c"bf.card", read::card, READ, true),
    keyed(c"bf.debug", read::debug, READ, false),
    keyed(c"bf.scandump", dump::scandump, READ, false),
    keyed(c"bf.loadchunk", dump::loadchunk, WRITE, false),
    // FerroBloom's own.
    Command {
        name: c"bf.plan",
        handler: Some(observe::plan),
        flags: READ,
        keys: (0, 0, 0),
        fast: false,
    },
    keyed(c"bf.stats", observe::stats, READ, false),
];

/// Adds the `bloom` ACL category where the server supports module
/// categories (Redis 7.4+, Valkey 8+); false elsewhere.
fn add_bloom_category(ctx: *mut RedisModuleCtx) -> bool {
    // SAFETY: (1) of ffi; reading the API table; ctx is the OnLoad context
    // and the name is a static C string.
    unsafe {
        match redis_module::raw::RedisModule_AddACLCategory {
            Some(add) => add(ctx, c"bloom".as_ptr()) == crate::ffi::REDISMODULE_OK,
            None => false,
        }
    }
}

/// Puts a command in ACL categories where the server supports it (Redis
/// 7.2+, Valkey 8+): `read`/`write`, `fast` for the O(items) commands, and
/// `bloom` when that category exists. Redis 7.0 has no such call; there the
/// commands stay in no category, as RedisBloom's are.
fn set_categories(ctx: *mut RedisModuleCtx, c: &Command, bloom: bool) -> Result<(), String> {
    // SAFETY: (1) of ffi; reading the API table.
    let (Some(get), Some(set)) = (
        unsafe { redis_module::raw::RedisModule_GetCommand },
        unsafe { redis_module::raw::RedisModule_SetCommandACLCategories },
    ) else {
        return Ok(());
    };
    let mut categories = String::from(if c.flags == WRITE { "write" } else { "read" });
    if c.fast {
        categories.push_str(" fast");
    }
    if bloom {
        categories.push_str(" bloom");
    }
    let categories = std::ffi::CString::new(categories).expect("no NUL");
    // SAFETY: (1) of ffi; the command was just registered under this name.
    let status = unsafe {
        let command = get(ctx, c.name.as_ptr());
        if command.is_null() {
            return Err(format!("could not find {}", c.name.to_string_lossy()));
        }
        set(command, categories.as_ptr())
    };
    if status != crate::ffi::REDISMODULE_OK {
        return Err(format!(
            "could not set ACL categories of {}",
            c.name.to_string_lossy()
        ));
    }
    Ok(())
}

/// Registers every command. Called once from OnLoad.
pub fn register(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let bloom = add_bloom_category(ctx);
    for c in COMMANDS {
        let (first, last, step) = c.keys;
        // SAFETY: (1) of ffi; ctx is the OnLoad context; names and flags are
        // static NUL-terminated strings that Redis copies.
        let status = unsafe {
            api!(RedisModule_CreateCommand)(
                ctx,
                c.name.as_ptr(),
                c.handler,
                c.flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != crate::ffi::REDISMODULE_OK {
            return Err(format!("could not register {}", c.name.to_string_lossy()));
        }
        set_categories(ctx, c, bloom)?;
    }
    Ok(())
}

/// The command's arguments for the grammar, numbers parsed by Redis.
impl ArgSource for Args<'_> {
    fn count(&self) -> usize {
        self.len()
    }
    fn arg(&self, i: usize) -> &[u8] {
        self.bytes(i)
    }
    fn int(&self, i: usize) -> Option<i64> {
        self.get(i).to_i64()
    }
    fn double(&self, i: usize) -> Option<f64> {
        self.get(i).to_f64()
    }
}
