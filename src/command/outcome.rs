//! What a command did: the reply, what replicas and the AOF must apply, and
//! the keyspace events to send.

use std::ffi::CStr;

use super::{CommandError, Reply};
use crate::notify::Events;

#[derive(Debug, PartialEq)]
pub struct Outcome<'a> {
    pub reply: Reply<'a>,
    pub propagate: Propagation,
    /// Sent for the command's key, when the server enables module events.
    pub events: Events,
}

impl<'a> Outcome<'a> {
    /// A reply that changed nothing: nothing to propagate, no events.
    pub fn reply(reply: Reply<'a>) -> Self {
        Outcome {
            reply,
            propagate: Propagation::Nothing,
            events: Events::default(),
        }
    }

    pub fn error(e: impl Into<CommandError>) -> Self {
        Outcome::reply(Reply::Error(e.into()))
    }

    /// A command that failed after `events` (a creation the memory guard
    /// refused says so): the error reply, nothing propagated.
    pub fn failed(e: impl Into<CommandError>, events: Events) -> Self {
        Outcome {
            events,
            ..Outcome::error(e)
        }
    }

    /// A change replicas and the AOF apply as the command was received.
    pub fn verbatim(reply: Reply<'a>, events: Events) -> Self {
        Outcome {
            reply,
            propagate: Propagation::Verbatim,
            events,
        }
    }
}

/// What replicas and the AOF get.
#[derive(Debug, PartialEq)]
pub enum Propagation {
    Nothing,
    /// The command as received.
    Verbatim,
    /// Another command instead: what makes a replica apply exactly what
    /// this server did, whatever the replica's settings.
    Rewrite {
        command: &'static CStr,
        args: Vec<RewriteArg>,
    },
    /// `command` with `args`, then `then`: a change this server made
    /// before the command's own and that replicas must make first (a
    /// t-digest's compress, owed since a read). The server sends both as
    /// one transaction.
    /// (Boxed: rare, and an outcome stays small.)
    Preceded(Box<Preceded>),
}

/// See [`Propagation::Preceded`].
#[derive(Debug, PartialEq)]
pub struct Preceded {
    pub command: &'static CStr,
    pub args: Vec<RewriteArg>,
    pub then: Propagation,
}

impl Propagation {
    /// `command` with `args` before `self`.
    pub fn preceded_by(self, command: &'static CStr, args: Vec<RewriteArg>) -> Propagation {
        Propagation::Preceded(Box::new(Preceded {
            command,
            args,
            then: self,
        }))
    }

    /// Whether the command as received is propagated (alone or after
    /// another).
    pub fn includes_verbatim(&self) -> bool {
        match self {
            Propagation::Verbatim => true,
            Propagation::Preceded(p) => p.then.includes_verbatim(),
            _ => false,
        }
    }
}

/// An argument of a rewritten command.
#[derive(Clone, Debug, PartialEq)]
pub enum RewriteArg {
    /// The running command's argument at this index, passed on as is.
    Input(usize),
    Text(String),
}

impl RewriteArg {
    pub fn text(value: impl ToString) -> Self {
        RewriteArg::Text(value.to_string())
    }
}
