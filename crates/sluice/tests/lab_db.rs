//! `sluice lab --target` on real stacks: Debian's PostgreSQL, MariaDB and Redis, each
//! started here in a directory of its own on a free loopback port, an app server in
//! front of each (`support/db_app.py`: HTTP, a fixed pool of connections, one
//! transaction per request), and the lab reading the database's sessions through a
//! URL. Every request updating one hot row is named as that row's lock (never "add
//! pool"), with the statement; a CPU-heavy query as the database's CPU; Redis at its one
//! command thread; a database held at its `max_connections` with nobody waiting said as
//! what refuses the next client, not the step's limit; and a live Spring Boot app
//! (`lab/spring-app`, built with Maven) at its Tomcat pool, its CPU read from
//! Micrometer, and at its heap when GC stops it back to back (not with room in it).
//! Three of them behind sluice, scaled out 1 -> 2 -> 3 by the lab through the admin API
//! over a PostgreSQL in a CPU quota: the third adds nothing, the database is named and
//! proven by its quota 1.5 times larger (as root).
//!
//! Each run is one short step; they run one at a time, since each measures CPU on the
//! same two cores.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use support::stacks::{
    as_user, database_dir, is_root, postmaster, run, spring_lab, Postgres, SpringApp,
};

/// One database and lab run at a time: they share the machine's CPU.
static MACHINE: Mutex<()> = Mutex::new(());

/// A MariaDB server of its own (Debian's), stopped when dropped.
struct Mariadb {
    server: Child,
    dir: support::TempDir,
    port: u16,
}

