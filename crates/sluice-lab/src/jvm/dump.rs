//! A thread dump (`Thread.print`) read: each thread's name, Java state and frames, and
//! for a server's request threads (Tomcat's, Jetty's, Undertow's, recognised by name)
//! what each was doing: on CPU, in a socket read to its database or to another service,
//! waiting for a pooled connection, BLOCKED on a monitor (with the method it waits to
//! enter), otherwise waiting, or idle in its pool waiting for a request.

use serde::Serialize;

/// The app servers whose request threads the lab recognises by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Server {
    /// `http-nio-8080-exec-1` (also `https-jsse-nio-`, `ajp-nio-`, `http-nio2-`).
    Tomcat,
    /// `qtp1234567-42`: its QueuedThreadPool (the acceptor and selector threads are
    /// named apart, `qtp...-acceptor-0`).
    Jetty,
    /// `XNIO-1 task-3` (its I/O threads are `XNIO-1 I/O-1`).
    Undertow,
}

impl Server {
    /// The server whose request thread is named `name`, if it is one.
    pub fn of_thread(name: &str) -> Option<Server> {
        let tomcat = ["http-", "https-", "ajp-"]
            .iter()
            .any(|p| name.starts_with(p))
            && name.contains("-exec-");
        if tomcat {
            return Some(Server::Tomcat);
        }
        if let Some(rest) = name.strip_prefix("qtp") {
            let mut parts = rest.splitn(2, '-');
            let digits = |s: Option<&str>| {
                s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            };
            if digits(parts.next()) && digits(parts.next()) {
                return Some(Server::Jetty);
            }
        }
        let undertow = name.starts_with("XNIO-") && name.contains(" task-");
        undertow.then_some(Server::Undertow)
    }

    pub fn name(self) -> &'static str {
        match self {
            Server::Tomcat => "Tomcat",
            Server::Jetty => "Jetty",
            Server::Undertow => "Undertow",
        }
    }
}

/// What a request thread was doing when sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// RUNNABLE, not in a socket read: on CPU, or waiting for one.
    Running,
    /// In a socket read under a JDBC driver: waiting for its database.
    Database,
    /// In a socket read under anything else: waiting for another service.
    Downstream,
    /// Waiting for a connection of a pool (HikariCP, Tomcat JDBC, DBCP).
    Pool,
    /// BLOCKED: waiting to enter a `synchronized` method or block another thread holds.
    Blocked,
    /// Waiting otherwise: a sleep, a lock of `java.util.concurrent`, a future.
    Waiting,
    /// In its pool, waiting for a request: not busy.
    Idle,
}

impl State {
    pub const ALL: [State; 7] = [
        State::Running,
        State::Database,
        State::Downstream,
        State::Pool,
        State::Blocked,
        State::Waiting,
        State::Idle,
    ];

    /// In words, for the report's table.
    pub fn words(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Database => "in a read from the database",
            State::Downstream => "in a read from another service",
            State::Pool => "waiting for a pooled connection",
            State::Blocked => "BLOCKED on a monitor",
            State::Waiting => "waiting (sleep, lock, future)",
            State::Idle => "idle",
        }
    }
}

/// One thread of a dump.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub name: String,
    /// `RUNNABLE`, `BLOCKED`, `WAITING`, `TIMED_WAITING`; empty for a VM thread.
    pub java_state: String,
    /// Its frames, innermost first, each `package.Class.method`.
    pub frames: Vec<String>,
    /// The class of the monitor it waits to enter, when BLOCKED.
    pub waiting_to_lock: Option<String>,
}

/// The threads of a `Thread.print` dump.
pub fn parse(dump: &str) -> Vec<Thread> {
    let mut out: Vec<Thread> = Vec::new();
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix('"') {
            let Some((name, _)) = rest.split_once('"') else {
                continue;
            };
            out.push(Thread {
                name: name.to_string(),
                java_state: String::new(),
                frames: Vec::new(),
                waiting_to_lock: None,
            });
            continue;
        }
        let Some(t) = out.last_mut() else { continue };
        let line = line.trim_start();
        if let Some(state) = line.strip_prefix("java.lang.Thread.State: ") {
            t.java_state = state.split_whitespace().next().unwrap_or("").to_string();
        } else if let Some(frame) = line.strip_prefix("at ") {
            // `pkg.Class.method(File.java:12)`: the method, without where.
            t.frames
                .push(frame.split('(').next().unwrap_or(frame).to_string());
        } else if let Some(lock) = line.strip_prefix("- waiting to lock ") {
            // `<0x...> (a java.lang.Object)`
            t.waiting_to_lock = lock
                .split_once("(a ")
                .map(|(_, c)| c.trim_end_matches(')').to_string());
        }
    }
    out
}

