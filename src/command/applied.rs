//! The propagation rule, for every command of every type: what goes to
//! replicas and the AOF is what this server applied (the items actually
//! inserted, the state actually reached), never the command as sent when
//! part of it was refused. Replicas and AOF replays never refuse (the
//! memory guard lets a master's or an AOF's command through, see
//! `guard::CommandGuard`), so a command sent as received after a partial
//! refusal would apply there what the master refused: another state, or an
//! allocation the master declined, which can take the replica down.
//!
//! Batch commands record each item's outcome in an [`Applied`] and
//! propagate [`Applied::propagation`]; the command layer checks every
//! command's outcome against the guard's refusals ([`RefusalCheck`]), in
//! the one place that runs commands (`ffi::command` and, in unit tests,
//! `command::testing::run`).

use std::ffi::CStr;
use std::ops::Range;

use super::{Outcome, Propagation, RewriteArg};

/// What one item of a batch did to the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemOutcome {
    /// The item changed the value.
    Changed,
    /// The item changed nothing (it was there already, or the value's
    /// own state refused it), and changes nothing on a replica holding the
    /// same state.
    Unchanged,
    /// The item was refused (a full filter, a growth the memory guard or
    /// the allocator refused) and changed nothing.
    Failed,
}

/// Which of a batch's items changed the value: a replica or an AOF replay
/// must apply exactly those. The items before the first failed one all
/// count (an item already present is a no-op there too); after a failure
/// only the items that changed the value do, so that nothing the master
/// refused is applied elsewhere (replicas never refuse). A failed item
/// changed nothing, so applying the others in order reaches the master's
/// state.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Argument index of the first item that failed.
    pub first_failure: Option<usize>,
    /// Argument indices of the items that changed the value after it
    /// (allocated only once a failure happened, which keeps the common path
    /// allocation-free).
    changed_after: Vec<usize>,
}

impl Applied {
    /// Records the outcome of the item at argument `index` (in order).
    #[inline]
    pub fn record(&mut self, index: usize, outcome: ItemOutcome) {
        match (self.first_failure, outcome) {
            (None, ItemOutcome::Changed | ItemOutcome::Unchanged) => {}
            (None, ItemOutcome::Failed) => self.first_failure = Some(index),
            (Some(_), ItemOutcome::Changed) => self.changed_after.push(index),
            (Some(_), _) => {}
        }
    }

    /// Whether an item failed.
    #[inline]
    pub fn failed(&self) -> bool {
        self.first_failure.is_some()
    }

    /// The argument indices of the items to propagate, of a batch from
    /// argument `from` to the end of `argc` arguments.
    pub fn items(&self, from: usize, argc: usize) -> Vec<usize> {
        let prefix_end = self.first_failure.unwrap_or(argc);
        (from..prefix_end)
            .chain(self.changed_after.iter().copied())
            .collect()
    }

    /// What a batch command propagates whose items are its arguments from
    /// `from` to the end (`argc`): itself as received when no item failed;
    /// after a failure `command` with the arguments `head` (the key and the
    /// options, as received) and the items to apply, or nothing when there
    /// are none (`head` must then not create anything: a creating command
    /// spells its creation out itself).
    pub fn propagation(
        &self,
        command: &'static CStr,
        head: Range<usize>,
        from: usize,
        argc: usize,
    ) -> Propagation {
        if !self.failed() {
            return Propagation::Verbatim;
        }
        let items = self.items(from, argc);
        if items.is_empty() {
            return Propagation::Nothing;
        }
        let mut args: Vec<RewriteArg> = head.map(RewriteArg::Input).collect();
        args.extend(items.into_iter().map(RewriteArg::Input));
        Propagation::Rewrite { command, args }
    }
}

/// The check of the rule, around one command: a command during which the
/// memory guard refused a client's allocation cannot be propagated as
/// received (the replica would apply what was refused here).
pub struct RefusalCheck {
    refusals_before: u64,
}

impl RefusalCheck {
    /// Taken before the command runs.
    #[inline(always)]
    pub fn start() -> Self {
        RefusalCheck {
            refusals_before: crate::guard::refusals_so_far(),
        }
    }

