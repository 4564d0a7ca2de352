//! Open keys, behind the command layer's [`KeySlot`]: what a key holds is
//! read once, at opening; the value of a registered type is a `Box<V>`.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{self, RedisModuleKey, RedisModuleType};

use super::args::RString;
use super::context::Ctx;
use super::{api, REDISMODULE_OK};
use crate::command::{KeySlot, KeyState};
use crate::datatype::DataType;

/// The server's handle of a registered data type, set once at load.
pub struct TypeHandle(AtomicPtr<RedisModuleType>);

impl TypeHandle {
    pub const fn new() -> Self {
        TypeHandle(AtomicPtr::new(std::ptr::null_mut()))
    }

    pub fn get(&self) -> *mut RedisModuleType {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, ty: *mut RedisModuleType) {
        self.0.store(ty, Ordering::Relaxed);
    }
}

/// A data type registered with the server, its values stored as `Box<Self>`
/// (invariant 4); the handles are declared in `ffi::datatype`.
pub trait RegisteredType: DataType {
    fn handle() -> &'static TypeHandle;
}

/// What an open key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Missing,
    /// A value of a module type (ours or another module's).
    Module(*mut RedisModuleType),
    Other,
}

/// An open key, closed on drop.
pub struct Key<'c> {
    raw: *mut RedisModuleKey,
    held: Held,
    _ctx: PhantomData<&'c Ctx>,
}

impl Key<'_> {
    /// Takes ownership of an open handle (null for a missing key opened
    /// read-only).
    pub(super) fn new(raw: *mut RedisModuleKey) -> Self {
        let held = if raw.is_null() {
            Held::Missing
        } else {
            // SAFETY: (1), (4): the handle is open.
            unsafe {
                match api!(RedisModule_KeyType)(raw) as isize {
                    raw::REDISMODULE_KEYTYPE_EMPTY => Held::Missing,
                    raw::REDISMODULE_KEYTYPE_MODULE => {
                        Held::Module(api!(RedisModule_ModuleTypeGetType)(raw))
                    }
                    _ => Held::Other,
                }
            }
        };
        Key {
            raw,
            held,
            _ctx: PhantomData,
        }
    }

    /// The value, if the key holds one of `V`'s type.
    fn value<V: RegisteredType>(&self) -> KeyState<NonNull<V>> {
        match self.held {
            Held::Missing => KeyState::Missing,
            Held::Module(ty) if ty == V::handle().get() => {
                // SAFETY: (1), (4): the key holds a value of V's type.
                let value = unsafe { api!(RedisModule_ModuleTypeGetValue)(self.raw) };
                NonNull::new(value.cast::<V>()).map_or(KeyState::Other, KeyState::Held)
            }
            Held::Module(_) | Held::Other => KeyState::Other,
        }
    }
}

impl<V: RegisteredType> KeySlot<V> for Key<'_> {
    #[inline]
    fn kind(&self) -> KeyState<()> {
        match self.held {
            Held::Missing => KeyState::Missing,
            Held::Module(ty) if ty == V::handle().get() => KeyState::Held(()),
            Held::Module(_) | Held::Other => KeyState::Other,
        }
    }

    #[inline]
    fn state(&self) -> KeyState<&V> {
        match self.value::<V>() {
            // SAFETY: (4): the value is a live Box<V> owned by the key, not
            // freed or replaced while this borrow of the key lasts.
            KeyState::Held(p) => KeyState::Held(unsafe { &*p.as_ptr() }),
            KeyState::Missing => KeyState::Missing,
            KeyState::Other => KeyState::Other,
        }
    }

    #[inline]
    fn state_mut(&mut self) -> KeyState<&mut V> {
        match self.value::<V>() {
            // SAFETY: (4), and &mut self makes the borrow exclusive; commands
            // run on the main thread only.
            KeyState::Held(p) => KeyState::Held(unsafe { &mut *p.as_ptr() }),
            KeyState::Missing => KeyState::Missing,
            KeyState::Other => KeyState::Other,
        }
    }

    fn store(&mut self, value: Box<V>) -> Option<&mut V> {
        let ty = V::handle().get();
        let value = Box::into_raw(value);
        // SAFETY: (1), (4); on success Redis owns the box and frees it
        // through the type's free callback.
        let status = unsafe { api!(RedisModule_ModuleTypeSetValue)(self.raw, ty, value.cast()) };
        if status == REDISMODULE_OK {
            self.held = Held::Module(ty);
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

/// A key opened for reading that the command may make writable later
/// ([`KeySlot::open_for_writing`]): it is then closed and opened again for
/// writing, so that only a command that does write signals it as modified.
pub struct LateWriteKey<'c> {
    ctx: &'c Ctx,
    name: RString<'c>,
    key: Key<'c>,
}

impl<'c> LateWriteKey<'c> {
    pub fn open(ctx: &'c Ctx, name: RString<'c>) -> Self {
        let key = ctx.open(&name, false);
        LateWriteKey { ctx, name, key }
    }
}

impl<V: RegisteredType> KeySlot<V> for LateWriteKey<'_> {
    #[inline]
    fn kind(&self) -> KeyState<()> {
        KeySlot::<V>::kind(&self.key)
    }

    #[inline]
    fn state(&self) -> KeyState<&V> {
        self.key.state()
    }

    #[inline]
    fn state_mut(&mut self) -> KeyState<&mut V> {
        self.key.state_mut()
    }

    fn store(&mut self, value: Box<V>) -> Option<&mut V> {
        self.key.store(value)
    }

    fn open_for_writing(&mut self) {
        // The read handle is closed before the write one opens: one handle
        // of the key at a time.
        self.key = Key::new(std::ptr::null_mut());
        self.key = self.ctx.open(&self.name, true);
    }
}
