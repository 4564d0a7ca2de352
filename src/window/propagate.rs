//! What a write to a windowed filter propagates: the adds applied, named
//! with their epoch (`AT`) when the command as sent would not reproduce
//! them, and a creation spelled out with every option (`ORIGIN` included),
//! so that replicas and AOF replays reach the same state whatever their
//! clocks and settings say.

use ferrobloom_core::window::WindowFilter;

use crate::command::{Propagation, RewriteArg};

const KEY: RewriteArg = RewriteArg::Input(1);

/// The creation options, spelled out for replicas and the AOF.
fn creation_args(w: &WindowFilter, out: &mut Vec<RewriteArg>) {
    let params = w.spec().params;
    out.extend([
        RewriteArg::text("WINDOW"),
        RewriteArg::text(params.span.display()),
        RewriteArg::text("GENERATIONS"),
        RewriteArg::text(params.generations),
        RewriteArg::text("POLICY"),
        RewriteArg::text(params.policy.name()),
        RewriteArg::text("ORIGIN"),
        RewriteArg::text(w.origin_ms()),
    ]);
    if !params.scaling {
        out.push(RewriteArg::text("NONSCALING"));
    }
}

/// A creation alone (BF.RESERVE, or BF.INSERT that created the filter and
/// added nothing), spelled out.
pub fn reserve(w: &WindowFilter) -> Propagation {
    let params = w.spec().params;
    let mut rewrite = vec![
        KEY,
        RewriteArg::text(params.error),
        RewriteArg::text(params.capacity),
    ];
    creation_args(w, &mut rewrite);
    Propagation::Rewrite {
        command: c"bf.reserve",
        args: rewrite,
    }
}

/// What a write propagates after adding the items at the argument indices
/// `applied` out of `items` (it began in `start_epoch`; `created`: it made
/// the filter; `moved`: the clock moved the epoch first).
pub fn adds(
    w: &WindowFilter,
    applied: Vec<usize>,
    items: usize,
    created: bool,
    moved: bool,
    start_epoch: u64,
) -> Propagation {
    if applied.is_empty() && !created {
        Propagation::Nothing
    } else if !created && !moved && applied.len() == items {
        // A replica (or an AOF replay) holds the state this server had
        // before the command: every earlier move of the epoch went out
        // with its AT. When the clock did not move it now, the command as
        // sent reaches the same state there (an item window's epoch moves
        // with its adds alone, a replica's write without AT keeps its
        // epoch), and is the cheapest propagation on the hot path. Once
        // per generation, the write that moves the epoch names it.
        Propagation::Verbatim
    } else if applied.is_empty() {
        // Created, nothing added: the creation alone.
        reserve(w)
    } else {
        // key, 14 creation words at most, AT epoch ITEMS, the items.
        let mut rewrite = Vec::with_capacity(18 + applied.len());
        rewrite.push(KEY);
        if created {
            rewrite.push(RewriteArg::text("ERROR"));
            rewrite.push(RewriteArg::text(w.spec().params.error));
            rewrite.push(RewriteArg::text("CAPACITY"));
            rewrite.push(RewriteArg::text(w.spec().params.capacity));
            creation_args(w, &mut rewrite);
        }
        rewrite.push(RewriteArg::text("AT"));
        rewrite.push(RewriteArg::text(start_epoch));
        rewrite.push(RewriteArg::text("ITEMS"));
        rewrite.extend(applied.into_iter().map(RewriteArg::Input));
        Propagation::Rewrite {
            command: c"bf.insert",
            args: rewrite,
        }
    }
}
