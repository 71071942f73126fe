//! Every threshold the lab judges by, each once, with why it is where it is. The rules
//! that use them (`resources`, `queue`, `validity`, `findings`, `choice`, `database`,
//! `gc`, `plateau` and `proof`) name these constants; docs/lab.md's "How the lab judges"
//! points here.

/// Defines each threshold as a constant, and [`ALL`] with every one by name.
macro_rules! thresholds {
    ($($(#[doc = $doc:expr])* $name:ident = $value:expr;)*) => {
        $($(#[doc = $doc])* pub const $name: f64 = $value;)*
        /// Every threshold by name: docs/lab.md's table of them is checked against it.
        pub const ALL: &[(&str, f64)] = &[$((stringify!($name), $name)),*];
    };
}

thresholds! {
    // ---- a resource is saturated

    /// A process's CPU over its budget at or above this is saturated. Not 100%: CPU time
    /// is read in 10 ms ticks and a tier at its quota reads a little below it.
    CPU_SATURATED = 0.85;
    /// ...or at or above this while throttled in [`CPU_THROTTLED_PCT`] of its quota
    /// periods: over a short step a tier at its quota can read as 70-80%, and throttling
    /// says the quota is what stopped it.
    CPU_THROTTLED_UTIL = 0.70;
    /// Percent of its quota periods a throttled CPU must be throttled in.
    CPU_THROTTLED_PCT = 50.0;

    /// A pool (worker threads, database connections) busy at least this share of its
    /// thread-milliseconds is at its knee: a request holds it for part of its time in the
    /// app only, so a limiting pool reads below 100%.
    POOL_BUSY = 0.80;
    /// ...with at least this share of the requests it served having waited for it.
    POOL_WAITED = 0.05;

    /// A pool read from an exporter's gauges (Tomcat, HikariCP) is saturated at
    /// [`POOL_BUSY`] on average with requests pending in at least this share of the samples.
    GAUGE_PENDING_SHARE = 0.5;
    /// ...or, without a pending gauge (Tomcat's threads), busy at least this on average.
    GAUGE_BUSY_ALONE = 0.95;

    /// Seconds after a step's start before a gauge's reading counts: HikariCP's gauges
    /// are up to a second stale, and the step's first reading is taken as its users
    /// start, so both can still show the idle between steps. Gauges are read from the
    /// step's inner readings only (`Delta::series`).
    GAUGE_SETTLE_S = 1.0;

    /// A database's locks (or its I/O) are saturated when sessions waited on them in at
    /// least this share of its samples (taken four times a second): one holder at a time
    /// with a queue nearly always behind it, the way a connection cap is held...
    DB_WAIT_SHARE = 0.80;
    /// ...and those waits took at least this share of its sessions' time in statements
    /// (running or waiting): a few short waits beside busy statements are not the limit.
    DB_WAIT_OF_ACTIVE = 0.50;

    /// A connection cap is saturated when it was held in at least this share of the
    /// seconds sampled...
    CAP_HELD_SHARE = 0.80;
    /// ...or was this full on average (a step's tail, while stuck requests run out their
    /// timeout, drains it below the cap), in both cases with connections queued unaccepted.
    CAP_MEAN_FULL = 0.90;

    /// A server's workers that it does not publish are all busy when connections waited
    /// unaccepted in its listen queue in at least this share of the seconds sampled
    /// under load (a server with a worker free accepts at once), while its CPU stayed
    /// under [`CPU_SATURATED`] (else its CPU is what they wait on).
    WORKERS_QUEUED_SHARE = 0.80;

    /// A JVM's monitor, or its database pool seen from its threads, is saturated when
    /// request threads waited at it (BLOCKED entering it; waiting for a pooled
    /// connection) in at least this share of its thread dumps: a gauge's pending
    /// requests' bar ([`GAUGE_PENDING_SHARE`]).
    THREADS_WAITING_SHARE = GAUGE_PENDING_SHARE;

    /// A balancer's queue is saturated (and a pool [`POOL_BUSY`] behind it too) when at
    /// least this share of requests waited in it: the same bar as a pool's waits.
    QUEUE_WAITED = POOL_WAITED;

    // ---- a step is valid

    /// The load generator at or above this share of its CPU measured itself, not a tier.
    GENERATOR_BUSY = 0.85;
    /// Little's law (throughput x (response time + think time)) may differ from the users
    /// configured by at most this share before the step is invalid.
    LITTLES_LAW_TOLERANCE = 0.20;
    /// A step whose failed requests are at least this share of them measured errors
    /// (fast failures, at a rate no working server reaches), not a saturation.
    ERRORS_DOMINATE = 0.50;

    // ---- findings

    /// Percent of a step in which tasks waited for a CPU (PSI some) that makes the
    /// machine's CPUs contended...
    CONTENDED_PSI_PCT = 20.0;
    /// ...when no tier's CPU was used this much: then others on the machine took it.
    CONTENDED_TIER_BELOW = 0.70;
    /// Percent of the machine's CPU used by processes other than the tiers and the load
    /// generator from which contention is put down to them ("other processes").
    OTHER_PROCESSES_PCT = 25.0;
    /// New connections to the app servers per request at or above this: keep-alive is off.
    KEEPALIVE_OFF_PER_REQUEST = 0.5;
    /// Percent of a step a JVM spent in GC pauses (`jvm_gc_pause_seconds`) from which
    /// the pauses are a finding: every request in flight waits each one out.
    GC_PAUSED_PCT = 5.0;
    /// Percent of a step a JVM was stopped in GC pauses from which its heap is the
    /// saturated resource: collections run back to back, and its CPU (the collector's
    /// threads) and pools fill as symptoms.
    GC_HEAP_FULL_PCT = 30.0;
    /// A JVM's longest GC pause at this share of the step's p99 or more, with a tail
    /// (p99 at `GC_TAIL_OVER_MEDIAN` times the median or more), is what the tail waited
    /// out: a finding however rarely it paused.
    GC_TAIL_SHARE = 0.5;
    GC_TAIL_OVER_MEDIAN = 2.0;
    /// Percent of STOMP message copies lost above which rooms are split over servers.
    LOST_MESSAGES_PCT = 1.0;

    // ---- scale-out and the proof

    /// A step from one number of servers to the next that gains less than this percent of
    /// throughput is flat, and the saturated tier of the flat configuration explains it.
    FLAT_GAIN_PCT = 10.0;
    /// Users grown this many times or more with throughput flat (a gain under
    /// `FLAT_GAIN_PCT`) is a plateau: something saturated, measured or not.
    PLATEAU_USERS_RATIO = 1.5;
    /// On a plateau with nothing measured full, a single-threaded process whose one
    /// thread was on CPU this share of one core or more is named as the likely limit: it
    /// serves one request at a time, and its network waits, which CPU time does not
    /// count, hold the rest.
    PLATEAU_THREAD_BUSY = 0.60;
    /// Over a plateau, an app's pooled connections held this many times longer a request
    /// or more, at flat throughput, were held by requests queued inside the database (by
    /// Little's law, more connections in use for the same work): a pool that limits holds
    /// each one as long at any load.
    HOLD_GREW = 1.3;
    /// With nothing measured full, an app's CPU that stayed within this percent of one
    /// level (under [`CPU_THROTTLED_UTIL`] of the cores it reports) as users grew
    /// [`PLATEAU_USERS_RATIO`] times...
    CPU_CAP_FLAT_PCT = 15.0;
    /// ...while the rest of its requests' time in it (not their CPU, pool or database)
    /// grew this many times or more, was held there by a CPU limit it does not publish.
    CPU_CAP_REST_GREW = 2.0;
    /// How much larger the proof makes the named resource and the runner-up.
    ENLARGE = 1.5;
    /// The named resource, enlarged, must gain at least this percent over the control...
    PROOF_GAIN_PCT = 15.0;
    /// ...and the runner-up, enlarged, less than this percent, or less than a third of the
    /// named resource's gain when that is larger.
    PROOF_RUNNER_UP_PCT = 10.0;
    /// The control (the same step again, unchanged) is the proof's noise: a control that
    /// differs from its step by more than this percent is run a second time, and if that
    /// one does too, identical runs differed too much for any gain to prove anything.
    CONTROL_DRIFT_PCT = 10.0;
}
