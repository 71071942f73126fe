//! On-CPU profiles of a deployment's native processes (nginx, sluice, PostgreSQL, a
//! Python server: every local tier given by pid that is not a JVM, whose frames `perf`
//! cannot name), taken with `perf record` over each measured step and read back with
//! `perf script`: each process's stacks on CPU, kernel frames marked `_[k]` as
//! FlameGraph's `stackcollapse-perf.pl` marks them.
//!
//! `perf` samples at [`FREQUENCY`] per CPU, a cost that does not show beside the step;
//! reading its samples back takes a fraction of a second between steps. Where `perf` is
//! missing or the kernel refuses it (`kernel.perf_event_paranoid` above 1 for a user
//! who is not root), the run says so once and goes on without.

use crate::real::Watched;
use sluice_process::procfs;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Samples a second on each CPU: odd, so as not to beat with a periodic timer.
const FREQUENCY: &str = "49";

/// How long `perf` may take to start sampling, and to write its file once stopped.
const PERF_WAIT: Duration = Duration::from_secs(5);

/// Stacks, collapsed, with their samples: most first.
pub type Folded = Vec<(String, u64)>;

/// The native processes of a deployment, as a profile reads them.
#[derive(Debug, Clone)]
pub struct Targets {
    /// Each watched process to profile: its place in the tiers, and its process tree.
    trees: Vec<(usize, Vec<u32>)>,
}

impl Targets {
    /// The local processes of `watched` that are not JVMs; `None` when there is none.
    pub fn of(watched: &[Watched]) -> Option<Targets> {
        let trees: Vec<(usize, Vec<u32>)> = watched
            .iter()
            .enumerate()
            .filter_map(|(i, w)| Some((i, w.pid?)))
            .filter(|(_, pid)| !crate::jvm::is_jvm(*pid))
            .map(|(i, pid)| (i, procfs::trees(&[pid]).pop().unwrap_or_else(|| vec![pid])))
            .filter(|(_, tree)| !tree.iter().any(|p| crate::jvm::is_jvm(*p)))
            .collect();
        (!trees.is_empty()).then_some(Targets { trees })
    }

    /// Whether `perf` can profile these processes here: `Err` says why not, and what
    /// to do, once for the run.
    pub fn check(&self) -> Result<(), String> {
        let file = format!("sluice-lab-{}-check.perf", std::process::id());
        let recording = self.start(std::env::temp_dir().join(file))?;
        recording.stop().map(drop)
    }

    /// Starts sampling them into `file`.
    pub fn start(&self, file: PathBuf) -> Result<Recording, String> {
        let pids: Vec<String> = self
            .trees
            .iter()
            .flat_map(|(_, tree)| tree.iter().map(u32::to_string))
            .collect();
        let child = Command::new("perf")
            .args(["record", "-q", "-F", FREQUENCY, "-g", "-o"])
            .arg(&file)
            .args(["-p", &pids.join(",")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("on-CPU profiles need perf (Debian: linux-perf): {e}"))?;
        let mut r = Recording {
            child,
            file,
            trees: self.trees.clone(),
        };
        // A refusal (no permission, no such process) ends perf at once.
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(Some(_)) = r.child.try_wait() {
            return Err(format!("perf refused: {}", r.stderr()));
        }
        Ok(r)
    }
}

/// `perf record` running over a step.
pub struct Recording {
    child: Child,
    file: PathBuf,
    trees: Vec<(usize, Vec<u32>)>,
}

impl Recording {
    /// Stops sampling and reads the samples back: each profiled process's stacks (by
    /// its place in the tiers), most samples first.
    pub fn stop(mut self) -> Result<Vec<(usize, Folded)>, String> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let started = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if started.elapsed() > PERF_WAIT {
                let _ = self.child.kill();
                return Err("perf did not stop within 5 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = Command::new("perf")
            .args(["script", "-F", "pid,ip,sym,dso", "-i"])
            .arg(&self.file)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("perf script: {e}"))?;
        let _ = std::fs::remove_file(&self.file);
        let by_pid = fold(&String::from_utf8_lossy(&out.stdout));
        Ok(self
            .trees
            .iter()
            .map(|(i, tree)| {
                let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
                for pid in tree {
                    for (stack, n) in by_pid.get(pid).into_iter().flatten() {
                        *stacks.entry(stack.clone()).or_default() += n;
                    }
                }
                let mut stacks: Folded = stacks.into_iter().collect();
                stacks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                (*i, stacks)
            })
            .collect())
    }

    fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Some(e) = self.child.stderr.as_mut() {
            let _ = e.read_to_string(&mut text);
        }
        text.lines().next().unwrap_or("it exited").to_string()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `perf script -F pid,ip,sym,dso` text folded: by pid, each stack (outermost frame
/// first, `;`-joined) with its samples.
pub fn fold(script: &str) -> BTreeMap<u32, BTreeMap<String, u64>> {
    let mut out: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    let mut pid: Option<u32> = None;
    let mut frames: Vec<String> = Vec::new();
    let mut flush = |pid: &mut Option<u32>, frames: &mut Vec<String>| {
        if let (Some(p), false) = (pid.take(), frames.is_empty()) {
            frames.reverse();
            *out.entry(p)
                .or_default()
                .entry(frames.join(";"))
                .or_default() += 1;
        }
        frames.clear();
    };
    for line in script.lines() {
        // A sample is its pid's line, then a frame a line, each indented by a tab.
        if line.trim().is_empty() {
            flush(&mut pid, &mut frames);
        } else if line.starts_with('\t') {
            frames.push(frame(line.trim()));
        } else {
            flush(&mut pid, &mut frames);
            pid = line.split_whitespace().next().and_then(|p| p.parse().ok());
        }
    }
    flush(&mut pid, &mut frames);
    out
}

/// `ffffffff8225aa01 do_syscall_64 ([kernel.kallsyms])` -> `do_syscall_64_[k]`; an
/// unknown symbol is named by its file (`[sluice]`).
fn frame(line: &str) -> String {
    let rest = line.split_once(' ').map_or("", |(_, r)| r);
    let (sym, dso) = match rest.rsplit_once(" (") {
        Some((sym, dso)) => (sym, dso.trim_end_matches(')')),
        None => (rest, ""),
    };
    let sym = sym.replace(';', ":");
    if dso == "[kernel.kallsyms]" {
        return format!("{sym}_[k]");
    }
    if sym.is_empty() || sym == "[unknown]" {
        return match dso.rsplit('/').next() {
            Some(file) if !file.is_empty() && !file.starts_with('[') => format!("[{file}]"),
            _ => "[unknown]".into(),
        };
    }
    sym
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfs_samples_fold_by_process_outermost_frame_first() {
        let script = " 9819 \n\tffffffff8225aa01 do_syscall_64 ([kernel.kallsyms])\n\t          10a974 __libc_recv (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n 9819 \n\tffffffff8225aa01 do_syscall_64 ([kernel.kallsyms])\n\t          10a974 __libc_recv (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n 77 \n\t          5bd2 [unknown] (/usr/sbin/nginx)\n\t          1234 main (/usr/sbin/nginx)\n";
        let folded = fold(script);
        assert_eq!(
            folded[&9819].iter().collect::<Vec<_>>(),
            [(&"__libc_recv;do_syscall_64_[k]".to_string(), &2)]
        );
        assert_eq!(
            folded[&77].iter().collect::<Vec<_>>(),
            [(&"main;[nginx]".to_string(), &1)]
        );
    }
}