impl Mariadb {
    fn start() -> Mariadb {
        let dir = database_dir("mariadb", "mysql");
        let data = format!("--datadir={}", dir.0.join("data").display());
        let user = if is_root() {
            "--user=mysql"
        } else {
            "--no-defaults"
        };
        run({
            let mut c = Command::new("mariadb-install-db");
            c.args([
                user,
                &data,
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]);
            c
        });
        let port = support::free_port();
        let socket = dir.0.join("sock");
        let server = as_user(
            "mysql",
            "/usr/sbin/mariadbd",
            &[
                "--no-defaults",
                &data,
                &format!("--port={port}"),
                "--bind-address=127.0.0.1",
                &format!("--socket={}", socket.display()),
                &format!("--pid-file={}", dir.0.join("pid").display()),
                "--skip-log-bin",
                "--innodb-buffer-pool-size=64M",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mariadbd (scripts/test.sh installs mariadb-server)");
        let db = Mariadb { server, dir, port };
        support::wait_listening(port);
        run({
            let mut c = Command::new("mariadb");
            c.arg(format!("--socket={}", socket.display()));
            c.args(["-u", "root", "-e"]);
            c.arg(
                "CREATE USER lab@'127.0.0.1' IDENTIFIED BY 'lab';
                 GRANT ALL ON *.* TO lab@'127.0.0.1';
                 CREATE DATABASE shop;
                 CREATE TABLE shop.stock (id int PRIMARY KEY, n bigint) ENGINE=InnoDB;
                 INSERT INTO shop.stock VALUES (1, 1000000000);",
            );
            c
        });
        db
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        // The server runs as the database's user under runuser: its own pid file names it.
        if let Ok(pid) = std::fs::read_to_string(self.dir.0.join("pid")) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// A Prometheus exporter of Debian's on a free loopback port, killed when dropped.
struct Exporter {
    child: Child,
    port: u16,
}

impl Exporter {
    fn start(program: &str, env: &[(&str, &str)]) -> Exporter {
        let port = support::free_port();
        let child = Command::new(program)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e} (scripts/test.sh installs it)"));
        support::wait_listening(port);
        Exporter { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.port)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The app server in front of a database, killed when dropped.
struct App {
    child: Child,
    port: u16,
}

impl App {
    /// `db_app.py` on a free port: `driver` (`postgres` or `mysql`), `dsn`, a pool of
    /// 10 connections, `work` (`hot` or `cpu`).
    fn start(driver: &str, dsn: &str, work: &str) -> App {
        let port = support::free_port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/db_app.py");
        let child = Command::new("/usr/bin/python3")
            .arg(script)
            .args([&port.to_string(), driver, dsn, "10", work])
            .stdout(Stdio::null())
            .spawn()
            .expect(
                "Debian's python3 (scripts/test.sh installs python3-psycopg2, python3-pymysql)",
            );
        support::wait_listening(port);
        App { child, port }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sluice lab --target` on `app` with the database tier `db_url`: the report and the
/// terminal's text.
fn lab(app: &App, db_url: &str, users: &str) -> (Value, String) {
    lab_as(app, &format!("db={db_url}"), users, false)
}

/// `sluice lab --target` on `app` with `tier` beside it, as nobody when `nobody` (and
/// this is root: a user who cannot read other users' processes).
fn lab_as(app: &App, tier: &str, users: &str, nobody: bool) -> (Value, String) {
    let (report, stdout, _dir) = lab_run(app, tier, users, nobody);
    (report, stdout)
}

/// [`lab`]'s report, and the DOM of its HTML page as headless Chromium builds it.
fn lab_page(app: &App, db_url: &str, users: &str) -> (Value, String) {
    let (report, _, dir) = lab_run(app, &format!("db={db_url}"), users, false);
    let dom = support::browser_dom(&dir.0.join("report.html"));
    (report, dom)
}

/// One `sluice lab` run, its JSON and HTML reports in the directory it returns (removed
/// when dropped).
fn lab_run(app: &App, tier: &str, users: &str, nobody: bool) -> (Value, String, support::TempDir) {
    let tmp = support::TempDir::new("lab-db");
    let dir = &tmp.0;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.join("report.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    if nobody && is_root() {
        // As nobody (std drops root's supplementary groups with the ids).
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let out = cmd
        .args([
            "lab",
            "--target",
            &format!("http://127.0.0.1:{}/", app.port),
        ])
        .args(["--tier", &format!("app={}", app.child.id())])
        .args(["--tier", tier])
        .args(["--users", users, "-d", "4s", "--warmup", "1s", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(dir.join("report.html"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    println!("{stdout}");
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, stdout, tmp)
}

/// The evidence of the run's verdict, one string.
fn evidence(report: &Value) -> String {
    report["verdict"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
#[ignore = "needs PostgreSQL, python3 with psycopg2, prometheus-postgres-exporter and chromium"]
fn a_hot_row_in_postgresql_is_named_as_its_lock_never_as_the_pool() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    let app = App::start("postgres", &pg.dsn(), "hot");
    // A read-only user with pg_read_all_stats, as the manual says to make; five steps,
    // so the scalability law is fitted too.
    let (report, dom) = lab_page(&app, &pg.url("lab"), "2,5,10,15,20");
    let stdout = report["verdict"].to_string();
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"locks".into()),
        "{stdout}"
    );
    let evidence = evidence(&report);
    assert!(evidence.contains("Lock:transactionid"), "{evidence}");
    assert!(
        evidence.contains("waiting: `UPDATE stock SET n = n - 1 WHERE id = 1`"),
        "{evidence}"
    );
    assert!(evidence.contains("held by: `UPDATE stock"), "{evidence}");
    let advice = v["advice"].as_str().unwrap();
    assert!(
        advice.starts_with("more pool or app servers will not help"),
        "{advice}"
    );
    assert!(!advice.contains("add pool"), "{advice}");
    // The database's process was found by its port: its CPU, well below its budget.
    let db = &report["configurations"][0]["steps"][0]["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tier"] == "db")
        .cloned()
        .unwrap();
    assert!(db["cpu_util"].as_f64().unwrap() < 0.5, "{db}");
    // The page shows where the time went, and the fit, as text.
    let breakdown = &dom[dom.find("id=\"breakdown-0\"").expect("the breakdown")..];
    assert!(breakdown.contains("waiting on a lock"), "{breakdown}");
    let usl = report["configurations"][0]["usl"]["summary"]
        .as_str()
        .unwrap();
    assert!(
        usl.starts_with("Universal Scalability Law over 5 steps"),
        "{usl}"
    );
    assert!(dom.contains("id=\"usl-0\""), "{dom}");
    // A user without pg_read_all_stats sees no other session's statement: said, and
    // nothing is named from what it could not see.
    let (report, stdout) = lab(&app, &pg.url("watcher"), "20");
    let findings = report["configurations"][0]["steps"][0]["findings"].to_string();
    assert!(findings.contains("GRANT pg_read_all_stats"), "{stdout}");
    assert_ne!(report["verdict"]["resource"], "locks", "{stdout}");
    // postgres_exporter counts the active sessions but not what they wait on: said, and
    // how to see it, never a lock or a pool made up from its counts.
    let exporter = Exporter::start(
        "prometheus-postgres-exporter",
        &[(
            "DATA_SOURCE_NAME",
            &format!(
                "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=disable",
                pg.port
            ),
        )],
    );
    let (report, stdout) = lab(&app, &exporter.url(), "20");
    let findings = report["configurations"][0]["steps"][0]["findings"].to_string();
    assert!(findings.contains("postgres_exporter counts"), "{stdout}");
    assert_ne!(report["verdict"]["resource"], "locks", "{stdout}");
}

#[test]
#[ignore = "needs PostgreSQL and python3 with psycopg2"]
fn a_cpu_heavy_query_is_named_as_the_databases_cpu() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // One CPU for the database: its budget, read from its affinity.
    let pg = Postgres::start(Some("0"));
    let app = App::start("postgres", &pg.dsn(), "cpu");
    let (report, stdout) = lab(&app, &pg.url("lab"), "10");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"cpu".into()),
        "{stdout}"
    );
    let evidence = evidence(&report);
    assert!(evidence.contains("CPU affinity: 1 core"), "{evidence}");
    assert!(
        evidence
            .contains("sessions running on average (most: `SELECT count(*) FROM generate_series"),
        "{evidence}"
    );
    // Without pg_stat_statements, what to turn on for its Top SQL.
    let findings = report["configurations"][0]["steps"][0]["findings"].to_string();
    assert!(
        findings.contains("pg_stat_statements is not installed"),
        "{findings}"
    );
}

#[test]
#[ignore = "needs PostgreSQL and python3 with psycopg2"]
fn a_slow_statement_among_fast_ones_leads_the_databases_top_sql() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // One CPU for the database, its statements' totals kept: nine requests in ten read
    // one row, the tenth counts 300,000 generated rows.
    let pg = Postgres::with_statements(Some("0"));
    let app = App::start("postgres", &pg.dsn(), "mix");
    let (report, stdout) = lab(&app, &pg.url("lab"), "10");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"cpu".into()),
        "{stdout}"
    );
    let evidence = evidence(&report);
    // The slow one first, though it is a tenth of the calls; the fast one after it.
    let top = evidence
        .split("statements by time (Top SQL): ")
        .nth(1)
        .unwrap_or_else(|| panic!("no Top SQL: {evidence}"));
    assert!(
        top.starts_with("`SELECT count(*) FROM generate_series($1, $2)`"),
        "{top}"
    );
    assert!(top.contains("`SELECT n FROM stock WHERE id = $1`"), "{top}");
}

