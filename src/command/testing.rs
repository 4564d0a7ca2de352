//! Driving commands without Redis, for unit tests of every data type: an
//! in-memory key, a test environment, and a runner that parses and runs a
//! command line as the FFI layer does.

use std::cell::{Cell, RefCell};

use super::{
    ArgSource, Env, KeySlot, KeyState, KeyedCommand, Outcome, Propagation, RefusalCheck,
    RewriteArg, TestArgs,
};
use crate::config::Settings;
use crate::guard::tests::FixedMemory;
use crate::guard::ServerMemory;

/// A key in memory holding values of type `V`.
pub enum MemKey<V> {
    Missing,
    Held(Box<V>),
    /// A value of another type.
    Other,
}

impl<V> KeySlot<V> for MemKey<V> {
    fn state(&self) -> KeyState<&V> {
        match self {
            MemKey::Missing => KeyState::Missing,
            MemKey::Held(v) => KeyState::Held(v),
            MemKey::Other => KeyState::Other,
        }
    }
    fn state_mut(&mut self) -> KeyState<&mut V> {
        match self {
            MemKey::Missing => KeyState::Missing,
            MemKey::Held(v) => KeyState::Held(v),
            MemKey::Other => KeyState::Other,
        }
    }
    fn store(&mut self, value: Box<V>) -> Option<&mut V> {
        *self = MemKey::Held(value);
        match self {
            MemKey::Held(v) => Some(v),
            _ => None,
        }
    }
}

impl<V> MemKey<V> {
    pub fn value(&self) -> &V {
        match self {
            MemKey::Held(v) => v,
            _ => panic!("the key holds no value of this type"),
        }
    }
}

/// The server as a test sets it up.
pub struct TestEnv {
    pub settings: Settings,
    pub replicated: bool,
    /// The server is a read-only replica.
    pub read_only_replica: bool,
    /// The command comes from a load (with `replicated` set too).
    pub loading: bool,
    /// The server is a replica (`read_only_replica` says whether it takes
    /// clients' writes).
    pub replica: bool,
    /// What the user's ACL answers for any command line (None: no user).
    pub user_may_run: Option<bool>,
    pub memory: FixedMemory,
    pub warnings: RefCell<Vec<String>>,
    /// The server's clock (ms, Unix time); tests move it with `set_now`.
    pub now: Cell<u64>,
}

/// The clock of a test that does not set it.
pub const DEFAULT_NOW_MS: u64 = 1_700_000_000_000;

impl TestEnv {
    pub fn client() -> Self {
        TestEnv {
            settings: Settings::DEFAULT,
            replicated: false,
            read_only_replica: false,
            loading: false,
            replica: false,
            user_may_run: Some(true),
            memory: FixedMemory::default(),
            warnings: RefCell::new(Vec::new()),
            now: Cell::new(DEFAULT_NOW_MS),
        }
    }

    /// A client's server whose clock reads `now_ms`.
    pub fn at(now_ms: u64) -> Self {
        TestEnv::with(|env| env.now = Cell::new(now_ms))
    }

    /// Moves the clock (it may go back: a test can replay any time).
    pub fn set_now(&self, now_ms: u64) {
        self.now.set(now_ms);
    }

    pub fn with(change: impl FnOnce(&mut TestEnv)) -> Self {
        let mut env = TestEnv::client();
        change(&mut env);
        env
    }
}

impl Env for TestEnv {
    fn settings(&self) -> Settings {
        self.settings
    }
    fn replicated_or_loading(&self) -> bool {
        self.replicated
    }
    fn client_on_read_only_replica(&self) -> bool {
        self.read_only_replica && !self.replicated
    }
    fn loading(&self) -> bool {
        self.loading
    }
    fn is_master(&self) -> bool {
        !self.replica && !self.read_only_replica
    }
    fn user_may_run(&self, _argv: &[&[u8]]) -> Option<bool> {
        if self.replicated {
            None
        } else {
            self.user_may_run
        }
    }
    fn memory(&self) -> &dyn ServerMemory {
        &self.memory
    }
    fn log_warning(&self, message: &str) {
        self.warnings.borrow_mut().push(message.to_string());
    }
    fn now_ms(&self) -> u64 {
        self.now.get()
    }
}

/// Runs one command line as the FFI layer does: parse, then run on the key.
pub fn run<C: KeyedCommand>(
    env: &TestEnv,
    key: &mut MemKey<C::Value>,
    line: &str,
) -> (Outcome<'static>, TestArgs) {
    let args = TestArgs::new(line);
    let outcome = match C::parse(&args, env) {
        Ok(request) => {
            let check = RefusalCheck::start();
            let o = C::run(request, &args, key, env);
            // The propagation rule (`command::applied`): a test of a
            // command that breaks it fails here, whatever it asserts.
            assert!(
                !check.broken(&o),
                "{line}: propagated as received after a memory guard refusal"
            );
            Outcome {
                reply: o.reply.into_owned(),
                propagate: o.propagate,
                events: o.events,
            }
        }
        Err(e) => Outcome::error(e),
    };
    (outcome, args)
}

/// What a replica gets, as a command line (several joined by `; `); None
/// for nothing.
pub fn propagated(p: &Propagation, args: &TestArgs) -> Option<String> {
    let text = |i: usize| String::from_utf8_lossy(args.arg(i)).into_owned();
    let rewritten = |command: &std::ffi::CStr, rewrite: &[RewriteArg]| {
        let mut words = vec![command.to_string_lossy().into_owned()];
        words.extend(rewrite.iter().map(|a| match a {
            RewriteArg::Input(i) => text(*i),
            RewriteArg::Text(t) => t.clone(),
        }));
        words.join(" ")
    };
    match p {
        Propagation::Nothing => None,
        Propagation::Verbatim => Some((0..args.count()).map(text).collect::<Vec<_>>().join(" ")),
        Propagation::Rewrite {
            command,
            args: rewrite,
        } => Some(rewritten(command, rewrite)),
        Propagation::Preceded(p) => {
            let first = rewritten(p.command, &p.args);
            Some(match propagated(&p.then, args) {
                Some(rest) => format!("{first}; {rest}"),
                None => first,
            })
        }
    }
}
