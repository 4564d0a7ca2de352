//! Commands as the server sees them: one generic `extern "C"` trampoline
//! per kind of command (keyed, keyless), which parses, opens the key, runs
//! the command layer and renders its outcome with panics contained; and
//! registration (flags, key specs, ACL categories). Handlers stay raw
//! `extern "C"` functions: no wrapper allocation, arguments borrowed in
//! place.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::args::Args;
use super::context::Ctx;
use super::env::CommandEnv;
use super::key::Key;
use super::key::RegisteredType;
use super::{api, log, optional_api, LogLevel, REDISMODULE_OK};
use crate::command::{
    route, Access, ArgSource, CommandError, KeySlot, KeyState, KeyedCommand, KeylessCommand,
    Outcome, RefusalCheck, Route, Sources,
};

/// A command whose value type is registered with the server, so that its
/// keys can be opened as that type.
pub trait Served: KeyedCommand<Value: RegisteredType> {}

impl<C: KeyedCommand<Value: RegisteredType>> Served for C {}

pub type Handler = extern "C" fn(*mut RedisModuleCtx, *mut *mut RedisModuleString, c_int) -> c_int;

/// The source keys of a running command on many keys (CMS.MERGE,
/// TDIGEST.MERGE), opened for reading when the command reaches them.
pub(super) struct OpenSources<'c, 'a> {
    pub ctx: &'c Ctx,
    pub args: &'c Args<'a>,
}

impl<V: RegisteredType> Sources<V> for OpenSources<'_, '_> {
    type Key<'k>
        = Key<'k>
    where
        Self: 'k;

    fn open(&self, arg: usize, _: &[u8]) -> Key<'_> {
        self.ctx.open(&self.args.get(arg), false)
    }
}

/// For a command registered `getkeys-api`: when the server calls it only
/// to learn its keys (Redis 7.0's cluster finds a module command's keys
/// that way or through the positions given at registration, never through
/// key specs), declares `positions` and answers true; otherwise false.
pub(super) fn declared_key_positions(ctx: &Ctx, positions: impl Iterator<Item = usize>) -> bool {
    // SAFETY: (1), (2).
    if unsafe { api!(RedisModule_IsKeysPositionRequest)(ctx.as_ptr()) } == 0 {
        return false;
    }
    for pos in positions {
        // SAFETY: (1), (2); the command's positions are below argc.
        unsafe { api!(RedisModule_KeyAtPos)(ctx.as_ptr(), pos as c_int) };
    }
    true
}

/// Runs a command implementation with panics contained: a panic never
/// unwinds into Redis; the client gets an error and the server log a line.
#[inline(always)]
pub(super) fn run_command(
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
    // SAFETY: (3), as above.
    let args = unsafe { Args::new(argv) };
    if catch_unwind(AssertUnwindSafe(|| command(&c, args))).is_err() {
        c.log(
            LogLevel::Warning,
            "internal error in a BF command; the command was aborted",
        );
        c.reply_error(&CommandError::Static(c"ERR internal error"), c"");
    }
    REDISMODULE_OK
}

/// Parses, opens the key and runs `C` on it, then renders the outcome.
#[inline(always)]
fn run_keyed<C>(ctx: &Ctx, args: &Args<'_>, env: &CommandEnv<'_>)
where
    C: Served,
{
    let request = match C::parse(args, env) {
        Ok(request) => request,
        Err(e) => return ctx.reply_error(&e, C::NAME),
    };
    let mut key = ctx.open(&args.get(1), C::WRITES);
    let check = RefusalCheck::start();
    let outcome = C::run(request, args, &mut key, env);
    render_checked(ctx, outcome, &check, C::NAME, args);
}

/// Renders `outcome` after applying the propagation rule to it (see
/// `command::applied`): the one place every keyed command passes.
#[inline(always)]
pub(super) fn render_checked(
    ctx: &Ctx,
    mut outcome: Outcome<'_>,
    check: &RefusalCheck,
    command: &CStr,
    args: &Args<'_>,
) {
    check.enforce(&mut outcome, command, |message| {
        ctx.log(LogLevel::Warning, message)
    });
    ctx.render(outcome, command, args);
}

/// Whether the open key holds a `W::Value`.
fn holds<W: RegisteredType>(key: &impl KeySlot<W>) -> bool {
    matches!(key.kind(), KeyState::Held(()))
}

