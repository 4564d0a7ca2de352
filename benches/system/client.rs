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
    let map = info_map(c, "BF.INFO", key);
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

/// CF.INFO of a Cuckoo filter (the fields the benchmark checks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CfInfo {
    pub size: i64,
    pub buckets: i64,
    pub filters: i64,
    pub items: i64,
    pub bucket_size: i64,
}

/// The integer fields of a BF.INFO / CF.INFO reply, by label.
fn info_map(c: &mut RawClient, command: &str, key: &str) -> BTreeMap<String, i64> {
    let Resp::Array(fields) = call(c, &[command, key]) else {
        panic!("{command} {key}: not an array");
    };
    let mut map = BTreeMap::new();
    for pair in fields.chunks(2) {
        if let [name, Resp::Int(v)] = pair {
            map.insert(name.as_str().unwrap_or_default(), *v);
        }
    }
    map
}

pub fn cf_info(c: &mut RawClient, key: &str) -> CfInfo {
    let map = info_map(c, "CF.INFO", key);
    let get = |k: &str| {
        *map.get(k)
            .unwrap_or_else(|| panic!("CF.INFO {key}: no {k:?}"))
    };
    CfInfo {
        size: get("Size"),
        buckets: get("Number of buckets"),
        filters: get("Number of filters"),
        items: get("Number of items inserted"),
        bucket_size: get("Bucket size"),
    }
}

/// Items held by `key`, or None when there is no such key.
pub fn items_held(c: &mut RawClient, key: &str) -> Option<i64> {
    (int(c, &["EXISTS", key]) == 1).then(|| bf_info(c, key).items)
}

pub fn memory_usage(c: &mut RawClient, key: &str) -> i64 {
    int(c, &["MEMORY", "USAGE", key])
}
