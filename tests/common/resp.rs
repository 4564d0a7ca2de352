//! A minimal blocking RESP client that returns raw reply bytes, and a small
//! decoder of those bytes for assertions.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const READ_TIMEOUT: Duration = Duration::from_secs(60);
const PIPELINE_CHUNK: usize = 1024;

/// Encodes one command as a RESP array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Blocking TCP client speaking raw RESP. Every reply is returned exactly as
/// the server sent it, so replies of two servers can be compared byte for byte.
pub struct RawClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl RawClient {
    pub fn connect(port: u16) -> RawClient {
        Self::try_connect(port, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("cannot connect to 127.0.0.1:{port}: {e}"))
    }

    pub fn try_connect(port: u16, timeout: Duration) -> io::Result<RawClient> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        Ok(RawClient {
            reader: BufReader::with_capacity(1 << 16, stream.try_clone()?),
            writer: stream,
        })
    }

    /// Sends one command and returns the raw bytes of its (single) reply.
    /// Accepts `&[&[u8]]`, `&[&str]`, `&[Vec<u8>]`, `&[String]`, ...
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("RESP command {:?} failed: {e}", show_args(args)))
    }

    /// `cmd` for a whitespace-separated command line without quoting,
    /// e.g. `raw.line("BF.INFO k SIZE")`.
    pub fn line(&mut self, line: &str) -> Vec<u8> {
        self.cmd(&line.split_whitespace().collect::<Vec<_>>())
    }

    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<Vec<u8>> {
        self.writer.write_all(&encode(args))?;
        self.read_reply()
    }

    /// Sends `args`, then each command of `then`, in one write, and reads
    /// one reply: for a server that writes fewer elements than an array
    /// reply announces (RedisBloom 2.8.2's TOPK.INCRBY with a bad
    /// increment), the replies to `then` complete it and the connection
    /// stays in step.
    pub fn try_cmd_then<A: AsRef<[u8]>>(
        &mut self,
        args: &[A],
        then: &[Vec<Vec<u8>>],
    ) -> io::Result<Vec<u8>> {
        let mut buf = encode(args);
        for c in then {
            buf.extend_from_slice(&encode(c));
        }
        self.writer.write_all(&buf)?;
        self.read_reply()
    }

    /// Switches this connection to RESP3 (`HELLO 3`), discarding the reply.
    pub fn hello3(&mut self) {
        let reply = self.cmd(&["HELLO", "3"]);
        assert!(
            reply.starts_with(b"%"),
            "HELLO 3 failed: {}",
            String::from_utf8_lossy(&reply)
        );
    }

    /// Sends many commands, writing them in batches, and returns one raw
    /// reply per command, in order.
    pub fn pipeline<C, A>(&mut self, cmds: &[C]) -> Vec<Vec<u8>>
    where
        C: AsRef<[A]>,
        A: AsRef<[u8]>,
    {
        let mut replies = Vec::with_capacity(cmds.len());
        for chunk in cmds.chunks(PIPELINE_CHUNK) {
            let mut buf = Vec::new();
            for c in chunk {
                buf.extend_from_slice(&encode(c.as_ref()));
            }
            self.writer.write_all(&buf).expect("pipeline write");
            for _ in chunk {
                replies.push(self.read_reply().expect("pipeline read"));
            }
        }
        replies
    }

    /// Reads exactly one complete reply (RESP2 or RESP3, aggregates nested,
    /// an attribute `|` together with the reply it annotates).
    pub fn read_reply(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_one(&mut out)?;
        Ok(out)
    }

    fn read_one(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        self.reader.read_until(b'\n', out)?;
        let header = &out[start..];
        if header.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if header.len() < 3 || !header.ends_with(b"\r\n") {
            return Err(bad(header));
        }
        let kind = header[0];
        let len = || -> io::Result<i64> {
            std::str::from_utf8(&header[1..header.len() - 2])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(header))
        };
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
            b'$' | b'!' | b'=' => {
                let n = len()?;
                if n >= 0 {
                    let at = out.len();
                    out.resize(at + n as usize + 2, 0);
                    io::Read::read_exact(&mut self.reader, &mut out[at..])?;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = len()?;
                let items = if matches!(kind, b'%' | b'|') {
                    2 * n
                } else {
                    n
                };
                for _ in 0..items.max(0) {
                    self.read_one(out)?;
                }
                if kind == b'|' {
                    self.read_one(out)?;
                }
            }
            _ => return Err(bad(header)),
        }
        Ok(())
    }
}

fn bad(header: &[u8]) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("bad RESP header {:?}", String::from_utf8_lossy(header)),
    )
}

fn show_args<A: AsRef<[u8]>>(args: &[A]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(&a.as_ref()[..a.as_ref().len().min(64)]).into_owned())
        .collect()
}

/// A decoded RESP2/RESP3 value.
#[derive(Clone, Debug, PartialEq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// `$-1`, `*-1` and RESP3 `_`.
    Nil,
    Array(Vec<Resp>),
    Bool(bool),
    /// RESP3 double, kept as sent (`inf`, `-inf`, `nan`, `1.5`, ...).
    Double(String),
    BigNumber(String),
    /// RESP3 verbatim string: format (e.g. `txt`) and payload.
    Verbatim(String, Vec<u8>),
    Map(Vec<(Resp, Resp)>),
    Set(Vec<Resp>),
    Push(Vec<Resp>),
    /// RESP3 attribute map and the value it annotates.
    Attribute(Vec<(Resp, Resp)>, Box<Resp>),
}

