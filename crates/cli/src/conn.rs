//! Connections to a standalone server or a cluster. Key commands go through
//! one connection (the cluster client routes them by key); keyspace scans
//! and configuration reads go to every master node.
//!
//! Every connection has the same time limit (`--timeout`): connecting, the
//! connection's handshake (AUTH, SELECT), and each wait for the server to
//! take or send bytes. A server that does not answer in time is an error
//! naming it and the limit, never a wait without end.

use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use redis::cluster::ClusterClientBuilder;
use redis::{
    Client, ConnectionAddr, ConnectionInfo, ConnectionLike, FromRedisValue, IntoConnectionInfo,
    Value,
};

use crate::{Failure, Result, EXIT_USAGE};

/// The time limit of `stats` (and of any command but `migrate`) when
/// `--timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The time limit of `migrate`: a filter's header makes the destination
/// allocate the whole filter, and chunks of up to 16 MiB go both ways.
pub const DEFAULT_MIGRATE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the cluster client tries a command again (a MOVED or ASK
/// redirection, TRYAGAIN, a lost connection) before giving up: few, so that
/// a node that does not answer fails within a few time limits.
const CLUSTER_RETRIES: u32 = 3;

static TIMEOUT: OnceLock<Duration> = OnceLock::new();

/// Sets the time limit of every connection made afterwards (once, at start).
pub fn set_timeout(limit: Duration) {
    let _ = TIMEOUT.set(limit);
}

/// The time limit of connections.
pub fn timeout() -> Duration {
    TIMEOUT.get().copied().unwrap_or(DEFAULT_TIMEOUT)
}

/// `name did not answer within 10 s (--timeout)`.
pub fn timeout_message(name: &str) -> String {
    format!(
        "{name} did not answer within {} s (--timeout)",
        crate::fmt::g(timeout().as_secs_f64(), 6)
    )
}

/// A timeout error of the client library as one that names the server and
/// the limit (its text is the whole message); other errors as they are.
fn name_timeout(name: &str, e: redis::RedisError) -> redis::RedisError {
    if e.is_timeout() {
        std::io::Error::new(std::io::ErrorKind::TimedOut, timeout_message(name)).into()
    } else {
        e
    }
}

/// What a failed operation on `name` says: the timeout message alone, or
/// `context: error`.
fn failure(name: &str, context: &str, e: &redis::RedisError) -> Failure {
    if e.is_timeout() {
        let text = e.to_string();
        if text.contains("(--timeout)") {
            return Failure::new(text);
        }
        return Failure::new(timeout_message(name));
    }
    Failure::new(format!("{context}: {}", crate::reply::describe_error(e)))
}

/// A connection to one server with the time limit on connecting, on its
/// handshake (AUTH, SELECT: run by the client library without a read
/// timeout, so the whole opening is bounded from another thread) and on
/// every later read and write.
fn open(info: &ConnectionInfo) -> redis::RedisResult<redis::Connection> {
    let limit = timeout();
    let name = address(info);
    let (tx, rx) = mpsc::channel();
    let info = info.clone();
    // A thread that stays blocked on a silent server ends with the process.
    std::thread::spawn(move || {
        let _ = tx.send(Client::open(info).and_then(|c| c.get_connection_with_timeout(limit)));
    });
    let conn = match rx.recv_timeout(limit) {
        Ok(result) => result.map_err(|e| name_timeout(&name, e))?,
        Err(_) => {
            return Err(
                std::io::Error::new(std::io::ErrorKind::TimedOut, timeout_message(&name)).into(),
            )
        }
    };
    conn.set_read_timeout(Some(limit))?;
    conn.set_write_timeout(Some(limit))?;
    Ok(conn)
}

/// A connection whose timeout errors name the server and the limit.
struct Named<C> {
    conn: C,
    name: String,
}

impl<C: ConnectionLike> ConnectionLike for Named<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<Value> {
        self.conn
            .req_packed_command(cmd)
            .map_err(|e| name_timeout(&self.name, e))
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<Value>> {
        self.conn
            .req_packed_commands(cmd, offset, count)
            .map_err(|e| name_timeout(&self.name, e))
    }

    fn req_command(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<Value> {
        self.conn
            .req_command(cmd)
            .map_err(|e| name_timeout(&self.name, e))
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }

    fn supports_pipelining(&self) -> bool {
        self.conn.supports_pipelining()
    }

    fn check_connection(&mut self) -> bool {
        self.conn.check_connection()
    }

    fn is_open(&self) -> bool {
        self.conn.is_open()
    }
}
/// The type name of Bloom filter keys, in FerroBloom and RedisBloom.
pub const BLOOM_TYPE: &str = "MBbloom--";
/// The type name of FerroBloom's windowed Bloom filters.
pub const WINDOW_TYPE: &str = "FBwindows";
/// The type name of Cuckoo filter keys (CF.*).
pub const CUCKOO_TYPE: &str = "MBbloomCF";
/// The type name of Count-Min sketch keys (CMS.*).
pub const CMS_TYPE: &str = "CMSk-TYPE";
/// The type name of Top-K keys (TOPK.*).
pub const TOPK_TYPE: &str = "TopK-TYPE";
/// The type name of t-digest keys (TDIGEST.*).
pub const TDIGEST_TYPE: &str = "TDIS-TYPE";

/// Where a server URL leads.
enum Target {
    /// One server (which may still turn out to be a cluster node).
    One(ConnectionInfo),
    /// The seed nodes of a cluster (`redis+cluster://`).
    Cluster(Vec<ConnectionInfo>),
}

/// Checks a server URL before anything connects: a URL the tool cannot use
/// is a usage error (status 64) whose one line says why, with any password
/// hidden, not the client library's text.
pub fn check_url(url: &str) -> Result<()> {
    parse_url(url).map(|_| ())
}

fn parse_url(url: &str) -> Result<Target> {
    if url.trim().is_empty() {
        return Err(usage("empty server URL".into()));
    }
    read_url(url).map_err(|why| usage(format!("bad server URL {}: {why}", redact(url))))
}

fn usage(message: String) -> Failure {
    Failure {
        message,
        code: EXIT_USAGE,
    }
}

/// The URL's target, or why it cannot be one.
fn read_url(url: &str) -> std::result::Result<Target, String> {
    const SCHEMES: &str = "redis://, redis+cluster:// or redis+unix://";
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("no scheme (expected {SCHEMES})"));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "redis" | "redis+unix" | "unix" => read_server(url).map(Target::One),
        "redis+cluster" => {
            let seeds = cluster_seeds(rest).ok_or("no host in the cluster URL")?;
            let infos = seeds
                .iter()
                .map(|seed| read_server(seed))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Target::Cluster(infos))
        }
        "rediss" | "rediss+cluster" => Err("TLS (rediss://) is not supported by this build".into()),
        _ => Err(format!("unknown scheme {scheme}:// (expected {SCHEMES})")),
    }
}

