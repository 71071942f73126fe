//! Reading a process's resources from Linux's /proc: what the benchmarks report about
//! the balancers they measure (and, later, what the lab samples of every tier).

/// Resident memory, KiB, of `pid` and all its descendants (nginx has a master and workers).
pub fn tree_rss_kib(pid: u32) -> u64 {
    tree(pid).into_iter().map(rss_kib).sum()
}

/// Anonymous resident memory, KiB, of `pid` and all its descendants: the resident set
/// without the pages of files (the program's code, read in once and shared), which is
/// what a process's clients cost it.
pub fn tree_anon_kib(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .map(|pid| status_kib(pid, "RssAnon:"))
        .sum()
}

/// `pid` and every process descending from it.
pub fn tree(pid: u32) -> Vec<u32> {
    trees(&[pid]).pop().unwrap_or_else(|| vec![pid])
}

/// Each of `roots` with every process descending from it, from one walk of /proc (a
/// sampler watching several tiers reads the process table once, not once a tier).
pub fn trees(roots: &[u32]) -> Vec<Vec<u32>> {
    let children = children();
    roots
        .iter()
        .map(|&root| {
            let mut all = vec![root];
            let mut i = 0;
            while i < all.len() {
                if let Some(kids) = children.get(&all[i]) {
                    all.extend_from_slice(kids);
                }
                i += 1;
            }
            all
        })
        .collect()
}

/// Every process's children, by parent.
fn children() -> std::collections::HashMap<u32, Vec<u32>> {
    let mut map: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some(parent) = parent_of(pid) {
            map.entry(parent).or_default().push(pid);
        }
    }
    map
}

/// CPU time (user + system) of `pid` and its descendants, seconds (Linux's USER_HZ is
/// 100: 10 ms resolution).
pub fn tree_cpu_seconds(pid: u32) -> f64 {
    tree(pid).into_iter().map(cpu_seconds).sum()
}

/// CPU time (user + system) of one process, seconds (0 if it is gone).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat_cpu_seconds(&stat)
}

/// CPU time (user + system) of every thread of `pid`, seconds, by thread id (empty if
/// it is gone or not ours to read).
pub fn thread_cpu_seconds(pid: u32) -> Vec<(u32, f64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid: u32 = t.file_name().to_string_lossy().parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            Some((tid, stat_cpu_seconds(&stat)))
        })
        .collect()
}

/// utime + stime of a `stat` line (fields 14 and 15; 12 and 13 after the name), seconds.
fn stat_cpu_seconds(stat: &str) -> f64 {
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// Open file descriptors of one process (0 if it is gone or not ours to read).
pub fn open_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// TCP sockets of this machine with `port` at either end, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStates {
    pub established: u64,
    pub time_wait: u64,
    pub close_wait: u64,
    /// Every other state (handshakes, closing, listening).
    pub other: u64,
    /// Connections waiting in the listen queue of `port` to be accepted (the listening
    /// socket's receive queue): a server that stopped accepting, or a cap.
    pub accept_queue: u64,
}

pub fn tcp_states(port: u16) -> TcpStates {
    tcp_states_of(&[port]).pop().unwrap_or_default()
}

/// [`tcp_states`] of each of `ports`, from one read of the socket tables (with tens of
/// thousands of sockets in TIME_WAIT, each read is a long file).
pub fn tcp_states_of(ports: &[u16]) -> Vec<TcpStates> {
    let mut states = vec![TcpStates::default(); ports.len()];
    tcp_sockets(|f| {
        if f.len() < 5 {
            return;
        }
        let (local, remote) = (port_of(f[1]), port_of(f[2]));
        for (port, s) in ports.iter().zip(states.iter_mut()) {
            if local == Some(*port) || remote == Some(*port) {
                count(s, f[3], f[4], local == Some(*port));
            }
        }
    });
    states
}

/// Each socket of the machine's TCP tables (v4 and v6), as its line's fields.
fn tcp_sockets(mut each: impl FnMut(&[&str])) {
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            each(&line.split_whitespace().collect::<Vec<_>>());
        }
    }
}

/// The port of an address field of the tables (`0100007F:1F90`).
fn port_of(addr: &str) -> Option<u16> {
    addr.rsplit_once(':')
        .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
}

