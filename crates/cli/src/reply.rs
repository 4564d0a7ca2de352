//! Reading server replies, whichever protocol shaped them (RESP2 flat
//! name/value arrays, RESP3 maps; doubles as bulk strings or doubles).

use redis::Value;

/// A reply's name/value pairs, from a RESP3 map or a RESP2 flat array.
pub fn pairs(value: Value) -> Option<Vec<(String, Value)>> {
    match value {
        Value::Map(entries) => entries
            .into_iter()
            .map(|(k, v)| text(&k).map(|k| (k, v)))
            .collect(),
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return None;
            }
            let mut out = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((text(&k)?, v));
            }
            Some(out)
        }
        _ => None,
    }
}

/// The value of `name` in name/value pairs.
pub fn field<'a>(pairs: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    pairs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// Text of a simple, bulk or verbatim string.
pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::SimpleString(s) => Some(s.clone()),
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Okay => Some("OK".into()),
        _ => None,
    }
}

/// An integer, or a string holding one.
pub fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::Boolean(b) => Some(i64::from(*b)),
        other => text(other)?.trim().parse().ok(),
    }
}

/// A non-negative integer.
pub fn uint(value: &Value) -> Option<u64> {
    int(value).and_then(|n| u64::try_from(n).ok())
}

/// A double (RESP3), or an integer or string holding one (RESP2).
pub fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Double(d) => Some(*d),
        Value::Int(n) => Some(*n as f64),
        other => text(other)?.trim().parse().ok(),
    }
}

/// The bytes of a bulk string (or a simple string).
pub fn bytes(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::Nil => Some(Vec::new()),
        _ => None,
    }
}

/// Whether an error is the server saying it has no such command.
pub fn is_unknown_command(e: &redis::RedisError) -> bool {
    e.to_string()
        .to_ascii_lowercase()
        .contains("unknown command")
}

/// Whether an error says the key went away: `ERR not found` (Bloom and
/// Cuckoo filters), `CMS: key does not exist` and `TopK: key does not
/// exist` (Count-Min sketches and Top-K, whose errors have no `ERR`
/// code), `ERR T-Digest: key does not exist`.
pub fn is_not_found(e: &redis::RedisError) -> bool {
    // The sketches' errors have no `ERR`: the client takes `CMS:` for the
    // code and prints it `CMS:: key does not exist`.
    let text = e.to_string();
    (e.code() == Some("ERR") && e.detail() == Some("not found"))
        || ((text.starts_with("CMS:") || text.starts_with("TopK:") || text.contains("T-Digest:"))
            && text.contains("key does not exist"))
}

/// A Count-Min sketch command's reply for a missing key.
pub const CMS_KEY_MISSING: &str = "CMS: key does not exist";

/// Whether an error is a WRONGTYPE reply.
pub fn is_wrong_type(e: &redis::RedisError) -> bool {
    e.code() == Some("WRONGTYPE")
}

/// What a peer that does not speak RESP (an HTTP or SSH server, another
/// service on the port) is said to be, instead of the parser's dump of the
/// bytes it could not read.
pub const NOT_REDIS: &str =
    "the server's reply is not in the Redis protocol (RESP): is it a Redis server? check the \
     host and port";

/// An error as the server wrote it where possible (`ERR not found`), else
/// the client library's description, always on one line.
pub fn describe_error(e: &redis::RedisError) -> String {
    if e.kind() == redis::ErrorKind::ParseError {
        return NOT_REDIS.into();
    }
    if e.is_io_error() && e.to_string().contains("unexpected end of file") {
        return "the server closed the connection without answering".into();
    }
    let text = match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    };
    one_line(&text)
}

/// Text that may hold line breaks, as one line: its lines joined by `; `.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_one_line() {
        let parse = redis::RedisError::from((
            redis::ErrorKind::ParseError,
            "parse error",
            "Parse error at 1\nUnexpected `84`\nUnexpected `72`\n".to_string(),
        ));
        assert_eq!(describe_error(&parse), NOT_REDIS);
        let eof: redis::RedisError = std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into();
        assert_eq!(
            describe_error(&eof),
            "the server closed the connection without answering"
        );
        let multi: redis::RedisError = std::io::Error::other("first\n  second\n").into();
        assert_eq!(describe_error(&multi), "first; second");
        let server = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "not found".to_string(),
        ));
        assert!(!describe_error(&server).contains('\n'));
    }

    #[test]
    fn missing_keys_of_every_type() {
        let reply = |text: &[u8]| {
            redis::parse_redis_value(text)
                .and_then(|v| v.extract_error())
                .expect_err("an error reply")
        };
        assert!(is_not_found(&reply(b"-ERR not found\r\n")));
        assert!(is_not_found(&reply(b"-CMS: key does not exist\r\n")));
        assert!(!is_not_found(&reply(b"-CMS: INCRBY overflow\r\n")));
        assert!(!is_not_found(&reply(b"-ERR key does not exist\r\n")));
        assert!(is_not_found(&reply(b"-TopK: key does not exist\r\n")));
        assert!(is_not_found(&reply(
            b"-ERR T-Digest: key does not exist\r\n"
        )));
        assert!(is_not_found(&redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            CMS_KEY_MISSING,
            "deleted while read".to_string(),
        ))));
    }

    #[test]
    fn flat_arrays_and_maps() {
        let flat = Value::Array(vec![
            Value::SimpleString("capacity".into()),
            Value::Int(100),
            Value::SimpleString("fill_ratio".into()),
            Value::BulkString(b"0.25".to_vec()),
        ]);
        let p = pairs(flat).unwrap();
        assert_eq!(uint(field(&p, "capacity").unwrap()), Some(100));
        assert_eq!(float(field(&p, "fill_ratio").unwrap()), Some(0.25));
        let map = Value::Map(vec![(
            Value::SimpleString("fill_ratio".into()),
            Value::Double(0.5),
        )]);
        let p = pairs(map).unwrap();
        assert_eq!(float(field(&p, "FILL_RATIO").unwrap()), Some(0.5));
        assert!(pairs(Value::Array(vec![Value::Int(1)])).is_none());
    }
}
