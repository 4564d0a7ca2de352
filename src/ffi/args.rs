//! The arguments of the running command (and of module load), borrowed in
//! place, read by the command layer through [`ArgSource`].

use std::marker::PhantomData;

use redis_module::raw::RedisModuleString;
use redis_module::RedisString;

use super::{api, REDISMODULE_OK};
use crate::command::ArgSource;

/// A borrowed argument string.
#[derive(Clone, Copy)]
pub struct RString<'a> {
    pub(super) raw: *mut RedisModuleString,
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
    /// # Safety
    /// (3): every pointer in `argv` is a valid string for `'a`.
    pub unsafe fn new(argv: &'a [*mut RedisModuleString]) -> Self {
        Args { argv }
    }

    #[inline]
    pub fn get(&self, i: usize) -> RString<'a> {
        RString {
            raw: self.argv[i],
            _args: PhantomData,
        }
    }
}

/// The command's arguments for the command layer, numbers parsed by Redis.
impl ArgSource for Args<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.argv.len()
    }
    #[inline]
    fn arg(&self, i: usize) -> &[u8] {
        self.get(i).bytes()
    }
    fn int(&self, i: usize) -> Option<i64> {
        self.get(i).to_i64()
    }
    fn double(&self, i: usize) -> Option<f64> {
        self.get(i).to_f64()
    }
}

/// A module load argument for the settings parser.
impl crate::config::LoadArg for RedisString {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
    fn int(&self) -> Option<i64> {
        self.parse_integer().ok()
    }
    fn double(&self) -> Option<f64> {
        self.parse_float().ok()
    }
}

/// The bytes of a string Redis passed to a callback, copied (empty for a
/// null string).
///
/// # Safety
/// `s` is null or a string valid for the duration of the call.
pub unsafe fn string_bytes(s: *const RedisModuleString) -> Vec<u8> {
    if s.is_null() {
        return Vec::new();
    }
    let mut len = 0usize;
    // SAFETY: (1), and the caller's guarantee that s is valid.
    let ptr = unsafe { api!(RedisModule_StringPtrLen)(s, &mut len) };
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: Redis' pointer/length pair describes the string's buffer.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec()
}
