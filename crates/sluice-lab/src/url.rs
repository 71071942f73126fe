//! URLs as the lab shows them: never with a password.

/// A URL as reports and errors show it: a password in it replaced by `***`.
pub fn masked(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((user, after)) if user.contains(':') => {
                let name = user.split(':').next().unwrap_or("");
                format!("{scheme}://{name}:***@{after}")
            }
            _ => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// A host of this machine's loopback: `127.x`, `localhost`, `::1` (bracketed or not).
pub fn is_loopback_host(host: &str) -> bool {
    host.starts_with("127.") || matches!(host, "localhost" | "::1" | "[::1]")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            super::masked("mysql://lab:s3cret@h:3306/x"),
            "mysql://lab:***@h:3306/x"
        );
        assert_eq!(super::masked("redis://:s3cret@h"), "redis://:***@h");
        assert_eq!(super::masked("postgres://lab@h/x"), "postgres://lab@h/x");
        assert_eq!(
            super::masked("http://h:9100/metrics"),
            "http://h:9100/metrics"
        );
    }
}
