//! The real stacks the lab's end-to-end tests run: a PostgreSQL server of its own
//! (Debian's) and `lab/spring-app` (Spring Boot, built with Maven) against it, and
//! `sluice lab --target` on such an app, its JSON report read back; a WSGI app under
//! gunicorn (`support/wsgi_app.py`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A directory the database's own user may write: as root, the database's user is
/// `user` (PostgreSQL and MariaDB refuse to run as root); otherwise this user. Removed
/// when dropped, also when the database failed to start.
pub fn database_dir(name: &str, user: &str) -> super::TempDir {
    let dir = super::TempDir::new(&format!("lab-{name}"));
    if is_root() {
        let status = Command::new("chown")
            .arg(user)
            .arg(&dir.0)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "chown {user} (scripts/test.sh installs the database)"
        );
    }
    dir
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// `program args`, as the database's user when this is root; its output on failure.
pub fn as_user(user: &str, program: &str, args: &[&str]) -> Command {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", user, "--", program]);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args);
    cmd
}

pub fn run(mut cmd: Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A PostgreSQL server of its own (Debian's, the newest installed), stopped when
/// dropped. `cpus`: the CPUs it may run on (`taskset`), all when `None`.
pub struct Postgres {
    pub bin: PathBuf,
    pub dir: super::TempDir,
    pub port: u16,
}

impl Postgres {
    pub fn start(cpus: Option<&str>) -> Postgres {
        Postgres::start_with(cpus, 60, "")
    }

    /// [`Postgres::start`] keeping its statements' totals (`pg_stat_statements`, as a
    /// user turns it on: preloaded, and the extension made in the lab's database).
    pub fn with_statements(cpus: Option<&str>) -> Postgres {
        let pg = Postgres::start_with(cpus, 60, "-c shared_preload_libraries=pg_stat_statements");
        pg.sql("CREATE EXTENSION pg_stat_statements");
        pg
    }

    /// [`Postgres::start`] allowing `max_connections` (3 of them reserved for
    /// superusers, PostgreSQL's default).
    pub fn start_with(cpus: Option<&str>, max_connections: u32, options: &str) -> Postgres {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL (scripts/test.sh installs it)")
            .flatten()
            .map(|e| e.path().join("bin"))
            .collect();
        versions.sort();
        let bin = versions.pop().expect("a PostgreSQL version");
        let dir = database_dir("pg", "postgres");
        let data = dir.0.join("data");
        let tool = |name: &str| bin.join(name).to_string_lossy().into_owned();
        run(as_user(
            "postgres",
            &tool("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
            ],
        ));
        let port = super::free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections={max_connections} {options}",
            dir.0.display()
        );
        let log = dir.0.join("log");
        let pg_ctl = [
            "-D",
            data.to_str().unwrap(),
            "-l",
            log.to_str().unwrap(),
            "-w",
            "-o",
            &options,
            "start",
        ];
        run(match cpus {
            Some(cpus) => as_user(
                "postgres",
                "taskset",
                &[&["-c", cpus, &tool("pg_ctl")][..], &pg_ctl[..]].concat(),
            ),
            None => as_user("postgres", &tool("pg_ctl"), &pg_ctl),
        });
        let pg = Postgres { bin, dir, port };
        pg.sql(
            "CREATE TABLE stock (id int PRIMARY KEY, n bigint);
             INSERT INTO stock VALUES (1, 1000000000);
             CREATE ROLE watcher LOGIN;
             CREATE ROLE lab LOGIN IN ROLE pg_read_all_stats;",
        );
        pg
    }

    pub fn sql(&self, sql: &str) {
        let port = self.port.to_string();
        let psql = self.bin.join("psql");
        let args = ["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-q"];
        run({
            let mut c = Command::new(psql);
            c.args(args).args(["-v", "ON_ERROR_STOP=1", "-c", sql]);
            c
        });
    }

    /// The app's connection string (psycopg2's).
    pub fn dsn(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    pub fn url(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.0.join("data");
        let pg_ctl = self.bin.join("pg_ctl").to_string_lossy().into_owned();
        let _ = as_user(
            "postgres",
            &pg_ctl,
            &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"],
        )
        .output();
    }
}

/// `lab/spring-app` (Spring Boot 3.5.7: Tomcat, HikariCP, Micrometer), built with Maven
/// when its jar (kept in its `target/`) is older than its sources, run against `pg` with
/// Tomcat held to `threads` threads; killed when dropped. The JVM's temporary directory
/// (Tomcat's `tomcat.*` and `tomcat-docbase.*`, which a killed JVM leaves) is its own,
/// removed after it.
/// Held while the Spring app's jar is checked and, if older than its sources, built.
static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub struct SpringApp {
    pub child: Child,
    pub port: u16,
    pub _tmp: super::TempDir,
}

impl SpringApp {
    pub fn start(pg: &Postgres, threads: usize) -> SpringApp {
        SpringApp::start_with(pg, threads, &[])
    }

    /// [`SpringApp::start`] with options for the JVM (`-Xmx96m`).
    pub fn start_with(pg: &Postgres, threads: usize, jvm: &[&str]) -> SpringApp {
        SpringApp::start_on("tomcat", pg, threads, jvm)
    }

    /// [`SpringApp::start_with`] on `server`: `tomcat`, `jetty` or `undertow` (the
    /// app's Maven profiles, each its own jar).
    pub fn start_on(server: &str, pg: &Postgres, threads: usize, jvm: &[&str]) -> SpringApp {
        SpringApp::launch(server, pg.port, threads, jvm)
    }

    /// The app on Tomcat with no database (its pages that need none: the login's,
    /// `/cpu`); `jvm` as for [`SpringApp::start_with`] (`-Dlab.login=true`).
    pub fn without_database(threads: usize, jvm: &[&str]) -> SpringApp {
        // Port 1: nothing listens there, and nothing here asks the database.
        SpringApp::launch("tomcat", 1, threads, jvm)
    }

    fn launch(server: &str, pg_port: u16, threads: usize, jvm: &[&str]) -> SpringApp {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/spring-app");
        let jar = dir.join(match server {
            "tomcat" => "target/stock-app-0.0.1.jar".to_string(),
            other => format!("target/stock-app-{other}.jar"),
        });
        // One build at a time: two tests starting the app at once in a fresh checkout
        // would both run Maven in the same directory, one reading the jar the other is
        // writing ("zip END header not found").
        let building = BUILD.lock().unwrap_or_else(|e| e.into_inner());
        if modified(&jar) < newest_source(&dir) {
            run({
                let mut c = Command::new("mvn");
                c.args([
                    "-q",
                    "-B",
                    "-T1",
                    "-DskipTests",
                    &format!("-P{server}"),
                    "package",
                ])
                .current_dir(&dir);
                c
            });
        }
        drop(building);
        let port = super::free_port();
        let tmp = super::TempDir::new("spring-app");
        let child = Command::new("java")
            .args(jvm)
            .arg(format!("-Djava.io.tmpdir={}", tmp.0.display()))
            .arg("-jar")
            .arg(&jar)
            .arg(format!("--server.tomcat.threads.max={threads}"))
            .arg(format!("--server.jetty.threads.max={threads}"))
            .arg(format!("--server.undertow.threads.worker={threads}"))
            .env("PORT", port.to_string())
            .env("PGPORT", pg_port.to_string())
            .stdout(Stdio::null())
            .spawn()
            .expect("java (scripts/test.sh installs openjdk-17 and maven)");
        let app = SpringApp {
            child,
            port,
            _tmp: tmp,
        };
        // Up once its metrics answer (as text: what the lab asks for), with Tomcat's
        // thread pool among them on Tomcat.
        let metrics = format!("http://127.0.0.1:{port}/actuator/prometheus");
        let ready = match server {
            "tomcat" => "tomcat_threads_busy_threads",
            _ => "jvm_threads_live_threads",
        };
        for _ in 0..600 {
            let up = sluice_lab::fetch::http_get(&metrics);
            if up.is_some_and(|b| b.contains(ready)) {
                return app;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the Spring Boot app did not start within 60 s");
    }
}

/// When `path` was last written; the epoch when it does not exist.
pub fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// The newest of the app's sources (`pom.xml` and everything under `src/`).
pub fn newest_source(dir: &Path) -> std::time::SystemTime {
    let mut newest = modified(&dir.join("pom.xml"));
    let mut todo = vec![dir.join("src")];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                newest = newest.max(modified(&path));
            }
        }
    }
    newest
}

impl Drop for SpringApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sluice lab --target` on `app`'s `path` with `tiers` (`--tier` each), `users` for
/// `duration` after 2 s of warm-up: its report and the terminal's text.
pub fn spring_lab(
    app: &SpringApp,
    path: &str,
    tiers: &[&str],
    users_duration: (&str, &str),
) -> (Value, String) {
    let dir = super::TempDir::new("lab-jvm");
    spring_lab_in(app, path, tiers, users_duration, &dir.0)
}

/// [`spring_lab`] writing everything `--out` writes into `dir`.
pub fn spring_lab_in(
    app: &SpringApp,
    path: &str,
    tiers: &[&str],
    (users, duration): (&str, &str),
    dir: &Path,
) -> (Value, String) {
    let target = format!("http://127.0.0.1:{}{path}", app.port);
    lab_out(
        &target,
        tiers,
        &["--users", users, "-d", duration, "--warmup", "2s"],
        dir,
    )
}

/// `sluice lab --target TARGET --tier T... FLAGS... --out DIR`, which must succeed: its
/// JSON report and what it printed (printed again, for a failing test's output).
pub fn lab_out(target: &str, tiers: &[&str], flags: &[&str], dir: &Path) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["lab", "--target", target])
        .args(tiers.iter().flat_map(|t| ["--tier", t]))
        .args(flags)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    (serde_json::from_str(&json).unwrap(), stdout)
}

/// The PostgreSQL server's postmaster: the first line of its `postmaster.pid`.
pub fn postmaster(pg: &Postgres) -> u32 {
    let text = std::fs::read_to_string(pg.dir.0.join("data/postmaster.pid")).unwrap();
    text.lines().next().unwrap().trim().parse().unwrap()
}

/// A gunicorn serving `support/wsgi_app.py` with `workers` sync workers and `env`;
/// killed (master and workers) when dropped.
pub struct Gunicorn {
    pub child: Child,
    pub port: u16,
}

impl Gunicorn {
    pub fn start(workers: usize, env: &[(&str, &str)]) -> Gunicorn {
        let port = super::free_port();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support");
        let child = Command::new(super::tool("gunicorn"))
            .args(["--workers", &workers.to_string(), "--worker-class", "sync"])
            .args(["--bind", &format!("127.0.0.1:{port}"), "--chdir"])
            .arg(&dir)
            .arg("wsgi_app:app")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        super::wait_listening(port);
        Gunicorn { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Gunicorn {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers before it exits.
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
    }
}