/// One server's `redis://` or `redis+unix://` URL as connection details.
fn read_server(url: &str) -> std::result::Result<ConnectionInfo, String> {
    if let Some(port) = tcp_port(url) {
        if !matches!(port.parse::<u16>(), Ok(p) if p > 0) {
            return Err(format!("port {port} is not a number from 1 to 65535"));
        }
    }
    // The URL parser's reasons are short and plain ("invalid IPv6 address").
    url::Url::parse(url).map_err(|e| e.to_string())?;
    let info = url.into_connection_info().map_err(|e| config_reason(&e))?;
    if info.redis.db < 0 {
        return Err(format!("database {} is negative", info.redis.db));
    }
    Ok(info)
}

/// The port of a `scheme://[userinfo@]host:port/…` URL as written, if it
/// has one (checked here: the URL parser only says "invalid port number").
fn tcp_port(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = &authority[authority.rfind('@').map_or(0, |at| at + 1)..];
    // After an IPv6 address's brackets (unclosed ones are the URL parser's
    // to report), or from the colon after the host.
    let after_host = if host_port.starts_with('[') {
        &host_port[host_port.find(']')? + 1..]
    } else {
        &host_port[host_port.find(':')?..]
    };
    after_host.strip_prefix(':').filter(|p| !p.is_empty())
}

