//! A load test as data: its steps, what each sends, and the limits it runs under.

use crate::scenario::Scenario;
use crate::target::RequestSpec;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// A closed model (JMeter thread groups, nGrinder vusers): `users` each send a
    /// request, wait for its response, pause `think`, and go again. They start evenly
    /// over `ramp`.
    Users {
        users: usize,
        ramp: Duration,
        think: Duration,
    },
    /// An open model (wrk2, k6 arrival-rate): `rate` requests per second at fixed
    /// intended times, whatever the responses do, with at most `max_in_flight` waiting
    /// for an answer; a request that cannot go when meant goes late and its latency
    /// still counts from when it was meant to go.
    Rate { rate: f64, max_in_flight: usize },
}

/// How long a step lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Duration(Duration),
    /// Requests per user (a closed model only; JMeter's loop count).
    Iterations(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub load: Load,
    pub length: Length,
}

impl Plan {
    /// True when a scenario of the plan speaks STOMP (the report then has a delivery
    /// section).
    pub fn uses_stomp(&self) -> bool {
        let beside = self.beside.iter().map(|b| &b.scenario);
        self.scenario.iter().chain(beside).any(|s| s.uses_stomp())
    }
}

/// A scenario run beside the plan's own, at one load through every step.
#[derive(Debug, Clone)]
pub struct Beside {
    pub scenario: Arc<Scenario>,
    pub load: Load,
}

/// A request and how often it is chosen among the plan's requests.
#[derive(Debug, Clone)]
pub struct Weighted {
    pub request: RequestSpec,
    pub weight: u32,
}

/// A whole load test.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub requests: Vec<Weighted>,
    /// One connection per user (or in-flight slot), reused; false opens one per request.
    pub keep_alive: bool,
    /// A request that takes longer fails as `timeout`.
    pub timeout: Duration,
    /// Worker threads (each with its own event loop); 0 = one per core.
    pub threads: usize,
    /// The open model wakes at most once per this interval and sends every request
    /// that is due: finer is more punctual and costs more CPU (a wake-up per request).
    pub pace: Duration,
    /// Source addresses to spread connections over (ephemeral ports run out at about
    /// 28,000 connections per source address and target).
    pub source_addrs: Vec<IpAddr>,
    /// What each user does, when it is a scenario rather than `requests` (then empty).
    pub scenario: Option<Arc<Scenario>>,
    /// Scenarios run beside it, each with its own load through every step (k6's
    /// scenarios: closed browsers beside an open-rate API).
    pub beside: Vec<Beside>,
    /// The statuses that count as success (`--ok-status`); the others are errors.
    pub ok_status: OkStatus,
    /// TLS for `https://` targets (`--insecure`, `--cacert`, `--tls-resume`, ...), one
    /// config for the whole run; none: the system's roots, resumption on.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// `--h2`: HTTP/2, with at most this many streams at once on a connection (`--streams`);
    /// none: HTTP/1.1.
    pub h2_streams: Option<usize>,
    /// `--follow`: send the request each redirect asks for, each hop a sample.
    pub follow: bool,
    /// `--resolve`: names aimed at addresses, for the targets redirects lead to too.
    pub resolve: Vec<crate::target::Resolve>,
}

/// The statuses that count as success: ranges such as `200-399,404`. By default
/// 200-399, as k6's `http_req_failed` and JMeter have it: a transport error or a status
/// of 400 or more is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OkStatus(Vec<(u16, u16)>);

impl Default for OkStatus {
    fn default() -> Self {
        OkStatus(vec![(200, 399)])
    }
}

impl OkStatus {
    /// Parses `200-399,404`: codes and inclusive ranges of codes from 100 to 599.
    pub fn parse(text: &str) -> Result<OkStatus, String> {
        let code = |c: &str| match c.trim().parse::<u16>() {
            Ok(n) if (100..=599).contains(&n) => Ok(n),
            _ => Err(format!(
                "`{c}` is not a status code (100 to 599) in `{text}`; write e.g. 200-399,404"
            )),
        };
        let ranges = text
            .split(',')
            .map(|part| match part.split_once('-') {
                Some((a, b)) => Ok((code(a)?, code(b)?)),
                None => code(part).map(|n| (n, n)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some((a, b)) = ranges.iter().find(|(a, b)| a > b) {
            return Err(format!("`{a}-{b}` is an empty range in `{text}`"));
        }
        Ok(OkStatus(ranges))
    }

    pub fn passes(&self, status: u16) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&status))
    }
}

impl std::fmt::Display for OkStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl Plan {
    /// Whether any request (or the scenario's target) is `https://`.
    pub fn uses_tls(&self) -> bool {
        let scenario = self
            .scenario
            .as_ref()
            .is_some_and(|s| s.target.tls.is_some());
        scenario || self.requests.iter().any(|w| w.request.target.tls.is_some())
    }