#[test]
#[ignore = "needs PostgreSQL and python3 with psycopg2"]
fn a_database_at_its_max_connections_is_said_to_refuse_the_next() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // 14 connections, 3 reserved for superusers: the app's pool of 10 and the lab's own
    // sampling connection take the 11 others, so the next client is refused.
    let pg = Postgres::start_with(None, 14, "");
    let app = App::start("postgres", &pg.dsn(), "read");
    let (report, stdout) = lab(&app, &pg.url("lab"), "4");
    let at_max = max_connections(&report, &stdout);
    assert_eq!(
        at_max["label"], "the database's max_connections (11)",
        "{at_max}"
    );
    assert_eq!(at_max["utilisation"], 1.0, "{at_max}");
    let evidence = at_max["evidence"].to_string();
    assert!(
        evidence.contains("11 connections on average of 11, at the limit in 100% of the samples"),
        "{evidence}"
    );
    // Nothing waited for a connection (the app's pool is open, no request failed): not
    // what limited this step, which is as fast as with 60 below, but what refuses the
    // next client.
    assert_ne!(report["verdict"]["resource"], "db_connections", "{stdout}");
    let findings = report["configurations"][0]["steps"][0]["findings"].to_string();
    assert!(
        findings.contains("max_connections (11) was reached, yet no request waited"),
        "{stdout}"
    );
    // The same database allowing 60: far from its limit.
    drop(app);
    drop(pg);
    let pg = Postgres::start(None);
    let app = App::start("postgres", &pg.dsn(), "read");
    let (report, stdout) = lab(&app, &pg.url("lab"), "4");
    let far = max_connections(&report, &stdout);
    assert_eq!(far["label"], "the database's max_connections (57)", "{far}");
    assert_eq!(far["saturated"], false, "{far}");
    assert_ne!(report["verdict"]["resource"], "db_connections", "{stdout}");
}