/// The client library's reason for refusing a URL, in the tool's words:
/// its text ends with its error kind (`Invalid database number-
/// InvalidClientConfig`).
fn config_reason(e: &redis::RedisError) -> String {
    let text = e.to_string();
    let text = text.split("- ").next().unwrap_or(&text).trim();
    match text {
        "Missing hostname" => "no host".into(),
        "Missing path" => "no socket path (redis+unix:///path/to/redis.sock)".into(),
        "Invalid database number" => "the database is not a number (redis://host:port/2)".into(),
        _ => text.to_lowercase(),
    }
}

/// A server or cluster the tool works on.
pub struct Server {
    /// The URL as given, with any password replaced by `***`.
    pub label: String,
    pub cluster: bool,
    conn: Box<dyn ConnectionLike>,
    /// Every master node (a standalone server: itself).
    nodes: Vec<ConnectionInfo>,
}

impl Server {
    /// Connects to `url`: `redis+cluster://` for a cluster, any other URL
    /// the `redis` crate accepts for one server. A server that turns out to
    /// be a cluster node is used as a cluster.
    pub fn connect(url: &str) -> Result<Server> {
        let target = parse_url(url)?;
        let label = redact(url);
        let fail =
            |e: redis::RedisError| failure(&label, &format!("cannot connect to {label}"), &e);
        let info = match target {
            Target::Cluster(seeds) => return Server::cluster(label.clone(), seeds).map_err(fail),
            Target::One(info) => info,
        };
        let mut conn = open(&info).map_err(fail)?;
        let info_cluster: String = redis::cmd("INFO")
            .arg("cluster")
            .query(&mut conn)
            .map_err(fail)?;
        if info_cluster.contains("cluster_enabled:1") {
            drop(conn);
            return Server::cluster(label.clone(), vec![info]).map_err(fail);
        }
        Ok(Server {
            label,
            cluster: false,
            conn: Box::new(Named {
                conn,
                name: address(&info),
            }),
            nodes: vec![info],
        })
    }

    fn cluster(label: String, seeds: Vec<ConnectionInfo>) -> redis::RedisResult<Server> {
        let limit = timeout();
        let nodes = masters(&seeds)?;
        let conn = ClusterClientBuilder::new(seeds.clone())
            .connection_timeout(limit)
            .response_timeout(limit)
            .retries(CLUSTER_RETRIES)
            .build()?
            .get_connection()
            .map_err(|e| name_timeout(&label, e))?;
        conn.set_write_timeout(Some(limit))?;
        Ok(Server {
            conn: Box::new(Named {
                conn,
                name: label.clone(),
            }),
            label,
            cluster: true,
            nodes,
        })
    }