/// The TCP ports `pids` listen on: their sockets (from their descriptors) matched with
/// the listening sockets of the machine's tables. Empty for processes not ours to read.
pub fn listening_ports(pids: &[u32]) -> Vec<u16> {
    let mut inodes = std::collections::HashSet::new();
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            let link = link.to_string_lossy();
            if let Some(inode) = link
                .strip_prefix("socket:[")
                .and_then(|l| l.strip_suffix(']'))
            {
                inodes.insert(inode.to_string());
            }
        }
    }
    let mut ports = Vec::new();
    tcp_sockets(|f| {
        let port = f.get(1).and_then(|a| port_of(a));
        if let (Some(port), Some(&"0A"), Some(inode)) = (port, f.get(3), f.get(9)) {
            if inodes.contains(*inode) {
                ports.push(port);
            }
        }
    });
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// The process listening on TCP `port` (of those sharing the socket, the one whose
/// parent does not: nginx's master, PostgreSQL's postmaster). `None` when no process
/// readable here holds it (another user's, unless this is root).
pub fn listener_pid(port: u16) -> Option<u32> {
    let mut inodes = std::collections::HashSet::new();
    tcp_sockets(|f| {
        if let (Some(p), Some(&"0A"), Some(inode)) =
            (f.get(1).and_then(|a| port_of(a)), f.get(3), f.get(9))
        {
            if p == port {
                inodes.insert(format!("socket:[{inode}]"));
            }
        }
    });
    if inodes.is_empty() {
        return None;
    }
    let holders: Vec<u32> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return false;
            };
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| inodes.contains(l.to_string_lossy().as_ref()))
            })
        })
        .collect();
    holders
        .iter()
        .copied()
        .find(|pid| parent_of(*pid).is_none_or(|pp| !holders.contains(&pp)))
}

/// Counts one socket of state `state` (hex, as /proc writes it); `queues` is its
/// `tx:rx` field, whose rx is a listening socket's accept queue.
fn count(s: &mut TcpStates, state: &str, queues: &str, local: bool) {
    match state {
        "01" => s.established += 1,
        "06" => s.time_wait += 1,
        "08" => s.close_wait += 1,
        "0A" if local => {
            s.other += 1;
            s.accept_queue += queues
                .split_once(':')
                .and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok())
                .unwrap_or(0);
        }
        _ => s.other += 1,
    }
}

/// Connections dropped because a listen queue was full, machine-wide (TcpExt
/// ListenOverflows): the sign of an accept queue a tier did not empty in time. `None`
/// where the kernel does not report it.
pub fn listen_overflows() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "ListenOverflows")
        .and_then(|(_, v)| v.parse().ok())
}

/// CPU pressure (PSI): the share of the last 10 s in which some runnable task waited
/// for a CPU, 0 to 100; `None` where the kernel does not report it.
pub fn cpu_pressure() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// Total time (µs) since boot in which some runnable task waited for a CPU (PSI's
/// `some` total): its growth over an interval, divided by the interval, is the share of
/// it the machine's CPUs were contended.
pub fn cpu_pressure_total_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))?
        .parse()
        .ok()
}

/// CPU seconds the machine's CPUs spent busy since boot (user, nice, system, irq and
/// softirq of /proc/stat; not idle, I/O wait or steal), summed over CPUs.
pub fn machine_busy_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let ticks = |i: usize| f.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    Some((ticks(0) + ticks(1) + ticks(2) + ticks(5) + ticks(6)) as f64 / 100.0)
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resident memory of one process, KiB (0 if it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// A KiB figure of `/proc/PID/status` (`field` with its colon); 0 if unreadable.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_tree_is_found_and_measured() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        // Memory moves between two reads; what must hold is that each is seen at all.
        assert!(super::rss_kib(me) > 0);
        assert!(super::rss_kib(child.id()) > 0);
        assert!(super::tree(me).contains(&child.id()));
        assert!(!super::tree(child.id()).contains(&me));
        assert!(super::tree_rss_kib(me) > 0);
        assert!(super::tree_anon_kib(me) > 0);
        assert_eq!(super::rss_kib(u32::MAX), 0);
        assert_eq!(super::tree_anon_kib(u32::MAX), 0);
        assert!(super::tree(me).contains(&child.id()));
        assert!(super::open_fds(me) >= 3);
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_busy_child_s_cpu_counts_in_its_parent_s_tree() {
        let me = std::process::id();
        let before = super::tree_cpu_seconds(me);
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let busy = super::cpu_seconds(child.id());
        let tree = super::tree_cpu_seconds(me) - before;
        let _ = child.kill();
        let _ = child.wait();
        // 0.6 s of a busy loop: most of it on a CPU, even on a shared machine.
        assert!(busy >= 0.2, "{busy}");
        assert!(tree >= busy, "{tree} < {busy}");
    }

    #[test]
    fn closed_connections_are_seen_in_time_wait() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut accepted = Vec::new();
        for _ in 0..5 {
            let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            accepted.push(listener.accept().unwrap().0);
            // The client closes first: its side goes to TIME_WAIT.
            drop(client);
        }
        let waiting: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let queued = super::tcp_states(port);
        assert_eq!(queued.accept_queue, 3, "{queued:?}");
        drop(waiting);
        while let Ok((s, _)) = {
            listener.set_nonblocking(true).unwrap();
            listener.accept()
        } {
            drop(s);
        }
        let open = super::tcp_states(port);
        assert!(open.close_wait >= 5, "{open:?}");
        drop(accepted);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let closed = super::tcp_states(port);
        assert!(closed.time_wait >= 5, "{closed:?}");
        assert!(super::listen_overflows().is_some(), "Linux reports it");
        if let Some(p) = super::cpu_pressure() {
            assert!((0.0..=100.0).contains(&p));
        }
    }
}
