//! Registers the settings with Redis' module configuration, so they show in
//! `CONFIG GET bf.*`, change with `CONFIG SET` and can be written in
//! redis.conf. Each callback reads or validates through `crate::config`.
//!
//! SAFETY invariants, besides those of `ffi`:
//! 7. Config callbacks run on the main thread, with `name` a valid C
//!    string and `val` a valid string owned by Redis for the call.
//! 8. `privdata` is the index of a `config::Name` in `Name::ALL`, given at
//!    registration.

use std::ffi::{c_char, c_int, c_longlong, c_void, CString};
use std::ptr;
use std::sync::Mutex;

use ferrobloom_core::Policy;
use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::api;
use crate::config::{self, Name, Settings};

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

fn name_of(privdata: *mut c_void) -> Name {
    Name::ALL[privdata as usize]
}

fn privdata_of(name: Name) -> *mut c_void {
    Name::ALL
        .iter()
        .position(|n| *n == name)
        .expect("a known name") as *mut c_void
}

/// Creates a string owned by the module (no context: freed explicitly).
fn create_string(text: &str) -> *mut RedisModuleString {
    // SAFETY: (1) of ffi; a null context makes an unmanaged string.
    unsafe { api!(RedisModule_CreateString)(ptr::null_mut(), text.as_ptr().cast(), text.len()) }
}

fn set_error(err: *mut *mut RedisModuleString, message: &str) -> c_int {
    if !err.is_null() {
        // SAFETY: err points to Redis' out-parameter (7); Redis frees it.
        unsafe { *err = create_string(message) };
    }
    ERR
}

fn string_bytes<'a>(s: *mut RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: (1) of ffi, (7): s is valid for the call.
    unsafe {
        let p = api!(RedisModule_StringPtrLen)(s, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// The strings handed out by getters: Redis copies a getter's result but
/// does not free it, so the last one per setting is kept and freed on the
/// next call.
struct Handed([*mut RedisModuleString; Name::ALL.len()]);
// SAFETY: only touched from config callbacks, on the main thread (7).
unsafe impl Send for Handed {}
static HANDED: Mutex<Handed> = Mutex::new(Handed([ptr::null_mut(); Name::ALL.len()]));

fn text_of(settings: &Settings, name: Name) -> String {
    match name {
        Name::ErrorRate => settings.error_rate.to_string(),
        Name::FillWarning => settings.fill_warning.to_string(),
        Name::FillAlert => settings.fill_alert.to_string(),
        Name::InitialSize => settings.initial_size.to_string(),
        Name::Expansion => settings.expansion.to_string(),
        Name::MaxFilterBytes => settings.max_filter_bytes.to_string(),
        Name::Policy => settings.policy.name().to_string(),
        Name::HugePages => if settings.huge_pages { "yes" } else { "no" }.to_string(),
        Name::WindowGenerations => settings.window_generations.to_string(),
        Name::CfMaxExpansions => settings.cf_max_expansions.to_string(),
    }
}

extern "C" fn get_string(_name: *const c_char, privdata: *mut c_void) -> *mut RedisModuleString {
    let name = name_of(privdata);
    let fresh = create_string(&text_of(&config::settings(), name));
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let slot = &mut handed.0[privdata as usize];
    if !slot.is_null() {
        // SAFETY: (1); the previous string was created by create_string and
        // Redis has finished copying it.
        unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), *slot) };
    }
    *slot = fresh;
    fresh
}

extern "C" fn set_string(
    _name: *const c_char,
    val: *mut RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let mut settings = config::settings();
    match config::set(&mut settings, name_of(privdata), string_bytes(val)) {
        Ok(()) => {
            config::update(|s| *s = settings);
            OK
        }
        Err(message) => set_error(err, &message),
    }
}

extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    let s = config::settings();
    match name_of(privdata) {
        Name::InitialSize => s.initial_size as c_longlong,
        Name::Expansion => c_longlong::from(s.expansion),
        Name::MaxFilterBytes => s.max_filter_bytes as c_longlong,
        Name::WindowGenerations => c_longlong::from(s.window_generations),
        Name::CfMaxExpansions => s.cf_max_expansions as c_longlong,
        _ => 0,
    }
}

extern "C" fn set_numeric(
    _name: *const c_char,
    val: c_longlong,
    privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let mut settings = config::settings();
    match config::set(&mut settings, name_of(privdata), val.to_string().as_bytes()) {
        Ok(()) => {
            config::update(|s| *s = settings);
            OK
        }
        Err(message) => set_error(err, &message),
    }
}

extern "C" fn get_enum(_name: *const c_char, _privdata: *mut c_void) -> c_int {
    match config::settings().policy {
        Policy::Exact => 0,
        Policy::Pow2 => 1,
    }
}