    /// Number of master nodes (1 for a standalone server).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Runs a key command (routed by its key in a cluster).
    pub fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        cmd.query(&mut *self.conn)
    }

    /// One connection per master node.
    pub fn node_connections(&self) -> Result<Vec<(String, redis::Connection)>> {
        self.nodes
            .iter()
            .map(|info| {
                let name = address(info);
                let conn = open(info)
                    .map_err(|e| failure(&name, &format!("cannot connect to {name}"), &e))?;
                Ok((name, conn))
            })
            .collect()
    }

    /// What each master node is, whatever URL reached it: its `run_id` and
    /// the database the connection uses. Two URLs that differ only in
    /// spelling (a trailing slash, `localhost` for `127.0.0.1`, a unix
    /// socket) give the same identities.
    pub fn identities(&self) -> Result<Vec<(String, i64)>> {
        let mut out = Vec::new();
        for ((name, mut conn), info) in self.node_connections()?.into_iter().zip(&self.nodes) {
            let text: String = redis::cmd("INFO")
                .arg("server")
                .query(&mut conn)
                .map_err(|e| failure(&name, &format!("{name}: INFO server"), &e))?;
            let run_id = text
                .lines()
                .find_map(|l| l.strip_prefix("run_id:"))
                .map(|v| v.trim().to_string())
                .ok_or_else(|| Failure::new(format!("{name}: INFO server has no run_id")))?;
            out.push((run_id, info.redis.db));
        }
        Ok(out)
    }

    /// The names of every key of type `kind` matching `pattern`, found
    /// with `SCAN … MATCH pattern TYPE kind` on every master, sorted.
    pub fn scan_type(&self, pattern: &str, kind: &str) -> Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        self.scan(pattern, Some(kind), |_, _, batch| {
            keys.extend(batch);
            Ok(())
        })?;
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// `SCAN … MATCH pattern [TYPE kind]` on every master; each batch of
    /// names goes to `visit` with the node's name and connection.
    pub fn scan(
        &self,
        pattern: &str,
        kind: Option<&str>,
        mut visit: impl FnMut(&str, &mut redis::Connection, Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<()> {
        for (name, mut conn) in self.node_connections()? {
            let mut cursor = 0u64;
            loop {
                let mut cmd = redis::cmd("SCAN");
                cmd.arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000);
                if let Some(kind) = kind {
                    cmd.arg("TYPE").arg(kind);
                }
                let (next, batch): (u64, Vec<Vec<u8>>) = cmd
                    .query(&mut conn)
                    .map_err(|e| failure(&name, &format!("SCAN on {name}"), &e))?;
                if !batch.is_empty() {
                    visit(&name, &mut conn, batch)?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(())
    }

    /// Fails (status 3) unless every master node has a Bloom filter module,
    /// FerroBloom or RedisBloom: on a server without one, `stats` would
    /// report no filters as if all were well. Known from `COMMAND INFO
    /// BF.INFO` (nil for an unknown command), or, where COMMAND is renamed
    /// or denied by ACLs, from whether `BF.INFO` itself (without arguments,
    /// so it does nothing) is an unknown command.
    pub fn require_bloom_module(&self) -> Result<()> {
        for (name, mut conn) in self.node_connections()? {
            let present = has_bloom_module(&mut conn)
                .map_err(|e| failure(&name, &format!("COMMAND INFO on {name}"), &e))?;
            if !present {
                let of = if self.cluster {
                    format!(" (a master of {})", self.label)
                } else {
                    String::new()
                };
                return Err(Failure::new(format!(
                    "no Bloom filter module on {name}{of}: {PROBE} is an unknown command \
                     there; load FerroBloom or RedisBloom, or check the server URL"
                )));
            }
        }
        Ok(())
    }

    /// `CONFIG GET name` on the first node: the value, or None when the
    /// server has no such parameter.
    pub fn config_get(&self, name: &str) -> Result<Option<String>> {
        let Some((node, mut conn)) = self.node_connections()?.into_iter().next() else {
            return Ok(None);
        };
        let reply: Value = match redis::cmd("CONFIG").arg("GET").arg(name).query(&mut conn) {
            Ok(v) => v,
            // A server that does not answer is an error...
            Err(e) if e.is_timeout() || e.is_io_error() => {
                return Err(failure(&node, &format!("CONFIG GET on {node}"), &e))
            }
            // ...CONFIG renamed or denied by ACLs: use the defaults.
            Err(_) => return Ok(None),
        };
        let value = crate::reply::pairs(reply)
            .and_then(|p| crate::reply::field(&p, name).and_then(crate::reply::text));
        Ok(value)
    }
}

/// The command whose presence tells a Bloom filter module is loaded: both
/// modules have it, and `stats` and `migrate` need it.
const PROBE: &str = "BF.INFO";

/// Whether the server knows [`PROBE`]. Errors only when the server does not
/// answer.
fn has_bloom_module(conn: &mut redis::Connection) -> redis::RedisResult<bool> {
    let lost = |e: &redis::RedisError| e.is_timeout() || e.is_io_error();
    match redis::cmd("COMMAND")
        .arg("INFO")
        .arg(PROBE)
        .query::<Value>(conn)
    {
        Ok(Value::Array(entries)) if entries.len() == 1 => Ok(match &entries[0] {
            Value::Nil => false,
            Value::Array(a) => !a.is_empty(),
            Value::Map(m) => !m.is_empty(),
            _ => true,
        }),
        Err(e) if lost(&e) => Err(e),
        // COMMAND renamed, denied, or an unexpected reply: ask the command.
        _ => match redis::cmd(PROBE).query::<Value>(conn) {
            Ok(_) => Ok(true),
            Err(e) if crate::reply::is_unknown_command(&e) => Ok(false),
            Err(e) if lost(&e) => Err(e),
            // Wrong number of arguments (the module is there), or denied.
            Err(_) => Ok(true),
        },
    }
}

/// `host:port` (or the socket path) of a connection.
pub fn address(info: &ConnectionInfo) -> String {
    match &info.addr {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port}"),
        ConnectionAddr::Unix(path) => path.display().to_string(),
    }
}

/// `user:pw@h1:p1,h2:p2/rest` as one `redis://` URL per host.
fn cluster_seeds(rest: &str) -> Option<Vec<String>> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(i) => (&authority[..=i], &authority[i + 1..]),
        None => ("", authority),
    };
    // A cluster has only database 0; drop any path.
    let _ = path;
    let seeds: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("redis://{userinfo}{h}"))
        .collect();
    (!seeds.is_empty()).then_some(seeds)
}

