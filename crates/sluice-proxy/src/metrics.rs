//! Counters and latency histograms of the data path, recorded per worker and added up
//! only when read (a scrape of `/metrics`, the admin API).
//!
//! Each counted thing (a server, a route, a listener) has one shard per worker slot,
//! each on cache lines of its own, so a worker's increments never bounce a line between
//! cores; a worker finds its slot in a thread-local set when it starts. Increments are
//! atomic adds on that slot: exact even if two threads share a slot (more threads than
//! slots), uncontended otherwise. A reader sums the slots. Counters live in the state
//! that survives reloads (a server's `ServerState`, a route's stats carried over by
//! host and path, a listener's by address), so they never go backwards.
//!
//! This module must never take a lock, allocate or format on the request path.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Worker slots per counted thing. More workers than slots share slots (still exact).
pub const SLOTS: usize = 16;

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// Makes this thread (a worker) record into slot `index` (modulo [`SLOTS`]).
pub fn set_worker(index: usize) {
    SLOT.with(|s| s.set(index % SLOTS));
}

fn slot() -> usize {
    SLOT.with(|s| s.get())
}

/// A value of its own cache lines (two: adjacent-line prefetch pairs them).
#[derive(Default)]
#[repr(align(128))]
struct Padded<T>(T);

/// One `T` per worker slot.
pub struct Sharded<T> {
    slots: Box<[Padded<T>]>,
}

impl<T: Default> Default for Sharded<T> {
    fn default() -> Self {
        Sharded {
            slots: (0..SLOTS).map(|_| Padded(T::default())).collect(),
        }
    }
}

impl<T> Sharded<T> {
    /// This thread's slot.
    pub fn local(&self) -> &T {
        &self.slots[slot()].0
    }

    pub fn all(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().map(|p| &p.0)
    }
}

#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// For a gauge kept per slot: only the slot's own worker writes it.
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
}

/// Idle pooled connections to one server address: each worker's count in its slot.
pub type PoolGauge = Sharded<Counter>;

/// Upper bounds of the latency buckets, seconds (Prometheus' defaults, widened at the
/// low end: a proxied request on a LAN takes well under a millisecond).
pub const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const BUCKETS_NS: [u64; 14] = {
    let mut out = [0u64; 14];
    let mut i = 0;
    while i < 14 {
        out[i] = (BUCKETS[i] * 1e9) as u64;
        i += 1;
    }
    out
};

/// One slot of a latency histogram: a count per bucket (the last is above 10 s) and
/// the sum.
#[derive(Default)]
pub struct Histogram {
    buckets: [Counter; 15],
    sum_ns: Counter,
}

impl Histogram {
    /// Its counts, as a total of one slot.
    pub fn total(&self) -> HistogramTotal {
        let mut total = HistogramTotal::default();
        total.add(self);
        total
    }

    pub fn observe(&self, d: Duration) {
        let ns = d.as_nanos().min(u128::from(u64::MAX)) as u64;
        let i = BUCKETS_NS.iter().position(|b| ns <= *b).unwrap_or(14);
        self.buckets[i].add(1);
        self.sum_ns.add(ns);
    }
}

/// A histogram summed over slots: per-bucket counts (not cumulative), their sum, and
/// the sum of the observations in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HistogramTotal {
    pub buckets: [u64; 15],
    pub sum_seconds: f64,
}

impl HistogramTotal {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    fn add(&mut self, h: &Histogram) {
        for (total, b) in self.buckets.iter_mut().zip(&h.buckets) {
            *total += b.get();
        }
        self.sum_seconds += h.sum_ns.get() as f64 / 1e9;
    }
}

/// Why a server was ejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EjectCause {
    /// Connecting failed or timed out.
    Connect = 0,
    /// No answer within `read_timeout`.
    Timeout = 1,
    /// A status listed in `fail_status`.
    Status = 2,
    /// Closed, reset, or a broken response.
    Error = 3,
}

