//! What every listener of sluice shares about the process's file descriptors: the
//! open-file limit ([`OpenFiles`], raised to the hard limit at start, as nginx's
//! `worker_rlimit_nofile` does) and what an accept loop does when `accept` fails
//! ([`AcceptBackoff`]: it waits, longer each time, logs once with the limit and how to
//! raise it, and says when it accepts again).
//!
//! This crate owns no socket and serves nothing: the proxy's listeners, the admin
//! listener and the lab's servers each keep their own loop and call it on an error. It
//! must never retry without a pause, since a listener whose accept fails for lack of a
//! descriptor stays readable and a loop that retries at once spins a core doing nothing.

mod backoff;
mod limit;
mod rarely;

pub use backoff::AcceptBackoff;
pub use limit::{OpenFiles, HOW_TO_RAISE};
pub use rarely::Rarely;
