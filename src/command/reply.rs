//! The reply tree: what a command answers, built as a value and sent by
//! the FFI layer in one walk. Arrays and maps know their own lengths, so no
//! handler counts them; integers, booleans and fixed strings allocate
//! nothing.

use std::borrow::Cow;
use std::ffi::CStr;

use super::{Batch, CommandError};

#[derive(Clone, Debug, PartialEq)]
pub enum Reply<'a> {
    /// `+OK`.
    Ok,
    Integer(i64),
    /// `:1`/`:0` in RESP2, `#t`/`#f` in RESP3.
    Bool(bool),
    Null,
    /// A simple string (`+...`).
    Simple(&'static CStr),
    /// A bulk string, borrowed from the key's value where it can be.
    Bulk(Cow<'a, [u8]>),
    /// RESP3's double; in RESP2 a bulk string in the shortest form that
    /// reads back exactly (`0.01`, `1e-5`).
    Double(f64),
    /// A double the server formats (`RedisModule_ReplyWithDouble` in both
    /// protocols): RESP2 bulk in the server version's own form (7.0
    /// `%.17g`, 7.2+ shortest), RESP3 double, as RedisBloom replies doubles.
    ServerDouble(f64),
    Error(CommandError),
    Array(Vec<Reply<'a>>),
    /// An array of a batch's replies, in a reused buffer.
    Batch(Batch),
    /// A map in RESP3, a flat name/value array in RESP2; names are simple
    /// strings.
    Map(Vec<(&'static CStr, Reply<'a>)>),
    /// One named value: a one-entry map in RESP3, a one-element array of
    /// the value alone in RESP2 (BF.INFO asked for one field).
    Field(&'static CStr, Box<Reply<'a>>),
}

impl Reply<'_> {
    /// The same reply, owning what it borrowed (tests keep outcomes after
    /// their key is gone).
    #[cfg(test)]
    pub fn into_owned(self) -> Reply<'static> {
        match self {
            Reply::Ok => Reply::Ok,
            Reply::Integer(v) => Reply::Integer(v),
            Reply::Bool(v) => Reply::Bool(v),
            Reply::Null => Reply::Null,
            Reply::Simple(text) => Reply::Simple(text),
            Reply::Bulk(bytes) => Reply::Bulk(Cow::Owned(bytes.into_owned())),
            Reply::Double(v) => Reply::Double(v),
            Reply::ServerDouble(v) => Reply::ServerDouble(v),
            Reply::Error(e) => Reply::Error(e),
            Reply::Array(items) => Reply::Array(items.into_iter().map(Reply::into_owned).collect()),
            // As a plain array, which tests compare with.
            Reply::Batch(items) => Reply::Array(items.to_replies()),
            Reply::Map(fields) => Reply::Map(
                fields
                    .into_iter()
                    .map(|(name, value)| (name, value.into_owned()))
                    .collect(),
            ),
            Reply::Field(name, value) => Reply::Field(name, Box::new(value.into_owned())),
        }
    }

    /// A count, clamped to the largest integer a reply holds.
    pub fn count(value: u64) -> Reply<'static> {
        Reply::Integer(value.min(i64::MAX as u64) as i64)
    }

    pub fn optional(value: Option<i64>) -> Reply<'static> {
        value.map_or(Reply::Null, Reply::Integer)
    }
}

impl From<CommandError> for Reply<'_> {
    fn from(e: CommandError) -> Self {
        Reply::Error(e)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_in_shortest_form() {
        assert_eq!(format_double(0.01), "0.01");
        assert_eq!(format_double(1234.5), "1234.5");
        assert_eq!(format_double(5.4e-18), "5.4e-18");
        assert_eq!(format_double(0.0), "0");
        assert_eq!(Reply::count(u64::MAX), Reply::Integer(i64::MAX));
    }
}
