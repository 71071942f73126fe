//! The open-file limit (`RLIMIT_NOFILE`): read, raised, and said in words.

use std::fmt;

/// The process's open-file limits, soft (what holds) and hard (how far the soft one may
/// be raised without privileges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    pub soft: u64,
    pub hard: u64,
}

impl OpenFiles {
    /// The limits now; `None` where they cannot be read.
    pub fn current() -> Option<OpenFiles> {
        let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).ok()?;
        Some(OpenFiles { soft, hard })
    }

    /// Raises the soft limit to the hard one, so that the number of connections is
    /// bounded by what the machine allows and not by a default of 1024; the limits
    /// after. A failure leaves the limit as it was (and is logged).
    pub fn raise() -> Option<OpenFiles> {
        if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
            tracing::warn!(cause = %e, "could not raise the open-file limit");
        }
        OpenFiles::current()
    }
}

impl fmt::Display for OpenFiles {
    /// `1024 open files (hard limit 1024)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} open files (hard limit {})", self.soft, self.hard)
    }
}

/// How a user raises the limit, for the messages that name it.
pub const HOW_TO_RAISE: &str = "raise the hard limit: `ulimit -Hn` in the shell that starts it (as root), \
LimitNOFILE= in a systemd unit, --ulimit nofile=N:N for a container, nofile in /etc/security/limits.conf";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_reaches_the_hard_limit() {
        let after = OpenFiles::raise().expect("the limit is readable on Linux");
        // An unlimited hard limit is capped by the kernel's nr_open instead.
        assert!(
            after.soft == after.hard || after.hard == u64::MAX,
            "{after:?}"
        );
        assert!(after.to_string().contains(&after.hard.to_string()));
    }
}