    /// Whether `outcome` breaks the rule: a guard refusal during the
    /// command, and the command propagated as received.
    #[inline(always)]
    pub fn broken(&self, outcome: &Outcome<'_>) -> bool {
        outcome.propagate.includes_verbatim()
            && crate::guard::refusals_so_far() != self.refusals_before
    }

    /// Applies the rule to `outcome` of `command`: when broken, nothing is
    /// propagated (applying on a replica what this server refused could
    /// allocate there what was refused here), and `log` is told why.
    #[inline(always)]
    pub fn enforce(&self, outcome: &mut Outcome<'_>, command: &CStr, log: impl FnOnce(&str)) {
        if self.broken(outcome) {
            outcome.propagate = Propagation::Nothing;
            log(&format!(
                "{} was partly refused by the memory guard and would have been propagated \
                 as received; it was not propagated (a replica or an AOF replay may miss \
                 what it applied)",
                command.to_string_lossy()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::testing::TestEnv;
    use crate::command::Reply;
    use crate::guard::CommandGuard;
    use ferrobloom_core::{AllocGuard, AllocRequest};

    /// A command propagated as received after a guard refusal is caught,
    /// and not propagated; one without a refusal, or a master's, is not.
    #[test]
    fn the_layer_catches_a_verbatim_propagation_after_a_refusal() {
        let verbatim = || Outcome {
            propagate: Propagation::Verbatim,
            ..Outcome::reply(Reply::Ok)
        };
        let request = AllocRequest {
            bytes: 2_000,
            filter_size_after: 2_000,
        };
        let client = TestEnv::with(|e| e.settings.max_filter_bytes = 1_000);
        let master = TestEnv::with(|e| {
            e.settings.max_filter_bytes = 1_000;
            e.replicated = true;
        });
        let check = RefusalCheck::start();
        assert!(!check.broken(&verbatim()));
        assert!(CommandGuard::new(&master, b"k", "Cuckoo filter")
            .admit(request)
            .is_ok());
        assert!(
            !check.broken(&verbatim()),
            "a master's command is never refused"
        );
        assert!(CommandGuard::new(&client, b"k", "Cuckoo filter")
            .admit(request)
            .is_err());
        let mut outcome = verbatim();
        assert!(check.broken(&outcome));
        assert!(!check.broken(&Outcome::reply(Reply::Ok)));
        let mut logged = String::new();
        check.enforce(&mut outcome, c"cf.insert", |m| logged = m.to_string());
        assert_eq!(outcome.propagate, Propagation::Nothing);
        assert!(
            logged.starts_with("cf.insert was partly refused"),
            "{logged}"
        );
        // The next command starts over.
        assert!(!RefusalCheck::start().broken(&verbatim()));
    }

    #[test]
    fn a_failure_keeps_the_prefix_and_what_changed_after_it() {
        let mut a = Applied::default();
        for (i, o) in [
            ItemOutcome::Changed,
            ItemOutcome::Unchanged,
            ItemOutcome::Failed,
            ItemOutcome::Unchanged,
            ItemOutcome::Changed,
            ItemOutcome::Failed,
            ItemOutcome::Changed,
        ]
        .into_iter()
        .enumerate()
        {
            a.record(3 + i, o);
        }
        assert_eq!(a.items(3, 10), vec![3, 4, 7, 9]);
        assert_eq!(
            a.propagation(c"CF.INSERT", 1..3, 3, 10),
            Propagation::Rewrite {
                command: c"CF.INSERT",
                args: [1, 2, 3, 4, 7, 9].map(RewriteArg::Input).to_vec(),
            }
        );
        let mut none = Applied::default();
        none.record(3, ItemOutcome::Failed);
        assert_eq!(
            none.propagation(c"CF.INSERT", 1..3, 3, 4),
            Propagation::Nothing
        );
        let mut all = Applied::default();
        all.record(3, ItemOutcome::Changed);
        assert_eq!(
            all.propagation(c"CF.INSERT", 1..3, 3, 4),
            Propagation::Verbatim
        );
    }
}
