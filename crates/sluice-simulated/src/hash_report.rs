//! `sluice hash-report`: what the consistent-hashing algorithms do, measured.
//!
//! For ketama and Maglev with 3, 10 and 100 servers: how evenly they share the hash space
//! and a million keys, how many keys move when a server leaves or joins (and whether any
//! key moves between servers that stayed), and what a lookup costs. Then bounded loads
//! under a skewed load with one hot key.

use sluice_balance::{default_table_size, Candidate, ConsistentHash, Server, Table};
use std::fmt::Write;
use std::time::Instant;

/// Server names as an operator would write them.
fn names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("10.0.{}.{}:8080", i / 250, i % 250 + 1))
        .collect()
}

fn servers(names: &[String]) -> Vec<Server<'_>> {
    names
        .iter()
        .map(|n| Server { name: n, weight: 1 })
        .collect()
}

#[derive(Clone, Copy)]
enum Method {
    Ketama,
    Maglev,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Ketama => "ketama",
            Method::Maglev => "maglev",
        }
    }

    fn build(self, servers: &[Server<'_>], bound: Option<f64>) -> ConsistentHash {
        match self {
            Method::Ketama => ConsistentHash::ketama(servers, bound),
            Method::Maglev => {
                ConsistentHash::maglev(servers, default_table_size(servers.len()), bound)
            }
        }
    }
}

/// The report as Markdown. `keys` keys are placed (the published comparisons use 1e6).
pub fn report(keys: usize) -> String {
    let keys: Vec<String> = (0..keys).map(|k| format!("key-{k}")).collect();
    let mut out = String::new();
    let _ = writeln!(out, "## Balance, disruption and lookup cost ({} keys `key-N`, servers `10.0.x.y:8080`, weight 1)\n", keys.len());
    let _ = writeln!(out, "| method | servers | max/mean of hash space | max/mean over keys | keys moved: one removed (ideal) | of them from servers that stayed | keys moved: one added (ideal) | moved to the new server | lookup ns |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for method in [Method::Ketama, Method::Maglev] {
        for n in [3, 10, 100] {
            let row = Row::measure(method, n, &keys);
            let _ = writeln!(out, "{}", row.markdown(method, n));
        }
    }
    out.push('\n');
    out.push_str(&bounded_report());
    out
}

struct Row {
    /// Largest share of the hash space over the mean share: the table's own balance.
    space: f64,
    /// Largest count of keys over the mean: adds the sampling noise of real keys.
    balance: f64,
    removed: f64,
    collateral: f64,
    added: f64,
    to_new: f64,
    lookup_ns: f64,
}

impl Row {
    fn measure(method: Method, n: usize, keys: &[String]) -> Row {
        let all = names(n + 1);
        let base = &all[..n];
        let before = assign(&mut method.build(&servers(base), None), n, keys);
        let removed_index = n / 2;
        let kept: Vec<String> = base
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != removed_index)
            .map(|(_, s)| s.clone())
            .collect();
        let without: Vec<usize> = assign(&mut method.build(&servers(&kept), None), n - 1, keys)
            .into_iter()
            .map(|i| if i >= removed_index { i + 1 } else { i })
            .collect();
        let with_one_more = assign(&mut method.build(&servers(&all), None), n + 1, keys);
        let moved_out = (0..keys.len()).filter(|k| before[*k] != without[*k]);
        let collateral = moved_out
            .clone()
            .filter(|k| before[*k] != removed_index)
            .count();
        let moved_in: Vec<usize> = (0..keys.len())
            .filter(|k| before[*k] != with_one_more[*k])
            .collect();
        let to_new = moved_in.iter().filter(|k| with_one_more[**k] == n).count();
        let total = keys.len() as f64;
        Row {
            space: space_balance(&method.build(&servers(base), None), n),
            balance: max_over_mean(&before, n),
            removed: moved_out.count() as f64 / total,
            collateral: collateral as f64 / total,
            added: moved_in.len() as f64 / total,
            to_new: to_new as f64 / moved_in.len().max(1) as f64,
            lookup_ns: lookup_cost(&mut method.build(&servers(base), None), n, keys),
        }
    }

    fn markdown(&self, method: Method, n: usize) -> String {
        format!(
            "| {} | {n} | {:.4} | {:.3} | {:.2}% ({:.2}%) | {:.2}% | {:.2}% ({:.2}%) | {:.1}% | {:.0} |",
            method.name(),
            self.space,
            self.balance,
            100.0 * self.removed,
            100.0 / n as f64,
            100.0 * self.collateral,
            100.0 * self.added,
            100.0 / (n + 1) as f64,
            100.0 * self.to_new,
            self.lookup_ns
        )
    }
}

