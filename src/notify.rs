//! Keyspace notifications of class "module" (enable with
//! `notify-keyspace-events Kd` or `Ed`): what happened to a filter, each
//! event at most once per command, threshold events once per crossing.

use std::ffi::CStr;

use crate::ffi::{Ctx, RString};
use crate::filter::Changes;

pub const CREATED: &CStr = c"bf.create";
pub const ADDED: &CStr = c"bf.add";
pub const SCALED: &CStr = c"bf.scale";
pub const FILL_WARNING: &CStr = c"bf.fill-warning";
pub const FILL_ALERT: &CStr = c"bf.fill-alert";
pub const REFUSED: &CStr = c"bf.guard-refused";

/// What one command did to one filter.
#[derive(Clone, Copy, Debug, Default)]
pub struct Effects {
    pub created: bool,
    pub added: bool,
    pub scaled: bool,
    pub fill_warning: bool,
    pub fill_alert: bool,
    pub refused: bool,
}

impl Effects {
    pub fn record(&mut self, changes: Changes) {
        self.scaled |= changes.scaled;
        self.fill_warning |= changes.crossings.warning;
        self.fill_alert |= changes.crossings.alert;
    }

    /// Sends the notifications, in the order things happened; nothing when
    /// the server's `notify-keyspace-events` leaves out the module class,
    /// which spares every add the cost of the call.
    pub fn notify(&self, ctx: &Ctx, key: &RString<'_>) {
        if !ctx.module_events_enabled() {
            return;
        }
        let events = [
            (self.created, CREATED),
            (self.added, ADDED),
            (self.scaled, SCALED),
            (self.fill_warning, FILL_WARNING),
            (self.fill_alert, FILL_ALERT),
            (self.refused, REFUSED),
        ];
        for (happened, event) in events {
            if happened {
                ctx.notify(event, key);
            }
        }
    }
}
