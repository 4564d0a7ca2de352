//! Commands sent to one server, with their replies checked: any surprise
//! stops the benchmark, since a number measured on a failing command means
//! nothing.

use std::collections::BTreeMap;

use crate::common::{decode, RawClient, Resp};

/// The start of a raw reply, for error messages.
pub fn show(reply: &[u8]) -> String {
    let end = reply.len().min(200);
    String::from_utf8_lossy(&reply[..end]).into_owned()
}

/// Runs a command and decodes its reply; panics on an error reply.
pub fn call<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) -> Resp {
    let raw = c.cmd(args);
    let reply = decode(&raw);
    if reply.is_error() {
        let shown: Vec<String> = args
            .iter()
            .take(4)
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        panic!("{shown:?} failed: {}", show(&raw));
    }
    reply
}

pub fn expect_ok<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) {
    let raw = c.cmd(args);
    assert!(
        raw == b"+OK\r\n",
        "{:?}: expected +OK, got {}",
        String::from_utf8_lossy(args[0].as_ref()),
        show(&raw)
    );
}

pub fn int<A: AsRef<[u8]>>(c: &mut RawClient, args: &[A]) -> i64 {
    match call(c, args) {
        Resp::Int(n) => n,
        other => panic!(
            "{:?}: expected an integer, got {other:?}",
            String::from_utf8_lossy(args[0].as_ref())
        ),
    }
}

pub fn info(c: &mut RawClient, section: &str) -> String {
    call(c, &["INFO", section])
        .as_str()
        .unwrap_or_else(|| panic!("INFO {section}: not a string"))
}

/// The value of `field:value` in INFO-style text (also /proc/cpuinfo).
pub fn info_field(text: &str, field: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BfInfo {
    pub capacity: i64,
    pub size: i64,
    pub filters: i64,
    pub items: i64,
}

pub fn bf_info(c: &mut RawClient, key: &str) -> BfInfo {
    let Resp::Array(fields) = call(c, &["BF.INFO", key]) else {
        panic!("BF.INFO {key}: not an array");
    };
    let mut map = BTreeMap::new();
    for pair in fields.chunks(2) {
        if let [name, Resp::Int(v)] = pair {
            map.insert(name.as_str().unwrap_or_default(), *v);
        }
    }
    let get = |k: &str| {
        *map.get(k)
            .unwrap_or_else(|| panic!("BF.INFO {key}: no {k:?}"))
    };
    BfInfo {
        capacity: get("Capacity"),
        size: get("Size"),
        filters: get("Number of filters"),
        items: get("Number of items inserted"),
    }
}

/// Items held by `key`, or None when there is no such key.
pub fn items_held(c: &mut RawClient, key: &str) -> Option<i64> {
    (int(c, &["EXISTS", key]) == 1).then(|| bf_info(c, key).items)
}

pub fn memory_usage(c: &mut RawClient, key: &str) -> i64 {
    int(c, &["MEMORY", "USAGE", key])
}
