//! Properties of the consistent-hashing algorithms over many keys: balance, minimal
//! disruption, the bounded-load cap, weights; and golden vectors that pin the mapping.

use sluice_balance::{default_table_size, Candidate, ConsistentHash, Server};

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

#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    Ketama,
    Maglev,
}

fn build(method: Method, servers: &[Server<'_>], bound: Option<f64>) -> ConsistentHash {
    match method {
        Method::Ketama => ConsistentHash::ketama(servers, bound),
        Method::Maglev => ConsistentHash::maglev(servers, default_table_size(servers.len()), bound),
    }
}

/// The server of each key, with nothing in flight anywhere.
fn assign(h: &mut ConsistentHash, n: usize, keys: usize) -> Vec<usize> {
    (0..keys)
        .map(|k| {
            h.pick(n, |_| Candidate::idle(1), format!("key-{k}").as_bytes())
                .unwrap()
        })
        .collect()
}

fn max_over_mean(assignment: &[usize], n: usize) -> f64 {
    let mut counts = vec![0usize; n];
    assignment.iter().for_each(|s| counts[*s] += 1);
    *counts.iter().max().unwrap() as f64 / (assignment.len() as f64 / n as f64)
}

#[test]
fn balance_over_a_million_keys() {
    // Limits a little above what these algorithms reach (sluice hash-report prints the
    // measured values): ketama's 160 points per server leave a few percent of imbalance,
    // more with many servers; Maglev's table is near perfect.
    for (method, n, limit) in [
        (Method::Ketama, 3, 1.15),
        (Method::Ketama, 10, 1.15),
        (Method::Ketama, 100, 1.40),
        (Method::Maglev, 3, 1.01),
        (Method::Maglev, 10, 1.01),
        (Method::Maglev, 100, 1.04),
    ] {
        let names = names(n);
        let a = assign(&mut build(method, &servers(&names), None), n, 1_000_000);
        let ratio = max_over_mean(&a, n);
        assert!(
            ratio < limit,
            "{method:?} with {n} servers: max/mean {ratio:.3}"
        );
    }
}

#[test]
fn removing_a_server_moves_only_what_it_must() {
    for n in [3, 10, 100] {
        let all = names(n);
        let removed = n / 2;
        let kept: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != removed)
            .map(|(_, s)| s.clone())
            .collect();
        let index_in_all = |i: usize| if i >= removed { i + 1 } else { i };
        for method in [Method::Ketama, Method::Maglev] {
            let before = assign(&mut build(method, &servers(&all), None), n, 100_000);
            let after: Vec<usize> =
                assign(&mut build(method, &servers(&kept), None), n - 1, 100_000)
                    .into_iter()
                    .map(index_in_all)
                    .collect();
            let moved: Vec<usize> = (0..before.len())
                .filter(|k| before[*k] != after[*k])
                .collect();
            let from_removed = moved.iter().filter(|k| before[**k] == removed).count();
            let owned = before.iter().filter(|s| **s == removed).count();
            assert_eq!(
                from_removed, owned,
                "{method:?}: every key of the removed server moves"
            );
            let collateral = (moved.len() - from_removed) as f64 / before.len() as f64;
            match method {
                Method::Ketama => {
                    assert_eq!(collateral, 0.0, "ketama moved keys of servers that stayed")
                }
                // Maglev trades a little disruption for balance; the paper measures it small.
                Method::Maglev => assert!(
                    collateral < 0.03,
                    "maglev with {n} servers moved {collateral:.4} of other keys"
                ),
            }
        }
    }
}

#[test]
fn adding_a_server_moves_keys_only_to_it() {
    for n in [3, 10, 100] {
        let all = names(n + 1);
        let before_names = all[..n].to_vec();
        for method in [Method::Ketama, Method::Maglev] {
            let before = assign(
                &mut build(method, &servers(&before_names), None),
                n,
                100_000,
            );
            let after = assign(&mut build(method, &servers(&all), None), n + 1, 100_000);
            let moved: Vec<usize> = (0..before.len())
                .filter(|k| before[*k] != after[*k])
                .collect();
            let to_new = moved.iter().filter(|k| after[**k] == n).count();
            let share = moved.len() as f64 / before.len() as f64;
            let ideal = 1.0 / (n + 1) as f64;
            if method == Method::Ketama {
                assert!(share < 1.2 * ideal, "ketama {n}+1: moved {share:.4}");
                assert_eq!(to_new, moved.len(), "ketama moved keys between old servers");
            } else {
                // Maglev reshuffles some slots between old servers too (measured: 1.5% moved
                // for an ideal 1.0% at 100 servers; sluice hash-report prints it).
                assert!(share < 1.7 * ideal, "maglev {n}+1: moved {share:.4}");
                assert!(
                    to_new as f64 >= 0.6 * moved.len() as f64,
                    "maglev {n}+1: {to_new} of {} moved to the new server",
                    moved.len()
                );
            }
        }
    }
}

