//! A step's think time: fixed, or drawn afresh after each run of the step, as JMeter's
//! timers and Locust's `between` draw it:
//!
//! ```toml
//! think = "1s"                                  # fixed (JMeter's Constant Timer)
//! think = { between = ["1s", "3s"] }            # uniform (Uniform Random Timer, Locust's between)
//! think = { gaussian = "1s", deviation = "200ms" }  # normal, never below zero (Gaussian Random Timer)
//! think = { exponential = "1s" }                # its mean: arrivals of a Poisson process
//! ```

use sluice_config::toml_edit::{Item, TableLike, Value};
use sluice_config::{parse_duration, Reader};
use std::time::Duration;

/// How long a user pauses after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Fixed(Duration),
    /// From the first to the second, every time as likely.
    Uniform(Duration, Duration),
    /// Around `mean`, `deviation` the standard deviation; a draw below zero is zero.
    Gaussian {
        mean: Duration,
        deviation: Duration,
    },
    /// Exponentially distributed with this mean.
    Exponential(Duration),
}

impl Default for Think {
    fn default() -> Think {
        Think::Fixed(Duration::ZERO)
    }
}

impl Think {
    /// No pause at all.
    pub fn is_zero(&self) -> bool {
        *self == Think::Fixed(Duration::ZERO)
    }

    /// One pause, drawn.
    pub fn draw(&self) -> Duration {
        let seconds = |d: &Duration| d.as_secs_f64();
        let s = match self {
            Think::Fixed(d) => return *d,
            Think::Uniform(lo, hi) => seconds(lo) + fastrand::f64() * (seconds(hi) - seconds(lo)),
            Think::Gaussian { mean, deviation } => seconds(mean) + seconds(deviation) * normal(),
            // 1 - u is in (0, 1]: its logarithm is finite.
            Think::Exponential(mean) => -seconds(mean) * (1.0 - fastrand::f64()).ln(),
        };
        Duration::from_secs_f64(s.max(0.0))
    }
}

/// A standard normal draw (Box-Muller).
fn normal() -> f64 {
    let (u, v) = (1.0 - fastrand::f64(), fastrand::f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

const KEYS: &[&str] = &["between", "gaussian", "deviation", "exponential"];

/// The step's `think`: a duration, or a table saying how to draw it.
pub(super) fn think(r: &mut Reader, t: &dyn TableLike) -> Think {
    let Some(table) = t.get("think").and_then(Item::as_table_like) else {
        return Think::Fixed(r.duration(t, "think").unwrap_or_default());
    };
    r.only_keys(table, KEYS, "a `think`");
    let given: Vec<&str> = ["between", "gaussian", "exponential"]
        .into_iter()
        .filter(|k| table.get(k).is_some())
        .collect();
    let span = t.get("think").and_then(Item::span);
    let hint = "think = { between = [\"1s\", \"3s\"] }, { gaussian = \"1s\", deviation = \"200ms\" } or { exponential = \"1s\" }";
    match given[..] {
        ["between"] => between(r, table).unwrap_or_default(),
        ["gaussian"] => {
            let mean = r.duration(table, "gaussian").unwrap_or_default();
            let deviation = r.duration(table, "deviation");
            if deviation.is_none() && table.get("deviation").is_none() {
                r.error(span, "a gaussian `think` needs its `deviation`", hint);
            }
            Think::Gaussian {
                mean,
                deviation: deviation.unwrap_or_default(),
            }
        }
        ["exponential"] => Think::Exponential(r.duration(table, "exponential").unwrap_or_default()),
        _ => {
            r.error(span, "a `think` table says one way to draw it", hint);
            Think::default()
        }
    }
}

/// `between = ["1s", "3s"]`: two durations, the first at most the second.
fn between(r: &mut Reader, table: &dyn TableLike) -> Option<Think> {
    let item = table.get("between")?;
    let bounds: Option<Vec<Duration>> = item.as_array().map(|a| {
        a.iter()
            .filter_map(|v: &Value| v.as_str().and_then(parse_duration))
            .collect()
    });
    match bounds.as_deref() {
        Some(&[lo, hi]) if lo <= hi && item.as_array().is_some_and(|a| a.len() == 2) => {
            Some(Think::Uniform(lo, hi))
        }
        _ => {
            r.error(
                item.span(),
                "`between` takes two durations, the shorter first",
                "e.g. between = [\"1s\", \"3s\"]",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(t: Think) -> f64 {
        let n = 20_000;
        (0..n).map(|_| t.draw().as_secs_f64()).sum::<f64>() / n as f64
    }

    #[test]
    fn draws_keep_to_their_distributions() {
        let (a, b) = (Duration::from_millis(100), Duration::from_millis(300));
        for _ in 0..1000 {
            let d = Think::Uniform(a, b).draw();
            assert!(d >= a && d <= b, "{d:?}");
        }
        // The mean of 20,000 draws is within 5 standard errors of the distribution's.
        assert!((mean_of(Think::Uniform(a, b)) - 0.2).abs() < 0.003);
        assert!((mean_of(Think::Exponential(Duration::from_secs(1))) - 1.0).abs() < 0.04);
        let g = Think::Gaussian {
            mean: Duration::from_secs(1),
            deviation: Duration::from_millis(100),
        };
        assert!((mean_of(g) - 1.0).abs() < 0.004);
        let wide = Think::Gaussian {
            mean: Duration::from_millis(10),
            deviation: Duration::from_secs(1),
        };
        // Never below zero: about half the draws are clamped to it.
        let zeros = (0..1000).filter(|_| wide.draw().is_zero()).count();
        assert!((350..650).contains(&zeros), "{zeros}");
        assert_eq!(Think::Fixed(a).draw(), a);
    }
}
