//! Reading a process's resources from Linux's /proc: what the benchmarks report about
//! the balancers they measure (and, later, what the lab samples of every tier).

/// Resident memory, KiB, of `pid` and all its descendants (nginx has a master and workers).
pub fn tree_rss_kib(pid: u32) -> u64 {
    let mut total = rss_kib(pid);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return total;
    };
    for entry in entries.flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if child != pid && descends_from(child, pid) {
            total += rss_kib(child);
        }
    }
    total
}

fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..32 {
        let Some(parent) = parent_of(pid) else {
            return false;
        };
        if parent == ancestor {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        pid = parent;
    }
    false
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
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
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
        assert!(super::descends_from(child.id(), me));
        assert!(!super::descends_from(me, child.id()));
        assert!(super::tree_rss_kib(me) > 0);
        assert_eq!(super::rss_kib(u32::MAX), 0);
        let _ = child.kill();
        let _ = child.wait();
    }
}
