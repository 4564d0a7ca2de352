//! Commands two value types share under one name (the BF.* commands on
//! plain and windowed filters, BF.PLAN with and without WINDOW): which of
//! the two runs, decided here without Redis so that every case is tested.

/// Which of the two commands sharing a name runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The type the name belongs to (RedisBloom's plain filter).
    First,
    /// The other type (windowed filters).
    Second,
}

/// The second command runs when the arguments ask for a new value of its
/// type (`claims_new_key`: BF.RESERVE ... WINDOW), whatever the key holds,
/// or when the key holds one of its values (`key_holds_second`, asked only
/// when the arguments do not decide, so that no key is opened for a
/// command they route); the first one otherwise.
pub fn route(claims_new_key: bool, key_holds_second: impl FnOnce() -> bool) -> Route {
    if claims_new_key || key_holds_second() {
        Route::Second
    } else {
        Route::First
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case() {
        let asked = std::cell::Cell::new(0);
        let asked = &asked;
        let holds = |answer: bool| {
            move || {
                asked.set(asked.get() + 1);
                answer
            }
        };
        // The arguments claim a new value: the key is not looked at.
        assert_eq!(route(true, holds(false)), Route::Second);
        assert_eq!(route(true, holds(true)), Route::Second);
        assert_eq!(asked.get(), 0);
        // Otherwise the key decides.
        assert_eq!(route(false, holds(true)), Route::Second);
        assert_eq!(route(false, holds(false)), Route::First);
        assert_eq!(asked.get(), 2);
        // Keyless commands: only the arguments.
        assert_eq!(route(false, || false), Route::First);
        assert_eq!(route(true, || false), Route::Second);
    }
}