/// Frames a thread is in while it waits for a request in its pool.
const IDLE_FRAMES: [&str; 7] = [
    "org.jboss.threads.EnhancedQueueExecutor$PoolThreadNode.park",
    "org.apache.tomcat.util.threads.TaskQueue.take",
    "org.apache.tomcat.util.threads.TaskQueue.poll",
    "org.apache.tomcat.util.threads.ThreadPoolExecutor.getTask",
    "java.util.concurrent.ThreadPoolExecutor.getTask",
    "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
    "org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
];

/// A selector's wait for I/O events, innermost: a thread of the pool producing work
/// (Jetty runs its selectors on its request threads' pool), not serving a request.
const SELECTOR_WAITS: [&str; 2] = ["sun.nio.ch.EPoll.wait", "sun.nio.ch.Net.accept"];

/// Frames a thread is in while it waits for a pool's connection.
const POOL_FRAMES: [&str; 4] = [
    "com.zaxxer.hikari.pool.HikariPool.getConnection",
    "org.apache.tomcat.jdbc.pool.ConnectionPool.borrowConnection",
    "org.apache.commons.pool2.impl.GenericObjectPool.borrowObject",
    "org.apache.commons.dbcp2.PoolingDataSource.getConnection",
];

/// A socket read's innermost frames.
const SOCKET_READS: [&str; 6] = [
    "sun.nio.ch.Net.poll",
    "sun.nio.ch.SocketDispatcher.read0",
    "sun.nio.ch.NioSocketImpl.read",
    "sun.nio.ch.NioSocketImpl.park",
    "java.net.SocketInputStream.socketRead0",
    "sun.nio.ch.SocketChannelImpl.read",
];

/// The JDBC drivers' packages: a socket read under one is a wait for the database.
const JDBC_DRIVERS: [&str; 6] = [
    "org.postgresql.",
    "com.mysql.",
    "org.mariadb.",
    "oracle.jdbc.",
    "com.microsoft.sqlserver.",
    "org.h2.",
];

impl Thread {
    /// What this thread, a request thread, was doing.
    pub fn state(&self) -> State {
        let has = |list: &[&str]| self.frames.iter().any(|f| list.contains(&f.as_str()));
        match self.java_state.as_str() {
            "BLOCKED" => State::Blocked,
            "RUNNABLE"
                if self
                    .frames
                    .first()
                    .is_some_and(|f| SELECTOR_WAITS.contains(&f.as_str())) =>
            {
                State::Idle
            }
            "RUNNABLE" => {
                let reading = self
                    .frames
                    .iter()
                    .take(4)
                    .any(|f| SOCKET_READS.contains(&f.as_str()));
                let driver = || {
                    self.frames
                        .iter()
                        .any(|f| JDBC_DRIVERS.iter().any(|d| f.starts_with(d)))
                };
                match (reading, reading && driver()) {
                    (true, true) => State::Database,
                    (true, false) if self.serving() => State::Downstream,
                    _ => State::Running,
                }
            }
            _ if has(&IDLE_FRAMES) => State::Idle,
            _ if has(&POOL_FRAMES) => State::Pool,
            _ => State::Waiting,
        }
    }

    /// Past the server's own code into a request's: a socket read the server does
    /// itself (a keep-alive connection's next request, on Jetty's and Undertow's
    /// threads) is not a request waiting on another service.
    fn serving(&self) -> bool {
        self.frames.iter().any(|f| {
            f.starts_with("jakarta.servlet.")
                || f.starts_with("javax.servlet.")
                || f.starts_with("io.undertow.servlet.")
        })
    }

    /// Where a BLOCKED thread waits: the method it waits to enter, and the monitor's
    /// class (`lab.stock.StockController.hot (a lab.stock.StockController)`).
    pub fn blocked_at(&self) -> Option<String> {
        let method = self.frames.first()?;
        Some(match &self.waiting_to_lock {
            Some(class) => format!("{method} (a {class})"),
            None => method.clone(),
        })
    }

