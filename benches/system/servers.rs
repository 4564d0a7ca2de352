//! The redis-server processes: all from the one configured binary, on
//! free 127.0.0.1 ports, each in a fresh directory (the test harness in
//! tests/common does that, and stops its server by PID when dropped).
//! Two of them form a `Pair`, measured alternately.

use crate::common::{ModuleKind, Server, ServerOpts};
use crate::config::Config;

/// A server with `module` loaded, from the configured binary.
pub fn start(cfg: &Config, module: ModuleKind) -> Server {
    Server::start(ServerOpts::new(module).server_binary(cfg.redis_server.clone()))
}

/// Two servers measured alternately; index 0 is the one in the numerator.
pub struct Pair {
    pub names: [&'static str; 2],
    pub servers: [Server; 2],
}

impl Pair {
    pub fn start(cfg: &Config, names: [&'static str; 2], modules: [ModuleKind; 2]) -> Pair {
        let servers = modules.map(|m| start(cfg, m));
        for (name, s) in names.iter().zip(&servers) {
            println!(
                "{name}: redis-server pid {} on 127.0.0.1:{}",
                s.pid(),
                s.port()
            );
        }
        Pair { names, servers }
    }

    /// The comparison of the report: FerroBloom in the numerator.
    pub fn ferrobloom_vs_redisbloom(cfg: &Config) -> Pair {
        Pair::start(
            cfg,
            ["FerroBloom", "RedisBloom"],
            [ModuleKind::FerroBloom, ModuleKind::RedisBloom],
        )
    }

    /// Runs `f` on both servers, first index 0 in even rounds and index 1
    /// in odd ones, so that drifting machine load hits both alike; returns
    /// the results by index.
    pub fn both<T>(&self, round: usize, mut f: impl FnMut(usize, &Server) -> T) -> [T; 2] {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut out: [Option<T>; 2] = [None, None];
        for i in order {
            out[i] = Some(f(i, &self.servers[i]));
        }
        out.map(|v| v.expect("both sides ran"))
    }

    /// Binds both servers' main threads (where commands run) to the last
    /// CPU, so that the two are measured on the same core, its caches and
    /// its share of the machine's other load.
    pub fn share_one_cpu(&self) {
        let cpu = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
        for s in &self.servers {
            let pid = s.pid() as libc::pid_t;
            // SAFETY: `set` is a plain bit set on the stack, zeroed and then
            // given by pointer with its size to the kernel, which only reads
            // it; `CPU_SET` writes within it (`cpu` < the machine's CPUs,
            // far below `CPU_SETSIZE`).
            let rc = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            assert_eq!(
                rc,
                0,
                "sched_setaffinity of redis-server {pid} to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}
