//! Running a plan's steps: for each, one thread per worker with its own event loop, a
//! start shared by all of them, and the workers' records merged at the end.

use crate::delivery::{Deliveries, DeliverySummary};
use crate::open_model::run_rate;
use crate::plan::{Length, Load, Plan, Step};
use crate::progress::{Progress, Snapshot};
use crate::scenario::Scenario;
use crate::stats::Recorder;
use crate::virtual_user::{run_arrivals, run_scenario};
use crate::worker::{run_users, Worker};
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// How long after its threads are started a step begins, so that all begin together.
const START_DELAY: Duration = Duration::from_millis(20);

/// One step as it ran.
#[derive(Debug, Clone)]
pub struct StepRun {
    pub step: Step,
    /// Wall-clock start, for reports.
    pub started: SystemTime,
    /// From the start until the last worker finished.
    pub elapsed: Duration,
    pub recorder: Recorder,
    /// STOMP message deliveries, for a scenario that speaks STOMP.
    pub delivery: Option<DeliverySummary>,
    /// The generator's resident memory (KiB) before the step and at its peak during
    /// it (sampled every 100 ms); none for merged results.
    pub memory: Option<(u64, u64)>,
    /// The run was interrupted during this step: it holds what was measured until then.
    pub interrupted: bool,
}

/// Runs `step` of `plan`; `observe` is called about once a second with the progress so
/// far and the time since the start. `stop` turning true interrupts it.
pub fn run_step(
    plan: &Arc<Plan>,
    step: Step,
    stop: &watch::Receiver<bool>,
    observe: &(dyn Fn(&Snapshot, Duration) + Sync),
) -> io::Result<StepRun> {
    let threads = plan.threads();
    let progress = Arc::new(Progress::default());
    progress.reset(threads);
    let start = std::time::Instant::now() + START_DELAY;
    let started = SystemTime::now() + START_DELAY;
    let done = AtomicBool::new(false);
    let rss_before = rss_kib();
    let deliveries = Arc::new(Deliveries::default());
    let (results, elapsed, rss_peak) = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch_progress(&progress, &done, start, observe));
        let workers: Vec<_> = (0..threads)
            .map(|index| {
                let shared = Shared {
                    plan: plan.clone(),
                    stop: stop.clone(),
                    progress: progress.clone(),
                    deliveries: deliveries.clone(),
                };
                s.spawn(move || work(shared, step, index, threads, start))
            })
            .collect();
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        // Before waiting for the watcher, which sleeps in 100 ms ticks.
        let elapsed = start.elapsed();
        done.store(true, Ordering::Relaxed);
        (results, elapsed, watcher.join().unwrap_or(0))
    });
    let mut recorder = Recorder::default();
    for result in results {
        let part = result.map_err(|_| io::Error::other("a load worker panicked"))??;
        recorder.merge(&part);
    }
    Ok(StepRun {
        step,
        started,
        elapsed,
        recorder,
        delivery: plan.uses_stomp().then(|| deliveries.finish()),
        memory: Some((rss_before, rss_peak.max(rss_before))),
        interrupted: *stop.borrow(),
    })
}

/// This process's resident memory, KiB (0 where /proc cannot tell).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn watch_progress(
    progress: &Progress,
    done: &AtomicBool,
    start: std::time::Instant,
    observe: &(dyn Fn(&Snapshot, Duration) + Sync),
) -> u64 {
    let tick = Duration::from_millis(100);
    let mut next = start + Duration::from_secs(1);
    let mut peak = 0;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        peak = peak.max(rss_kib());
        if std::time::Instant::now() >= next {
            observe(&progress.snapshot(), start.elapsed());
            next += Duration::from_secs(1);
        }
    }
    peak
}

/// What every worker thread of a step shares.
struct Shared {
    plan: Arc<Plan>,
    stop: watch::Receiver<bool>,
    progress: Arc<Progress>,
    deliveries: Arc<Deliveries>,
}

/// One worker thread's share of the step.
fn work(
    shared: Shared,
    step: Step,
    index: usize,
    threads: usize,
    start: std::time::Instant,
) -> io::Result<Recorder> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let progress = shared.progress.clone();
    let recorder = local.block_on(&runtime, async move {
        let start = tokio::time::Instant::from_std(start);
        let scenario = shared.plan.scenario.clone();
        let w = Rc::new(Worker::new(
            shared.plan,
            index,
            threads,
            start,
            shared.stop,
            progress.clone(),
            shared.deliveries,
        ));
        let publisher = tokio::task::spawn_local(publish(w.clone(), progress.clone()));
        let beside = w.plan.beside.clone();
        let loads = std::iter::once((scenario, step.load))
            .chain(beside.into_iter().map(|b| (Some(b.scenario), b.load)))
            .map(|(scenario, load)| run_load(w.clone(), scenario, load, step.length));
        futures_util::future::join_all(loads).await;
        publisher.abort();
        progress.publish(index, &w.recorder.borrow().total.corrected.histogram);
        w.finish()
    });
    Ok(recorder)
}

/// One load of a step on this thread: users or arrivals, of a scenario or of the
/// plan's requests.
async fn run_load(w: Rc<Worker>, scenario: Option<Arc<Scenario>>, load: Load, length: Length) {
    match (load, length, scenario) {
        (Load::Users { users, ramp, .. }, length, Some(scenario)) => {
            run_scenario(w, scenario, users, ramp, length).await
        }
        (Load::Users { users, ramp, think }, length, None) => {
            run_users(w, users, ramp, think, length).await
        }
        (Load::Rate { rate, .. }, Length::Duration(d), Some(scenario)) => {
            run_arrivals(w, scenario, rate, d).await
        }
        (
            Load::Rate {
                rate,
                max_in_flight,
            },
            Length::Duration(d),
            None,
        ) => run_rate(w, rate, max_in_flight, d).await,
        (Load::Rate { .. }, Length::Iterations(_), _) => {}
    }
}

/// Publishes this worker's latency histogram twice a second, for the progress line.
async fn publish(w: Rc<Worker>, progress: Arc<Progress>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        progress.publish(w.index, &w.recorder.borrow().total.corrected.histogram);
    }
}
