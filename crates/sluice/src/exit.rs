//! sluice's exit codes, one constant each: the commands return them and `sluice man`
//! lists them from here (see `man.rs`), so a page cannot name a code the code does
//! not use.

/// A failure whose cause is on stderr: main's errors, a reload the running sluice
/// refused, an nginx config that cannot be read.
pub const FAILURE: u8 = 1;
/// A config that does not validate, or a command line or input that cannot be used
/// (clap's usage errors exit with 2 too).
pub const BAD_INPUT: u8 = 2;
/// `sluice bench`: a `--fail-if` threshold was crossed.
pub const THRESHOLD_CROSSED: u8 = 3;
/// Interrupted: 128 + SIGINT, as a shell reports a process Ctrl-C ended.
pub const INTERRUPTED: u8 = 130;
