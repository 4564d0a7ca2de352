//! Creating a windowed filter in an empty key, shared by BF.RESERVE and
//! BF.INSERT with WINDOW: the defaults, the checks of a client's creation
//! options, and the errors of a window that cannot be made.

use ferrobloom_core::window::{
    WindowCreateError, WindowFilter, WindowSizingError, WindowSpec, DEFAULT_GENERATIONS,
};

use super::grammar::{Creation, Given, Source, WindowDefaults};
use super::replies;
use super::Window;
use crate::bloom::create::command_defaults;
use crate::bloom::replies as bloom;
use crate::command::{self, CommandError, Env, KeySlot, NotCreated};
use crate::guard::CommandGuard;
use crate::notify::{Event, Events};

/// The defaults of a creation: the settings' on the master, the built-in
/// ones for replicated and loaded commands (which spell out every option
/// anyway), as for plain filters.
pub fn window_defaults(env: &impl Env) -> WindowDefaults {
    WindowDefaults {
        chain: command_defaults(env),
        generations: if env.replicated_or_loading() {
            DEFAULT_GENERATIONS
        } else {
            env.settings().window_generations
        },
    }
}

/// The error reply for a window that cannot be shaped.
pub fn sizing_error(e: WindowSizingError) -> CommandError {
    CommandError::Static(match e {
        WindowSizingError::SpanTooShort => replies::SPAN_TOO_SHORT,
        WindowSizingError::Generations => replies::BAD_GENERATIONS,
        WindowSizingError::GenerationsOverItems => replies::GENERATIONS_OVER_ITEMS,
        WindowSizingError::Sizing(_) => replies::TOO_LARGE,
    })
}

/// A client's creation options must say what they mean: ORIGIN places a
/// time window's generations, and an item window has no clock.
fn check_creation(creation: &Creation, source: Source) -> Result<(), CommandError> {
    if !source.trusted && creation.given.has(Given::ORIGIN) && !creation.params.span.is_time() {
        return Err(CommandError::Static(replies::ORIGIN_NEEDS_TIME));
    }
    Ok(())
}

/// BF.INSERT's creation options on a key that holds a windowed filter
/// already: each option named must be what the filter has, or the add is
/// refused (as WINDOW is on a plain filter), so that nobody believes a
/// filter was made as asked when it was not.
pub fn check_matches(creation: &Creation, f: &WindowFilter) -> Result<(), CommandError> {
    let have = f.spec().params;
    let want = creation.params;
    let mismatch = [
        (
            Given::WINDOW,
            "WINDOW",
            want.span != have.span,
            have.span.display(),
        ),
        (
            Given::GENERATIONS,
            "GENERATIONS",
            want.generations != have.generations,
            have.generations.to_string(),
        ),
        (
            Given::POLICY,
            "POLICY",
            want.policy != have.policy,
            have.policy.name().to_string(),
        ),
        (
            Given::CAPACITY,
            "CAPACITY",
            want.capacity != have.capacity,
            have.capacity.to_string(),
        ),
        (
            Given::ERROR,
            "ERROR",
            want.error != have.error,
            have.error.to_string(),
        ),
        (
            Given::ORIGIN,
            "ORIGIN",
            creation.origin_ms != Some(f.origin_ms()),
            f.origin_ms().to_string(),
        ),
        (
            Given::NONSCALING,
            "NONSCALING",
            have.scaling,
            "not given (it scales)".to_string(),
        ),
    ]
    .into_iter()
    .find(|&(option, _, differs, _)| creation.given.has(option) && differs);
    match mismatch {
        Some((_, name, _, value)) => Err(CommandError::Text(format!(
            "ERR the key holds a windowed filter with {name} {value}: creation options apply only when creating a filter"
        ))),
        None => Ok(()),
    }
}

/// Why a window was not made, in the command layer's words.
impl From<WindowCreateError> for NotCreated {
    fn from(e: WindowCreateError) -> NotCreated {
        match e {
            WindowCreateError::Refused(refusal) => NotCreated::Refused(refusal),
            WindowCreateError::Alloc(e) => NotCreated::Alloc(e.bytes),
            WindowCreateError::Sizing(_) => NotCreated::Invalid(replies::TOO_LARGE.into()),
        }
    }
}

/// Creates a windowed filter in the empty key.
pub fn create<'k, E: Env>(
    key: &'k mut impl KeySlot<Window>,
    name: &[u8],
    creation: &Creation,
    env: &E,
    events: &mut Events,
) -> Result<&'k mut Window, CommandError> {
    check_creation(creation, Source::of(env))?;
    let spec = WindowSpec::new(&creation.params).map_err(sizing_error)?;
    let origin = creation.origin_ms.unwrap_or_else(|| env.now_ms());
    let filter = WindowFilter::new(spec, origin, &CommandGuard::new(env, name, super::WHAT))
        .map_err(|e| command::creation_error(e, env, events))?;
    command::install(
        key,
        Window::new(filter),
        bloom::COULD_NOT_CREATE,
        Event::Created,
        events,
    )
}
