//! Redis Cluster operational tests.
//!
//! `filters_survive_resharding_and_failover` builds a real cluster of three
//! masters and three replicas on loopback ports, every node running
//! FerroBloom, writes 200 filters of every shape (plain, windowed, Cuckoo)
//! across the slots with a cluster client, moves slots between masters
//! three times with
//! `redis-cli --cluster reshard` (MIGRATE, i.e. DUMP/RESTORE through the
//! type's RDB code, while the writers go on), kills a master with SIGKILL
//! and waits for its replica to take over, brings the dead node back as a
//! replica (a full resynchronisation: RDB again), and then requires that:
//! every filter answers every item it accepted; its BF.CARD is the number
//! of 1 replies (a Cuckoo filter's items inserted, of accepted items); replaying each filter's commands on a standalone server
//! gives the same replies, BF.INFO, DUMP payload and DEBUG DIGEST-VALUE;
//! each replica holds exactly its master's keys with equal digests and the
//! same `INFO bf` totals.
//!
//! `sharded_filter_over_the_masters` checks the sharding scheme of
//! docs/cluster.md (N keys `name:{shard-i}`, shard = xxh3_64(item) mod N)
//! and runs examples/sharded.rs against a cluster; `xxh3_shard_vectors`
//! pins the hash to vectors computed with Python's `xxhash` package.
//!
//! Not part of `make test` (`test = false` in Cargo.toml); `make test-ops`
//! runs it, as does
//! `FERROBLOOM_MODULE=$PWD/target/release/libferrobloom.so cargo test --release --test cluster -- --nocapture`.
//! Needs `redis-cli` (Debian's redis-tools, or `$REDIS_CLI`): it fails, never
//! skips, without it.

mod common;

#[allow(dead_code)]
#[path = "../examples/sharded.rs"]
mod sharded;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, sleep};
use std::time::{Duration, Instant};

use common::{ModuleKind, Server, ServerOpts};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{ErrorKind, FromRedisValue, RedisResult, Value};
use xxhash_rust::xxh3::xxh3_64;

const NODE_TIMEOUT_MS: u64 = 2000;
/// How long the cluster may take to become healthy, to fail over, or to
/// answer one command through a failover.
const DEADLINE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// The cluster
// ---------------------------------------------------------------------------

fn redis_cli() -> PathBuf {
    let path = std::env::var_os("REDIS_CLI")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-cli"));
    assert!(
        path.is_file(),
        "{} not found: the cluster tests need redis-cli (Debian's redis-tools; `make deps`) or $REDIS_CLI",
        path.display()
    );
    path
}

/// Runs `redis-cli args`; its stdout, or a panic with all its output.
fn cli(args: &[String]) -> String {
    let out = Command::new(redis_cli())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("redis-cli {}: {e}", args.join(" ")));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redis-cli {} failed ({}):\n{}\n{}",
        args.join(" "),
        out.status,
        tail(&stdout, 40),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn node_opts() -> ServerOpts {
    ServerOpts::new(ModuleKind::FerroBloom)
        .cluster_node()
        .config("cluster-config-file", "nodes.conf")
        .config("cluster-node-timeout", &NODE_TIMEOUT_MS.to_string())
        .config("appendonly", "no")
}

/// A plain connection to one node.
fn node(port: u16) -> RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(Duration::from_secs(20)))?;
    Ok(con)
}

fn node_query<T: FromRedisValue>(port: u16, args: &[&str]) -> RedisResult<T> {
    let mut cmd = redis::cmd(args[0]);
    cmd.arg(&args[1..]);
    cmd.query(&mut node(port)?)
}

/// A field of an INFO-style `name:value` text.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':'))
}

/// One line of CLUSTER NODES.
#[derive(Clone, Debug)]
struct NodeView {
    id: String,
    port: u16,
    master: bool,
    /// The master's id, for a replica.
    master_id: Option<String>,
    failed: bool,
    /// This line is the answering node itself.
    myself: bool,
    slots: usize,
    /// The slots it serves, as inclusive ranges.
    ranges: Vec<(u16, u16)>,
}

impl NodeView {
    fn serves(&self, slot: u16) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }
}

fn parse_nodes(text: &str) -> Vec<NodeView> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = f[1]
                .split(['@', ','])
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("CLUSTER NODES line {line:?}"));
            let flags: Vec<&str> = f[2].split(',').collect();
            let ranges: Vec<(u16, u16)> = f[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .map(|s| {
                    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
                    (lo.parse().expect("slot"), hi.parse().expect("slot"))
                })
                .collect();
            let slots = ranges
                .iter()
                .map(|&(lo, hi)| usize::from(hi - lo) + 1)
                .sum();
            NodeView {
                id: f[0].to_string(),
                port,
                master: flags.contains(&"master"),
                master_id: (f[3] != "-").then(|| f[3].to_string()),
                failed: flags.contains(&"fail") || flags.contains(&"fail?"),
                myself: flags.contains(&"myself"),
                slots,
                ranges,
            }
        })
        .collect()
}

struct Cluster {
    nodes: Vec<Server>,
    dead: Vec<bool>,
}

impl Cluster {
    /// `masters` masters with `replicas` replicas each, all slots assigned,
    /// every node agreeing.
    fn start(masters: usize, replicas: usize) -> Cluster {
        let started = Instant::now();
        let count = masters * (1 + replicas);
        let nodes: Vec<Server> = (0..count).map(|_| Server::start(node_opts())).collect();
        let mut args = vec!["--cluster".to_string(), "create".into()];
        args.extend(nodes.iter().map(|s| addr(s.port())));
        args.extend([
            "--cluster-replicas".into(),
            replicas.to_string(),
            "--cluster-yes".into(),
        ]);
        cli(&args);
        let cluster = Cluster {
            nodes,
            dead: vec![false; count],
        };
        cluster.wait_healthy("cluster create");
        eprintln!(
            "cluster: {masters} masters, {replicas} replica(s) each, ports {:?}, up in {:.1?}",
            cluster.nodes.iter().map(Server::port).collect::<Vec<_>>(),
            started.elapsed()
        );
        cluster
    }

    fn port(&self, i: usize) -> u16 {
        self.nodes[i].port()
    }

    fn index_of(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|s| s.port() == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    fn live(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| !self.dead[i]).collect()
    }

    fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(Server::port).collect()
    }

    fn url(&self, i: usize) -> String {
        format!("redis://127.0.0.1:{}/", self.port(i))
    }

    /// CLUSTER NODES as node `from` sees it.
    fn view(&self, from: usize) -> RedisResult<Vec<NodeView>> {
        let text: String = node_query(self.port(from), &["CLUSTER", "NODES"])?;
        Ok(parse_nodes(&text))
    }

    fn id(&self, i: usize) -> String {
        node_query(self.port(i), &["CLUSTER", "MYID"]).expect("CLUSTER MYID")
    }

    /// Masters that serve slots, with their replicas, as node `from` sees
    /// them (node indices).
    fn shards(&self, from: usize) -> Vec<(usize, Vec<usize>)> {
        let view = self.view(from).expect("CLUSTER NODES");
        view.iter()
            .filter(|n| n.master && !n.failed && n.slots > 0)
            .map(|m| {
                let replicas = view
                    .iter()
                    .filter(|r| !r.master && r.master_id.as_deref() == Some(&m.id))
                    .map(|r| self.index_of(r.port))
                    .collect();
                (self.index_of(m.port), replicas)
            })
            .collect()
    }

    fn masters(&self) -> Vec<usize> {
        self.shards(self.live()[0])
            .into_iter()
            .map(|(m, _)| m)
            .collect()
    }

    /// Every live node reports cluster_state:ok and `redis-cli --cluster
    /// check` finds all slots covered, no open slot and every node agreeing.
    /// The check's entry node changes from one attempt to the next, so one
    /// node slow to answer (a restarted one loading its data) does not stall
    /// it; whichever node it starts from, it checks them all.
    ///
    /// A master that, on an old master's return, drops from its own view a
    /// slot every other node still routes to it (seen on Redis 7.0.15 after
    /// a failover: `cluster_slots_assigned:16383` on that node alone, the
    /// cluster never healing) gets the slot back with CLUSTER ADDSLOTS once
    /// the cluster has been unhealthy for `READD_AFTER`; the repair is
    /// printed, and the test goes on to check every item of every filter.
    fn wait_healthy(&self, what: &str) {
        const READD_AFTER: Duration = Duration::from_secs(15);
        let started = Instant::now();
        let mut last_check = String::from("(never ran: some node was not ok)");
        let mut readded = false;
        for attempt in 0.. {
            let live = self.live();
            let check = [
                "--cluster".to_string(),
                "check".into(),
                addr(self.port(live[attempt % live.len()])),
            ];
            let states: Vec<(u16, String)> = live
                .iter()
                .map(|&i| {
                    let state = match node_query::<String>(self.port(i), &["CLUSTER", "INFO"]) {
                        Ok(info) => field(&info, "cluster_state").unwrap_or("?").to_string(),
                        Err(e) => format!("error: {e}"),
                    };
                    (self.port(i), state)
                })
                .collect();
            if states.iter().all(|(_, state)| state == "ok") {
                let out = Command::new(redis_cli())
                    .args(&check)
                    .output()
                    .expect("redis-cli --cluster check");
                if out.status.success() {
                    return;
                }
                last_check = format!(
                    "from {}:\n{}\n{}",
                    check[2],
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            if !readded && started.elapsed() >= READD_AFTER {
                readded = self.readd_slots_dropped_by_owner(what);
            }
            if started.elapsed() >= DEADLINE {
                panic!(
                    "{what}: the cluster is not healthy after {DEADLINE:?} (dropped slots re-added: \
                     {readded})\ncluster_state per live node: {states:?}\nlast check:\n{}\n{}",
                    tail(&last_check, 40),
                    self.views_of_unhealthy(&states)
                );
            }
            sleep(Duration::from_millis(100));
        }
    }

    /// Re-adds, on each live master, the slots its own CLUSTER NODES leaves
    /// unassigned while every other live node says that master serves them.
    /// Returns whether it re-added any.
    fn readd_slots_dropped_by_owner(&self, what: &str) -> bool {
        let views: Vec<(usize, Vec<NodeView>)> = self
            .live()
            .into_iter()
            .filter_map(|i| self.view(i).ok().map(|v| (i, v)))
            .collect();
        if views.len() < 2 || views.len() != self.live().len() {
            return false;
        }
        let mut readded = false;
        for (i, view) in &views {
            let Some(me) = view.iter().find(|n| n.myself && n.master) else {
                continue;
            };
            let dropped: Vec<u16> = (0..16384u16)
                .filter(|&slot| !view.iter().any(|n| n.serves(slot)))
                .filter(|&slot| {
                    views
                        .iter()
                        .filter(|(j, _)| j != i)
                        .all(|(_, other)| other.iter().any(|n| n.id == me.id && n.serves(slot)))
                })
                .collect();
            if dropped.is_empty() {
                continue;
            }
            eprintln!(
                "{what}: node {i} (:{}) no longer counts slot(s) {dropped:?} as its own while \
                 every other node routes them to it (Redis cluster bookkeeping, not the module); \
                 re-adding them with CLUSTER ADDSLOTS",
                self.port(*i)
            );
            let mut cmd = redis::cmd("CLUSTER");
            cmd.arg("ADDSLOTS").arg(&dropped);
            let answer: RedisResult<()> = node(self.port(*i)).and_then(|mut c| cmd.query(&mut c));
            if let Err(e) = answer {
                eprintln!("{what}: CLUSTER ADDSLOTS on :{}: {e}", self.port(*i));
            }
            readded = true;
        }
        readded
    }

    /// What each node not `ok` in `states` thinks of the cluster (its
    /// CLUSTER INFO and CLUSTER NODES), for the report of a cluster that
    /// stays unhealthy: which slot or node it holds as failing.
    fn views_of_unhealthy(&self, states: &[(u16, String)]) -> String {
        let mut report = String::new();
        for (port, _) in states.iter().filter(|(_, state)| state != "ok") {
            for command in [["CLUSTER", "INFO"], ["CLUSTER", "NODES"]] {
                let answer =
                    node_query::<String>(*port, &command).unwrap_or_else(|e| format!("error: {e}"));
                report.push_str(&format!("node :{port} {}:\n{answer}\n", command.join(" ")));
            }
        }
        report
    }

    /// `redis-cli --cluster reshard`: moves `slots` slots from node `from`
    /// to node `to`; the keys go with MIGRATE.
    fn reshard(&self, from: usize, to: usize, slots: usize) {
        let started = Instant::now();
        let out = cli(&[
            "--cluster".into(),
            "reshard".into(),
            addr(self.port(from)),
            "--cluster-from".into(),
            self.id(from),
            "--cluster-to".into(),
            self.id(to),
            "--cluster-slots".into(),
            slots.to_string(),
            "--cluster-yes".into(),
        ]);
        // The plan lists each slot as "    Moving slot N from ID", the moves
        // as "Moving slot N from HOST:PORT to HOST:PORT: ".
        let moved = out
            .lines()
            .filter(|l| l.starts_with("Moving slot") && l.contains(" to "))
            .count();
        assert_eq!(
            moved,
            slots,
            "reshard moved {moved} slots, not {slots}:\n{}",
            tail(&out, 20)
        );
        self.wait_healthy("reshard");
        eprintln!(
            "resharded {slots} slots from node {from} (:{}) to node {to} (:{}) in {:.1?}",
            self.port(from),
            self.port(to),
            started.elapsed()
        );
    }

    /// SIGKILL of master `victim`; returns the replica promoted in its
    /// place once every live node has cluster_state:ok and no live node
    /// routes a slot to the victim.
    fn kill_master(&mut self, victim: usize) -> usize {
        let replicas = self
            .shards(victim)
            .into_iter()
            .find(|(m, _)| *m == victim)
            .map(|(_, r)| r)
            .expect("the victim is a master serving slots");
        assert!(!replicas.is_empty(), "master {victim} has no replica");
        let started = Instant::now();
        self.nodes[victim].kill9();
        self.dead[victim] = true;
        let victim_port = self.port(victim);
        loop {
            let promoted = replicas.iter().copied().find(|&r| {
                node_query::<Value>(self.port(r), &["ROLE"]).is_ok_and(|role| {
                    matches!(role, Value::Array(ref f)
                        if matches!(f.first(), Some(Value::BulkString(b)) if b == b"master"))
                })
            });
            if let Some(promoted) = promoted {
                let settled = self.live().iter().all(|&i| {
                    let ok = node_query::<String>(self.port(i), &["CLUSTER", "INFO"])
                        .is_ok_and(|info| field(&info, "cluster_state") == Some("ok"));
                    let routes_victim = self.view(i).map_or(true, |v| {
                        v.iter()
                            .any(|n| n.port == victim_port && n.master && n.slots > 0)
                    });
                    ok && !routes_victim
                });
                if settled {
                    eprintln!(
                        "killed master node {victim} (:{victim_port}); node {promoted} (:{}) took over in {:.1?}",
                        self.port(promoted),
                        started.elapsed()
                    );
                    return promoted;
                }
            }
            assert!(
                started.elapsed() < DEADLINE,
                "no failover of node {victim} within {DEADLINE:?}"
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Restarts a killed node (same port, directory and nodes.conf): it
    /// learns that it was failed over and becomes a replica of `master`,
    /// loading the master's data by a full resynchronisation.
    fn revive_as_replica_of(&mut self, dead: usize, master: usize) {
        let started = Instant::now();
        self.nodes[dead].restart();
        self.dead[dead] = false;
        let master_port = self.port(master).to_string();
        loop {
            let info: String =
                node_query(self.port(dead), &["INFO", "replication"]).unwrap_or_default();
            if field(&info, "role") == Some("slave")
                && field(&info, "master_port") == Some(master_port.as_str())
                && field(&info, "master_link_status") == Some("up")
            {
                break;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "node {dead} did not become a replica of node {master}; INFO replication:\n{info}"
            );
            sleep(Duration::from_millis(100));
        }
        self.wait_healthy("revived node");
        eprintln!(
            "node {dead} (:{}) back as a replica of node {master} in {:.1?}",
            self.port(dead),
            started.elapsed()
        );
    }

    fn client(&self) -> Client {
        Client::new(&self.ports())
    }
}

// ---------------------------------------------------------------------------
// A cluster client that rides out failovers
// ---------------------------------------------------------------------------

/// The redis crate's cluster client (it follows MOVED and ASK), plus a
/// reconnect-and-retry loop with a deadline for what a failover or a
/// migration throws at a client: connection errors, CLUSTERDOWN, TRYAGAIN,
/// MASTERDOWN, READONLY from a demoted master.
struct Client {
    client: ClusterClient,
    con: Option<ClusterConnection>,
    retries: u64,
}

fn transient(e: &redis::RedisError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::IoError
            | ErrorKind::ClusterDown
            | ErrorKind::TryAgain
            | ErrorKind::MasterDown
            | ErrorKind::BusyLoadingError
            | ErrorKind::ClusterConnectionNotFound
            | ErrorKind::Moved
            | ErrorKind::Ask
            | ErrorKind::ReadOnly
    ) || e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
}

impl Client {
    fn new(ports: &[u16]) -> Client {
        let nodes: Vec<String> = ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect();
        let client = ClusterClient::builder(nodes)
            .connection_timeout(Duration::from_secs(1))
            .response_timeout(Duration::from_secs(20))
            .retries(3)
            .min_retry_wait(10)
            .max_retry_wait(100)
            .build()
            .expect("cluster client");
        Client {
            client,
            con: None,
            retries: 0,
        }
    }

    fn connection(&mut self) -> &mut ClusterConnection {
        let started = Instant::now();
        while self.con.is_none() {
            match self.client.get_connection() {
                Ok(con) => self.con = Some(con),
                Err(e) => {
                    assert!(
                        started.elapsed() < DEADLINE,
                        "cannot connect to the cluster: {e}"
                    );
                    sleep(Duration::from_millis(100));
                }
            }
        }
        self.con.as_mut().expect("connected")
    }

    /// The command's reply; an error reply is Err, transient errors are
    /// retried until DEADLINE (then the test fails).
    fn query<A: AsRef<[u8]>>(&mut self, args: &[A]) -> RedisResult<Value> {
        let mut cmd = redis::cmd(std::str::from_utf8(args[0].as_ref()).expect("command name"));
        for a in &args[1..] {
            cmd.arg(a.as_ref());
        }
        let started = Instant::now();
        loop {
            match cmd.query::<Value>(self.connection()) {
                Err(e) if transient(&e) => {
                    assert!(
                        started.elapsed() < DEADLINE,
                        "{} failed for {DEADLINE:?}: {e}",
                        show(args)
                    );
                    self.retries += 1;
                    self.con = None;
                    sleep(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    #[track_caller]
    fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Value {
        self.query(args)
            .unwrap_or_else(|e| panic!("{}: {e}", show(args)))
    }
}

fn show<A: AsRef<[u8]>>(args: &[A]) -> String {
    let text: Vec<String> = args
        .iter()
        .map(|a| {
            let a = a.as_ref();
            let s = a[..a.len().min(40)].escape_ascii().to_string();
            if a.len() > 40 {
                s + ".."
            } else {
                s
            }
        })
        .collect();
    text.join(" ")
}

// ---------------------------------------------------------------------------
// The workload: filters of every shape, every command recorded
// ---------------------------------------------------------------------------

const FILTERS: usize = 200;
/// The kinds of filter `creation` makes: plain Bloom filters, windowed
/// ones, Cuckoo filters.
const SHAPES: usize = 12;
/// The windowed filters' shapes.
const WINDOW_SHAPES: std::ops::Range<usize> = 8..10;
/// The Cuckoo filters' shapes.
const CUCKOO_SHAPES: std::ops::Range<usize> = 10..12;
const WRITERS: usize = 2;

type Args = Vec<Vec<u8>>;
/// A reply, with errors reduced to what the server said.
type Reply = Result<Value, String>;

fn reply_of(r: RedisResult<Value>) -> Reply {
    r.map_err(|e| format!("{:?} {:?} {:?}", e.kind(), e.code(), e.detail()))
}

struct Filter {
    key: String,
    /// Index into `creation`'s shapes.
    shape: usize,
    /// Every command that changed (or tried to change) the filter, in
    /// order, with its reply.
    log: Vec<(Args, Reply)>,
    /// Items accepted (reply 0 or 1): the filter must answer 1 for each.
    items: Vec<Vec<u8>>,
    /// Items the filter reported new (reply 1): its BF.CARD, or a Cuckoo
    /// filter's items inserted (CF.ADD and CF.INSERT store every item they
    /// accept, copies too).
    new_items: u64,
    /// Items sent so far.
    sent: usize,
}

impl Filter {
    fn is_window(&self) -> bool {
        WINDOW_SHAPES.contains(&self.shape)
    }

    fn is_cuckoo(&self) -> bool {
        CUCKOO_SHAPES.contains(&self.shape)
    }

    /// The type's command `name` (`EXISTS` → `BF.EXISTS` or `CF.EXISTS`).
    fn command(&self, name: &str) -> Vec<u8> {
        let prefix = if self.is_cuckoo() { "CF." } else { "BF." };
        arg(&format!("{prefix}{name}"))
    }

    fn new(i: usize) -> Filter {
        Filter {
            key: format!("filter:{i:03}"),
            shape: i % SHAPES,
            log: Vec::new(),
            items: Vec::new(),
            new_items: 0,
            sent: 0,
        }
    }

    fn record(&mut self, cmd: Args, items: &[Vec<u8>], reply: Reply) {
        assert!(
            items.len() < 2 || reply.is_ok(),
            "{}: {reply:?}; the items that went in are unknown",
            show(&cmd)
        );
        let mut accept = |item: &Vec<u8>, v: &Value| {
            // CF.INSERT answers -1 for an item it had no room for.
            if let Value::Int(n @ 0..) = v {
                self.items.push(item.clone());
                self.new_items += u64::from(*n == 1);
            }
        };
        match &reply {
            Ok(v @ Value::Int(_)) if items.len() == 1 => accept(&items[0], v),
            Ok(Value::Array(vs)) if vs.len() == items.len() => {
                for (item, v) in items.iter().zip(vs) {
                    accept(item, v);
                }
            }
            _ => {}
        }
        self.log.push((cmd, reply));
    }
}

fn arg(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// The command creating a filter of `shape` (with `items` for the shapes
/// created by adding).
fn creation(shape: usize, key: &str, items: &[Vec<u8>]) -> Args {
    // A time window names its origin, so that replaying its commands on
    // another server (check_against_replay) makes the same generations.
    let origin = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis()
        .to_string();
    let words: &[&str] = match shape {
        0 => &["BF.RESERVE", key, "0.01", "100"],
        1 => &["BF.RESERVE", key, "0.001", "50", "EXPANSION", "1"],
        2 => &["BF.RESERVE", key, "0.1", "1000", "NONSCALING"],
        3 => &["BF.RESERVE", key, "0.0001", "20", "EXPANSION", "4"],
        4 => &["BF.ADD", key],
        5 => &["BF.MADD", key],
        6 => &[
            "BF.INSERT",
            key,
            "CAPACITY",
            "30",
            "ERROR",
            "0.05",
            "EXPANSION",
            "3",
            "ITEMS",
        ],
        7 => &[
            "BF.INSERT",
            key,
            "CAPACITY",
            "300",
            "ERROR",
            "0.02",
            "NONSCALING",
            "ITEMS",
        ],
        10 => &["CF.RESERVE", key, "64", "BUCKETSIZE", "2", "EXPANSION", "2"],
        11 => &["CF.INSERT", key, "CAPACITY", "100", "ITEMS"],
        // Windowed filters, longer than the test: nothing is forgotten.
        8 => &[
            "BF.RESERVE",
            key,
            "0.01",
            "1000",
            "WINDOW",
            "30d",
            "ORIGIN",
            &origin,
        ],
        9 => &[
            "BF.INSERT",
            key,
            "CAPACITY",
            "500",
            "ERROR",
            "0.01",
            "WINDOW",
            "100000",
            "GENERATIONS",
            "4",
            "ITEMS",
        ],
        _ => panic!("shape {shape}"),
    };
    let mut cmd: Args = words.iter().map(|w| arg(w)).collect();
    if matches!(shape, 4..=7 | 9 | 11) {
        cmd.extend(items.iter().cloned());
    }
    cmd
}

struct Writer {
    client: Client,
    filters: Vec<Filter>,
    rng: StdRng,
    writes: u64,
    checks: u64,
}

impl Writer {
    fn new(cluster: &Cluster, seed: u64, filters: Vec<Filter>) -> Writer {
        Writer {
            client: cluster.client(),
            filters,
            rng: StdRng::seed_from_u64(seed),
            writes: 0,
            checks: 0,
        }
    }

    /// Sequential phase: rounds over the filters until each was sent
    /// `limit` items.
    fn fill(&mut self, phase: &str, limit: usize) {
        while self.filters.iter().any(|f| f.sent < limit) {
            for i in 0..self.filters.len() {
                self.step(phase, i, limit, 1.0);
            }
        }
    }

    /// Concurrent phase: rounds until `stop`, each filter written with
    /// probability `p` per round (while under `limit` items) and checked
    /// otherwise.
    fn run_until(&mut self, phase: &str, limit: usize, p: f64, stop: &AtomicBool) {
        let mut rounds = 0;
        while !stop.load(Ordering::Acquire) || rounds < 2 {
            let mut wrote = false;
            for i in 0..self.filters.len() {
                wrote |= self.step(phase, i, limit, p);
            }
            rounds += 1;
            sleep(Duration::from_millis(if wrote { 2 } else { 20 }));
        }
    }

    /// One command on filter `i`: a write with probability `p` while it
    /// was sent fewer than `limit` items; then (or else) maybe a check.
    fn step(&mut self, phase: &str, i: usize, limit: usize, p: f64) -> bool {
        let Writer {
            client,
            filters,
            rng,
            ..
        } = self;
        let f = &mut filters[i];
        let write = f.sent < limit && rng.gen_bool(p);
        if write {
            let (cmd, items) = if f.log.is_empty() {
                let n = if f.shape == 4 {
                    1
                } else {
                    rng.gen_range(1..=8)
                };
                let items = new_items(rng, f, n);
                (creation(f.shape, &f.key, &items), items)
            } else {
                let key = arg(&f.key);
                // The full NONSCALING filter gets single adds only: the
                // redis crate's cluster client turns an error inside an
                // array reply (BF.MADD's "non scaling filter is full" for
                // some items) into an error for the whole command, hiding
                // which items went in.
                let choice = if f.shape == 7 {
                    0
                } else {
                    rng.gen_range(0..10)
                };
                match choice {
                    0..=3 => {
                        let items = new_items(rng, f, 1);
                        (vec![f.command("ADD"), key, items[0].clone()], items)
                    }
                    4..=7 => {
                        let n = rng.gen_range(1..=16);
                        let items = new_items(rng, f, n);
                        let mut cmd = if f.is_cuckoo() {
                            vec![arg("CF.INSERT"), key, arg("ITEMS")]
                        } else {
                            vec![arg("BF.MADD"), key]
                        };
                        cmd.extend(items.iter().cloned());
                        (cmd, items)
                    }
                    _ => {
                        let n = rng.gen_range(1..=8);
                        let items = new_items(rng, f, n);
                        let mut cmd = vec![f.command("INSERT"), key, arg("NOCREATE"), arg("ITEMS")];
                        cmd.extend(items.iter().cloned());
                        (cmd, items)
                    }
                }
            };
            let reply = reply_of(client.query(&cmd));
            f.record(cmd, &items, reply);
            self.writes += 1;
        }
        if !f.items.is_empty() && (!write || rng.gen_bool(0.2)) {
            let item = f.items[rng.gen_range(0..f.items.len())].clone();
            let got = client.ok(&[f.command("EXISTS"), arg(&f.key), item.clone()]);
            assert_eq!(
                got,
                Value::Int(1),
                "{phase}: EXISTS {} {} after it was accepted",
                f.key,
                item.escape_ascii()
            );
            if rng.gen_bool(0.2) {
                assert_eq!(
                    card(client, f),
                    Value::Int(f.new_items as i64),
                    "{phase}: items in {}",
                    f.key
                );
            }
            self.checks += 1;
        }
        write
    }
}

/// `n` items for `f`: mostly new ones (text, some binary, the empty item),
/// one in ten an item it already accepted.
fn new_items(rng: &mut StdRng, f: &mut Filter, n: usize) -> Vec<Vec<u8>> {
    f.sent += n;
    (0..n)
        .map(|_| {
            if !f.items.is_empty() && rng.gen_bool(0.1) {
                return f.items[rng.gen_range(0..f.items.len())].clone();
            }
            match rng.gen_range(0..50) {
                0 => Vec::new(),
                1..=5 => (0..rng.gen_range(1..48)).map(|_| rng.gen()).collect(),
                _ => format!("{}/{}", f.key, rng.gen::<u32>()).into_bytes(),
            }
        })
        .collect()
}

/// Runs `work` while the writers run their concurrent phase.
fn with_writers(writers: &mut [Writer], phase: &str, limit: usize, work: impl FnOnce()) {
    let stop = AtomicBool::new(false);
    let writes_before: u64 = writers.iter().map(|w| w.writes).sum();
    thread::scope(|s| {
        let handles: Vec<_> = writers
            .iter_mut()
            .map(|w| {
                let stop = &stop;
                s.spawn(move || w.run_until(phase, limit, 0.3, stop))
            })
            .collect();
        // Let the writers start before the work.
        sleep(Duration::from_millis(200));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        stop.store(true, Ordering::Release);
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    });
    let writes: u64 = writers.iter().map(|w| w.writes).sum::<u64>() - writes_before;
    assert!(writes > 0, "{phase}: no write while the work ran");
    eprintln!("{phase}: {writes} writes meanwhile");
}

fn fill_all(writers: &mut [Writer], phase: &str, limit: usize) {
    thread::scope(|s| {
        for w in writers.iter_mut() {
            s.spawn(move || w.fill(phase, limit));
        }
    });
}

/// Every master has all its replicas acknowledging everything it wrote.
///
/// `WAIT` would not do: it waits for the writes of its own connection,
/// and a fresh connection has made none, so it returns at once. Instead
/// each master's replication offset is read once, and every replica's
/// acknowledged offset (`INFO replication`, refreshed by the replicas'
/// `REPLCONF ACK` every second) must reach it.
fn wait_replicated(cluster: &Cluster) {
    for (master, replicas) in cluster.shards(cluster.live()[0]) {
        let port = cluster.port(master);
        let info =
            || -> String { node_query(port, &["INFO", "replication"]).expect("INFO replication") };
        let target: u64 = field(&info(), "master_repl_offset")
            .and_then(|v| v.parse().ok())
            .expect("master_repl_offset");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = info();
            let acked: Vec<u64> = (0..)
                .map_while(|i| field(&text, &format!("slave{i}")))
                .filter_map(|line| {
                    line.split(',')
                        .find_map(|kv| kv.strip_prefix("offset="))
                        .and_then(|v| v.parse().ok())
                })
                .collect();
            let caught_up = acked.iter().filter(|&&o| o >= target).count();
            if caught_up >= replicas.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "master node {master}: {caught_up} of {} replicas acknowledged offset {target} \
                 in 30s; INFO replication:\n{text}",
                replicas.len()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Every accepted item answers 1; BF.CARD is the count of 1 replies.
fn check_items(client: &mut Client, filters: &[&Filter]) -> usize {
    let mut probes = 0;
    for f in filters {
        for chunk in f.items.chunks(256) {
            let mut cmd = vec![f.command("MEXISTS"), arg(&f.key)];
            cmd.extend(chunk.iter().cloned());
            let Value::Array(got) = client.ok(&cmd) else {
                panic!("MEXISTS {}: not an array", f.key);
            };
            for (item, v) in chunk.iter().zip(&got) {
                assert_eq!(
                    v,
                    &Value::Int(1),
                    "MEXISTS {} {}: an accepted item is missing",
                    f.key,
                    item.escape_ascii()
                );
            }
            probes += chunk.len();
        }
        assert_eq!(
            card(client, f),
            Value::Int(f.new_items as i64),
            "items in {}",
            f.key
        );
    }
    probes
}

/// Replays every filter's commands on a standalone server: the replies
/// must be the ones the cluster gave, and BF.INFO, the DUMP payload and
/// DEBUG DIGEST-VALUE must equal the cluster's. Returns the reference
/// digests by key.
/// BF.CARD of a Bloom filter; a Cuckoo filter's items inserted (CF.INFO).
fn card(client: &mut Client, f: &Filter) -> Value {
    if !f.is_cuckoo() {
        return client.ok(&["BF.CARD", f.key.as_str()]);
    }
    match client.ok(&["CF.INFO", f.key.as_str()]) {
        Value::Array(fields) => {
            assert_eq!(
                fields[6],
                // Field names are simple strings, as RedisBloom sends them.
                Value::SimpleString("Number of items inserted".to_string()),
                "CF.INFO {}",
                f.key
            );
            fields[7].clone()
        }
        other => panic!("CF.INFO {}: {other:?}", f.key),
    }
}

fn check_against_replay(client: &mut Client, filters: &[&Filter]) -> BTreeMap<String, Value> {
    let reference = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut con = reference.conn();
    let mut digests = BTreeMap::new();
    for f in filters {
        for (n, (cmd, want)) in f.log.iter().enumerate() {
            let mut c = redis::cmd(std::str::from_utf8(&cmd[0]).expect("name"));
            for a in &cmd[1..] {
                c.arg(a.as_slice());
            }
            let got = reply_of(c.query::<Value>(&mut con));
            assert_eq!(
                &got,
                want,
                "{}: command {n} ({}) replied differently on the cluster and on a standalone server",
                f.key,
                show(cmd)
            );
        }
        let mut reference_query = |args: &[&str]| -> Value {
            let mut c = redis::cmd(args[0]);
            c.arg(&args[1..]);
            c.query(&mut con).expect("reference server")
        };
        let info_command = if f.is_cuckoo() { "CF.INFO" } else { "BF.INFO" };
        let info = reference_query(&[info_command, &f.key]);
        let dump = reference_query(&["DUMP", &f.key]);
        let digest = reference_query(&["DEBUG", "DIGEST-VALUE", &f.key]);
        assert_eq!(
            client.ok(&[info_command, f.key.as_str()]),
            info,
            "{info_command} {}",
            f.key
        );
        assert!(
            client.ok(&["DUMP", f.key.as_str()]) == dump,
            "DUMP {} differs from the standalone server's",
            f.key
        );
        digests.insert(f.key.clone(), digest);
    }
    digests
}

fn info_bf(port: u16) -> BTreeMap<String, String> {
    let text: String = node_query(port, &["INFO", "bf"]).expect("INFO bf");
    text.lines()
        .filter_map(|l| l.trim_end().split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Each key lives on exactly one master; each replica holds exactly its
/// master's keys, with the same DEBUG DIGEST-VALUE (also the standalone
/// replay's), DEBUG DIGEST and `INFO bf` totals.
fn check_nodes(cluster: &Cluster, filters: &[&Filter], digests: &BTreeMap<String, Value>) {
    let cards: BTreeMap<&str, u64> = filters
        .iter()
        .map(|f| (f.key.as_str(), f.new_items))
        .collect();
    let windowed: BTreeSet<&str> = filters
        .iter()
        .filter(|f| f.is_window())
        .map(|f| f.key.as_str())
        .collect();
    let cuckoo: BTreeSet<&str> = filters
        .iter()
        .filter(|f| f.is_cuckoo())
        .map(|f| f.key.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    for (master, replicas) in cluster.shards(cluster.live()[0]) {
        let mp = cluster.port(master);
        let mut keys: Vec<String> = node_query(mp, &["KEYS", "*"]).expect("KEYS");
        keys.sort();
        for key in &keys {
            assert!(seen.insert(key.clone()), "{key} is on two masters");
            assert!(cards.contains_key(key.as_str()), "unknown key {key}");
        }
        let info = info_bf(mp);
        // INFO bf counts plain filters (bf_filters, bf_items) and windowed
        // ones (bf_windows) apart.
        let (windows, rest): (Vec<&String>, Vec<&String>) =
            keys.iter().partition(|k| windowed.contains(k.as_str()));
        let (cuckoos, plain): (Vec<&String>, Vec<&String>) =
            rest.into_iter().partition(|k| cuckoo.contains(k.as_str()));
        let items = |keys: &[&String]| -> u64 { keys.iter().map(|k| cards[k.as_str()]).sum() };
        for (field, count) in [
            ("bf_filters", plain.len() as u64),
            ("bf_windows", windows.len() as u64),
            ("bf_cuckoo_filters", cuckoos.len() as u64),
            ("bf_items", items(&plain)),
            ("bf_cuckoo_items", items(&cuckoos)),
        ] {
            assert_eq!(
                info.get(field).map(String::as_str),
                Some(count.to_string().as_str()),
                "{field} in INFO bf of master node {master}: {info:?}"
            );
        }
        let mut master_digests = Vec::new();
        for key in &keys {
            let d: Value = node_query(mp, &["DEBUG", "DIGEST-VALUE", key]).expect("digest");
            assert_eq!(
                Some(&d),
                digests.get(key),
                "DEBUG DIGEST-VALUE {key} on master node {master} vs the standalone replay"
            );
            let usage: i64 = node_query(mp, &["MEMORY", "USAGE", key]).expect("MEMORY USAGE");
            let size: i64 = if cuckoo.contains(key.as_str()) {
                // CF.INFO's first field is Size.
                node_query(mp, &["CF.INFO", key])
                    .map(|v: Vec<Value>| match &v[1] {
                        Value::Int(n) => *n,
                        other => panic!("CF.INFO {key}: Size {other:?}"),
                    })
                    .expect("CF.INFO")
            } else {
                node_query(mp, &["BF.INFO", key, "SIZE"])
                    .map(|v: Vec<i64>| v[0])
                    .expect("BF.INFO SIZE")
            };
            assert!(usage >= size, "MEMORY USAGE {key} = {usage} < size {size}");
            master_digests.push(d);
        }
        let master_all: Value = node_query(mp, &["DEBUG", "DIGEST"]).expect("DEBUG DIGEST");
        for r in replicas {
            let rp = cluster.port(r);
            let mut rkeys: Vec<String> = node_query(rp, &["KEYS", "*"]).expect("KEYS");
            rkeys.sort();
            assert_eq!(
                rkeys, keys,
                "replica node {r} of master node {master}: keys"
            );
            for (key, want) in keys.iter().zip(&master_digests) {
                let d: Value = node_query(rp, &["DEBUG", "DIGEST-VALUE", key]).expect("digest");
                assert_eq!(
                    &d, want,
                    "DEBUG DIGEST-VALUE {key}: replica node {r} vs master"
                );
            }
            let all: Value = node_query(rp, &["DEBUG", "DIGEST"]).expect("DEBUG DIGEST");
            assert_eq!(all, master_all, "DEBUG DIGEST: replica node {r} vs master");
            let rinfo = info_bf(rp);
            for name in [
                "bf_filters",
                "bf_items",
                "bf_bytes",
                "bf_capacity",
                "bf_links",
                "bf_cuckoo_filters",
                "bf_cuckoo_sub_filters",
                "bf_cuckoo_bytes",
                "bf_cuckoo_items",
            ] {
                assert_eq!(
                    rinfo.get(name),
                    info.get(name),
                    "INFO bf {name}: replica node {r} vs master node {master}"
                );
            }
        }
    }
    let missing: Vec<&str> = cards
        .keys()
        .copied()
        .filter(|k| !seen.contains(*k))
        .collect();
    assert!(missing.is_empty(), "filters on no master: {missing:?}");
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn filters_survive_resharding_and_failover() {
    let started = Instant::now();
    let mut cluster = Cluster::start(3, 1);
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3, "three masters serving slots");
    let (m0, m1, m2) = (masters[0], masters[1], masters[2]);

    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|w| {
            let filters = (0..FILTERS)
                .filter(|i| i % WRITERS == w)
                .map(Filter::new)
                .collect();
            Writer::new(&cluster, 0xc1 + w as u64, filters)
        })
        .collect();

    fill_all(&mut writers, "initial writes", 100);
    let slots_before: Vec<usize> = masters.iter().map(|&m| node_slots(&cluster, m)).collect();
    eprintln!("{FILTERS} filters written; slots per master {slots_before:?}");

    with_writers(&mut writers, "reshard 1", 200, || {
        cluster.reshard(m0, m1, 2000)
    });
    with_writers(&mut writers, "reshard 2", 300, || {
        cluster.reshard(m2, m0, 2000)
    });
    let slots_after: Vec<usize> = masters.iter().map(|&m| node_slots(&cluster, m)).collect();
    assert_eq!(
        slots_after,
        vec![
            slots_before[0],
            slots_before[1] + 2000,
            slots_before[2] - 2000
        ],
        "slots per master after two reshards"
    );

    // Acknowledged writes survive a failover only once replicated: wait for
    // the replicas, then kill the master that received slots.
    wait_replicated(&cluster);
    let promoted = cluster.kill_master(m1);

    // Every filter answers through the new topology, then more writes.
    let mut probe = cluster.client();
    for f in writers.iter().flat_map(|w| &w.filters) {
        assert_eq!(
            card(&mut probe, f),
            Value::Int(f.new_items as i64),
            "items in {} after the failover",
            f.key
        );
    }
    fill_all(&mut writers, "after failover", 350);

    cluster.revive_as_replica_of(m1, promoted);
    with_writers(&mut writers, "reshard 3", 420, || {
        cluster.reshard(promoted, m2, 2000)
    });

    wait_replicated(&cluster);
    let filters: Vec<&Filter> = writers.iter().flat_map(|w| &w.filters).collect();
    let probes = check_items(&mut probe, &filters);
    let digests = check_against_replay(&mut probe, &filters);
    check_nodes(&cluster, &filters, &digests);

    let writes: u64 = writers.iter().map(|w| w.writes).sum();
    let checks: u64 = writers.iter().map(|w| w.checks).sum();
    let retries: u64 = writers.iter().map(|w| w.client.retries).sum::<u64>() + probe.retries;
    let items: usize = filters.iter().map(|f| f.items.len()).sum();
    let links: usize = filters
        .iter()
        .filter(|f| !f.is_cuckoo())
        .map(
            |f| match probe.ok(&["BF.INFO", f.key.as_str(), "FILTERS"]) {
                Value::Array(v) => match v.first() {
                    Some(Value::Int(n)) => *n as usize,
                    other => panic!("BF.INFO FILTERS {}: {other:?}", f.key),
                },
                other => panic!("BF.INFO FILTERS {}: {other:?}", f.key),
            },
        )
        .sum();
    eprintln!(
        "{FILTERS} filters ({links} links), {writes} writes, {items} accepted items all found \
         ({probes} probes), {checks} in-flight checks, {retries} client retries; {:.1?}",
        started.elapsed()
    );
}

fn node_slots(cluster: &Cluster, i: usize) -> usize {
    let port = cluster.port(i);
    cluster
        .view(i)
        .expect("CLUSTER NODES")
        .into_iter()
        .find(|n| n.port == port)
        .map_or(0, |n| n.slots)
}

/// XXH3-64 (seed 0) of fixed strings, one per code path of the hash
/// (lengths 0, 1-3, 4-8, 9-16, 17-128, 129-240, > 240), as computed by
/// Python's `xxhash` package 3.x (`xxhash.xxh3_64_intdigest(b)`), with the
/// shard each gets among 8.
const XXH3_VECTORS: &[(&[u8], u64, u32)] = &[
    (b"", 3244421341483603138, 2),
    (b"a", 16629034431890738719, 7),
    (b"abc", 8696274497037089104, 0),
    (b"item:42", 7832677667009121638, 6),
    (b"user:1234567890", 17710040480752858561, 1),
    ("h\u{e9}llo w\u{f6}rld".as_bytes(), 14581225737120344164, 4),
];

/// `"0123456789"` repeated `n` times, with its XXH3-64 and shard among 8.
const XXH3_LONG: &[(usize, u64, u32)] = &[
    (10, 3118581205200343596, 4),
    (20, 12658978670617659522, 2),
    (100, 15843512870506224325, 5),
];

#[test]
fn xxh3_shard_vectors() {
    for &(input, hash, shard) in XXH3_VECTORS {
        assert_eq!(xxh3_64(input), hash, "xxh3_64({})", input.escape_ascii());
        assert_eq!(
            sharded::shard_of(input, 8),
            shard,
            "shard of {}",
            input.escape_ascii()
        );
    }
    for &(n, hash, shard) in XXH3_LONG {
        let input = "0123456789".repeat(n);
        assert_eq!(
            xxh3_64(input.as_bytes()),
            hash,
            "xxh3_64 of {} bytes",
            input.len()
        );
        assert_eq!(sharded::shard_of(input.as_bytes(), 8), shard);
    }
    assert_eq!(sharded::shard_of(b"anything", 1), 0);
    assert_eq!(sharded::shard_key("users", 3), "users:{shard-3}");
}

#[test]
fn sharded_filter_over_the_masters() {
    const SHARDS: u32 = 8;
    const ITEMS: usize = 30_000;
    let cluster = Cluster::start(3, 0);
    let client = ClusterClient::new(vec![cluster.url(0)]).expect("cluster client");
    let mut con = client.get_connection().expect("cluster connection");
    let filter = sharded::ShardedBloom::new("users", SHARDS);
    filter
        .reserve(&mut con, 40_000, 0.01, &[])
        .expect("reserve the shards");

    // Each shard: capacity/N at the filter's error rate, in its own slot.
    let mut slots = BTreeSet::new();
    for key in filter.keys() {
        let info: Vec<Value> = redis::cmd("BF.INFO")
            .arg(&key)
            .query(&mut con)
            .expect("BF.INFO");
        assert_eq!(info.get(1), Some(&Value::Int(5000)), "capacity of {key}");
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&key)
            .query(&mut con)
            .expect("KEYSLOT");
        slots.insert(slot);
    }
    assert_eq!(
        slots.len(),
        SHARDS as usize,
        "one slot per shard: {slots:?}"
    );
    let owners = sharded::slot_owners(&mut con).expect("CLUSTER SLOTS");
    let masters: BTreeSet<&str> = slots
        .iter()
        .map(|&s| {
            owners
                .iter()
                .find(|(lo, hi, _)| (*lo..=*hi).contains(&s))
                .map(|(_, _, a)| a.as_str())
                .expect("slot owner")
        })
        .collect();
    assert!(
        masters.len() > 1,
        "the shards should spread over the masters: {masters:?}"
    );

    let items: Vec<String> = (0..ITEMS).map(|i| format!("user:{i}")).collect();
    let new = filter.add(&mut con, &items).expect("add");

    // Independently of the example's code: the item's shard is
    // xxh3_64(item) mod N, and the item is in that shard's key.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); SHARDS as usize];
    for (i, item) in items.iter().enumerate() {
        groups[(xxh3_64(item.as_bytes()) % u64::from(SHARDS)) as usize].push(i);
    }
    let mean = ITEMS as f64 / f64::from(SHARDS);
    for (shard, group) in groups.iter().enumerate() {
        let key = format!("users:{{shard-{shard}}}");
        let deviation = (group.len() as f64 - mean).abs() / mean;
        assert!(
            deviation < 0.06,
            "{key} got {} items, {:.1}% off the mean {mean}",
            group.len(),
            deviation * 100.0
        );
        for chunk in group.chunks(1000) {
            let found: Vec<i64> = redis::cmd("BF.MEXISTS")
                .arg(&key)
                .arg(chunk.iter().map(|&i| items[i].as_str()).collect::<Vec<_>>())
                .query(&mut con)
                .expect("BF.MEXISTS");
            assert!(
                found.iter().all(|&b| b == 1),
                "an item is missing from {key}"
            );
        }
        // BF.CARD counts exactly the items of this shard reported new.
        let card: u64 = redis::cmd("BF.CARD")
            .arg(&key)
            .query(&mut con)
            .expect("BF.CARD");
        let reported_new = group.iter().filter(|&&i| new[i]).count() as u64;
        assert_eq!(card, reported_new, "BF.CARD {key}");
        assert!(
            card as f64 >= group.len() as f64 * 0.99,
            "{key}: only {card} of {} items reported new",
            group.len()
        );
        // The items of the next shard are not in this one (beyond false
        // positives): the filter is partitioned, not replicated.
        let other = &groups[(shard + 1) % SHARDS as usize];
        let sample: Vec<&str> = other
            .iter()
            .take(1000)
            .map(|&i| items[i].as_str())
            .collect();
        let found: Vec<i64> = redis::cmd("BF.MEXISTS")
            .arg(&key)
            .arg(&sample)
            .query(&mut con)
            .expect("BF.MEXISTS");
        let positives = found.iter().filter(|&&b| b == 1).count();
        assert!(
            positives < sample.len() / 30,
            "{positives} of {} items of another shard found in {key}",
            sample.len()
        );
    }
    assert_eq!(
        filter.card(&mut con).expect("card"),
        new.iter().filter(|&&b| b).count() as u64
    );
    assert!(filter
        .exists(&mut con, &items)
        .expect("exists")
        .iter()
        .all(|&b| b));

    // The example itself, against the same cluster.
    let demo = sharded::Demo {
        name: "example".into(),
        shards: SHARDS,
        capacity: 100_000,
        error_rate: 0.001,
        items: 20_000,
    };
    let report = sharded::run(&cluster.url(1), &demo).expect("examples/sharded.rs");
    assert_eq!(report.found, demo.items);
    assert_eq!(report.shards.len(), SHARDS as usize);
    assert_eq!(
        report.shards.iter().map(|s| s.3).sum::<u64>(),
        report.new,
        "{report:?}"
    );
    assert!(report.new >= demo.items * 99 / 100, "{report:?}");
    let rate = report.false_positives as f64 / demo.items as f64;
    assert!(rate < 0.002, "false positive rate {rate}: {report:?}");
    for (key, slot, owner, _) in &report.shards {
        assert!(
            owner.starts_with("127.0.0.1:"),
            "{key} (slot {slot}) on {owner}"
        );
    }
    // It refuses to overwrite an existing filter.
    let again = sharded::run(&cluster.url(2), &demo);
    assert!(
        again
            .as_ref()
            .is_err_and(|e| e.to_string().contains("exists")),
        "a second run must refuse: {:?}",
        again.map(|r| r.new)
    );
}

/// CMS.MERGE declares every key it reads (a `keynum` key spec for the
/// sources, where RedisBloom 2.8.2 declares the destination alone), so a
/// cluster runs a merge within one slot and refuses sources in other
/// slots with CROSSSLOT instead of merging whatever the node holds.
#[test]
fn count_min_merge_stays_within_a_slot() {
    let cluster = Cluster::start(3, 0);
    let mut owner = cluster
        .nodes
        .iter()
        .map(Server::raw)
        .find_map(|mut r| {
            let reply = r.line("CMS.INITBYDIM {t}a 10 3");
            (!reply.starts_with(b"-MOVED")).then(|| {
                assert_eq!(reply, b"+OK\r\n");
                r
            })
        })
        .expect("a node owns the slot of {t}");
    for line in [
        "CMS.INITBYDIM {t}b 10 3",
        "CMS.INCRBY {t}b x 3 y 1",
        "CMS.INITBYDIM {u}c 10 3",
    ] {
        let reply = owner.line(line);
        if line.contains("{u}") {
            // Another slot, owned by this node or another one.
            assert!(
                reply == b"+OK\r\n" || reply.starts_with(b"-MOVED"),
                "{line}: {}",
                String::from_utf8_lossy(&reply)
            );
        } else {
            assert!(!reply.starts_with(b"-"), "{line}");
        }
    }
    assert_eq!(owner.line("CMS.MERGE {t}a 1 {t}b WEIGHTS 2"), b"+OK\r\n");
    assert_eq!(owner.line("CMS.QUERY {t}a x y"), b"*2\r\n:6\r\n:2\r\n");
    for line in [
        "CMS.MERGE {t}a 2 {t}b {u}c",
        "CMS.MERGE {t}a 2 {u}c {t}b WEIGHTS 1 1",
        "CMS.MERGE {u}c 1 {t}b",
    ] {
        let reply = String::from_utf8_lossy(&owner.line(line)).into_owned();
        assert!(reply.starts_with("-CROSSSLOT"), "{line}: {reply}");
    }
    assert_eq!(owner.line("CMS.QUERY {t}a x y"), b"*2\r\n:6\r\n:2\r\n");
}
