//! Fields of INFO.

use std::collections::BTreeMap;
use std::time::Duration;

use super::client::{run, wait_until};
use super::{decode, RawClient};

/// The value of `field` in `INFO section`; panics if there is none.
#[track_caller]
pub fn info_field(r: &mut RawClient, section: &str, field: &str) -> String {
    let text = decode(&r.line(&format!("INFO {section}")))
        .as_str()
        .unwrap_or_else(|| panic!("INFO {section} is no text"));
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .trim()
        .to_string()
}

/// `info_field` as a number.
#[track_caller]
pub fn info_u64(r: &mut RawClient, section: &str, field: &str) -> u64 {
    let text = info_field(r, section, field);
    text.parse()
        .unwrap_or_else(|_| panic!("INFO {section} {field}:{text} is no number"))
}

/// The numeric fields `prefix` + name of `INFO section`, keyed by name.
#[track_caller]
pub fn info_u64s(
    r: &mut RawClient,
    section: &str,
    prefix: &str,
    names: &[&'static str],
) -> BTreeMap<&'static str, u64> {
    names
        .iter()
        .map(|&name| (name, info_u64(r, section, &format!("{prefix}{name}"))))
        .collect()
}

/// Waits until no lazy free is pending (UNLINK and FLUSHALL ASYNC free on
/// a background thread; totals kept by the module change only then).
#[track_caller]
pub fn wait_lazyfree(r: &mut RawClient) {
    wait_until("lazy free", Duration::from_secs(10), || {
        let info = run(r, "INFO memory").as_str().unwrap();
        info.contains("lazyfree_pending_objects:0")
    });
}