/// The database's `max_connections` as the first step judged it.
fn max_connections(report: &Value, stdout: &str) -> Value {
    report["configurations"][0]["steps"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "db_connections")
        .unwrap_or_else(|| panic!("no db_connections: {stdout}"))
        .clone()
}

#[test]
#[ignore = "needs MariaDB, python3 with PyMySQL and prometheus-mysqld-exporter"]
fn mariadb_row_lock_waits_are_named_with_their_statement() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let db = Mariadb::start();
    let dsn = format!("127.0.0.1:{}:lab:lab:shop", db.port);
    let app = App::start("mysql", &dsn, "hot");
    let url = format!("mysql://lab:lab@127.0.0.1:{}/shop", db.port);
    let (report, stdout) = lab(&app, &url, "20");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"locks".into()),
        "{stdout}"
    );
    let said = evidence(&report);
    assert!(said.contains("row lock (InnoDB)"), "{said}");
    assert!(
        said.contains("waiting: `UPDATE stock SET n = n - 1 WHERE id = 1`"),
        "{said}"
    );
    // The holder, found by following waiters queued behind waiters: the transaction
    // sleeping between its UPDATE and its COMMIT, never another waiter's UPDATE.
    assert!(
        said.contains("held by a transaction between statements"),
        "{said}"
    );
    // The password is never printed, nor written in the report.
    assert!(!stdout.contains("lab:lab@"), "{stdout}");
    let tiers = report["deployment"]["tiers"].to_string();
    assert!(
        tiers.contains(&format!("mysql://lab:***@127.0.0.1:{}/shop", db.port)),
        "{tiers}"
    );
    // Through mysqld_exporter, as a user already running it gives it: the same lock,
    // from its counts of InnoDB's row-lock waits (no statements: it says how to get them).
    let exporter = Exporter::start(
        "prometheus-mysqld-exporter",
        &[(
            "DATA_SOURCE_NAME",
            &format!("lab:lab@(127.0.0.1:{})/", db.port),
        )],
    );
    let (report, stdout) = lab(&app, &exporter.url(), "20");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"locks".into()),
        "{stdout}"
    );
    assert!(
        evidence(&report).contains("its exporter counts sessions, not statements"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs PostgreSQL"]
fn a_database_the_lab_cannot_read_is_refused_before_the_run() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    // A target that answers (a dead one is refused first, in its own words).
    let target = format!("http://{}/", support::backend());
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["lab", "--target", &target])
        .args(["--tier", &format!("db={}", pg.url("nosuchuser"))])
        .args(["--users", "1", "-d", "1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "--tier db={}: its sessions cannot be read: role \"nosuchuser\" does not exist",
            pg.url("nosuchuser")
        )),
        "{stderr}"
    );
}