impl EjectCause {
    pub const ALL: [EjectCause; 4] = [
        EjectCause::Connect,
        EjectCause::Timeout,
        EjectCause::Status,
        EjectCause::Error,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EjectCause::Connect => "connect",
            EjectCause::Timeout => "timeout",
            EjectCause::Status => "status",
            EjectCause::Error => "error",
        }
    }
}

/// One worker slot of a server's counters.
#[derive(Default)]
pub struct ServerSlot {
    /// Attempts on this server by the status they ended with (1xx to 5xx; a failure
    /// without a response counts as the status the client got for it, 502 or 504).
    pub responses: [Counter; 5],
    pub connect: Histogram,
    /// From the attempt's start (connect included) to the whole response head.
    pub first_byte: Histogram,
    /// From the attempt's start to the response's last byte (or the failure).
    pub total: Histogram,
    pub connections_opened: Counter,
    /// Attempts that failed here and went to another server.
    pub retries: Counter,
    /// Retries refused because the upstream's retry budget was empty.
    pub budget_exhausted: Counter,
    pub ejections: [Counter; 4],
    pub tunnels_opened: Counter,
    pub tunnels_closed: Counter,
}

impl ServerSlot {
    pub fn response(&self, status: u16) {
        if let Some(c) = status_class(status).and_then(|i| self.responses.get(i)) {
            c.add(1);
        }
    }
}

/// Index 0 for 1xx ... 4 for 5xx.
fn status_class(status: u16) -> Option<usize> {
    (100..600)
        .contains(&status)
        .then(|| usize::from(status / 100 - 1))
}

/// A server's counters, summed over slots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTotals {
    pub responses: [u64; 5],
    pub connect: HistogramTotal,
    pub first_byte: HistogramTotal,
    pub total: HistogramTotal,
    pub connections_opened: u64,
    pub retries: u64,
    pub budget_exhausted: u64,
    pub ejections: [u64; 4],
    pub tunnels_open: u64,
}

pub type ServerStats = Sharded<ServerSlot>;

impl ServerStats {
    pub fn totals(&self) -> ServerTotals {
        let mut t = ServerTotals::default();
        let (mut opened, mut closed) = (0, 0);
        for s in self.all() {
            add_each(&mut t.responses, &s.responses);
            t.connect.add(&s.connect);
            t.first_byte.add(&s.first_byte);
            t.total.add(&s.total);
            t.connections_opened += s.connections_opened.get();
            t.retries += s.retries.get();
            t.budget_exhausted += s.budget_exhausted.get();
            add_each(&mut t.ejections, &s.ejections);
            opened += s.tunnels_opened.get();
            closed += s.tunnels_closed.get();
        }
        t.tunnels_open = opened.saturating_sub(closed);
        t
    }
}

fn add_each(totals: &mut [u64], counters: &[Counter]) {
    for (t, c) in totals.iter_mut().zip(counters) {
        *t += c.get();
    }
}

/// The statuses a listener counts refusals by (requests answered by sluice itself).
pub const REJECTS: [u16; 11] = [400, 401, 403, 404, 405, 408, 413, 429, 431, 501, 503];

/// One worker slot of a listener's counters.
#[derive(Default)]
pub struct ListenerSlot {
    pub accepted: Counter,
    pub closed: Counter,
    pub requests: Counter,
    /// TLS handshakes that failed or timed out (those connections never count as accepted).
    pub tls_failed: Counter,
    /// Per status of [`REJECTS`], requests sluice answered itself; other statuses of
    /// its own count in the last.
    pub rejects: [Counter; 12],
}

