//! The arguments of a command, as grammars and commands read them.

use super::CommandError;

/// A command's arguments (argument 0 is the command name). Numbers are
/// parsed by the server's own parsers in the module, so what is accepted is
/// exactly what Redis and RedisBloom accept; tests bring their own.
pub trait ArgSource {
    fn count(&self) -> usize;
    fn arg(&self, i: usize) -> &[u8];
    /// Redis integer parsing (string2ll).
    fn int(&self, i: usize) -> Option<i64>;
    /// Redis double parsing (strtod, no NaN/overflow/underflow to zero).
    fn double(&self, i: usize) -> Option<f64>;
}

/// Arguments for unit tests: split at spaces, with simplified number
/// parsing that agrees with Redis on the inputs the tests use.
#[cfg(test)]
pub struct TestArgs(pub Vec<Vec<u8>>);

#[cfg(test)]
impl TestArgs {
    pub fn new(line: &str) -> Self {
        TestArgs(line.split(' ').map(|s| s.as_bytes().to_vec()).collect())
    }
}

#[cfg(test)]
impl ArgSource for TestArgs {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn arg(&self, i: usize) -> &[u8] {
        &self.0[i]
    }
    fn int(&self, i: usize) -> Option<i64> {
        let s = std::str::from_utf8(&self.0[i]).ok()?;
        let canonical = s.parse::<i64>().ok()?;
        (canonical.to_string() == s).then_some(canonical)
    }
    fn double(&self, i: usize) -> Option<f64> {
        let v: f64 = std::str::from_utf8(&self.0[i]).ok()?.parse().ok()?;
        (!v.is_nan()).then_some(v)
    }
}

/// Checks that the command has between `min` and `max` arguments.
pub fn arity(args: &impl ArgSource, min: usize, max: usize) -> Result<(), CommandError> {
    if (min..=max).contains(&args.count()) {
        Ok(())
    } else {
        Err(CommandError::Arity)
    }
}
