//! The generic differential runner: one loop that sends the same random
//! command streams to RedisBloom 2.8.2 and FerroBloom (each command on the
//! RESP2 or the RESP3 connection), compares the replies byte for byte, the
//! commands each server propagated to replicas after every command, every
//! key's TYPE and DUMP bytes in periodic audits, and the AOF rewrite at the
//! end of each seed.
//!
//! What differs between data types comes from the `DiffType` trait: the
//! command generator (`ops`), the keys it draws from, what an audit reads
//! of a key of the type (its SCANDUMP stream, INFO, DEBUG ...), which
//! differences are masked (`frame`) and how the propagated streams must
//! relate (`compare_propagation`). A new type implements the trait and
//! writes its operations as methods of `Runner<ItsType>`.

use super::text::{eq_ic, quote, show_cmd, show_reply, show_stream};
use super::{args, b, log_tail, Args, Rng, Side};
use crate::common::{decode, dump_parts, restamp_dump, ModuleKind, Resp, ServerVersion};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Instant;

/// Commands shown with a mismatch.
const HISTORY: usize = 16;

/// One operation of a type's command generator.
pub type Op<T> = fn(&mut Runner<T>);

/// What a data type supplies to the differential runner.
pub trait DiffType: Sized {
    /// The test's name in its output, e.g. `differential_cuckoo`.
    const LABEL: &'static str;
    /// TYPE's reply for a key of this type: the keys an audit looks into.
    const TYPE_REPLY: &'static [u8];
    /// TYPE replies of the module keys whose MEMORY USAGE, where FerroBloom
    /// runs on another server than the oracle, must stay within 64 bytes of
    /// the oracle's (the server adds its own per-key overhead; MEMORY USAGE
    /// of other types is the server's alone and not compared then).
    const FILTER_TYPES: &'static [&'static [u8]];
    /// The type's LOADCHUNK command: a header chunk (iterator 1) may leave
    /// its key loading (see `Runner::drop_loading_keys`).
    const LOADCHUNK: &'static str;
    /// The type's STATS command, whose `loading` field says so.
    const STATS: &'static str;
    /// The type's SCANDUMP command (see `Runner::walk`).
    const SCANDUMP: &'static str;
    /// A SCANDUMP stream of more chunks is taken for one that never ends.
    const SCANDUMP_MAX_CHUNKS: usize;
    /// `Runner::name` sends one command name in this many in lower case,
    /// one in this many in mixed case.
    const NAME_CASE_ONE_IN: u64;
    /// An audit after about this many commands.
    const AUDIT_EVERY: usize;
    /// One operation in this many is `reload`.
    const RELOAD_ONE_IN: u64;

    /// The type's own generator state, from the module arguments.
    fn new(module_args: &[&str]) -> Self;
    /// The key names the generator draws from.
    fn keys() -> Vec<Vec<u8>>;
    /// The weighted operations of the generator.
    fn ops() -> Vec<(u64, Op<Self>)>;
    /// A short description of a reply for DIFF_STATS.
    fn reply_class(reply: &[u8]) -> String;
    /// Start of a seed, after FLUSHALL: clears the type's state and
    /// creates the keys of other types the generator expects.
    fn start_seed(run: &mut Runner<Self>);
    /// The operation run instead of a generated one now and then (a DEBUG
    /// RELOAD and what checks it).
    fn reload(run: &mut Runner<Self>);
    /// What an audit sends for a key of this type (after TYPE and DUMP).
    fn audit_key(run: &mut Runner<Self>, key: &[u8]);
    /// FerroBloom's reply as the oracle's server would frame it, where
    /// FerroBloom runs on another server version, for what is not DUMP or
    /// MEMORY USAGE (which the runner handles). The default changes nothing.
    fn frame(run: &mut Runner<Self>, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        let _ = (run, args, rb);
        fb
    }
    /// Where the type's documentation lists a deliberate difference from
    /// 2.8.2: FerroBloom's reply `fb` to `args` (2.8.2 replied `rb`) as
    /// 2.8.2 gives it, once the type has checked each reply against what
    /// it documents for that case (reporting through `Runner::mismatch`),
    /// and brought the servers' data back together where the case let it
    /// differ. Called for every compared command, before its replication
    /// streams are read. The default changes nothing: every reply must be
    /// byte for byte 2.8.2's.
    fn known_difference(
        run: &mut Runner<Self>,
        args: &[Vec<u8>],
        rb: &[u8],
        fb: Vec<u8>,
    ) -> Vec<u8> {
        let _ = (run, args, rb);
        fb
    }
    /// A key's commands in an AOF rewrite in the form they are compared
    /// in, where the type documents that FerroBloom writes the same data
    /// in other bytes. The default changes nothing.
    fn aof_form(cmds: Vec<Args>) -> Vec<Args> {
        cmds
    }
    /// Compares what both servers propagated for the command `line`
    /// (FerroBloom got `fb_args` and replied `fb_reply`), reporting through
    /// `Runner::mismatch`.
    fn compare_propagation(
        run: &mut Runner<Self>,
        line: &str,
        fb_args: &[Vec<u8>],
        fb_reply: &[u8],
        rb: Vec<Args>,
        fb: Vec<Args>,
    );
}