/// The handler of a command two value types share under one name (the
/// BF.* commands on plain and windowed filters): `command::route` decides
/// which runs, `W` when the arguments ask for a new `W::Value`
/// ([`KeyedCommand::claims_new_key`]) or the key holds one, `C` otherwise.
/// `C`'s argument checks come first, before the key is opened (RedisBloom's
/// order); arguments only `W` accepts are checked again by `W` once the key
/// turns out to hold its type (opened for reading then, so that no WATCH
/// sees a failed command as a change).
extern "C" fn routed_handler<C, W>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int
where
    C: Served,
    W: Served,
{
    const { assert!(C::WRITES == W::WRITES) };
    run_command(ctx, argv, argc, |ctx, args| {
        let env = CommandEnv::new(ctx);
        if route(W::claims_new_key(&args), || false) == Route::Second {
            return run_keyed::<W>(ctx, &args, &env);
        }
        let request = match C::parse(&args, &env) {
            Ok(request) => request,
            Err(e) => {
                let key_holds_w =
                    || args.count() >= 2 && holds::<W::Value>(&ctx.open(&args.get(1), false));
                return match route(false, key_holds_w) {
                    Route::Second => run_keyed::<W>(ctx, &args, &env),
                    Route::First => ctx.reply_error(&e, C::NAME),
                };
            }
        };
        let mut key = ctx.open(&args.get(1), C::WRITES);
        let check = RefusalCheck::start();
        if route(false, || holds::<W::Value>(&key)) == Route::Second {
            let outcome = match W::parse(&args, &env) {
                Ok(request) => W::run(request, &args, &mut key, &env),
                Err(e) => return ctx.reply_error(&e, W::NAME),
            };
            return render_checked(ctx, outcome, &check, W::NAME, &args);
        }
        let outcome = C::run(request, &args, &mut key, &env);
        render_checked(ctx, outcome, &check, C::NAME, &args);
    })
}

/// The handler of a command on one key of one value type.
extern "C" fn keyed_handler<C>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int
where
    C: Served,
{
    run_command(ctx, argv, argc, |ctx, args| {
        run_keyed::<C>(ctx, &args, &CommandEnv::new(ctx))
    })
}

/// The handler of a command without a key.
extern "C" fn keyless_handler<C: KeylessCommand>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    run_command(ctx, argv, argc, |ctx, args| {
        let env = CommandEnv::new(ctx);
        let outcome = C::run(&args, &env);
        ctx.render(outcome, C::NAME, &args);
    })
}

/// The handler of a command without a key two types share under one name
/// (BF.PLAN): `W` runs when its arguments are `W`'s
/// ([`KeylessCommand::claims`]), `C` otherwise.
extern "C" fn routed_keyless_handler<C: KeylessCommand, W: KeylessCommand>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    run_command(ctx, argv, argc, |ctx, args| {
        let env = CommandEnv::new(ctx);
        match route(W::claims(&args), || false) {
            Route::Second => ctx.render(W::run(&args, &env), W::NAME, &args),
            Route::First => ctx.render(C::run(&args, &env), C::NAME, &args),
        }
    })
}

/// One command as registered (lowercase, as RedisBloom registers them: the
/// name shows in COMMAND INFO and INFO commandstats).
pub struct CommandSpec {
    name: &'static CStr,
    handler: Handler,
    /// RedisBloom's flags: `write deny-oom` or `readonly fast`.
    flags: &'static CStr,
    /// Key positions (first, last, step); 0,0,0 for keyless commands.
    keys: (c_int, c_int, c_int),
    /// What the command does with its key, for the key spec; None for
    /// keyless commands.
    access: Option<Access>,
    /// In the `fast` ACL category (where categories can be set): work
    /// bounded by the item count, not the value's size.
    fast: bool,
    /// Keys after the first, counted by an argument (CMS.MERGE's sources).
    more_keys: Option<NumKeys>,
}

/// Keys counted by the argument at `at` and following it, each used with
/// `access`: a `keynum` key spec, so the server (Redis Cluster's slot
/// check, COMMAND GETKEYS, ACL key permissions) knows every key the
/// command reads.
#[derive(Clone, Copy, Debug)]
pub struct NumKeys {
    pub at: c_int,
    pub access: Access,
}

pub const WRITE: &CStr = c"write deny-oom";
pub const READ: &CStr = c"readonly fast";

/// RedisBloom 2.8.2 registers the sketches' reads (CMS, TOPK, TDIGEST)
/// `readonly`, without `fast`.
pub const READ_SLOW: &CStr = c"readonly";

/// A merge that also answers the server's key position requests: Redis
/// 7.0's cluster finds a module command's keys through them or through the
/// key positions given at registration, never through key specs.
pub const WRITE_GETKEYS: &CStr = c"write deny-oom getkeys-api";

impl CommandSpec {
    /// A command on one key shared by two value types (see
    /// [`routed_handler`]); registered under `C`'s name and flags.
    pub const fn routed<C, W>(access: Access, fast: bool) -> CommandSpec
    where
        C: Served,
        W: Served,
    {
        CommandSpec {
            name: C::NAME,
            handler: routed_handler::<C, W>,
            flags: if C::WRITES { WRITE } else { READ },
            keys: (1, 1, 1),
            access: Some(access),
            fast,
            more_keys: None,
        }
    }