    /// Its frames outermost first, `;`-joined: one line of the collapsed-stack format
    /// FlameGraph and speedscope read (without the count).
    pub fn folded(&self) -> String {
        let mut s = String::new();
        for f in self.frames.iter().rev() {
            if !s.is_empty() {
                s.push(';');
            }
            // A `;` or a space would split the line where the readers do not expect.
            s.extend(
                f.chars()
                    .map(|c| if c == ';' || c == ' ' { '_' } else { c }),
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = r#"2026-11-29 17:03:05
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing):

"Reference Handler" #2 daemon prio=10 os_prio=0 cpu=2.16ms elapsed=14.65s tid=0x00007f7f48156980 nid=0x420c waiting on condition  [0x00007f7f19dab000]
   java.lang.Thread.State: RUNNABLE
	at java.lang.ref.Reference.waitForReferencePendingList(java.base@17.0.15/Native Method)

"http-nio-18091-exec-1" #20 daemon prio=5 os_prio=0 cpu=68.11ms elapsed=17.35s tid=0x00007f7f48f09610 nid=0x421f waiting on condition  [0x00007f7f18c51000]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x000000069c38e5a8> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
	at java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:341)
	at java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.15/LinkedBlockingQueue.java:435)
	at org.apache.tomcat.util.threads.TaskQueue.take(TaskQueue.java:106)
	at org.apache.tomcat.util.threads.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:913)
	at org.apache.tomcat.util.threads.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:960)

"http-nio-18091-exec-2" #21 daemon prio=5 os_prio=0 cpu=0.31ms elapsed=17.35s tid=0x00007f7f48f12bc0 nid=0x4220 waiting for monitor entry  [0x00007f7f18b51000]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at lab.stock.StockController.hot(StockController.java:90)
	- waiting to lock <0x000000069c3aa5a8> (a lab.stock.StockController)
	at jdk.internal.reflect.GeneratedMethodAccessor42.invoke(Unknown Source)
	at jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)

"http-nio-18091-exec-3" #22 daemon prio=5 os_prio=0 cpu=0.09ms elapsed=17.35s tid=0x00007f7f48f13c50 nid=0x4221 runnable  [0x00007f7f18a51000]
   java.lang.Thread.State: RUNNABLE
	at sun.nio.ch.Net.poll(java.base@17.0.15/Native Method)
	at sun.nio.ch.NioSocketImpl.park(java.base@17.0.15/NioSocketImpl.java:186)
	at sun.nio.ch.NioSocketImpl.read(java.base@17.0.15/NioSocketImpl.java:290)
	at org.postgresql.core.VisibleBufferedInputStream.readMore(VisibleBufferedInputStream.java:161)
	at jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)

"http-nio-18091-exec-4" #23 daemon prio=5 os_prio=0 cpu=0.06ms elapsed=17.35s tid=0x00007f7f48f14cd0 nid=0x4222 waiting on condition  [0x00007f7f18951000]
   java.lang.Thread.State: TIMED_WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	at java.util.concurrent.SynchronousQueue.poll(java.base@17.0.15/SynchronousQueue.java:903)
	at com.zaxxer.hikari.util.ConcurrentBag.borrow(ConcurrentBag.java:151)
	at com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:180)
	at jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)

"http-nio-18091-exec-5" #24 daemon prio=5 os_prio=0 cpu=9.06ms elapsed=17.35s tid=0x00007f7f48f14cd1 nid=0x4223 runnable  [0x00007f7f18951000]
   java.lang.Thread.State: RUNNABLE
	at sun.security.provider.SHA2.implCompress0(java.base@17.0.15/SHA2.java:250)
	at lab.stock.StockController.cpu(StockController.java:80)
	at jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)

"http-nio-18091-exec-6" #25 daemon prio=5 os_prio=0 cpu=9.06ms elapsed=17.35s tid=0x00007f7f48f14cd2 nid=0x4224 waiting on condition  [0x00007f7f18951000]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
	at java.lang.Thread.sleep(java.base@17.0.15/Native Method)
	at lab.stock.StockController.slow(StockController.java:42)