/// A SCANDUMP stream chunk: (iterator to pass to LOADCHUNK, 2.8.2's data,
/// FerroBloom's data).
pub type Chunk = (i64, Vec<u8>, Vec<u8>);

/// The replies of both servers to one command.
pub struct Pair {
    pub rb: Vec<u8>,
    pub fb: Vec<u8>,
}

/// The two servers, the generator's shared state, and the type's own (`ty`).
pub struct Runner<T> {
    pub ty: T,
    pub rb: Side,
    pub fb: Side,
    /// 2.8.2 always runs on Redis 7.0, FerroBloom on `REDIS_SERVER`
    /// (`make test-valkey`, `make test-redis74`).
    pub rb_version: ServerVersion,
    pub fb_version: ServerVersion,
    pub rng: Rng,
    pub seed: u64,
    /// Commands sent in the current seed.
    pub step: usize,
    pub total: usize,
    pub audit_commands: usize,
    /// Commands seen in 2.8.2's replication stream and rewritten AOFs.
    pub propagated: usize,
    pub aof_commands: usize,
    pub history: VecDeque<String>,
    pub keys: Vec<Vec<u8>>,
    /// Items seen in writes, reused so that lookups and duplicates hit.
    pub pool: Vec<Vec<u8>>,
    /// Whether each command's replication stream is compared (not in audits).
    pub check_replication: bool,
    pub markers: u64,
    pub keep_going: bool,
    pub mismatches: Vec<String>,
    /// (command, reply class) counts, printed with DIFF_STATS=1.
    pub stats: Option<BTreeMap<(String, String), usize>>,
    /// Keys a LOADCHUNK header was sent to since the last operation (see
    /// `drop_loading_keys`).
    pub maybe_loading: Vec<Vec<u8>>,
}

impl<T: DiffType> Runner<T> {
    /// Both servers with `module_args`, each read through SYNC.
    pub fn new(module_args: &[&str]) -> Runner<T> {
        let ty = T::new(module_args);
        let rb = Side::start(ModuleKind::RedisBloom, module_args);
        let fb = Side::start(ModuleKind::FerroBloom, module_args);
        let (rb_version, fb_version) = (rb.server.version(), fb.server.version());
        if !fb_version.parses_hex_floats() {
            eprintln!(
                "{fb_version:?} parses no hex floats: the generated ones are sent to both \
                 servers in decimal (tests/commands.rs number_parsing checks the refusal)"
            );
        }
        Runner {
            ty,
            rb,
            fb,
            rb_version,
            fb_version,
            rng: Rng(0),
            seed: 0,
            step: 0,
            total: 0,
            audit_commands: 0,
            propagated: 0,
            aof_commands: 0,
            history: VecDeque::new(),
            keys: T::keys(),
            pool: Vec::new(),
            check_replication: true,
            markers: 0,
            keep_going: std::env::var("DIFF_KEEP_GOING").is_ok_and(|v| v == "1"),
            mismatches: Vec::new(),
            stats: std::env::var("DIFF_STATS")
                .is_ok_and(|v| v == "1")
                .then(BTreeMap::new),
            maybe_loading: Vec::new(),
        }
    }

