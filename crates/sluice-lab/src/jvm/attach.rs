//! HotSpot's attach listener, spoken to as `jcmd` speaks to it: a diagnostic command
//! (`Thread.print`) over the JVM's own UNIX socket, without starting a JVM per command.
//! `jcmd` itself is a Java program: 0.11 s of CPU a call on this project's machine,
//! more than a whole step's thread samples cost this way (docs/lab.md, "JVMs by pid").
//!
//! The protocol (HotSpot's `attachListener_linux.cpp`): a JVM listens on
//! `/tmp/.java_pid<pid>` once asked; it is asked by a file `.attach_pid<pid>` in its
//! working directory and a SIGQUIT, which a JVM catches (with `-Xrs` or the attach
//! mechanism disabled it would not: such a JVM is never sent one). A request is
//! `1\0jcmd\0<command>\0\0\0`; the answer is a status line (`0` for done) and the
//! command's output, until the JVM closes the socket. Only the JVM's own user, or root,
//! may connect.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a JVM asked to start its listener may take to start it.
const LISTENER_START: Duration = Duration::from_secs(5);

/// Longest a command may take: a thread dump of thousands of threads is tens of ms.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// A JVM the lab can send diagnostic commands to.
#[derive(Debug, Clone)]
pub struct Attached {
    socket: PathBuf,
}

impl Attached {
    /// Attaches to the JVM `pid`, starting its attach listener when it has none yet.
    /// `Err` says why not, in words for the report.
    pub fn open(pid: u32) -> Result<Attached, String> {
        let ns_pid = super::ns_pid(pid).unwrap_or(pid);
        let root = PathBuf::from(format!("/proc/{pid}/root/tmp"));
        let socket = root.join(format!(".java_pid{ns_pid}"));
        if !socket.exists() {
            refuses_attach(pid)?;
            start_listener(pid, ns_pid, &socket)?;
        }
        Ok(Attached { socket })
    }

    /// Runs one diagnostic command (`Thread.print`), its output as the JVM wrote it.
    pub fn run(&self, command: &str) -> Result<String, String> {
        let mut s = UnixStream::connect(&self.socket)
            .map_err(|e| format!("{}: {e}", self.socket.display()))?;
        s.set_read_timeout(Some(COMMAND_TIMEOUT))
            .and_then(|_| s.set_write_timeout(Some(COMMAND_TIMEOUT)))
            .map_err(|e| e.to_string())?;
        s.write_all(format!("1\0jcmd\0{command}\0\0\0").as_bytes())
            .map_err(|e| format!("sending {command}: {e}"))?;
        let mut out = String::new();
        s.read_to_string(&mut out)
            .map_err(|e| format!("reading {command}'s answer: {e}"))?;
        let (status, body) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        match status.trim() {
            "0" => Ok(body.to_string()),
            other => Err(format!(
                "{command} failed ({other}): {}",
                body.lines().next().unwrap_or("")
            )),
        }
    }
}

/// A JVM a SIGQUIT would not ask for a listener: `-Xrs` leaves SIGQUIT to its default
/// action (the JVM would exit), `-XX:+DisableAttachMechanism` prints a thread dump to
/// its output instead. Such a JVM is refused, never signalled.
fn refuses_attach(pid: u32) -> Result<(), String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(|e| e.to_string())?;
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    for flag in ["-Xrs", "-XX:+DisableAttachMechanism"] {
        if args.contains(&flag.as_bytes()) {
            return Err(format!(
                "it runs with {flag}: the lab does not ask it for thread dumps"
            ));
        }
    }
    Ok(())
}

/// Asks the JVM to start listening, as `jcmd` does, and waits until it does.
fn start_listener(pid: u32, ns_pid: u32, socket: &std::path::Path) -> Result<(), String> {
    let name = format!(".attach_pid{ns_pid}");
    let candidates = [
        PathBuf::from(format!("/proc/{pid}/cwd")).join(&name),
        PathBuf::from(format!("/proc/{pid}/root/tmp")).join(&name),
    ];
    let file = candidates
        .into_iter()
        .find(|f| std::fs::File::create(f).is_ok())
        .ok_or("cannot write its attach file (in its working directory or /tmp)")?;
    let sent = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGQUIT,
    );
    let started = Instant::now();
    let up = sent.is_ok()
        && loop {
            if socket.exists() {
                break true;
            }
            if started.elapsed() > LISTENER_START {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
    let _ = std::fs::remove_file(&file);
    match (sent, up) {
        (Err(e), _) => Err(format!("cannot signal it: {e}")),
        (Ok(_), false) => Err(format!(
            "its attach listener did not start within {} s",
            LISTENER_START.as_secs()
        )),
        (Ok(_), true) => Ok(()),
    }
}
