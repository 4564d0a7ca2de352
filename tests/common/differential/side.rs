//! One member of a server pair (`Side`): a server with RESP2 and RESP3
//! connections, its replication stream read through SYNC, and its AOF
//! rewrite read back as commands.

use super::text::{eq_ic, quote, show_reply};
use super::{args, Args};
use crate::common::{decode, ModuleKind, RawClient, Server, ServerOpts};
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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