    // -- sending ------------------------------------------------------------

    /// Sends `args` to both servers on a random connection, comparing.
    pub fn send(&mut self, args: &[Vec<u8>]) -> Pair {
        let proto = self.rng.index(2);
        self.send_split(proto, args, args, true)
    }

    /// Sends `args` to both servers on connection `proto` (0: RESP2, 1: RESP3).
    pub fn send_proto(&mut self, proto: usize, args: &[Vec<u8>]) -> Pair {
        self.send_split(proto, args, args, true)
    }

    /// Sends `rb_args` to 2.8.2 and `fb_args` to FerroBloom on connection
    /// `proto` (0: RESP2, 1: RESP3); with `compare`, requires equal bytes.
    pub fn send_split(
        &mut self,
        proto: usize,
        rb_args: &[Vec<u8>],
        fb_args: &[Vec<u8>],
        compare: bool,
    ) -> Pair {
        self.send_completed(proto, rb_args, fb_args, compare, 0)
    }

    /// `send_proto`, where 2.8.2 is known to write `rb_missing` elements
    /// fewer than its reply announces (TOPK.INCRBY with a bad increment,
    /// spec §4.5): as many PINGs follow the command on 2.8.2's connection,
    /// so its reply is read whole (the PONGs in place of the missing
    /// elements) and the next command's reply is its own.
    pub fn send_short_reply(&mut self, proto: usize, args: &[Vec<u8>], rb_missing: usize) -> Pair {
        self.send_completed(proto, args, args, true, rb_missing)
    }

    /// Sends `args` to FerroBloom alone, on connection `proto`: a command
    /// 2.8.2 must not get because it aborts the server there, whose reply
    /// the type documents (the caller checks it). It is counted and kept
    /// in the history as any other; returns FerroBloom's reply and what it
    /// propagated (2.8.2's stream, which must stay empty, is checked here).
    pub fn send_fb_only(&mut self, proto: usize, args: &[Vec<u8>]) -> (Vec<u8>, Vec<Args>) {
        self.step += 1;
        self.total += 1;
        let line = format!(
            "#{} RESP{} (FerroBloom alone): {}",
            self.step,
            proto + 2,
            show_cmd(args)
        );
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(line.clone());
        let fb = self.fb.conns[proto].try_cmd(args).unwrap_or_else(|e| {
            panic!(
                "seed {}: FerroBloom's connection failed at {line}: {e}\n{}",
                self.seed,
                log_tail(&self.fb.server)
            )
        });
        if let Some(stats) = &mut self.stats {
            let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
            let class = format!("(FerroBloom alone) {}", T::reply_class(&fb));
            *stats.entry((name, class)).or_insert(0) += 1;
        }
        let (rb_stream, fb_stream) = self.propagated_streams(&line);
        if !rb_stream.is_empty() {
            self.mismatch(&line, &show_stream(&rb_stream), "(2.8.2 got no command)");
        }
        (fb, fb_stream)
    }