impl ListenerSlot {
    pub fn reject(&self, status: u16) {
        let i = REJECTS
            .iter()
            .position(|s| *s == status)
            .unwrap_or(REJECTS.len());
        self.rejects[i].add(1);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerTotals {
    pub accepted: u64,
    pub open: u64,
    pub requests: u64,
    pub tls_failed: u64,
    /// Per status of [`REJECTS`], then other statuses.
    pub rejects: [u64; 12],
}

pub type ListenerStats = Sharded<ListenerSlot>;

impl ListenerStats {
    pub fn totals(&self) -> ListenerTotals {
        let mut t = ListenerTotals::default();
        let mut closed = 0;
        for s in self.all() {
            t.accepted += s.accepted.get();
            closed += s.closed.get();
            t.requests += s.requests.get();
            t.tls_failed += s.tls_failed.get();
            add_each(&mut t.rejects, &s.rejects);
        }
        t.open = t.accepted.saturating_sub(closed);
        t
    }
}

/// One worker slot of a route's counters: requests by the status the client got, and
/// those its guards refused, by [`Refused`].
#[derive(Default)]
pub struct RouteSlot {
    pub responses: [Counter; 5],
    pub refused: [Counter; 2],
}

/// Why a route's guard refused a request, as counted: an index of
/// [`RouteSlot::refused`] and its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its address is denied (403).
    Address = 0,
    /// No valid user and password (401).
    Credentials = 1,
}

impl Refused {
    pub const ALL: [Refused; 2] = [Refused::Address, Refused::Credentials];

    pub fn label(self) -> &'static str {
        match self {
            Refused::Address => "address",
            Refused::Credentials => "credentials",
        }
    }

    /// The status the client gets: `403` for its address, `401` (with the realm) for
    /// its credentials.
    pub fn status(self) -> u16 {
        match self {
            Refused::Address => 403,
            Refused::Credentials => 401,
        }
    }
}

pub type RouteStats = Sharded<RouteSlot>;

impl RouteStats {
    pub fn response(&self, status: u16) {
        if let Some(c) = status_class(status).and_then(|i| self.local().responses.get(i)) {
            c.add(1);
        }
    }

    pub fn refuse(&self, why: Refused) {
        self.local().refused[why as usize].add(1);
    }

    /// Requests its guards refused, by [`Refused::ALL`].
    pub fn refused(&self) -> [u64; 2] {
        let mut t = [0; 2];
        for s in self.all() {
            add_each(&mut t, &s.refused);
        }
        t
    }

    /// Requests by status class, 1xx to 5xx.
    pub fn totals(&self) -> [u64; 5] {
        let mut t = [0; 5];
        for s in self.all() {
            add_each(&mut t, &s.responses);
        }
        t
    }
}

/// What the proxy counts beside its servers and routes: its listeners (by bound
/// address), configuration generations and reloads.
pub struct ProxyStats {
    listeners: Mutex<Vec<(SocketAddr, Arc<ListenerStats>)>>,
    pools: Mutex<Vec<(SocketAddr, Arc<PoolGauge>)>>,
    /// The configuration generation: 1 at start, one more per applied reload.
    pub generation: Counter,
    pub reloads: Counter,
    pub reload_failures: Counter,
    /// When the last reload (applied or refused) happened, Unix ms; 0 if none.
    last_reload_unix_ms: AtomicU64,
    pub started: SystemTime,
    /// Server names followed in DNS, by upstream and name as written.
    dns: Mutex<Vec<(String, String, Arc<DnsName>)>>,
}

/// A server name followed in DNS (an upstream's `dns` entry), as the `sluice` binary,
/// which looks names up, reports its lookups. This crate never resolves.
#[derive(Default)]
pub struct DnsName {
    pub lookups: Counter,
    /// Lookups the resolver did not answer (the servers found before were kept).
    pub failures: Counter,
    /// Servers the name gives now.
    pub servers: AtomicU64,
}

impl Default for ProxyStats {
    fn default() -> Self {
        let stats = ProxyStats {
            listeners: Mutex::default(),
            pools: Mutex::default(),
            generation: Counter::default(),
            reloads: Counter::default(),
            reload_failures: Counter::default(),
            last_reload_unix_ms: AtomicU64::new(0),
            started: SystemTime::now(),
            dns: Mutex::default(),
        };
        stats.generation.add(1);
        stats
    }
}

