//! The BF.* commands: argument checks in RedisBloom's order, then the key,
//! then the filter. Handlers are raw `extern "C"` functions: no wrapper
//! allocation, arguments borrowed in place.

use std::ffi::{c_int, CStr};

use redis_module::raw::{self, RedisModuleCmdFunc, RedisModuleCtx};

use crate::ffi::{api, log, Args, LogLevel};
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
    /// What the command does with its key, for the key spec; None for
    /// keyless commands.
    access: Option<Access>,
    /// In the `fast` ACL category (where categories can be set): work
    /// bounded by the item count, not the filter size.
    fast: bool,
}

const WRITE: &CStr = c"write deny-oom";
const READ: &CStr = c"readonly fast";

/// What a command does with its key, as its key spec tells the server (and
/// the server's ACL key permissions: `%R~` allows `Read`, `%W~` the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Reads the filter and returns what it holds: `RO access`.
    Read,
    /// Adds items to a filter or creates one: `RW insert`.
    Insert,
    /// Overwrites a filter's bits (BF.LOADCHUNK): `RW update`.
    Update,
}

impl Access {
    /// The REDISMODULE_CMD_KEY_* flags of the key spec.
    fn flags(self) -> u64 {
        u64::from(match self {
            Access::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
            Access::Insert => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
            Access::Update => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        })
    }
}

/// A command on one key (positions 1, 1, 1).
const fn keyed(
    name: &'static CStr,
    handler: Handler,
    flags: &'static CStr,
    access: Access,
    fast: bool,
) -> Command {
    Command {
        name,
        handler: Some(handler),
        flags,
        keys: (1, 1, 1),
        access: Some(access),
        fast,
    }
}

type Handler = unsafe extern "C" fn(
    *mut RedisModuleCtx,
    *mut *mut redis_module::raw::RedisModuleString,
    c_int,
) -> c_int;

const COMMANDS: &[Command] = &[
    keyed(c"bf.reserve", write::reserve, WRITE, Access::Insert, false),
    keyed(c"bf.add", write::add, WRITE, Access::Insert, true),
    keyed(c"bf.madd", write::madd, WRITE, Access::Insert, true),
    keyed(c"bf.insert", write::insert, WRITE, Access::Insert, true),
    keyed(c"bf.exists", read::exists, READ, Access::Read, true),
    keyed(c"bf.mexists", read::mexists, READ, Access::Read, true),
    keyed(c"bf.info", read::info, READ, Access::Read, true),
    keyed(c"bf.card", read::card, READ, Access::Read, true),
    keyed(c"bf.debug", read::debug, READ, Access::Read, false),
    keyed(c"bf.scandump", dump::scandump, READ, Access::Read, false),
    keyed(
        c"bf.loadchunk",
        dump::loadchunk,
        WRITE,
        Access::Update,
        false,
    ),
    // FerroBloom's own.
    Command {
        name: c"bf.plan",
        handler: Some(observe::plan),
        flags: READ,
        keys: (0, 0, 0),
        access: None,
        fast: false,
    },
    keyed(c"bf.stats", observe::stats, READ, Access::Read, false),
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

/// The version of the command-info structures this module passes, built
/// as the C header's `REDISMODULE_COMMAND_INFO_VERSION` is: version 1 and
/// the sizes of the structures, so the server reads arrays of them with the
/// module's stride.
static COMMAND_INFO_VERSION: raw::RedisModuleCommandInfoVersion =
    raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };

/// A key spec with `flags` that starts at `begin_search` (or none: the
/// terminator of a key spec array) and finds one key there
/// (`find_keys range lastkey 0 keystep 1 limit 0`).
fn key_spec(flags: u64, begin_search: Option<c_int>) -> raw::RedisModuleCommandKeySpec {
    let (begin, find, pos) = match begin_search {
        Some(pos) => (
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
            pos,
        ),
        None => (
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID,
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_OMITTED,
            0,
        ),
    };
    raw::RedisModuleCommandKeySpec {
        notes: std::ptr::null(),
        flags,
        begin_search_type: begin,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos },
        },
        find_keys_type: find,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        },
    }
}

/// Why a command's key spec could not be set.
enum KeySpecError {
    /// The server has no RedisModule_SetCommandInfo (or GetCommand).
    Unsupported,
    /// The server refused it.
    Refused,
}