/// The master nodes of a cluster, from `CLUSTER SLOTS` on the first seed
/// that answers, with the seeds' credentials.
fn masters(seeds: &[ConnectionInfo]) -> redis::RedisResult<Vec<ConnectionInfo>> {
    let mut last_error = None;
    for seed in seeds {
        let slots: Value = match open(seed)
            .and_then(|mut c| redis::cmd("CLUSTER").arg("SLOTS").query(&mut c))
            .map_err(|e| name_timeout(&address(seed), e))
        {
            Ok(v) => v,
            Err(e) => {
                last_error = Some(e);
                continue;
            }
        };
        let seed_host = match &seed.addr {
            ConnectionAddr::Tcp(h, _) | ConnectionAddr::TcpTls { host: h, .. } => h.clone(),
            ConnectionAddr::Unix(_) => "127.0.0.1".into(),
        };
        let mut out: Vec<ConnectionInfo> = Vec::new();
        let Value::Array(ranges) = slots else {
            continue;
        };
        for range in ranges {
            let Value::Array(parts) = range else { continue };
            let Some(Value::Array(master)) = parts.get(2) else {
                continue;
            };
            let host = master
                .first()
                .and_then(crate::reply::text)
                .unwrap_or_default();
            let Some(port) = master.get(1).and_then(crate::reply::int) else {
                continue;
            };
            // A node that does not know its own address reports "" or "?".
            let host = if host.is_empty() || host == "?" {
                seed_host.clone()
            } else {
                host
            };
            let info = ConnectionInfo {
                addr: ConnectionAddr::Tcp(host, port as u16),
                redis: seed.redis.clone(),
            };
            if !out.iter().any(|o| address(o) == address(&info)) {
                out.push(info);
            }
        }
        if !out.is_empty() {
            return Ok(out);
        }
    }
    Err(last_error.unwrap_or_else(|| {
        redis::RedisError::from((redis::ErrorKind::ClusterDown, "the cluster serves no slots"))
    }))
}

