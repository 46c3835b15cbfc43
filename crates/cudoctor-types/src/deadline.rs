//! The moment a command's reading of a machine must end: every loop that hashes, walks, lists
//! or scans inputs asks [`Deadline::passed`] between steps, so that a hostile or huge tree (a
//! RECORD of millions of lines, a wheel file of many GB, a directory of a million entries)
//! ends the loop, said as "stopped early", instead of stretching the command past its budget.

use std::time::{Duration, Instant};

/// A point in time work must stop at, or none (tests, commands without a budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deadline {
    at: Option<Instant>,
    /// The budget it was set from, for the message ("the 2 s budget").
    budget: Option<Duration>,
}

impl Deadline {
    /// No deadline: loops run to their other bounds.
    pub const NONE: Deadline = Deadline {
        at: None,
        budget: None,
    };

    /// `budget` from now.
    pub fn after(budget: Duration) -> Deadline {
        Deadline {
            at: Instant::now().checked_add(budget),
            budget: Some(budget),
        }
    }

    /// Whether the moment has come.
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Time left (`None`: no deadline).
    pub fn left(&self) -> Option<Duration> {
        self.at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The budget it was set from, in seconds (`None`: no deadline).
    pub fn budget_s(&self) -> Option<f64> {
        self.budget.map(|b| b.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_never_passes_and_a_zero_budget_has_passed() {
        assert!(!Deadline::NONE.passed());
        assert_eq!(Deadline::NONE.left(), None);
        let d = Deadline::after(Duration::ZERO);
        assert!(d.passed());
        assert_eq!(d.budget_s(), Some(0.0));
        assert!(!Deadline::after(Duration::from_secs(3600)).passed());
    }
}
