//! The Universal Scalability Law (Gunther): throughput at N users
//! X(N) = λN / (1 + σ(N-1) + κN(N-1)), where σ is contention (a share of the work that
//! queues for one thing) and κ coherency (work that grows with every pair of users).
//! Fitted to a run's steps by least squares on N/X, which is a quadratic in N:
//! N/X = a + bN + cN², with λ = 1/(a+b+c), σ = 1 - aλ, κ = cλ; σ and κ are never
//! negative (the law is fitted again without one that would be, and the best fit kept).
//! Four steps at least: three parameters need a fourth point to say anything.

use serde::Serialize;

/// Steps a fit needs.
pub const MIN_STEPS: usize = 4;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Usl {
    /// Throughput of one user alone, req/s.
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    /// How well X(N) matches the steps: 1 is exact.
    pub r2: f64,
    pub steps: usize,
    /// Where throughput peaks (κ > 0), or its ceiling as users grow (κ = 0, σ > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_users: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_tps: Option<f64>,
    /// In words, with the plan's rate against it ([`Usl::describe`], set with the run's
    /// verdict): what the terminal and the page show.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

impl Usl {
    /// The fit to `(users, throughput)` points; `None` with fewer than [`MIN_STEPS`]
    /// distinct user counts or nothing to fit.
    pub fn fit(points: &[(f64, f64)]) -> Option<Usl> {
        let points: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|(n, x)| *n >= 1.0 && *x > 0.0)
            .collect();
        let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
        distinct.dedup();
        if distinct.len() < MIN_STEPS {
            return None;
        }
        let ys: Vec<f64> = points.iter().map(|(n, x)| n / x).collect();
        let ns: Vec<f64> = points.iter().map(|p| p.0).collect();
        let candidate = |model: Model| {
            let (lambda, sigma, kappa) = model.params(&least_squares(&ns, &ys, model.basis())?)?;
            let mut usl = Usl {
                lambda,
                sigma,
                kappa,
                r2: 0.0,
                steps: points.len(),
                peak_users: None,
                peak_tps: None,
                summary: String::new(),
            };
            usl.r2 = r_squared(&usl, &points);
            Some(usl)
        };
        let mut usl = MODELS
            .into_iter()
            .filter_map(candidate)
            .max_by(|a, b| a.r2.total_cmp(&b.r2))?;
        (usl.peak_users, usl.peak_tps) = usl.peak();
        Some(usl)
    }

    /// Throughput at `n` users.
    pub fn throughput(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    fn peak(&self) -> (Option<f64>, Option<f64>) {
        if self.kappa > 0.0 {
            let n = ((1.0 - self.sigma) / self.kappa).sqrt().max(1.0);
            (Some(n), Some(self.throughput(n)))
        } else if self.sigma > 0.0 {
            (None, Some(self.lambda / self.sigma))
        } else {
            (None, None)
        }
    }

    /// The fewest users at which the fit reaches `rate`; `None` beyond its peak.
    pub fn users_for(&self, rate: f64) -> Option<f64> {
        if self.peak_tps.is_some_and(|p| rate > p) {
            return None;
        }
        let (mut lo, mut hi) = (1.0, self.peak_users.unwrap_or(1e7));
        if self.throughput(hi) < rate {
            return None;
        }
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if self.throughput(mid) < rate {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(hi)
    }
}

impl Usl {
    /// In words, with the plan's peak rate (`sluice plan`'s) against the fit where given.
    pub fn describe(&self, peak_rate: Option<f64>) -> String {
        let mut out = format!(
            "Universal Scalability Law over {} steps (R² {:.2}): one user {:.1} req/s, contention σ {:.3}, coherency κ {:.4}",
            self.steps, self.r2, self.lambda, self.sigma, self.kappa
        );
        match (self.peak_users, self.peak_tps) {
            (Some(n), Some(x)) => out.push_str(&format!(
                "; throughput peaks at {x:.0} req/s near {n:.0} users"
            )),
            (None, Some(x)) => out.push_str(&format!(
                "; throughput approaches {x:.0} req/s however many users"
            )),
            _ => out.push_str("; throughput still grows in proportion to users"),
        }
        if let Some(rate) = peak_rate {
            out.push_str(&match self.users_for(rate) {
                Some(n) => format!(
                    "; the plan's peak rate {rate:.0} req/s is reached near {n:.0} users{}",
                    self.peak_tps.map_or(String::new(), |x| format!(", {:.1}x below that ceiling", x / rate))
                ),
                None => format!(
                    "; the plan's peak rate {rate:.0} req/s is beyond it: the limit named has to move first"
                ),
            });
        }
        out
    }
}

/// The law with both, either or neither of σ and κ held at zero: the best fit of those
/// whose parameters are not negative is the one kept (a flat top fits κ = 0, a curve
/// that bends back σ = 0, a straight line both).
#[derive(Debug, Clone, Copy)]
enum Model {
    Full,
    NoContention,
    NoCoherency,
    Linear,
}

const MODELS: [Model; 4] = [
    Model::Full,
    Model::NoContention,
    Model::NoCoherency,
    Model::Linear,
];

impl Model {
    /// N/X as a sum of these functions of N, each times a coefficient.
    fn basis(self) -> &'static [fn(f64) -> f64] {
        match self {
            Model::Full => &[|_| 1.0, |n| n, |n| n * n],
            Model::NoContention => &[|_| 1.0, |n| n * (n - 1.0)],
            Model::NoCoherency => &[|_| 1.0, |n| n],
            Model::Linear => &[|_| 1.0],
        }
    }

    /// λ, σ, κ from the coefficients, when none is negative (nor σ above 1).
    fn params(self, c: &[f64]) -> Option<(f64, f64, f64)> {
        // N/X = (1-σ)/λ + (σ-κ)/λ N + κ/λ N²; without σ: 1/λ + κ/λ N(N-1).
        let (lambda, sigma, kappa) = match self {
            Model::Full => {
                let lambda = 1.0 / (c[0] + c[1] + c[2]);
                (lambda, 1.0 - c[0] * lambda, c[2] * lambda)
            }
            Model::NoContention => (1.0 / c[0], 0.0, c[1] / c[0]),
            Model::NoCoherency => {
                let lambda = 1.0 / (c[0] + c[1]);
                (lambda, c[1] * lambda, 0.0)
            }
            Model::Linear => (1.0 / c[0], 0.0, 0.0),
        };
        let ok = lambda.is_finite() && lambda > 0.0 && (0.0..=1.0).contains(&sigma) && kappa >= 0.0;
        ok.then_some((lambda, sigma, kappa))
    }
}

/// Coefficients of y as a sum of `basis` functions of n, by least squares.
fn least_squares(ns: &[f64], ys: &[f64], basis: &[fn(f64) -> f64]) -> Option<Vec<f64>> {
    let k = basis.len();
    let mut a = vec![vec![0.0; k + 1]; k];
    for (n, y) in ns.iter().zip(ys) {
        let f: Vec<f64> = basis.iter().map(|b| b(*n)).collect();
        for i in 0..k {
            for j in 0..k {
                a[i][j] += f[i] * f[j];
            }
            a[i][k] += f[i] * y;
        }
    }
    gauss(a)
}

/// Solves the augmented system `a` (k rows of k + 1) by elimination with pivoting.
fn gauss(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

fn r_squared(usl: &Usl, points: &[(f64, f64)]) -> f64 {
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let residual: f64 = points
        .iter()
        .map(|(n, x)| (x - usl.throughput(*n)).powi(2))
        .sum();
    if total <= 0.0 {
        1.0
    } else {
        1.0 - residual / total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(lambda: f64, sigma: f64, kappa: f64, users: &[f64]) -> Vec<(f64, f64)> {
        let u = Usl {
            lambda,
            sigma,
            kappa,
            r2: 0.0,
            steps: 0,
            peak_users: None,
            peak_tps: None,
            summary: String::new(),
        };
        users.iter().map(|n| (*n, u.throughput(*n))).collect()
    }

    #[test]
    fn a_curve_of_the_law_is_fitted_back_to_its_parameters() {
        let points = curve(100.0, 0.05, 0.002, &[1.0, 5.0, 10.0, 20.0, 40.0]);
        let u = Usl::fit(&points).unwrap();
        assert!((u.lambda - 100.0).abs() < 1e-6, "{u:?}");
        assert!((u.sigma - 0.05).abs() < 1e-9, "{u:?}");
        assert!((u.kappa - 0.002).abs() < 1e-9, "{u:?}");
        assert!(u.r2 > 0.999_999);
        // N* = sqrt((1 - σ) / κ) = sqrt(475) = 21.8 users.
        assert!((u.peak_users.unwrap() - 475f64.sqrt()).abs() < 1e-6);
        let at_plan = u.users_for(500.0).unwrap();
        assert!((u.throughput(at_plan) - 500.0).abs() < 1e-6);
        assert_eq!(u.users_for(u.peak_tps.unwrap() + 1.0), None);
    }

    #[test]
    fn contention_alone_has_a_ceiling_and_a_straight_line_none() {
        // A hot row: throughput flat at 200 from 10 users on (σ = 1: all of it queues).
        let flat = [(10.0, 198.0), (20.0, 200.0), (40.0, 199.0), (80.0, 201.0)];
        let u = Usl::fit(&flat).unwrap();
        assert!(
            u.peak_tps.unwrap() < 215.0 && u.peak_tps.unwrap() > 190.0,
            "{u:?}"
        );
        let line = curve(50.0, 0.0, 0.0, &[1.0, 2.0, 4.0, 8.0]);
        let u = Usl::fit(&line).unwrap();
        assert_eq!((u.sigma, u.kappa, u.peak_tps), (0.0, 0.0, None));
        assert!((u.lambda - 50.0).abs() < 1e-6);
        // A hot row measured here: linear up to its lock's ceiling, then flat.
        let hot = [
            (1.0, 26.0),
            (2.0, 50.0),
            (5.0, 120.0),
            (10.0, 200.0),
            (20.0, 208.0),
        ];
        let u = Usl::fit(&hot).unwrap();
        assert!(u.r2 > 0.9, "{u:?}");
        assert!((190.0..260.0).contains(&u.peak_tps.unwrap()), "{u:?}");
        // Three steps say nothing about three parameters.
        assert_eq!(Usl::fit(&line[..3]), None);
    }
}