    fn send_completed(
        &mut self,
        proto: usize,
        rb_args: &[Vec<u8>],
        fb_args: &[Vec<u8>],
        compare: bool,
        rb_missing: usize,
    ) -> Pair {
        let (rb_decimal, fb_decimal) = (self.decimal(rb_args), self.decimal(fb_args));
        let rb_args = rb_decimal.as_deref().unwrap_or(rb_args);
        let fb_args = fb_decimal.as_deref().unwrap_or(fb_args);
        self.step += 1;
        self.total += 1;
        let mut line = format!("#{} RESP{}: {}", self.step, proto + 2, show_cmd(rb_args));
        if rb_args != fb_args {
            let _ = write!(line, "   (FerroBloom got: {})", show_cmd(fb_args));
        }
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(line.clone());
        // A header, sent directly or inside EVAL / MULTI.
        for (i, a) in rb_args.iter().enumerate() {
            if eq_ic(a, T::LOADCHUNK) && rb_args.get(i + 2).is_some_and(|it| it == b"1") {
                self.maybe_loading.push(rb_args[i + 1].clone());
            }
        }
        let pings = vec![args!["PING"]; rb_missing];
        let rb = self.rb.conns[proto].try_cmd_then(rb_args, &pings);
        let fb = self.fb.conns[proto].try_cmd(fb_args);
        let (rb, fb) = match (rb, fb) {
            (Ok(rb), Ok(fb)) => {
                let fb = self.as_on_oracle_server(fb_args, &rb, fb);
                (rb, fb)
            }
            (rb, fb) => panic!(
                "seed {} (reproduce with DIFF_SEED={}): connection failed at command {line}: \
                 RedisBloom {:?}, FerroBloom {:?} (server crashed?)\nrecent commands:\n{}\n\
                 RedisBloom log tail:\n{}\nFerroBloom log tail:\n{}",
                self.seed,
                self.seed,
                rb.err(),
                fb.err(),
                self.recent(),
                log_tail(&self.rb.server),
                log_tail(&self.fb.server),
            ),
        };
        let fb = if compare {
            T::known_difference(self, fb_args, &rb, fb)
        } else {
            fb
        };
        if compare && rb != fb {
            self.mismatch(&line, &show_reply(&rb), &show_reply(&fb));
        }
        if let Some(stats) = &mut self.stats {
            let name = String::from_utf8_lossy(&rb_args[0]).to_ascii_uppercase();
            *stats.entry((name, T::reply_class(&rb))).or_insert(0) += 1;
        }
        if self.check_replication {
            let (rb_stream, fb_stream) = self.propagated_streams(&line);
            self.propagated += rb_stream.len();
            T::compare_propagation(self, &line, fb_args, &fb, rb_stream, fb_stream);
        }
        Pair { rb, fb }
    }

