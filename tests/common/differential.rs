//! Harness shared by the differential tests (tests/differential.rs for
//! Bloom filters, tests/differential_cuckoo.rs for Cuckoo filters): seeded
//! random numbers, command and reply printing, a server pair member (`Side`)
//! with its replication stream read through SYNC and its AOF rewrite, and
//! the seed selection from the environment (`DIFF_SEED`).

use super::{decode, ModuleKind, RawClient, Server, ServerOpts};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub type Args = Vec<Vec<u8>>;

pub fn b(s: impl AsRef<[u8]>) -> Vec<u8> {
    s.as_ref().to_vec()
}

macro_rules! args {
    ($($x:expr),* $(,)?) => {
        Vec::<Vec<u8>>::from([$($crate::common::differential::b($x)),*])
    };
}
pub(crate) use args;

// ---------------------------------------------------------------------------
// Deterministic random numbers (SplitMix64: stable across crate versions).

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo.wrapping_add(self.below(hi.wrapping_sub(lo) as u64 + 1) as i64)
    }

    /// True with probability num/den.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.index(xs.len())]
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let mut r = self.below(weights.iter().sum());
        for (i, &w) in weights.iter().enumerate() {
            if r < w {
                return i;
            }
            r -= w;
        }
        weights.len() - 1
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.index(i + 1);
            v.swap(i, j);
        }
    }
}

/// Redis' string2ll: optional '-', digits, no leading zeros, no "-0".
pub fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    if digits == b"0" {
        return (!neg).then_some(0);
    }
    if digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        (v <= 1 << 63).then(|| (v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// A byte string as redis-cli accepts it (quoted, with \xNN escapes).
pub fn quote(arg: &[u8], max: usize) -> String {
    let plain = !arg.is_empty()
        && arg
            .iter()
            .all(|&c| c.is_ascii_graphic() && c != b'"' && c != b'\'' && c != b'\\');
    let shown = &arg[..arg.len().min(max)];
    let mut s = String::new();
    if plain {
        s.push_str(std::str::from_utf8(shown).unwrap());
    } else {
        s.push('"');
        for &c in shown {
            match c {
                b'"' | b'\\' => {
                    s.push('\\');
                    s.push(c as char);
                }
                b' '..=b'~' => s.push(c as char),
                _ => {
                    let _ = write!(s, "\\x{c:02x}");
                }
            }
        }
        s.push('"');
    }
    if arg.len() > max {
        let _ = write!(s, "…(+{} bytes)", arg.len() - max);
    }
    s
}

pub fn show_cmd(args: &[Vec<u8>]) -> String {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&quote(a, 120));
    }
    s
}

pub fn show_reply(r: &[u8]) -> String {
    quote(r, 600)
}

/// The server's replication stream, read as a replica that sent SYNC.
pub struct ReplStream {
    pub reader: BufReader<TcpStream>,
}

impl ReplStream {
    pub fn sync(port: u16) -> io::Result<ReplStream> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        (&stream).write_all(b"SYNC\r\n")?;
        let mut reader = BufReader::new(stream);
        loop {
            let line = read_line(&mut reader)?;
            if line == b"\n" {
                continue; // keepalive while the RDB is being produced
            }
            let n = resp_len(&line, b'$')?;
            let mut rdb = vec![0u8; n];
            reader.read_exact(&mut rdb)?;
            return Ok(ReplStream { reader });
        }
    }

    /// The next propagated command.
    pub fn next(&mut self) -> io::Result<Args> {
        loop {
            let line = read_line(&mut self.reader)?;
            if line == b"\n" {
                continue;
            }
            let n = resp_len(&line, b'*')?;
            let mut cmd = Vec::with_capacity(n);
            for _ in 0..n {
                let len = resp_len(&read_line(&mut self.reader)?, b'$')?;
                let mut arg = vec![0u8; len + 2];
                self.reader.read_exact(&mut arg)?;
                arg.truncate(len);
                cmd.push(arg);
            }
            return Ok(cmd);
        }
    }
}

pub fn read_line(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "stream closed",
        ));
    }
    Ok(line)
}

/// The length in a `*<n>\r\n` or `$<n>\r\n` line.
pub fn resp_len(line: &[u8], kind: u8) -> io::Result<usize> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected line {}", quote(line, 80)),
        )
    };
    if line.first() != Some(&kind) || !line.ends_with(b"\r\n") {
        return Err(bad());
    }
    std::str::from_utf8(&line[1..line.len() - 2])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)
}