fn space_balance(h: &ConsistentHash, n: usize) -> f64 {
    let shares = match h.table() {
        Table::Ketama(ring) => ring.ownership(n),
        Table::Maglev(table) => table.ownership(n),
    };
    shares.iter().cloned().fold(0.0, f64::max) * n as f64
}

fn assign(h: &mut ConsistentHash, n: usize, keys: &[String]) -> Vec<usize> {
    keys.iter()
        .map(|k| h.pick(n, |_| Candidate::idle(1), k.as_bytes()).unwrap_or(0))
        .collect()
}

fn max_over_mean(assignment: &[usize], n: usize) -> f64 {
    let mut counts = vec![0usize; n];
    assignment.iter().for_each(|s| counts[*s] += 1);
    *counts.iter().max().unwrap_or(&0) as f64 / (assignment.len() as f64 / n as f64)
}

/// Mean ns per pick, key hashing included, over the first 200,000 keys (best of 3).
fn lookup_cost(h: &mut ConsistentHash, n: usize, keys: &[String]) -> f64 {
    let sample = &keys[..keys.len().min(200_000)];
    let mut best = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let mut sink = 0usize;
        for k in sample {
            sink = sink.wrapping_add(
                h.pick(
                    n,
                    |_| Candidate::idle(1),
                    std::hint::black_box(k.as_bytes()),
                )
                .unwrap_or(0),
            );
        }
        std::hint::black_box(sink);
        best = best.min(started.elapsed().as_nanos() as f64 / sample.len() as f64);
    }
    best
}

/// Bounded loads under skew: 10 servers, 2,000 requests in flight, one key in five is the
/// same hot key. Reports the most loaded server against the mean, and how many requests
/// left their key's home server (the price: a split room).
fn bounded_report() -> String {
    let mut out = String::from("## Bounded loads under a hot key (10 servers, 2,000 requests in flight, 20% of requests on one key, 200,000 requests)\n\n");
    out.push_str("| method | bound | max/mean in flight (average over the run) | worst moment | requests away from their home server |\n|---|---|---:|---:|---:|\n");
    for method in [Method::Ketama, Method::Maglev] {
        for bound in [None, Some(1.25), Some(1.5)] {
            let s = skewed_run(method, bound);
            let label = bound.map_or("off".to_string(), |c| format!("{c}"));
            let _ = writeln!(
                out,
                "| {} | {label} | {:.2} | {:.2} | {:.1}% |",
                method.name(),
                s.mean_ratio,
                s.worst_ratio,
                100.0 * s.displaced
            );
        }
    }
    out
}

struct Skew {
    mean_ratio: f64,
    worst_ratio: f64,
    displaced: f64,
}

fn skewed_run(method: Method, bound: Option<f64>) -> Skew {
    const SERVERS: usize = 10;
    const IN_FLIGHT: usize = 2_000;
    const REQUESTS: usize = 200_000;
    let names = names(SERVERS);
    let mut bounded = method.build(&servers(&names), bound);
    let mut free = method.build(&servers(&names), None);
    let mut active = [0u32; SERVERS];
    let mut queue = std::collections::VecDeque::with_capacity(IN_FLIGHT);
    let (mut ratio_sum, mut worst, mut displaced) = (0.0, 0.0f64, 0usize);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for r in 0..REQUESTS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = if state.is_multiple_of(5) {
            "hot".to_string()
        } else {
            format!("user-{}", state % 50_000)
        };
        let home = free
            .pick(SERVERS, |_| Candidate::idle(1), key.as_bytes())
            .unwrap_or(0);
        let view = |i: usize| Candidate {
            weight: 1,
            active: active[i],
            available: true,
        };
        let s = bounded.pick(SERVERS, view, key.as_bytes()).unwrap_or(0);
        displaced += usize::from(s != home);
        active[s] += 1;
        queue.push_back(s);
        if queue.len() > IN_FLIGHT {
            let done = queue.pop_front().unwrap_or(0);
            active[done] -= 1;
        }
        if r >= IN_FLIGHT {
            let total: u32 = active.iter().sum();
            let ratio =
                f64::from(*active.iter().max().unwrap_or(&0)) / (f64::from(total) / SERVERS as f64);
            ratio_sum += ratio;
            worst = worst.max(ratio);
        }
    }
    Skew {
        mean_ratio: ratio_sum / (REQUESTS - IN_FLIGHT) as f64,
        worst_ratio: worst,
        displaced: displaced as f64 / REQUESTS as f64,
    }
}
