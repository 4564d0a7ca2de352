//! COMMAND INFO, COMMAND DOCS and COMMAND GETKEYS of a type's commands on
//! RedisBloom 2.8.2 and FerroBloom, RESP2 and RESP3, compared byte for byte
//! but for what FerroBloom sets on purpose: the ACL categories (none on
//! Redis 7.0, as 2.8.2) and the key spec flags (2.8.2 shows `RW access
//! update` for every command, what Redis derives from key positions alone).

use super::text::{show_cmd, show_reply};
use super::{args, Args};
use crate::common::{ModuleKind, Server, ServerOpts, ServerVersion};
use std::fmt::Write as _;

/// What a type's command metadata is compared with.
pub struct Metadata {
    /// The type's command names (as sent to COMMAND INFO and DOCS).
    pub names: &'static [&'static str],
    /// COMMAND GETKEYS arguments (after `COMMAND GETKEYS`).
    pub getkeys: Vec<Args>,
    /// Whether every command must show arity -1 in 2.8.2's COMMAND INFO.
    pub variadic: bool,
    /// FerroBloom's ACL categories of the command (lowercase name).
    pub acl_categories: fn(&ServerVersion, &str) -> Vec<&'static str>,
    /// FerroBloom's key spec flags of the command (lowercase name).
    pub key_spec_flags: fn(&str) -> &'static [&'static str],
}

/// Compares the metadata on a fresh pair of servers; returns them for
/// checks of the type's own.
pub fn compare_command_metadata(m: &Metadata) -> [Server; 2] {
    let servers = [
        Server::start(ServerOpts::new(ModuleKind::RedisBloom)),
        Server::start(ServerOpts::new(ModuleKind::FerroBloom)),
    ];
    // FerroBloom's server may put module commands in ACL categories (Redis
    // 7.2+, Valkey): COMMAND INFO then lists FerroBloom's, in place of
    // 2.8.2's empty list on Redis 7.0. Key spec flags differ everywhere
    // (docs/commands.md, differences): they are compared with FerroBloom's
    // own, everything else byte for byte.
    let fb_version = servers[1].version();
    let mut rb3 = servers[0].raw();
    rb3.hello3();
    let mut fb3 = servers[1].raw();
    fb3.hello3();
    let mut conns = [(2, servers[0].raw(), servers[1].raw()), (3, rb3, fb3)];
    let mut commands: Vec<Args> = Vec::new();
    for name in m.names {
        commands.push(args!["COMMAND", "INFO", name]);
        commands.push(args!["COMMAND", "DOCS", name]);
    }
    for keys in &m.getkeys {
        let mut a = args!["COMMAND", "GETKEYS"];
        a.extend(keys.iter().cloned());
        commands.push(a);
    }
    let mut failures = Vec::new();
    for a in &commands {
        for (proto, rb, fb) in &mut conns {
            let (mut x, y) = (rb.cmd(a), fb.cmd(a));
            if a[1] == b"INFO" {
                x = as_ferrobloom_declares(m, &fb_version, *proto, &a[2], &x);
            }
            if x != y {
                failures.push(format!(
                    "{} (RESP{proto}):\n    RedisBloom {}\n    FerroBloom {}",
                    show_cmd(a),
                    show_reply(&x),
                    show_reply(&y)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} command metadata replies differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    servers
}

/// 2.8.2's COMMAND INFO reply `x` for command `name`, with the ACL
/// categories and key spec flags FerroBloom declares in place of 2.8.2's;
/// the rest (name, arity, command flags, first/last key and step, the key
/// spec's begin_search and find_keys) is left to compare byte for byte.
fn as_ferrobloom_declares(
    m: &Metadata,
    fb_version: &ServerVersion,
    proto: i32,
    name: &[u8],
    x: &[u8],
) -> Vec<u8> {
    let name = String::from_utf8_lossy(name).to_lowercase();
    let set = if proto == 3 { "~" } else { "*" };
    if m.variadic {
        let arity = format!("${}\r\n{name}\r\n:-1\r\n", name.len());
        assert!(
            String::from_utf8_lossy(x).contains(&arity),
            "arity of {name}"
        );
    }
    let none = format!(":1\r\n:1\r\n:1\r\n{set}0\r\n");
    let categories = (m.acl_categories)(fb_version, &name);
    let mut ours = format!(":1\r\n:1\r\n:1\r\n{set}{}\r\n", categories.len());
    for c in categories {
        let _ = write!(ours, "+{c}\r\n");
    }
    let mut text = String::from_utf8_lossy(x).into_owned();
    assert!(text.contains(&none), "2.8.2's COMMAND INFO {name}: {text}");
    text = text.replacen(&none, &ours, 1);
    // The key spec's flags: 2.8.2's `RW access update` (from the key
    // positions alone), FerroBloom's from what the command does with its
    // key (`RO access` for the read commands).
    let theirs = format!("$5\r\nflags\r\n{set}3\r\n+RW\r\n+access\r\n+update\r\n");
    let key_flags = (m.key_spec_flags)(&name);
    let mut ours = format!("$5\r\nflags\r\n{set}{}\r\n", key_flags.len());
    for f in key_flags {
        let _ = write!(ours, "+{f}\r\n");
    }
    assert!(
        text.matches(&theirs).count() == 1,
        "2.8.2's COMMAND INFO {name}: {text}"
    );
    text = text.replacen(&theirs, &ours, 1);
    // Valkey 9 sends the empty subcommands as an array in RESP3.
    if proto == 3 && !fb_version.resp3_subcommands_are_a_set() {
        assert!(
            text.ends_with("~0\r\n"),
            "2.8.2's COMMAND INFO {name}: {text}"
        );
        text.truncate(text.len() - 4);
        text.push_str("*0\r\n");
    }
    text.into_bytes()
}