/// A Redis server of its own (Debian's), nothing saved, stopped when dropped.
struct Redis {
    server: Child,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        let port = support::free_port();
        let server = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/test.sh installs it)");
        support::wait_listening(port);
        Redis { server, port }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Redis, an app whose every request runs a Lua script of a few milliseconds on Redis's
/// one thread, and the `--tier` naming Redis by its URL.
fn busy_redis() -> (Redis, App, String) {
    let redis = Redis::start();
    let app = App::start("redis", &format!("127.0.0.1:{}", redis.port), "cpu");
    let tier = format!("cache=redis://127.0.0.1:{}", redis.port);
    (redis, app, tier)
}

#[test]
#[ignore = "needs python3 and redis-server"]
fn a_busy_redis_is_named_at_its_one_command_thread() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (_redis, app, tier) = busy_redis();
    // Its process found by its port: a thread at one core of a machine of two.
    let (report, stdout) = lab_as(&app, &tier, "10", false);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"cache".into(), &"thread".into()),
        "{stdout}"
    );
    assert!(evidence(&report).contains("(its INFO): "), "{stdout}");
}

/// A user who cannot read Redis's process: its INFO alone, against the one core its
/// commands run on. Only root can become such a user here (Redis runs as this one
/// otherwise, and its process is readable).
#[test]
#[ignore = "needs python3, redis-server and root"]
fn a_busy_redis_whose_process_cannot_be_read_is_named_at_its_one_core_from_its_info() {
    assert!(
        is_root(),
        "needs root: to run the lab as a user who cannot read Redis's process"
    );
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (_redis, app, tier) = busy_redis();
    let (report, stdout) = lab_as(&app, &tier, "10", true);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"cache".into(), &"cpu".into()),
        "{stdout}"
    );
    let evidence = evidence(&report);
    assert!(
        evidence.contains("one core: Redis runs commands on one thread"),
        "{evidence}"
    );
    assert!(evidence.contains("commands/s"), "{evidence}");
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn a_live_spring_boot_apps_tomcat_pool_is_named_with_10_s_steps_and_its_cpu_read() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    // Four Tomcat threads, each request holding one 20 ms (a slow downstream call).
    let app = SpringApp::start(&pg, 4);
    let metrics = format!("http://127.0.0.1:{}/actuator/prometheus", app.port);
    // Its metrics URL alone: the JVM's CPU comes from Micrometer.
    let (report, stdout) = spring_lab(&app, "/slow", &[&format!("app={metrics}")], ("16", "10s"));
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"threads".into()),
        "{stdout}"
    );
    assert!(
        evidence(&report).contains("tomcat_threads_busy_threads averaged"),
        "{stdout}"
    );
    // The JVM's CPU, from process_cpu_time_ns_total against system_cpu_count.
    let tiers = report["deployment"]["tiers"].to_string();
    assert!(tiers.contains("(system_cpu_count)"), "{tiers}");
    let step = &report["configurations"][0]["steps"][0];
    let app_cpu = step["tiers"][0]["cpu_cores"].as_f64().unwrap();
    assert!(app_cpu > 0.0, "{step}");
    // Where the time went: most of it waiting for a Tomcat thread, before the app.
    let parts = step["breakdown"]["parts"].as_array().unwrap();
    let ms = |name: &str| {
        parts.iter().find(|p| p["part"] == name).unwrap()["ms"]
            .as_f64()
            .unwrap()
    };
    assert!(ms("in the app server") >= 20.0, "{parts:?}");
}

