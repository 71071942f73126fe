//! Counts in words: "1 route", "3 listeners".

/// `n` and `what`, plural unless `n` is 1.
pub fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
