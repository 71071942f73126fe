//! Counts in words: "1 route", "3 listeners".

/// `n` and `what`, plural unless `n` is 1.
pub fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(counted(1, "upstream"), "1 upstream");
        assert_eq!(counted(0, "route"), "0 routes");
        assert_eq!(counted(2, "directive"), "2 directives");
    }
}