extern "C" fn set_enum(
    _name: *const c_char,
    val: c_int,
    _privdata: *mut c_void,
    _err: *mut *mut RedisModuleString,
) -> c_int {
    let policy = if val == 1 {
        Policy::Pow2
    } else {
        Policy::Exact
    };
    config::update(|s| s.policy = policy);
    OK
}

extern "C" fn get_bool(_name: *const c_char, _privdata: *mut c_void) -> c_int {
    c_int::from(config::settings().huge_pages)
}

extern "C" fn set_bool(
    _name: *const c_char,
    val: c_int,
    _privdata: *mut c_void,
    _err: *mut *mut RedisModuleString,
) -> c_int {
    config::update(|s| s.huge_pages = val != 0);
    OK
}

/// Runs after every CONFIG SET of module settings: checks relations and
/// applies the fill thresholds to the counts in INFO.
extern "C" fn apply(
    _ctx: *mut RedisModuleCtx,
    _privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let s = config::settings();
    if let Err(message) = config::check(&s) {
        return set_error(err, &message);
    }
    crate::metrics::set_thresholds(s.fill_warning, s.fill_alert);
    ferrobloom_core::bitarray::set_huge_pages(s.huge_pages);
    OK
}

/// Registers every setting, with the load-time values as defaults, then
/// loads the values from the server's configuration.
pub fn register(ctx: *mut RedisModuleCtx, defaults: &Settings) -> Result<(), String> {
    for name in Name::ALL {
        let cname = CString::new(name.config_name()).expect("no NUL in names");
        let flags = raw::REDISMODULE_CONFIG_DEFAULT;
        let privdata = privdata_of(name);
        // SAFETY: (1) of ffi; ctx is the OnLoad context; Redis copies the
        // name and default; callbacks and privdata stay valid forever.
        let status = unsafe {
            match name {
                Name::ErrorRate | Name::FillWarning | Name::FillAlert => {
                    let default = CString::new(text_of(defaults, name)).expect("no NUL");
                    api!(RedisModule_RegisterStringConfig)(
                        ctx,
                        cname.as_ptr(),
                        default.as_ptr(),
                        flags,
                        Some(get_string),
                        Some(set_string),
                        Some(apply),
                        privdata,
                    )
                }
                Name::InitialSize
                | Name::Expansion
                | Name::MaxFilterBytes
                | Name::WindowGenerations
                | Name::CfMaxExpansions => {
                    let (default, min, max, extra) = match name {
                        Name::InitialSize => (defaults.initial_size, 1, config::MAX_NUMERIC, 0),
                        Name::Expansion => {
                            (u64::from(defaults.expansion), 0, u64::from(u32::MAX), 0)
                        }
                        Name::WindowGenerations => (
                            u64::from(defaults.window_generations),
                            1,
                            u64::from(ferrobloom_core::window::MAX_GENERATIONS),
                            0,
                        ),
                        Name::CfMaxExpansions => (
                            defaults.cf_max_expansions,
                            1,
                            ferrobloom_core::cuckoo::sizing::MAX_SUB_FILTERS,
                            0,
                        ),
                        _ => (
                            defaults.max_filter_bytes,
                            0,
                            config::MAX_NUMERIC,
                            raw::REDISMODULE_CONFIG_MEMORY,
                        ),
                    };
                    api!(RedisModule_RegisterNumericConfig)(
                        ctx,
                        cname.as_ptr(),
                        default as c_longlong,
                        flags | extra,
                        min as c_longlong,
                        max as c_longlong,
                        Some(get_numeric),
                        Some(set_numeric),
                        Some(apply),
                        privdata,
                    )
                }
                Name::HugePages => api!(RedisModule_RegisterBoolConfig)(
                    ctx,
                    cname.as_ptr(),
                    c_int::from(defaults.huge_pages),
                    flags,
                    Some(get_bool),
                    Some(set_bool),
                    Some(apply),
                    privdata,
                ),
                Name::Policy => {
                    let names = [c"exact".as_ptr(), c"pow2".as_ptr()];
                    let values: [c_int; 2] = [0, 1];
                    api!(RedisModule_RegisterEnumConfig)(
                        ctx,
                        cname.as_ptr(),
                        match defaults.policy {
                            Policy::Exact => 0,
                            Policy::Pow2 => 1,
                        },
                        flags,
                        names.as_ptr().cast_mut(),
                        values.as_ptr(),
                        2,
                        Some(get_enum),
                        Some(set_enum),
                        Some(apply),
                        privdata,
                    )
                }
            }
        };
        if status != OK {
            return Err(format!(
                "could not register config bf.{}",
                name.config_name()
            ));
        }
    }
    // SAFETY: (1) of ffi; applies redis.conf / command-line values.
    if unsafe { api!(RedisModule_LoadConfigs)(ctx) } != OK {
        return Err("invalid bf.* configuration".into());
    }
    // Values from redis.conf or the command line are applied one by one;
    // their relations are checked once all are in.
    config::check(&config::settings())
}
