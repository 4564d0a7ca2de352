//! Fields of INFO.

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