    /// The most connections a step of this plan can hold open at once.
    pub fn max_connections(&self) -> usize {
        let per_user = match &self.scenario {
            Some(s) if s.uses_websocket() => 2,
            _ => 1,
        };
        self.steps
            .iter()
            .map(|s| match s.load {
                Load::Users { users, .. } => users * per_user,
                Load::Rate { max_in_flight, .. } => max_in_flight,
            })
            .max()
            .unwrap_or(0)
    }

    /// Where every connection goes.
    fn addrs(&self) -> Vec<std::net::SocketAddr> {
        match &self.scenario {
            Some(s) => vec![s.target.addr],
            None => self
                .requests
                .iter()
                .map(|w| w.request.target.addr)
                .collect(),
        }
    }

    /// For a loopback target and more connections than half the ephemeral ports
    /// (`ports`: how many the system hands out per source address), spreads them over
    /// 127.0.0.1, 127.0.0.2, ... (up to 64) unless source addresses were given; says
    /// what it did.
    pub fn spread_sources(&mut self, ports: usize) -> Option<String> {
        let loopback = self.addrs().iter().all(|a| match a.ip() {
            IpAddr::V4(ip) => ip.is_loopback(),
            IpAddr::V6(_) => false,
        });
        let conns = self.max_connections();
        let per_source = (ports / 2).max(1);
        if !self.source_addrs.is_empty() || !loopback || conns <= per_source {
            return None;
        }
        let n = conns.div_ceil(per_source).min(64) as u8;
        self.source_addrs = (1..=n)
            .map(|i| IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, i)))
            .collect();
        Some(format!(
            "{conns} connections to a loopback target: spread over source addresses 127.0.0.1 to 127.0.0.{n} ({ports} ephemeral ports each; --source-addrs to choose)"
        ))
    }

    pub fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The `i`-th pick among the requests, by weight (a fixed, spread-out sequence,
    /// so that every step sends the mix the weights say).
    pub fn pick(&self, i: u64) -> &RequestSpec {
        let total: u64 = self.requests.iter().map(|w| u64::from(w.weight)).sum();
        if self.requests.len() == 1 || total == 0 {
            return &self.requests[0].request;
        }
        // Golden-ratio stepping spreads the picks instead of sending them in runs.
        let point = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) % total;
        let mut acc = 0;
        for w in &self.requests {
            acc += u64::from(w.weight);
            if point < acc {
                return &w.request;
            }
        }
        &self.requests[0].request
    }
}

/// How many ephemeral ports the system hands out per source address (Linux's
/// `ip_local_port_range`; its default where that cannot be read).
pub fn ephemeral_ports() -> usize {
    let range =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut bounds = range
        .split_whitespace()
        .filter_map(|n| n.parse::<usize>().ok());
    match (bounds.next(), bounds.next()) {
        (Some(low), Some(high)) if high >= low => high - low + 1,
        _ => 28_232,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;

    fn plan(url: &str, users: usize) -> Plan {
        let target = Target::parse(url).unwrap();
        Plan {
            steps: vec![Step {
                load: Load::Users {
                    users,
                    ramp: Duration::ZERO,
                    think: Duration::ZERO,
                },
                length: Length::Iterations(1),
            }],
            requests: vec![Weighted {
                request: RequestSpec::new("GET", target, &[], vec![]).unwrap(),
                weight: 1,
            }],
            keep_alive: true,
            timeout: Duration::from_secs(1),
            threads: 1,
            pace: Duration::ZERO,
            source_addrs: vec![],
            scenario: None,
            beside: Vec::new(),
            ok_status: Default::default(),
            tls: None,
            h2_streams: None,
            follow: false,
            resolve: Vec::new(),
        }
    }

    #[test]
    fn loopback_connections_beyond_the_ports_spread_over_source_addresses() {
        let mut few = plan("http://127.0.0.1:8080/", 1000);
        assert_eq!(few.spread_sources(28_232), None);
        let mut many = plan("http://127.0.0.1:8080/", 40_000);
        assert!(many.spread_sources(28_232).is_some());
        let expected: Vec<IpAddr> = (1..=3)
            .map(|i| format!("127.0.0.{i}").parse().unwrap())
            .collect();
        assert_eq!(many.source_addrs, expected);
        let mut given = plan("http://127.0.0.1:8080/", 40_000);
        given.source_addrs = vec!["127.0.0.9".parse().unwrap()];
        assert_eq!(given.spread_sources(28_232), None);
        let mut remote = plan("http://[::1]:8080/", 40_000);
        assert_eq!(remote.spread_sources(28_232), None);
        assert!(ephemeral_ports() > 1000);
    }
}