/// `sluice lab --target` on `lab/spring-app`'s `/churn` with the JVM's heap at `heap`
/// and the serial collector, 8 users for 6 s: its report and the terminal's text.
fn churn_lab(pg: &Postgres, heap: &[&str]) -> (Value, String) {
    let app = SpringApp::start_with(pg, 20, &[heap, &["-XX:+UseSerialGC"]].concat());
    let metrics = format!("http://127.0.0.1:{}/actuator/prometheus", app.port);
    let tier = format!("app={}@{metrics}", app.child.id());
    spring_lab(&app, "/churn", &[&tier], ("8", "6s"))
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn a_jvm_collecting_back_to_back_is_named_at_its_heap_and_not_with_room() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    // Requests whose buffers outlive young collections (64 MiB kept) in a 96 MiB heap:
    // the old generation fills and each full collection stops the JVM. GC stopped it
    // most of the step (72% in a run here): its heap is the limit, never "more users
    // would load them further".
    let (report, stdout) = churn_lab(&pg, &["-Xmx96m"]);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"heap".into()),
        "{stdout}"
    );
    assert!(evidence(&report).contains("GC stopped the JVM"), "{stdout}");
    assert!(v["advice"].as_str().unwrap().contains("-Xmx"), "{stdout}");
    let step = &report["configurations"][0]["steps"][0];
    let parts = step["breakdown"]["parts"].to_string();
    assert!(parts.contains("stopped in GC pauses"), "{parts}");
    assert!(parts.contains("on its CPU"), "{parts}");
    // The same app with room in its heap, from the start: not its heap. (With only
    // -Xmx768m, and even -Xmx2g, the serial collector kept a small young generation that
    // copied the 64 MiB kept often enough at 6,300 req/s to stop the JVM 32% of the
    // step, past GC_HEAP_FULL_PCT, on this repo's machine.)
    let (report, stdout) = churn_lab(&pg, &["-Xms2g", "-Xmx2g", "-Xmn1536m"]);
    assert_ne!(report["verdict"]["resource"], "heap", "{stdout}");
}