/// Replaces the key spec the server derived from the key positions (`RW
/// access update`, RedisBloom 2.8.2's) with one that says what the command
/// does with its key, so that ACL key permissions apply as they do to the
/// server's own commands (`%R~` users can run the read commands). Redis
/// 7.0+ and Valkey 8+ have RedisModule_SetCommandInfo.
fn set_key_spec(ctx: *mut RedisModuleCtx, c: &Command) -> Result<(), KeySpecError> {
    let Some(access) = c.access else {
        return Ok(());
    };
    // SAFETY: (1) of ffi; reading the API table.
    let (Some(get), Some(set)) = (unsafe { raw::RedisModule_GetCommand }, unsafe {
        raw::RedisModule_SetCommandInfo
    }) else {
        return Err(KeySpecError::Unsupported);
    };
    // The spec and its terminator; the server copies them during the call.
    let mut specs = [key_spec(access.flags(), Some(1)), key_spec(0, None)];
    let info = raw::RedisModuleCommandInfo {
        version: &COMMAND_INFO_VERSION,
        summary: std::ptr::null(),
        complexity: std::ptr::null(),
        since: std::ptr::null(),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        // 0 keeps the arity given at registration (-1).
        arity: 0,
        key_specs: specs.as_mut_ptr(),
        args: std::ptr::null_mut(),
    };
    // SAFETY: (1) of ffi; ctx is the OnLoad context and the command was
    // just registered under this static name. `info` and the array it points
    // to (terminated by a spec with no begin-search type, laid out with the
    // sizes COMMAND_INFO_VERSION declares) live on this frame until the call
    // returns, and the server copies what it keeps.
    let status = unsafe {
        let command = get(ctx, c.name.as_ptr());
        if command.is_null() {
            return Err(KeySpecError::Refused);
        }
        set(command, &info)
    };
    if status == crate::ffi::REDISMODULE_OK {
        Ok(())
    } else {
        Err(KeySpecError::Refused)
    }
}

/// Registers every command. Called once from OnLoad.
pub fn register(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let bloom = add_bloom_category(ctx);
    let mut unsupported = false;
    let mut refused = Vec::new();
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
        match set_key_spec(ctx, c) {
            Ok(()) => {}
            Err(KeySpecError::Unsupported) => unsupported = true,
            Err(KeySpecError::Refused) => refused.push(c.name.to_string_lossy()),
        }
        set_categories(ctx, c, bloom)?;
    }
    // The commands work either way; only ACL key permissions see the
    // difference (every BF command then needs read and write access).
    if unsupported {
        log(
            ctx,
            LogLevel::Notice,
            "this server cannot set command key specs (no RedisModule_SetCommandInfo): \
             BF commands keep the key spec RW access update, so ACL users need \
             read and write key permissions (~ or %RW~) for every BF command",
        );
    } else if !refused.is_empty() {
        log(
            ctx,
            LogLevel::Notice,
            &format!(
                "the server refused the key specs of {}: they keep the key spec \
                 RW access update, so ACL users need read and write key permissions \
                 (~ or %RW~) for them",
                refused.join(", ")
            ),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_access_follows_the_command_flags() {
        for c in COMMANDS {
            let name = c.name.to_string_lossy();
            match c.access {
                None => assert_eq!(c.keys, (0, 0, 0), "{name}"),
                Some(Access::Read) => assert!(c.flags == READ && c.keys == (1, 1, 1), "{name}"),
                Some(Access::Insert | Access::Update) => {
                    assert!(c.flags == WRITE && c.keys == (1, 1, 1), "{name}")
                }
            }
        }
        let ro = u64::from(raw::REDISMODULE_CMD_KEY_RO);
        assert_eq!(Access::Read.flags() & ro, ro);
        assert_eq!(Access::Insert.flags() & ro, 0);
    }

    #[test]
    fn key_spec_array_is_terminated() {
        let end = key_spec(0, None);
        assert_eq!(end.begin_search_type, 0);
        assert_eq!(end.flags, 0);
        let spec = key_spec(Access::Update.flags(), Some(1));
        assert_eq!(
            spec.begin_search_type,
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX
        );
        // SAFETY: the index variant was written by key_spec.
        assert_eq!(unsafe { spec.bs.index.pos }, 1);
        assert_eq!(
            COMMAND_INFO_VERSION.sizeof_keyspec,
            std::mem::size_of::<raw::RedisModuleCommandKeySpec>()
        );
    }
}