/// Parses a file of RESP commands (an AOF without RDB preamble).
pub fn parse_commands(mut data: &[u8]) -> io::Result<Vec<Args>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let line = read_line(&mut data)?;
        let n = resp_len(&line, b'*')?;
        let mut cmd = Vec::with_capacity(n);
        for _ in 0..n {
            let len = resp_len(&read_line(&mut data)?, b'$')?;
            let mut arg = vec![0u8; len + 2];
            data.read_exact(&mut arg)?;
            arg.truncate(len);
            cmd.push(arg);
        }
        out.push(cmd);
    }
    Ok(out)
}

pub struct Side {
    pub server: Server,
    /// [RESP2, RESP3]
    pub conns: [RawClient; 2],
    /// For replication markers and configuration (never inside MULTI).
    pub control: RawClient,
    pub repl: ReplStream,
}

impl Side {
    pub fn start(kind: ModuleKind, module_args: &[&str]) -> Side {
        Side::with_opts(ServerOpts::new(kind).module_args(module_args))
    }

    /// A server started with `opts`, configured for the comparisons
    /// (disk-based replication, no AOF RDB preamble) and read through SYNC.
    pub fn with_opts(opts: ServerOpts) -> Side {
        let server = Server::start(opts);
        let c2 = server.raw();
        let mut c3 = server.raw();
        c3.hello3();
        let mut control = server.raw();
        for (name, value) in [
            ("repl-diskless-sync", "no"),
            ("repl-ping-replica-period", "3600"),
            ("aof-use-rdb-preamble", "no"),
        ] {
            let r = control.cmd(&["CONFIG", "SET", name, value]);
            assert_eq!(r, b"+OK\r\n", "CONFIG SET {name} {value}");
        }
        let repl = ReplStream::sync(server.port()).expect("SYNC");
        Side {
            server,
            conns: [c2, c3],
            control,
            repl,
        }
    }

    /// Commands propagated since the previous marker, up to the new one.
    pub fn propagated(&mut self, marker: &[u8]) -> io::Result<Vec<Args>> {
        let m = args!["PUBLISH", "__diff_marker__", marker];
        let reply = self.control.try_cmd(&m)?;
        if !reply.starts_with(b":") {
            return Err(io::Error::other(format!("PUBLISH: {}", show_reply(&reply))));
        }
        let mut out = Vec::new();
        loop {
            let cmd = self.repl.next()?;
            if cmd == m {
                return Ok(out);
            }
            if !(cmd.len() == 1 && eq_ic(&cmd[0], "PING")) {
                out.push(cmd);
            }
        }
    }

    /// Enables AOF without RDB preamble, waits for the rewrite and returns
    /// the base file's commands grouped by key (key order is hash order).
    pub fn aof_rewrite(&mut self) -> BTreeMap<Vec<u8>, Vec<Args>> {
        let c = &mut self.control;
        assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "yes"]), b"+OK\r\n");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = decode(&c.cmd(&["INFO", "persistence"]))
                .as_str()
                .unwrap_or_default();
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_enabled:1")
            {
                assert!(
                    info.contains("aof_last_bgrewrite_status:ok"),
                    "AOF rewrite failed:\n{info}\n{}",
                    log_tail(&self.server)
                );
                break;
            }
            assert!(Instant::now() < deadline, "AOF rewrite did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        let dir = self.server.dir().join("appendonlydir");
        let manifest =
            std::fs::read_to_string(dir.join("appendonly.aof.manifest")).expect("AOF manifest");
        let base = manifest
            .lines()
            .find(|l| l.ends_with(" type b"))
            .and_then(|l| l.split(' ').nth(1))
            .expect("base AOF in manifest")
            .to_string();
        let data = std::fs::read(dir.join(&base)).expect("base AOF");
        assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "no"]), b"+OK\r\n");
        let mut groups: BTreeMap<Vec<u8>, Vec<Args>> = BTreeMap::new();
        for cmd in parse_commands(&data).expect("base AOF is RESP") {
            if eq_ic(&cmd[0], "SELECT") {
                continue;
            }
            let key = cmd.get(1).cloned().unwrap_or_default();
            groups.entry(key).or_default().push(cmd);
        }
        groups
    }
}

pub fn log_tail(server: &Server) -> String {
    let log = server.log();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

pub fn seeds(fixed: &[u64]) -> Vec<u64> {
    if let Some(seed) = env_u64("DIFF_SEED") {
        return vec![seed];
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64;
    let mut time_seed = Rng(now ^ u64::from(std::process::id()));
    let mut seeds = fixed.to_vec();
    seeds.push(time_seed.next() >> 16);
    seeds
}
