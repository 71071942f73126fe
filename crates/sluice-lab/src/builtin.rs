//! The built-in experiments: each reproduces a field note on one machine. They are TOML
//! files (`experiments/`), compiled in and read by the same parser as a user's, so
//! `sluice lab --print NAME` gives a working file to start from.

use crate::spec::Experiment;

/// The experiment `sluice lab` runs without arguments.
pub const DEFAULT: &str = "scale-out";

/// Each built-in's name and text.
pub const ALL: &[(&str, &str)] = &[
    ("scale-out", include_str!("../experiments/scale-out.toml")),
    ("000-lb-cpu", include_str!("../experiments/000-lb-cpu.toml")),
    (
        "001-least-conn",
        include_str!("../experiments/001-least-conn.toml"),
    ),
    (
        "002-keepalive",
        include_str!("../experiments/002-keepalive.toml"),
    ),
    (
        "003-stomp-chat",
        include_str!("../experiments/003-stomp-chat.toml"),
    ),
    (
        "004-db-pool",
        include_str!("../experiments/004-db-pool.toml"),
    ),
    (
        "004-threads",
        include_str!("../experiments/004-threads.toml"),
    ),
    (
        "004-conn-cap",
        include_str!("../experiments/004-conn-cap.toml"),
    ),
    (
        "014-overload",
        include_str!("../experiments/014-overload.toml"),
    ),
];

/// The built-in named `name` (or by its number alone, `000`, when only one has it).
pub fn text(name: &str) -> Option<&'static str> {
    if let Some((_, t)) = ALL.iter().find(|(n, _)| *n == name) {
        return Some(t);
    }
    let mut by_number = ALL
        .iter()
        .filter(|(n, _)| n.split('-').next() == Some(name));
    match (by_number.next(), by_number.next()) {
        (Some((_, t)), None) => Some(t),
        _ => None,
    }
}

/// The built-in named `name`, parsed.
pub fn get(name: &str) -> Option<Experiment> {
    let t = text(name)?;
    Some(Experiment::parse(&format!("<built-in {name}>"), t).expect("built-ins are valid"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_built_in_parses() {
        for (name, _) in super::ALL {
            assert_eq!(&super::get(name).unwrap().name, name);
        }
        assert_eq!(super::get("000").unwrap().name, "000-lb-cpu");
        assert!(
            super::get("004").is_none(),
            "three built-ins start with 004"
        );
    }
}
