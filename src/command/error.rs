//! The one error type of commands, and the one place where an error
//! becomes the text of its reply.

use std::borrow::Cow;
use std::ffi::{CStr, CString};

/// Why a command answers with an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// `ERR wrong number of arguments for '<name>' command`, with the
    /// command's registered name whatever the client typed.
    Arity,
    /// A fixed message, byte for byte RedisBloom's where it has one (some
    /// have no `ERR` code, one a trailing space: clients match on them).
    Static(&'static CStr),
    /// A message built at run time (the memory guard names its numbers).
    Text(String),
}

impl From<&'static CStr> for CommandError {
    fn from(text: &'static CStr) -> Self {
        CommandError::Static(text)
    }
}

impl CommandError {
    /// The text sent after `-`, as is: it carries its own code (`ERR ...`)
    /// or none (`Bad capacity`). `command` is the running command's
    /// registered name.
    pub fn reply_text(&self, command: &CStr) -> Cow<'static, CStr> {
        match self {
            CommandError::Arity => Cow::Owned(c_text(&format!(
                "ERR wrong number of arguments for '{}' command",
                command.to_string_lossy()
            ))),
            CommandError::Static(text) => Cow::Borrowed(text),
            CommandError::Text(text) => Cow::Owned(c_text(text)),
        }
    }
}

/// A C string of `text`, NUL bytes (never in our messages) as spaces.
fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// Replies shared by every data type.
pub const WRONGTYPE: &CStr = c"WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NOT_FOUND: &CStr = c"ERR not found";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_texts() {
        assert_eq!(
            CommandError::Arity.reply_text(c"bf.add").as_ref(),
            c"ERR wrong number of arguments for 'bf.add' command"
        );
        assert_eq!(
            CommandError::from(NOT_FOUND)
                .reply_text(c"bf.info")
                .as_ref(),
            NOT_FOUND
        );
        assert_eq!(
            CommandError::Text("ERR a\0b".into())
                .reply_text(c"bf.add")
                .as_ref(),
            c"ERR a b"
        );
    }
}
