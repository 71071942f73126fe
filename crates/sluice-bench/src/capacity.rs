//! Capacity from traffic, as seed 004 worked it out by hand (`sluice plan` prints it):
//! daily active users times requests per user over the active hours gives the average
//! rate; the peak factor gives the peak; Little's law gives the users in the system at
//! the peak (rate times the time each spends per request, response plus think time).

use std::time::Duration;

/// The plan's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    pub requests_per_day: f64,
    pub average_rps: f64,
    pub peak_rps: f64,
    /// Users in the system at the peak (Little's law), unrounded.
    pub users: f64,
}

/// Seed 004's arithmetic.
pub fn capacity(dau: f64, per_user: f64, hours: f64, peak: f64, per_request: Duration) -> Capacity {
    let requests_per_day = dau * per_user;
    let average_rps = requests_per_day / (hours * 3600.0);
    let peak_rps = average_rps * peak;
    Capacity {
        requests_per_day,
        average_rps,
        peak_rps,
        users: peak_rps * per_request.as_secs_f64(),
    }
}

/// Users for the lab's steps: a quarter, half, all and half again of the plan's.
pub fn lab_steps(users: u64) -> String {
    let mut steps: Vec<u64> = [1, 2, 4, 6]
        .iter()
        .map(|k| (users * k).div_ceil(4).max(1))
        .collect();
    steps.dedup();
    steps
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_004s_numbers() {
        // 50,000 DAU x 300 requests / 6 h = 694 req/s on average, x3 = 2,083 at the
        // peak (the seed rounded the average down first: 2,082); at 250 ms each, 521
        // users are in the system.
        let c = capacity(50_000.0, 300.0, 6.0, 3.0, Duration::from_millis(250));
        assert_eq!(c.requests_per_day, 15_000_000.0);
        assert!((c.average_rps - 694.44).abs() < 0.01, "{c:?}");
        assert!((c.peak_rps - 2083.33).abs() < 0.01, "{c:?}");
        assert!((c.users - 520.83).abs() < 0.01, "{c:?}");
    }

    #[test]
    fn the_lab_steps_go_to_half_again_the_plan() {
        assert_eq!(lab_steps(521), "131,261,521,782");
        assert_eq!(lab_steps(1), "1,2");
    }
}
