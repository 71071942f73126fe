//! A server's workers it does not publish (gunicorn's or uWSGI's sync workers, PHP-FPM's
//! children, Puma's threads, a pool of its own): all busy, they show in its listen
//! queue. A server with a worker free accepts a connection at once; one whose workers
//! are all busy leaves the next connections waiting unaccepted in the kernel's accept
//! queue, which the lab reads every second for every local process. That queue full in
//! nearly every second while the process's CPU has room is its worker cap, whatever
//! runtime it is; a tier listed by pid that the app calls (a service it depends on) is
//! judged the same way, and `choice` ranks such a dependency deeper than the app.
//!
//! A server that accepts every connection and queues requests inside (a thread pool
//! behind an event loop: Tomcat, the simulated app) shows nothing here: its pool's own
//! figures say it, where it publishes them.

use super::thresholds::{CPU_SATURATED, WORKERS_QUEUED_SHARE};
use super::{round2, tier_word, Delta, Kind, Resource};

/// The workers of `d`'s process, when connections waited in its listen queue under load.
pub(super) fn resource(d: &Delta) -> Option<Resource> {
    // A connection cap the process publishes (the simulated app's) says this itself.
    if !d.info.local || d.gauge("max_conns").is_some() {
        return None;
    }
    let queue = d.accept_queues();
    let waited = queue.iter().filter(|q| **q > 0).count();
    if waited == 0 {
        return None;
    }
    let share = waited as f64 / queue.len() as f64;
    let mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    let most = queue.iter().copied().max().unwrap_or(0);
    let cpu = d.cpu_util();
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: Kind::Workers,
        label: format!(
            "{}'s worker cap (a count it does not publish)",
            tier_word(&d.info.tier)
        ),
        utilisation: round2(share),
        saturated: share >= WORKERS_QUEUED_SHARE && cpu < CPU_SATURATED,
        evidence: vec![format!(
            "{}'s listen queue held {mean:.0} connections waiting to be accepted on average \
             (up to {most}) in {:.0}% of the seconds sampled, while it used {:.0}% of its CPU \
             budget: every worker busy, and not for want of CPU",
            d.info.name,
            share * 100.0,
            cpu * 100.0
        )],
        enlarge: None,
        machine: false,
    })
}