"VM Thread" os_prio=0 cpu=40.56ms elapsed=17.36s tid=0x00007f7f48152a20 nid=0x420b runnable
"#;

    #[test]
    fn request_threads_are_read_with_what_each_was_doing() {
        let threads = parse(DUMP);
        let requests: Vec<(&str, State)> = threads
            .iter()
            .filter(|t| Server::of_thread(&t.name) == Some(Server::Tomcat))
            .map(|t| (t.name.as_str(), t.state()))
            .collect();
        assert_eq!(
            requests,
            [
                ("http-nio-18091-exec-1", State::Idle),
                ("http-nio-18091-exec-2", State::Blocked),
                ("http-nio-18091-exec-3", State::Database),
                ("http-nio-18091-exec-4", State::Pool),
                ("http-nio-18091-exec-5", State::Running),
                ("http-nio-18091-exec-6", State::Waiting),
            ]
        );
        assert_eq!(threads.len(), 8, "the VM's own threads too");
        let blocked = &threads[2];
        assert_eq!(
            blocked.blocked_at().as_deref(),
            Some("lab.stock.StockController.hot (a lab.stock.StockController)")
        );
        assert_eq!(
            threads[5].folded(),
            "jakarta.servlet.http.HttpServlet.service;lab.stock.StockController.cpu;sun.security.provider.SHA2.implCompress0"
        );
    }

    #[test]
    fn servers_are_recognised_by_their_request_threads_names() {
        let cases = [
            ("http-nio-8080-exec-12", Some(Server::Tomcat)),
            ("https-jsse-nio-8443-exec-1", Some(Server::Tomcat)),
            ("http-nio-8080-Acceptor", None),
            ("http-nio-8080-Poller", None),
            ("qtp1406718218-42", Some(Server::Jetty)),
            (
                "qtp1406718218-17-acceptor-0@5e6b1c4c-ServerConnector@1b",
                None,
            ),
            ("XNIO-1 task-3", Some(Server::Undertow)),
            ("XNIO-1 I/O-2", None),
            ("main", None),
        ];
        for (name, server) in cases {
            assert_eq!(Server::of_thread(name), server, "{name}");
        }
    }

    #[test]
    fn a_keep_alive_read_by_the_server_itself_is_not_a_downstream_wait() {
        let jetty_reading_next_request = Thread {
            name: "qtp1-2".into(),
            java_state: "RUNNABLE".into(),
            frames: vec![
                "sun.nio.ch.SocketDispatcher.read0".into(),
                "org.eclipse.jetty.io.ChannelEndPoint.fill".into(),
            ],
            waiting_to_lock: None,
        };
        assert_eq!(jetty_reading_next_request.state(), State::Running);
        let jetty_selecting = Thread {
            frames: vec![
                "sun.nio.ch.EPoll.wait".into(),
                "sun.nio.ch.EPollSelectorImpl.doSelect".into(),
                "org.eclipse.jetty.io.ManagedSelector.select".into(),
                "org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run".into(),
            ],
            ..jetty_reading_next_request.clone()
        };
        assert_eq!(jetty_selecting.state(), State::Idle);
        // Undertow 2.3's idle worker (jboss-threads 3), as a dump of Spring Boot 3.5 shows it.
        let undertow_idle = Thread {
            name: "XNIO-1 task-2".into(),
            java_state: "TIMED_WAITING".into(),
            frames: vec![
                "jdk.internal.misc.Unsafe.park".into(),
                "java.util.concurrent.locks.LockSupport.parkNanos".into(),
                "org.jboss.threads.EnhancedQueueExecutor$PoolThreadNode.park".into(),
                "org.jboss.threads.EnhancedQueueExecutor$ThreadBody.run".into(),
                "org.xnio.XnioWorker$WorkerThreadFactory$1$1.run".into(),
                "java.lang.Thread.run".into(),
            ],
            waiting_to_lock: None,
        };
        assert_eq!(undertow_idle.state(), State::Idle);
        let rest_call = Thread {
            frames: vec![
                "sun.nio.ch.Net.poll".into(),
                "org.springframework.web.client.RestTemplate.execute".into(),
                "jakarta.servlet.http.HttpServlet.service".into(),
            ],
            ..jetty_reading_next_request
        };
        assert_eq!(rest_call.state(), State::Downstream);
    }
}