/// The URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    // `redis+unix:///path?pass=…&user=…` carries the password in the query.
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((name, value))
                    if !value.is_empty()
                        && (name.eq_ignore_ascii_case("pass")
                            || name.eq_ignore_ascii_case("password")) =>
                {
                    format!("{name}=***")
                }
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// `scheme://user:password@host…` with the password replaced by `***`.
fn redact_userinfo(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[start..];
    let end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..end];
    let Some(at) = authority.rfind('@') else {
        return url.to_string();
    };
    let userinfo = &authority[..at];
    let redacted = match userinfo.find(':') {
        Some(colon) if colon + 1 < userinfo.len() => format!("{}:***", &userinfo[..colon]),
        _ => userinfo.to_string(),
    };
    format!("{}{}{}", &url[..start], redacted, &url[start + at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("redis://127.0.0.1:6379/"), "redis://127.0.0.1:6379/");
        assert_eq!(redact("redis://:secret@host:1/0"), "redis://:***@host:1/0");
        assert_eq!(
            redact("redis+unix:///run/redis.sock?db=2&pass=secret&user=app"),
            "redis+unix:///run/redis.sock?db=2&pass=***&user=app"
        );
        assert_eq!(
            redact("redis+unix:///s?PASSWORD=x"),
            "redis+unix:///s?PASSWORD=***"
        );
        assert_eq!(redact("unix:///s?pass="), "unix:///s?pass=");
        assert_eq!(
            redact("redis+cluster://app:pw@a:1,b:2"),
            "redis+cluster://app:***@a:1,b:2"
        );
        assert_eq!(redact("redis://user@h"), "redis://user@h");
    }

    /// The reason a URL is refused, or "ok".
    fn verdict(url: &str) -> String {
        match parse_url(url) {
            Ok(_) => "ok".into(),
            Err(f) => {
                assert_eq!(f.code, EXIT_USAGE, "{url}: {}", f.message);
                assert!(!f.message.contains('\n'), "{url}: {}", f.message);
                f.message
            }
        }
    }

    #[test]
    fn malformed_urls_are_usage_errors_that_say_why() {
        for good in [
            "redis://127.0.0.1:6379/",
            "redis://h",
            "REDIS://h:1/2",
            "redis://[::1]:6379/",
            "redis://user:pw@h:65535/0",
            "redis+unix:///run/redis.sock?db=2",
            "unix:///run/redis.sock",
            "redis+cluster://a:7000,b:7001",
        ] {
            assert_eq!(verdict(good), "ok", "{good}");
        }
        for (bad, why) in [
            ("", "empty server URL"),
            (
                "http://h:6379/",
                "unknown scheme http:// (expected redis://",
            ),
            ("127.0.0.1:6379", "no scheme (expected redis://"),
            ("localhost:6379", "no scheme"),
            (
                "redis://h:99999/",
                "port 99999 is not a number from 1 to 65535",
            ),
            ("redis://h:0", "port 0 is not"),
            ("redis://h:abc/", "port abc is not"),
            ("redis://[::1]:70000", "port 70000 is not"),
            ("redis+cluster://a:1,b:99999", "port 99999 is not"),
            ("redis+cluster://", "no host in the cluster URL"),
            ("redis://[::1", "invalid IPv6 address"),
            ("redis://", "no host"),
            ("redis://h:1/abc", "the database is not a number"),
            ("redis://h:1/-1", "database -1 is negative"),
            ("redis+unix://", "no socket path"),
            ("rediss://h:1", "TLS (rediss://) is not supported"),
            ("rediss+cluster://h:1", "TLS (rediss://) is not supported"),
        ] {
            let message = verdict(bad);
            assert!(message.contains(why), "{bad}: {message}");
        }
        // The message names the URL, without its password.
        let message = verdict("redis://:secret@h:99999/");
        assert!(
            message.starts_with("bad server URL redis://:***@h:99999/: port 99999"),
            "{message}"
        );
    }

    #[test]
    fn cluster_urls_list_their_seeds() {
        assert_eq!(
            cluster_seeds("u:p@a:1,b:2/").unwrap(),
            ["redis://u:p@a:1", "redis://u:p@b:2"]
        );
        assert_eq!(cluster_seeds("h:7000").unwrap(), ["redis://h:7000"]);
        assert!(cluster_seeds("").is_none());
    }
}