/// `sluice serve` in front of `apps` (one upstream, an admin listener): the process,
/// its port and its admin API's address.
fn sluice_in_front(apps: &[SpringApp], dir: &Path) -> (Child, u16, String) {
    let (port, admin) = (support::free_port(), support::free_port());
    let servers: Vec<String> = apps
        .iter()
        .map(|a| format!("\"127.0.0.1:{}\"", a.port))
        .collect();
    let config = dir.join("sluice.toml");
    let text = format!(
        "[[listener]]\nbind = \"127.0.0.1:{port}\"\n[[route]]\nupstream = \"app\"\n\
         [upstream.app]\nservers = [{}]\n[admin]\nbind = \"127.0.0.1:{admin}\"\n",
        servers.join(", ")
    );
    std::fs::write(&config, text).unwrap();
    let lb = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["serve", "-c", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    support::wait_listening(port);
    support::wait_listening(admin);
    (lb, port, format!("http://127.0.0.1:{admin}"))
}

#[test]
#[ignore = "needs PostgreSQL, java, mvn and root (cgroup v1 cpu controller)"]
fn three_spring_apps_behind_sluice_scale_out_to_the_databases_quota_which_the_proof_enlarges() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // PostgreSQL in a CPU quota of 0.3 core, set before any client connects: every
    // backend it forks for the apps' pools is in it.
    let pg = Postgres::start(None);
    let quota = sluice_process::cpu_budget::CpuBudget::create("lab-spring-db", 0.3)
        .expect("root and cgroup v1");
    let db = postmaster(&pg);
    quota.add(db).unwrap();
    let quota_file = quota.dir().join("cpu.cfs_quota_us");
    let before = std::fs::read_to_string(&quota_file).unwrap();
    // Three Spring Boot apps of two Tomcat threads each, a report a request (a query
    // costing the database about 1.4 ms of CPU here, then 10 ms of other calls): one app
    // holds about 140 req/s, the database about 210.
    let apps: Vec<SpringApp> = (0..3).map(|_| SpringApp::start(&pg, 2)).collect();
    // Their code compiled before the steps: a JVM still compiling in the first step
    // reads slower than in the proof's re-runs, which would count as noise.
    for app in &apps {
        let report = format!("http://127.0.0.1:{}/report", app.port);
        for _ in 0..300 {
            assert!(sluice_lab::fetch::http_get(&report).is_some());
        }
    }
    let dir = support::TempDir::new("lab-spring-servers");
    let (mut lb, port, admin) = sluice_in_front(&apps, &dir.0);
    let tier: Vec<String> = apps
        .iter()
        .map(|a| {
            format!(
                "{}@http://127.0.0.1:{}/actuator/prometheus",
                a.child.id(),
                a.port
            )
        })
        .collect();
    let json = dir.0.join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "lab",
            "--target",
            &format!("http://127.0.0.1:{port}/report"),
        ])
        .args(["--tier", &format!("lb={}@{admin}/metrics", lb.id())])
        .args(["--tier", &format!("app={}", tier.join(","))])
        .args(["--tier", &format!("db={db}")])
        .args([
            "--servers",
            "1,2,3",
            "--users",
            "24",
            "-d",
            "5s",
            "--warmup",
            "2s",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let _ = lb.kill();
    let _ = lb.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The flat curve: the second app server adds, the third does not.
    let gains: Vec<f64> = report["scale_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gain_pct"].as_f64().unwrap())
        .collect();
    assert!(gains[0] > 15.0 && gains[1] < 10.0, "{gains:?}\n{stdout}");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"cpu".into()),
        "{stdout}"
    );
    // Proven by the database's quota, 1.5 times larger, and put back.
    let proof = &report["proof"];
    let named = proof["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "named");
    let named = named.unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        named["change"]
            .as_str()
            .unwrap()
            .starts_with("CPU quota 0.30 -> 0.45"),
        "{stdout}"
    );
    assert_eq!(proof["confirmed"], true, "{stdout}");
    assert_eq!(std::fs::read_to_string(&quota_file).unwrap(), before);
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn a_hot_row_with_the_database_given_by_pid_is_named_as_the_database_not_the_pool() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    // Every request updates the same row and holds its lock 4 ms (GET /stock): at 4
    // users as at 16 the row serves one at a time, so throughput stays flat while each
    // pooled connection (HikariCP, 10) is held longer, waiting on the lock. The
    // database given by pid only: its sessions are not read.
    let app = SpringApp::start(&pg, 20);
    let metrics = format!("http://127.0.0.1:{}/actuator/prometheus", app.port);
    let app_tier = format!("app={}@{metrics}", app.child.id());
    let db_tier = format!("db={}", postmaster(&pg));
    let (report, stdout) = spring_lab(&app, "/stock", &[&app_tier, &db_tier], ("4,16", "4s"));
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"db".into(), &"waits".into()),
        "{stdout}"
    );
    let evidence = v["evidence"].to_string();
    assert!(
        evidence.contains("each pooled connection was held"),
        "{evidence}"
    );
    assert!(evidence.contains("--tier db=postgres://"), "{evidence}");
    assert!(
        !v["advice"].as_str().unwrap().contains("add pool"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs PostgreSQL, java, mvn and root (cgroup v1 cpu controller)"]
fn a_jvm_read_by_its_metrics_url_alone_in_a_cpu_quota_is_named_at_its_cpu() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    // The JVM started free, then held to 0.3 core, as a container's CPU limit does; the
    // lab reads it through its metrics URL only, as on Kubernetes: the JVM reports the
    // machine's 2 cores, and 0.3 is 15% of them. GET /cpu burns 5 ms of CPU a request.
    let app = SpringApp::start(&pg, 40);
    let quota = sluice_process::cpu_budget::CpuBudget::create("lab-jvm-quota", 0.3)
        .expect("root and cgroup v1");
    quota.add(app.child.id()).unwrap();
    let metrics = format!("http://127.0.0.1:{}/actuator/prometheus", app.port);
    let tier = format!("app={metrics}");
    let (report, stdout) = spring_lab(&app, "/cpu", &[&tier], ("8,24", "4s"));
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"cpu".into()),
        "{stdout}"
    );
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.contains("a limit it does not publish"), "{summary}");
    assert!(
        v["evidence"].to_string().contains("--tier app=PID@URL"),
        "{stdout}"
    );
}
