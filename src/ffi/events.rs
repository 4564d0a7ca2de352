//! Server events the module follows: the start of every save, which the
//! t-digest needs (`tdigest::value::save_begins`: a save writes compress(S),
//! so the values changed before it owe their replicas that compress).

use std::ffi::c_void;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent};

use super::api;

/// A fork was made (BGSAVE, a replica's full sync, an AOF rewrite), in the
/// parent, before the child can have saved anything the parent changes.
const FORK_CHILD: RedisModuleEvent = RedisModuleEvent {
    id: raw::REDISMODULE_EVENT_FORK_CHILD,
    dataver: 1,
};

/// A save in the main process (SAVE, DEBUG RELOAD, the save at shutdown).
const PERSISTENCE: RedisModuleEvent = RedisModuleEvent {
    id: raw::REDISMODULE_EVENT_PERSISTENCE,
    dataver: 1,
};

extern "C" fn on_fork_child(
    _ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_SUBEVENT_FORK_CHILD_BORN {
        crate::tdigest::save_begins();
    }
}

extern "C" fn on_persistence(
    _ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_SUBEVENT_PERSISTENCE_SYNC_RDB_START
        || subevent == raw::REDISMODULE_SUBEVENT_PERSISTENCE_SYNC_AOF_START
    {
        crate::tdigest::save_begins();
    }
}

/// Subscribes to the events above (from OnLoad).
pub fn subscribe(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    for (event, callback, name) in [
        (
            FORK_CHILD,
            on_fork_child as unsafe extern "C" fn(_, _, _, _),
            "fork",
        ),
        (PERSISTENCE, on_persistence, "persistence"),
    ] {
        // SAFETY: (1); called from OnLoad with its context; the callbacks
        // are `extern "C"` functions that live as long as the module and
        // only bump an atomic counter (no panic can unwind out of them).
        let status =
            unsafe { api!(RedisModule_SubscribeToServerEvent)(ctx, event, Some(callback)) };
        if status != raw::REDISMODULE_OK as i32 {
            return Err(format!("could not subscribe to the server's {name} events"));
        }
    }
    Ok(())
}