impl Resp {
    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Error(_))
    }

    /// Simple, bulk or verbatim string content as UTF-8 (lossy).
    pub fn as_str(&self) -> Option<String> {
        match self {
            Resp::Simple(s) => Some(s.clone()),
            Resp::Bulk(b) | Resp::Verbatim(_, b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// Decodes exactly one reply; panics on malformed input or trailing bytes.
pub fn decode(bytes: &[u8]) -> Resp {
    let (value, used) = parse(bytes, 0)
        .unwrap_or_else(|| panic!("malformed RESP: {:?}", String::from_utf8_lossy(bytes)));
    assert_eq!(used, bytes.len(), "trailing bytes after RESP reply");
    value
}

fn parse(b: &[u8], at: usize) -> Option<(Resp, usize)> {
    let eol = at + b.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let kind = *b.get(at)?;
    let text = std::str::from_utf8(&b[at + 1..eol]).ok()?;
    let next = eol + 2;
    let int = || text.parse::<i64>().ok();
    let blob = |n: i64| -> Option<(&[u8], usize)> {
        let end = next.checked_add(usize::try_from(n).ok()?)?;
        (b.get(end..end + 2)? == b"\r\n").then(|| (&b[next..end], end + 2))
    };
    let many = |n: i64, mut pos: usize| -> Option<(Vec<Resp>, usize)> {
        let mut items = Vec::new();
        for _ in 0..n {
            let (v, p) = parse(b, pos)?;
            items.push(v);
            pos = p;
        }
        Some((items, pos))
    };
    let pairs = |items: Vec<Resp>| -> Vec<(Resp, Resp)> {
        let mut it = items.into_iter();
        std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
    };
    Some(match kind {
        b'+' => (Resp::Simple(text.into()), next),
        b'-' => (Resp::Error(text.into()), next),
        b':' => (Resp::Int(int()?), next),
        b'_' => (Resp::Nil, next),
        b'#' => (Resp::Bool(text == "t"), next),
        b',' => (Resp::Double(text.into()), next),
        b'(' => (Resp::BigNumber(text.into()), next),
        b'$' | b'!' | b'=' if int()? < 0 => (Resp::Nil, next),
        b'$' | b'!' | b'=' => {
            let (data, end) = blob(int()?)?;
            let v = match kind {
                b'$' => Resp::Bulk(data.to_vec()),
                b'!' => Resp::Error(String::from_utf8_lossy(data).into_owned()),
                _ => {
                    let (fmt, body) = (data.get(..3)?, data.get(4..)?);
                    Resp::Verbatim(String::from_utf8_lossy(fmt).into_owned(), body.to_vec())
                }
            };
            (v, end)
        }
        b'*' if int()? < 0 => (Resp::Nil, next),
        b'*' | b'~' | b'>' => {
            let (items, end) = many(int()?, next)?;
            let v = match kind {
                b'*' => Resp::Array(items),
                b'~' => Resp::Set(items),
                _ => Resp::Push(items),
            };
            (v, end)
        }
        b'%' => {
            let (items, end) = many(2 * int()?, next)?;
            (Resp::Map(pairs(items)), end)
        }
        b'|' => {
            let (items, pos) = many(2 * int()?, next)?;
            let (inner, end) = parse(b, pos)?;
            (Resp::Attribute(pairs(items), Box::new(inner)), end)
        }
        _ => return None,
    })
}

/// A double as a server prints it (`%.17g` or the shortest form, `nan`
/// or `-nan`) in one form, or None when `text` is no double.
pub fn double_in_one_form(text: &str) -> Option<String> {
    let value = match text {
        "-nan" => f64::NAN,
        _ => text.parse::<f64>().ok()?,
    };
    Some(if value.is_nan() {
        "nan".to_string()
    } else {
        ferrobloom_core::tdigest::format::format_double(
            value,
            ferrobloom_core::tdigest::format::DoubleStyle::Redis72,
        )
    })
}

/// A reply with every double in one form, for comparing a server that
/// prints doubles as Redis 7.0 does (`%.17g`, `-nan`: the RedisBloom
/// oracle always runs there) with one that prints them as 7.2+ and Valkey
/// do (the shortest round-trip form, `nan`). Equal doubles give equal text
/// either way, since both forms read back exactly; anything else is kept
/// as it is. A reply that is not RESP is kept as its text.
pub fn doubles_in_one_form(reply: &[u8]) -> String {
    fn walk(r: Resp) -> Resp {
        match r {
            Resp::Bulk(b) => match std::str::from_utf8(&b).ok().and_then(double_in_one_form) {
                Some(t) => Resp::Bulk(t.into_bytes()),
                None => Resp::Bulk(b),
            },
            Resp::Double(d) => Resp::Double(double_in_one_form(&d).unwrap_or(d)),
            Resp::Array(v) => Resp::Array(v.into_iter().map(walk).collect()),
            Resp::Set(v) => Resp::Set(v.into_iter().map(walk).collect()),
            Resp::Map(v) => Resp::Map(v.into_iter().map(|(k, x)| (walk(k), walk(x))).collect()),
            other => other,
        }
    }
    match parse(reply, 0) {
        Some((value, used)) if used == reply.len() => format!("{:?}", walk(value)),
        _ => String::from_utf8_lossy(reply).into_owned(),
    }
}
