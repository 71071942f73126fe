//! A warning that repeats at most once a minute: a condition that comes and goes (a
//! listener out of descriptors, a cap reached) logs a line, not a flood.

use std::time::{Duration, Instant};

/// How long a repeated warning keeps quiet.
pub const QUIET: Duration = Duration::from_secs(60);

/// When a warning was last given.
#[derive(Debug, Default)]
pub struct Rarely {
    last: Option<Instant>,
}

impl Rarely {
    /// Whether to warn now: the first time, and then once [`QUIET`] has passed.
    pub fn due(&mut self) -> bool {
        if self.last.is_some_and(|at| at.elapsed() < QUIET) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_once_then_quiet() {
        let mut r = Rarely::default();
        assert!(r.due());
        assert!(!r.due());
        r.last = Some(Instant::now() - QUIET);
        assert!(r.due());
    }
}