impl ProxyStats {
    /// The counters of the listener bound to `addr` (created on first use; a worker
    /// asks once per listener, never per connection).
    pub fn listener(&self, addr: SocketAddr) -> Arc<ListenerStats> {
        let mut all = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, stats)) = all.iter().find(|(a, _)| *a == addr) {
            return stats.clone();
        }
        let stats = Arc::new(ListenerStats::default());
        all.push((addr, stats.clone()));
        stats
    }

    /// The idle-connection gauge of the pools to `addr` (a worker asks when it first
    /// pools a connection there, never per request).
    pub fn pool(&self, addr: SocketAddr) -> Arc<PoolGauge> {
        let mut all = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, gauge)) = all.iter().find(|(a, _)| *a == addr) {
            return gauge.clone();
        }
        let gauge = Arc::new(PoolGauge::default());
        all.push((addr, gauge.clone()));
        gauge
    }

    /// Idle pooled connections to `addr`, all workers together.
    pub fn idle(&self, addr: SocketAddr) -> u64 {
        let all = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        all.iter()
            .find(|(a, _)| *a == addr)
            .map_or(0, |(_, g)| g.all().map(Counter::get).sum())
    }

    /// Every listener's counters, by bound address.
    pub fn listeners(&self) -> Vec<(SocketAddr, Arc<ListenerStats>)> {
        self.listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Counts a reload: applied (the generation moves on) or refused.
    pub fn reloaded(&self, applied: bool) {
        if applied {
            self.reloads.add(1);
            self.generation.add(1);
        } else {
            self.reload_failures.add(1);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        self.last_reload_unix_ms
            .store(now.as_millis() as u64, Ordering::Relaxed);
    }

    /// When the last reload (applied or refused) happened, Unix ms; 0 if none.
    pub fn last_reload_unix_ms(&self) -> u64 {
        self.last_reload_unix_ms.load(Ordering::Relaxed)
    }

    /// The counters of the name `name` of `upstream` (made on first use).
    pub fn dns_name(&self, upstream: &str, name: &str) -> Arc<DnsName> {
        let mut all = self.dns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, found)) = all.iter().find(|(u, n, _)| u == upstream && n == name) {
            return found.clone();
        }
        let made = Arc::new(DnsName::default());
        all.push((upstream.to_string(), name.to_string(), made.clone()));
        made
    }

    /// Every name followed in DNS: upstream, name, counters.
    pub fn dns_names(&self) -> Vec<(String, String, Arc<DnsName>)> {
        self.dns.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_add_up_whatever_thread_records() {
        let stats = ServerStats::default();
        std::thread::scope(|s| {
            for worker in 0..(SLOTS + 3) {
                let stats = &stats;
                s.spawn(move || {
                    set_worker(worker);
                    for _ in 0..1000 {
                        stats.local().response(200);
                        stats.local().total.observe(Duration::from_micros(700));
                    }
                    stats.local().response(503);
                });
            }
        });
        let t = stats.totals();
        let threads = (SLOTS + 3) as u64;
        assert_eq!(t.responses, [0, 1000 * threads, 0, 0, threads]);
        assert_eq!(t.total.count(), 1000 * threads);
        // 0.7 ms falls in the (0.5 ms, 1 ms] bucket.
        assert_eq!(t.total.buckets[1], 1000 * threads);
        assert!((t.total.sum_seconds - 0.0007 * 1000.0 * threads as f64).abs() < 1e-6);
    }

    #[test]
    fn bucket_edges_are_inclusive_and_the_last_is_unbounded() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_secs(10));
        h.observe(Duration::from_secs(11));
        let mut t = HistogramTotal::default();
        t.add(&h);
        assert_eq!((t.buckets[0], t.buckets[13], t.buckets[14]), (1, 1, 1));
        let l = ListenerStats::default();
        l.local().reject(431);
        l.local().reject(418);
        let lt = l.totals();
        assert_eq!((lt.rejects[8], lt.rejects[11]), (1, 1));
        assert_eq!(status_class(99), None);
    }
}
