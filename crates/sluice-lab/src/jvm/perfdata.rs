//! A HotSpot JVM's performance counters, read as `jstat` reads them: from the file the
//! JVM keeps them in (`/tmp/hsperfdata_<user>/<pid>`, memory the JVM writes and anyone
//! of its user may read), so reading them costs the JVM nothing. The layout is
//! HotSpot's `perfMemory.hpp`: a prologue (magic `0xcafec0c0`, byte order, where the
//! entries start and how many), then entries of a name and a value each.
//!
//! The lab takes its collectors' pause totals and the old generation's occupancy (what
//! survives collections: the heap after GC) from them.

use std::collections::BTreeMap;
use std::path::PathBuf;

const MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];

/// What the lab reads of a JVM's GC, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GcCounters {
    /// Pauses of all its collectors since it started, seconds.
    pub paused_s: f64,
    pub pauses: u64,
    /// The most recent pause of any collector, seconds.
    pub last_pause_s: f64,
    /// The old generation's occupancy: what collections left (live data and
    /// garbage not collected yet), bytes; and the most it may grow to.
    pub old_used: u64,
    pub old_max: u64,
    /// Time the JVM was stopped at safepoints since it started (reaching them
    /// included), seconds: GC's stops and every other, a thread dump's among them.
    pub safepoints_s: f64,
}

/// Where the JVM `pid` keeps its counters, if it keeps them (`-XX:-UsePerfData` does
/// not): under its own `/tmp`, in a directory named for its user.
pub fn file_of(pid: u32) -> Option<PathBuf> {
    let ns_pid = super::ns_pid(pid).unwrap_or(pid);
    let tmp = PathBuf::from(format!("/proc/{pid}/root/tmp"));
    std::fs::read_dir(&tmp)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .map(|e| e.path().join(ns_pid.to_string()))
        .find(|f| f.exists())
}

/// The counters whose value is a number (`J`, a 64-bit integer), by name.
pub fn numbers(data: &[u8]) -> Option<BTreeMap<String, i64>> {
    if data.get(..4)? != MAGIC {
        return None;
    }
    let little = *data.get(4)? == 1;
    let int = |at: usize| -> Option<i64> {
        let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            i32::from_le_bytes(b)
        } else {
            i32::from_be_bytes(b)
        } as i64)
    };
    let long = |at: usize| -> Option<i64> {
        let b: [u8; 8] = data.get(at..at + 8)?.try_into().ok()?;
        Some(if little {
            i64::from_le_bytes(b)
        } else {
            i64::from_be_bytes(b)
        })
    };
    let (mut at, count) = (int(24)? as usize, int(28)?);
    let mut out = BTreeMap::new();
    for _ in 0..count {
        let (length, name_at) = (int(at)? as usize, int(at + 4)? as usize);
        let (kind, data_at) = (*data.get(at + 12)?, int(at + 16)? as usize);
        if length == 0 {
            break;
        }
        let name = data.get(at + name_at..)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        if kind == b'J' {
            out.insert(
                String::from_utf8_lossy(name).into_owned(),
                long(at + data_at)?,
            );
        }
        at += length;
    }
    Some(out)
}

/// The GC figures of a JVM's counters: every collector's pause time (ticks of
/// `sun.os.hrt.frequency`), and its old generation (generation 1, space 0).
pub fn gc(counters: &BTreeMap<String, i64>) -> Option<GcCounters> {
    let hz = *counters.get("sun.os.hrt.frequency")? as f64;
    let mut g = GcCounters {
        old_used: counters
            .get("sun.gc.generation.1.space.0.used")
            .map_or(0, |&v| v.max(0) as u64),
        old_max: counters
            .get("sun.gc.generation.1.space.0.maxCapacity")
            .map_or(0, |&v| v.max(0) as u64),
        safepoints_s: counters
            .get("sun.rt.safepointTime")
            .map_or(0.0, |&v| v as f64 / hz),
        ..GcCounters::default()
    };
    let mut last_entry = 0;
    for n in 0.. {
        let key = |k: &str| format!("sun.gc.collector.{n}.{k}");
        let Some(&ticks) = counters.get(&key("time")) else {
            break;
        };
        g.paused_s += ticks as f64 / hz;
        g.pauses += counters.get(&key("invocations")).map_or(0, |&v| v as u64);
        let (entry, exit) = (
            counters.get(&key("lastEntryTime")).copied().unwrap_or(0),
            counters.get(&key("lastExitTime")).copied().unwrap_or(0),
        );
        if entry > last_entry && exit >= entry {
            last_entry = entry;
            g.last_pause_s = (exit - entry) as f64 / hz;
        }
    }
    Some(g)
}

/// A JVM's GC figures now, from its counters' file.
pub fn read(file: &std::path::Path) -> Option<GcCounters> {
    gc(&numbers(&std::fs::read(file).ok()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counters file as HotSpot lays it out (little-endian), of `entries`.
    fn file(entries: &[(&str, i64)]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend(MAGIC);
        d.extend([1, 2, 0, 1]);
        d.extend([0u8; 16]);
        d.extend(32i32.to_le_bytes());
        d.extend((entries.len() as i32).to_le_bytes());
        for (name, value) in entries {
            let name_len = name.len() + 1;
            let data_at = 20 + name_len.next_multiple_of(8);
            let length = data_at + 8;
            d.extend((length as i32).to_le_bytes());
            d.extend(20i32.to_le_bytes());
            d.extend(0i32.to_le_bytes());
            d.extend([b'J', 0, 0, 0]);
            d.extend((data_at as i32).to_le_bytes());
            d.extend(name.as_bytes());
            d.resize(d.len() + data_at - 20 - name.len(), 0);
            d.extend(value.to_le_bytes());
        }
        d
    }

    #[test]
    fn collectors_pauses_add_up_and_the_latest_pause_is_the_last_entered() {
        let data = file(&[
            ("sun.os.hrt.frequency", 1_000_000_000),
            ("sun.gc.collector.0.time", 75_000_000),
            ("sun.gc.collector.0.invocations", 9),
            ("sun.gc.collector.0.lastEntryTime", 2_000_000_000),
            ("sun.gc.collector.0.lastExitTime", 2_008_000_000),
            ("sun.gc.collector.1.time", 25_000_000),
            ("sun.gc.collector.1.invocations", 1),
            ("sun.gc.collector.1.lastEntryTime", 1_000_000_000),
            ("sun.gc.collector.1.lastExitTime", 1_025_000_000),
            ("sun.gc.generation.1.space.0.used", 16_699_392),
            ("sun.gc.generation.1.space.0.maxCapacity", 6_320_816_136),
            ("sun.rt.safepointTime", 97_268_547),
        ]);
        let g = gc(&numbers(&data).unwrap()).unwrap();
        assert!((g.paused_s - 0.1).abs() < 1e-9, "{g:?}");
        assert_eq!(g.pauses, 10);
        assert!((g.last_pause_s - 0.008).abs() < 1e-9, "{g:?}");
        assert_eq!((g.old_used, g.old_max), (16_699_392, 6_320_816_136));
        assert!((g.safepoints_s - 0.097_268_547).abs() < 1e-12, "{g:?}");
    }

    #[test]
    fn anything_but_a_counters_file_reads_as_nothing() {
        assert_eq!(numbers(b"not hsperfdata at all, 32 bytes+"), None);
        assert_eq!(numbers(&[]), None);
        let mut cut = file(&[("sun.os.hrt.frequency", 1)]);
        cut.truncate(40);
        assert_eq!(numbers(&cut), None);
    }
}