    /// The command with its hex-float tokens in decimal, where FerroBloom's
    /// server parses no hex floats (Valkey 9); None when nothing changes.
    fn decimal(&self, args: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
        if self.fb_version.parses_hex_floats() {
            return None;
        }
        let decimal = |a: &[u8]| -> Option<&'static [u8]> {
            match a {
                b"0x1p-7" | b"0X1P-7" => Some(b"0.0078125"),
                b"0x1p0" => Some(b"1"),
                _ => None,
            }
        };
        args.iter().any(|a| decimal(a).is_some()).then(|| {
            args.iter()
                .map(|a| decimal(a).map_or_else(|| a.clone(), <[u8]>::to_vec))
                .collect()
        })
    }

    /// FerroBloom's reply as the oracle's server would frame it, where
    /// FerroBloom runs on another server version: a DUMP payload carries the
    /// server's RDB version (checked, then replaced with the oracle
    /// server's, so that it can also be RESTOREd there), and MEMORY USAGE
    /// adds the server's own per-key overhead (for a filter, accepted within
    /// 64 bytes of the oracle server's; other types are the server's
    /// alone); the rest is the type's `frame`.
    fn as_on_oracle_server(&mut self, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        if self.fb_version == self.rb_version {
            return fb;
        }
        let name = args.first().map(|a| a.to_ascii_uppercase());
        match (name.as_deref(), decode(&fb)) {
            (Some(b"DUMP"), Resp::Bulk(payload)) => {
                let (_, version) = dump_parts(&payload);
                assert_eq!(
                    version,
                    self.fb_version.rdb_version(),
                    "FerroBloom's DUMP: RDB version of {:?}",
                    self.fb_version
                );
                let payload = restamp_dump(&payload, self.rb_version.rdb_version());
                let mut reply = format!("${}\r\n", payload.len()).into_bytes();
                reply.extend_from_slice(&payload);
                reply.extend_from_slice(b"\r\n");
                reply
            }
            (Some(b"MEMORY"), Resp::Int(got)) => {
                let Resp::Int(want) = decode(rb) else {
                    return fb;
                };
                let t = self.fb.control.cmd(&[b"TYPE".as_slice(), &args[2]]);
                let filter = T::FILTER_TYPES.contains(&t.as_slice());
                if !filter || (got - want).abs() <= 64 {
                    rb.to_vec()
                } else {
                    fb
                }
            }
            // The oracle's server prints doubles as Redis 7.0 does.
            _ if crate::common::doubles_in_one_form(rb)
                == crate::common::doubles_in_one_form(&fb) =>
            {
                rb.to_vec()
            }
            _ => T::frame(self, args, rb, fb),
        }
    }

    /// The commands each server propagated since the previous marker.
    fn propagated_streams(&mut self, line: &str) -> (Vec<Args>, Vec<Args>) {
        self.markers += 1;
        let marker = self.markers.to_string().into_bytes();
        match (self.rb.propagated(&marker), self.fb.propagated(&marker)) {
            (Ok(rb), Ok(fb)) => (rb, fb),
            (rb, fb) => panic!(
                "seed {}: replication stream failed after {line}: RedisBloom {:?}, FerroBloom {:?}",
                self.seed,
                rb.err(),
                fb.err()
            ),
        }
    }

    /// AOF rewrite without RDB preamble: the same commands per key (§7.1).
    pub fn compare_aof_rewrite(&mut self) {
        let form = |groups: BTreeMap<Vec<u8>, Vec<Args>>| -> BTreeMap<Vec<u8>, Vec<Args>> {
            groups
                .into_iter()
                .map(|(k, c)| (k, T::aof_form(c)))
                .collect()
        };
        let rb = form(self.rb.aof_rewrite());
        let fb = form(self.fb.aof_rewrite());
        self.aof_commands += rb.values().map(Vec::len).sum::<usize>();
        let keys: BTreeSet<&Vec<u8>> = rb.keys().chain(fb.keys()).collect();
        for key in keys {
            let (x, y) = (rb.get(key), fb.get(key));
            if x != y {
                let show =
                    |c: Option<&Vec<Args>>| c.map_or("(no commands)".into(), |c| show_stream(c));
                let what = format!("AOF rewrite of key {} (end of seed)", quote(key, 60));
                self.mismatch(&what, &show(x), &show(y));
            }
        }
    }

    /// Deletes (on both servers), after the operation that sent their
    /// header, the filters whose LOADCHUNK sequence is incomplete: the
    /// type's documentation says why such a filter may differ from 2.8.2's
    /// once other writes reach it.
    pub fn drop_loading_keys(&mut self) {
        let mut keys = std::mem::take(&mut self.maybe_loading);
        keys.sort();
        keys.dedup();
        for key in keys {
            self.drop_if_loading(&key);
        }
    }

    /// `drop_loading_keys` for one key.
    pub fn drop_if_loading(&mut self, key: &[u8]) {
        let stats = self.fb.control.cmd(&[b(T::STATS), key.to_vec()]);
        let Resp::Array(fields) = decode(&stats) else {
            return;
        };
        let loading = fields
            .chunks(2)
            .any(|f| f[0].as_str().as_deref() == Some("loading") && f[1] == Resp::Int(1));
        if loading {
            self.send(&args!["DEL", key]);
        }
    }

    pub fn recent(&self) -> String {
        self.history
            .iter()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Reports a difference: a panic, or with DIFF_KEEP_GOING=1 a line kept
    /// for the end of the test.
    pub fn mismatch(&mut self, what: &str, rb: &str, fb: &str) {
        let msg = format!(
            "MISMATCH seed {} (reproduce with DIFF_SEED={}), command {what}\n  \
             RedisBloom 2.8.2: {rb}\n  FerroBloom:       {fb}\n  recent commands:\n{}",
            self.seed,
            self.seed,
            self.recent()
        );
        if !self.keep_going {
            panic!("{msg}");
        }
        eprintln!("{msg}\n");
        self.mismatches.push(msg);
        assert!(self.mismatches.len() < 200, "too many mismatches");
    }

    /// Fails the test if any mismatch was collected (DIFF_KEEP_GOING=1).
    pub fn finish(&self) {
        assert!(
            self.mismatches.is_empty(),
            "{} mismatches:\n{}",
            self.mismatches.len(),
            self.mismatches.join("\n")
        );
    }

    // -- framings the types' generators share -------------------------------

    /// MULTI, `commands`, EXEC, on connection `proto`.
    pub fn transaction(&mut self, proto: usize, commands: Vec<Args>) {
        self.send_proto(proto, &args!["MULTI"]);
        for c in commands {
            self.send_proto(proto, &c);
        }
        self.send_proto(proto, &args!["EXEC"]);
    }

    /// WATCH `key` on connection `watcher`, `command` on connection
    /// `writer`, then MULTI, PING, EXEC on the watcher: EXEC answers null
    /// where the command counted as a change of the key.
    pub fn watched(&mut self, watcher: usize, writer: usize, key: &[u8], command: &[Vec<u8>]) {
        self.send_proto(watcher, &args!["WATCH", key]);
        self.send_proto(writer, command);
        self.send_proto(watcher, &args!["MULTI"]);
        self.send_proto(watcher, &args!["PING"]);
        self.send_proto(watcher, &args!["EXEC"]);
    }

    /// `command` run from Lua by EVAL, through one of `scripts`.
    pub fn eval_through(&mut self, scripts: &[&str], command: Args) {
        let script = *self.rng.pick(scripts);
        let mut e = args!["EVAL", script, "0"];
        e.extend(command);
        self.send(&e);
    }

    /// `commands` sent while maxmemory is one byte (the deny-oom ones are
    /// refused, the rest run); maxmemory is 0 again after them.
    pub fn over_maxmemory(&mut self, commands: Vec<Args>) {
        self.send_proto(0, &args!["CONFIG", "SET", "maxmemory", "1"]);
        for c in commands {
            self.send(&c);
        }
        self.send_proto(0, &args!["CONFIG", "SET", "maxmemory", "0"]);
    }

    // -- random pieces --------------------------------------------------------

    pub fn key(&mut self) -> Vec<u8> {
        let i = self.rng.index(self.keys.len());
        self.keys[i].clone()
    }

    /// A command name, in another case now and then.
    pub fn name(&mut self, name: &str) -> Vec<u8> {
        match self.rng.below(T::NAME_CASE_ONE_IN) {
            0 => name.to_ascii_lowercase().into_bytes(),
            1 => name
                .bytes()
                .map(|c| {
                    if self.rng.chance(1, 2) {
                        c.to_ascii_lowercase()
                    } else {
                        c
                    }
                })
                .collect(),
            _ => b(name),
        }
    }

    pub fn pick_str(&mut self, xs: &[&str]) -> Vec<u8> {
        b(self.rng.pick(xs))
    }

    /// Walks SCANDUMP from iterator 0 to the end; each step is compared.
    /// The first chunk is the header (iterator 1). None where 2.8.2's
    /// reply is no chunk (an error: no such filter, another type).
    pub fn walk(&mut self, key: &[u8]) -> Option<Vec<Chunk>> {
        let mut chunks = Vec::new();
        let mut it: i64 = 0;
        loop {
            let name = self.name(T::SCANDUMP);
            let r = self.send(&[name, b(key), it.to_string().into_bytes()]);
            let parse = |bytes: &[u8]| match decode(bytes) {
                Resp::Array(v) => match v.as_slice() {
                    [Resp::Int(next), Resp::Bulk(data)] => Some((*next, data.clone())),
                    [Resp::Int(0), Resp::Nil] => Some((0, Vec::new())),
                    _ => None,
                },
                _ => None,
            };
            let (next, rb_data) = parse(&r.rb)?;
            let fb_data = parse(&r.fb).map(|x| x.1).unwrap_or_default();
            if next == 0 {
                return Some(chunks);
            }
            chunks.push((next, rb_data, fb_data));
            it = next;
            assert!(
                chunks.len() < T::SCANDUMP_MAX_CHUNKS,
                "seed {}: SCANDUMP of {} does not end",
                self.seed,
                quote(key, 60)
            );
        }
    }

    // -- audit and driver -------------------------------------------------------

    /// Compares the whole key space of both servers: KEYS, every key's TYPE
    /// and DUMP, and what the type's `audit_key` reads of its own keys.
    pub fn audit(&mut self) {
        let before = self.step;
        self.check_replication = false;
        let r = self.send_split(0, &args!["KEYS", "*"], &args!["KEYS", "*"], false);
        let sorted = |bytes: &[u8]| -> Vec<Vec<u8>> {
            let mut keys: Vec<Vec<u8>> = match decode(bytes) {
                Resp::Array(v) => v
                    .into_iter()
                    .filter_map(|k| match k {
                        Resp::Bulk(k) => Some(k),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            keys.sort();
            keys
        };
        let (rb_keys, fb_keys) = (sorted(&r.rb), sorted(&r.fb));
        if rb_keys != fb_keys {
            let show = |ks: &[Vec<u8>]| {
                ks.iter()
                    .map(|k| quote(k, 60))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let line = format!("#{} KEYS * (audit)", self.step);
            self.mismatch(&line, &show(&rb_keys), &show(&fb_keys));
        }
        for key in rb_keys {
            let t = self.send(&args!["TYPE", &key]);
            self.send(&args!["DUMP", &key]);
            if t.rb == T::TYPE_REPLY {
                T::audit_key(self, &key);
            }
        }
        self.audit_commands += self.step - before;
        self.check_replication = true;
    }

    /// One seed: FLUSHALL, `commands` generated commands with audits, a
    /// last audit and the AOF rewrite.
    pub fn run_seed(&mut self, seed: u64, commands: usize) {
        self.seed = seed;
        self.rng = Rng(seed);
        self.step = 0;
        self.history.clear();
        self.pool.clear();
        self.send_proto(0, &args!["FLUSHALL"]);
        T::start_seed(self);
        let ops = T::ops();
        let weights: Vec<u64> = ops.iter().map(|o| o.0).collect();
        let mut next_audit = T::AUDIT_EVERY;
        while self.step < commands {
            if self.rng.chance(1, T::RELOAD_ONE_IN) {
                T::reload(self);
            } else {
                let i = self.rng.weighted(&weights);
                (ops[i].1)(self);
            }
            self.drop_loading_keys();
            if self.step >= next_audit {
                self.audit();
                next_audit = self.step + T::AUDIT_EVERY;
            }
        }
        self.audit();
        self.compare_aof_rewrite();
    }
}

/// Runs the seeds on a fresh pair of servers, prints what was compared and
/// fails on any mismatch; returns the runner for further checks.
pub fn run_random<T: DiffType>(
    label: &str,
    module_args: &[&str],
    seeds: &[u64],
    per_seed: usize,
) -> Runner<T> {
    let name = T::LABEL;
    println!(
        "{name}{label}: seeds {seeds:?}, {per_seed} commands each \
         (reproduce one seed with DIFF_SEED=<seed>)"
    );
    let started = Instant::now();
    let mut d = Runner::<T>::new(module_args);
    for &seed in seeds {
        println!("{name}{label}: seed {seed} starts (DIFF_SEED={seed} runs it alone)");
        let t = Instant::now();
        d.run_seed(seed, per_seed);
        println!(
            "{name}{label}: seed {seed}: {} commands in {:.2?}",
            d.step,
            t.elapsed()
        );
    }
    println!(
        "{name}{label}: {} commands compared ({} of them in audits) over {} seeds in {:.2?}; \
         {} propagated commands and {} AOF-rewrite commands compared",
        d.total,
        d.audit_commands,
        seeds.len(),
        started.elapsed(),
        d.propagated,
        d.aof_commands
    );
    if let Some(stats) = &d.stats {
        for ((cmd, class), n) in stats {
            println!("{n:>8}  {cmd:<14} {class}");
        }
    }
    d.finish();
    d
}