    /// A command on one key of one value type, with RedisBloom's `flags`.
    pub const fn keyed<C>(access: Access, fast: bool, flags: &'static CStr) -> CommandSpec
    where
        C: Served,
    {
        CommandSpec {
            name: C::NAME,
            handler: keyed_handler::<C>,
            flags,
            keys: (1, 1, 1),
            access: Some(access),
            fast,
            more_keys: None,
        }
    }

    /// A command with a handler of its own: its first key (argument 1)
    /// used with `access`, and `more_keys` after it. Registered with the
    /// key positions 1,1,1 (RedisBloom's); the key specs then name every
    /// key.
    pub const fn custom(
        name: &'static CStr,
        handler: Handler,
        flags: &'static CStr,
        access: Access,
        more_keys: NumKeys,
    ) -> CommandSpec {
        CommandSpec {
            name,
            handler,
            flags,
            keys: (1, 1, 1),
            access: Some(access),
            fast: false,
            more_keys: Some(more_keys),
        }
    }

    /// A read-only command without a key.
    pub const fn keyless<C: KeylessCommand>(fast: bool) -> CommandSpec {
        CommandSpec {
            name: C::NAME,
            handler: keyless_handler::<C>,
            flags: READ,
            keys: (0, 0, 0),
            access: None,
            fast,
            more_keys: None,
        }
    }

    /// A read-only command without a key shared by two types (see
    /// [`routed_keyless_handler`]); registered under `C`'s name.
    pub const fn routed_keyless<C: KeylessCommand, W: KeylessCommand>(fast: bool) -> CommandSpec {
        CommandSpec {
            name: C::NAME,
            handler: routed_keyless_handler::<C, W>,
            flags: READ,
            keys: (0, 0, 0),
            access: None,
            fast,
            more_keys: None,
        }
    }
}

/// The REDISMODULE_CMD_KEY_* flags of a key spec.
fn access_flags(access: Access) -> u64 {
    u64::from(match access {
        Access::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        Access::Insert => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
        Access::Update => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        Access::Delete => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE,
    })
}

/// Adds a module ACL category (`bloom`, `cuckoo`) where the server supports
/// them (Redis 7.4+, Valkey 8+); false elsewhere.
fn add_category(ctx: *mut RedisModuleCtx, name: &CStr) -> bool {
    match optional_api!(RedisModule_AddACLCategory) {
        // SAFETY: (1) of ffi; ctx is the OnLoad context and the name is a
        // static C string.
        Some(add) => unsafe { add(ctx, name.as_ptr()) == REDISMODULE_OK },
        None => false,
    }
}

/// Puts a command in ACL categories where the server supports it (Redis
/// 7.2+, Valkey 8+): `read`/`write`, `fast` for the O(items) commands, and
/// its data type's category (`bloom`, `cuckoo`) when that exists. Redis 7.0
/// has no such call; there the commands stay in no category, as
/// RedisBloom's are.
fn set_categories(
    ctx: *mut RedisModuleCtx,
    c: &CommandSpec,
    category: Option<&CStr>,
) -> Result<(), String> {
    let (Some(get), Some(set)) = (
        optional_api!(RedisModule_GetCommand),
        optional_api!(RedisModule_SetCommandACLCategories),
    ) else {
        return Ok(());
    };
    let writes = c.flags.to_bytes().starts_with(b"write");
    let mut categories = String::from(if writes { "write" } else { "read" });
    if c.fast {
        categories.push_str(" fast");
    }
    if let Some(category) = category {
        categories.push(' ');
        categories.push_str(&category.to_string_lossy());
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
    if status != REDISMODULE_OK {
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

/// A key spec with `flags` for the keys counted by the argument at
/// `numkeys_at` and following it (`begin_search index numkeys_at`,
/// `find_keys keynum keynumidx 0 firstkey 1 keystep 1`, as ZUNIONSTORE's
/// sources).
fn keynum_spec(flags: u64, numkeys_at: c_int) -> raw::RedisModuleCommandKeySpec {
    raw::RedisModuleCommandKeySpec {
        notes: std::ptr::null(),
        flags,
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: numkeys_at },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            keynum: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
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
fn set_key_spec(ctx: *mut RedisModuleCtx, c: &CommandSpec) -> Result<(), KeySpecError> {
    let Some(access) = c.access else {
        return Ok(());
    };
    let (Some(get), Some(set)) = (
        optional_api!(RedisModule_GetCommand),
        optional_api!(RedisModule_SetCommandInfo),
    ) else {
        return Err(KeySpecError::Unsupported);
    };
    // The specs and their terminator; the server copies them during the
    // call.
    let mut specs = [
        key_spec(access_flags(access), Some(1)),
        key_spec(0, None),
        key_spec(0, None),
    ];
    if let Some(more) = c.more_keys {
        specs[1] = keynum_spec(access_flags(more.access), more.at);
    }
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
    if status == REDISMODULE_OK {
        Ok(())
    } else {
        Err(KeySpecError::Refused)
    }
}

/// Registers each data type's commands, with its ACL category. Called
/// once from OnLoad.
pub fn register(
    ctx: *mut RedisModuleCtx,
    tables: &[(&CStr, &[CommandSpec])],
) -> Result<(), String> {
    let mut unsupported = false;
    let mut refused = Vec::new();
    let commands = tables.iter().flat_map(|&(category, commands)| {
        let category = add_category(ctx, category).then_some(category);
        commands.iter().map(move |c| (c, category))
    });
    for (c, category) in commands {
        let (first, last, step) = c.keys;
        // SAFETY: (1) of ffi; ctx is the OnLoad context; names and flags are
        // static NUL-terminated strings that Redis copies.
        let status = unsafe {
            api!(RedisModule_CreateCommand)(
                ctx,
                c.name.as_ptr(),
                Some(c.handler),
                c.flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != REDISMODULE_OK {
            return Err(format!("could not register {}", c.name.to_string_lossy()));
        }
        match set_key_spec(ctx, c) {
            Ok(()) => {}
            Err(KeySpecError::Unsupported) => unsupported = true,
            Err(KeySpecError::Refused) => refused.push(c.name.to_string_lossy()),
        }
        set_categories(ctx, c, category)?;
    }
    // The commands work either way; only ACL key permissions see the
    // difference (every BF command then needs read and write access).
    if unsupported {
        log(
            ctx,
            LogLevel::Notice,
            "this server cannot set command key specs (no RedisModule_SetCommandInfo): \
             BF and CF commands keep the key spec RW access update, so ACL users \
             need read and write key permissions (~ or %RW~) for every command",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_access_follows_the_command_flags() {
        let tables = [crate::ffi::bloom::COMMANDS, crate::ffi::cuckoo::COMMANDS];
        for c in tables.into_iter().flatten() {
            let name = c.name.to_string_lossy();
            match c.access {
                None => assert_eq!(c.keys, (0, 0, 0), "{name}"),
                Some(Access::Read) => assert!(c.flags == READ && c.keys == (1, 1, 1), "{name}"),
                // RedisBloom flags CF.COMPACT read-only although it moves
                // fingerprints.
                Some(Access::Update) if name == "cf.compact" => assert_eq!(c.flags, READ),
                Some(Access::Delete) => assert_eq!(c.flags, c"write fast", "{name}"),
                Some(Access::Insert | Access::Update) => {
                    assert!(c.flags == WRITE && c.keys == (1, 1, 1), "{name}")
                }
            }
        }
        let ro = u64::from(raw::REDISMODULE_CMD_KEY_RO);
        assert_eq!(access_flags(Access::Read) & ro, ro);
        assert_eq!(access_flags(Access::Insert) & ro, 0);
    }

    /// The CMS.* commands keep RedisBloom's flags (`readonly` without
    /// `fast`, `write deny-oom`); CMS.MERGE names its sources too.
    #[test]
    fn count_min_flags_and_keys() {
        for c in crate::ffi::cms::COMMANDS {
            let name = c.name.to_string_lossy();
            // FerroBloom's own CMS.PLAN plans without a key.
            if name == "cms.plan" {
                assert_eq!((c.keys, c.access), ((0, 0, 0), None));
                continue;
            }
            assert_eq!(c.keys, (1, 1, 1), "{name}");
            assert!(!c.fast, "{name}");
            match c.access {
                Some(Access::Read) => assert_eq!(c.flags, c"readonly", "{name}"),
                Some(_) => assert!(c.flags.to_bytes().starts_with(b"write deny-oom"), "{name}"),
                None => panic!("{name} has a key"),
            }
            assert_eq!(c.more_keys.is_some(), name == "cms.merge", "{name}");
        }
    }

    #[test]
    fn key_spec_array_is_terminated() {
        let end = key_spec(0, None);
        assert_eq!(end.begin_search_type, 0);
        assert_eq!(end.flags, 0);
        let spec = key_spec(access_flags(Access::Update), Some(1));
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

    #[test]
    fn keynum_spec_counts_keys_after_numkeys() {
        let spec = keynum_spec(access_flags(Access::Read), 2);
        assert_eq!(
            spec.find_keys_type,
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM
        );
        // SAFETY: both variants were written by keynum_spec.
        let (pos, keynum) = unsafe { (spec.bs.index.pos, spec.fk.keynum) };
        assert_eq!(pos, 2);
        assert_eq!(
            (keynum.keynumidx, keynum.firstkey, keynum.keystep),
            (0, 1, 1)
        );
    }
}
