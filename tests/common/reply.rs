//! Decoded replies taken apart: name/value pairs (RESP2 flat arrays or
//! RESP3 maps) and the scalar a field must be.

use std::collections::BTreeMap;

use super::Resp;

/// Names in reply order and their values, from a RESP2 flat array or a
/// RESP3 map.
pub fn pairs(reply: Resp) -> Vec<(String, Resp)> {
    match reply {
        Resp::Array(flat) => flat
            .chunks(2)
            .map(|p| (p[0].as_str().expect("a name"), p[1].clone()))
            .collect(),
        Resp::Map(map) => map
            .into_iter()
            .map(|(k, v)| (k.as_str().expect("a name"), v))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// `pairs` by name.
pub fn fields(reply: Resp) -> BTreeMap<String, Resp> {
    pairs(reply).into_iter().collect()
}

/// An integer reply's value.
#[track_caller]
pub fn int(r: &Resp) -> i64 {
    match r {
        Resp::Int(v) => *v,
        other => panic!("{other:?}"),
    }
}

/// A double: a bulk string in RESP2, a double in RESP3.
#[track_caller]
pub fn float(r: &Resp) -> f64 {
    match r {
        Resp::Bulk(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
        Resp::Double(d) => d.parse().unwrap(),
        other => panic!("not a double: {other:?}"),
    }
}

/// A simple string's text.
#[track_caller]
pub fn simple(r: &Resp) -> String {
    match r {
        Resp::Simple(s) => s.clone(),
        other => panic!("not a simple string: {other:?}"),
    }
}

/// A bulk string's bytes.
#[track_caller]
pub fn bulk_bytes(r: &Resp) -> Vec<u8> {
    match r {
        Resp::Bulk(b) => b.clone(),
        other => panic!("{other:?}"),
    }
}