#[test]
fn the_load_bound_is_never_exceeded() {
    for method in [Method::Ketama, Method::Maglev] {
        for (n, c) in [(3usize, 1.25f64), (10, 1.25), (10, 1.1), (100, 1.5)] {
            let names = names(n);
            let mut h = build(method, &servers(&names), Some(c));
            let mut active = vec![0u32; n];
            let mut state = 0x5eed_u64;
            for k in 0..20_000u32 {
                // One hot key in four: without the bound it would pile onto one server.
                let key = if k % 4 == 0 {
                    "hot".to_string()
                } else {
                    format!("key-{k}")
                };
                let s = h
                    .pick(
                        n,
                        |i| Candidate {
                            weight: 1,
                            active: active[i],
                            available: true,
                        },
                        key.as_bytes(),
                    )
                    .unwrap();
                active[s] += 1;
                let total: u32 = active.iter().sum();
                let cap = (c * f64::from(total) / n as f64).ceil() as u32;
                assert!(
                    active[s] <= cap,
                    "{method:?} n={n} c={c}: server at {} > cap {cap}",
                    active[s]
                );
                // Let some requests finish, so the load moves around.
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                let done = (state >> 33) as usize % n;
                if active[done] > 0 && !state.is_multiple_of(3) {
                    active[done] -= 1;
                }
            }
        }
    }
}

#[test]
fn weights_are_honoured() {
    let names = names(3);
    let weighted: Vec<Server> = names
        .iter()
        .zip([1, 2, 3])
        .map(|(n, w)| Server { name: n, weight: w })
        .collect();
    for method in [Method::Ketama, Method::Maglev] {
        let mut h = build(method, &weighted, None);
        let a = assign(&mut h, 3, 600_000);
        for (s, w) in [(0usize, 1.0f64), (1, 2.0), (2, 3.0)] {
            let share = a.iter().filter(|x| **x == s).count() as f64 / a.len() as f64;
            assert!(
                (share - w / 6.0).abs() < 0.03,
                "{method:?}: server {s} got {share:.3}, weight says {:.3}",
                w / 6.0
            );
        }
    }
}

#[test]
fn unavailable_servers_are_skipped_and_empty_keys_spread() {
    let names = names(3);
    for method in [Method::Ketama, Method::Maglev] {
        let mut h = build(method, &servers(&names), None);
        let before = assign(&mut h, 3, 10_000);
        for (k, owner) in before.iter().enumerate() {
            let down = |i: usize| Candidate {
                weight: 1,
                active: 0,
                available: i != 1,
            };
            let s = h.pick(3, down, format!("key-{k}").as_bytes()).unwrap();
            assert_ne!(s, 1);
            if *owner != 1 {
                assert_eq!(s, *owner, "a key whose server is up must not move");
            }
        }
        let keyless: Vec<usize> = (0..6)
            .map(|_| h.pick(3, |_| Candidate::idle(1), b"").unwrap())
            .collect();
        assert_eq!(keyless, vec![0, 1, 2, 0, 1, 2]);
    }
}

/// Golden vectors: 1,000 keys and their servers for a fixed list. A change that remaps
/// them fails here; regenerate (SLUICE_BLESS=1) only for a deliberate, announced change.
#[test]
fn golden_vectors() {
    let names = [
        "10.0.0.1:8080",
        "10.0.0.2:8080",
        "10.0.0.3:8080",
        "10.0.0.4:8080",
    ];
    let list: Vec<Server> = names
        .iter()
        .zip([1, 1, 2, 1])
        .map(|(n, w)| Server { name: n, weight: w })
        .collect();
    for (method, file) in [
        (Method::Ketama, "ketama.txt"),
        (Method::Maglev, "maglev.txt"),
    ] {
        let mut h = build(method, &list, None);
        let mut text = String::from("# key server (servers: 10.0.0.1:8080 w1, 10.0.0.2:8080 w1, 10.0.0.3:8080 w2, 10.0.0.4:8080 w1)\n");
        for k in 0..1000 {
            let key = format!("room-{k}");
            let s = h
                .pick(4, |i| Candidate::idle(list[i].weight), key.as_bytes())
                .unwrap();
            text.push_str(&format!("{key} {}\n", names[s]));
        }
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(file);
        if std::env::var_os("SLUICE_BLESS").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            expected == text,
            "{file}: the mapping changed (see the test's doc comment)"
        );
    }
}
