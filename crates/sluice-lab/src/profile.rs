//! Profiles: stacks with how many samples found each, collapsed (`a;b;c 12` a line,
//! outermost frame first: the format FlameGraph's `flamegraph.pl`, speedscope and
//! inferno read), and their top frames. Two kinds: a sampled JVM's request threads
//! whatever they were doing (a wall-clock profile, `crate::jvm`), and a native
//! process's threads on CPU (`perf`, `crate::oncpu`). The profiles of the step a run's
//! verdict is about (its configuration's last valid step: where throughput stopped
//! growing, or the most loaded) are kept in the report for the page's flame graph and
//! written by `--out`.
//!
//! In the JSON each frame's name is stored once (`frames`) and a stack is its places in
//! that list, `;`-joined (`"0;1;7"`): Spring's stacks run to a hundred frames, most
//! shared.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Stacks kept with a step's profile for the flame graph: the rest, each rarer, are
/// counted in no frame (`--out` keeps them all).
pub const PROFILE_STACKS: usize = 400;

/// One method of a profile and its share of the busy samples.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Frame {
    pub frame: String,
    pub pct: f64,
}

/// The five frames `pick` finds in the most samples, by share of all of them.
pub fn top(folded: &[(String, u64)], pick: impl Fn(&str) -> Option<&str>) -> Vec<Frame> {
    let total: u64 = folded.iter().map(|(_, n)| n).sum();
    let mut by: BTreeMap<&str, u64> = BTreeMap::new();
    for (stack, n) in folded {
        if let Some(f) = pick(stack) {
            *by.entry(f).or_default() += n;
        }
    }
    shares(by.into_iter().map(|(k, v)| (k.to_string(), v)), total)
}

/// The five largest of `counts` as shares of `total`, largest first, 1% and over.
pub fn shares(counts: impl Iterator<Item = (String, u64)>, total: u64) -> Vec<Frame> {
    let mut all: Vec<(String, u64)> = counts.collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all.into_iter()
        .take(5)
        .map(|(frame, n)| Frame {
            frame,
            pct: (n as f64 / total.max(1) as f64 * 1000.0).round() / 10.0,
        })
        .filter(|f| f.pct >= 1.0)
        .collect()
}

/// What a profile's samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// Threads sampled whatever they were doing (on CPU, waiting): where the time went.
    Wall,
    /// Threads sampled on CPU only (`perf`): where the CPU went.
    Cpu,
}

/// A native process's on-CPU profile over a step.
#[derive(Debug, Clone, Serialize)]
pub struct OnCpu {
    pub process: String,
    pub tier: String,
    /// `perf`'s samples of its threads on CPU.
    pub samples: u64,
    /// The innermost frames of its samples, and the innermost of its own program's
    /// (outside the kernel and the C library).
    pub top_frames: Vec<Frame>,
    pub top_own: Vec<Frame>,
    /// Its stacks, most samples first: kept for the step the report profiles.
    #[serde(skip)]
    pub folded: Vec<(String, u64)>,
}

impl OnCpu {
    pub fn of(process: &str, tier: &str, folded: Vec<(String, u64)>) -> OnCpu {
        OnCpu {
            process: process.into(),
            tier: tier.into(),
            samples: folded.iter().map(|(_, n)| n).sum(),
            top_frames: top(&folded, |stack| stack.rsplit(';').next()),
            top_own: top(&folded, |stack| stack.rsplit(';').find(|f| !system(f))),
            folded,
        }
    }
}

/// The kernel's frames (perf marks them `[k]`) and the C library's.
fn system(frame: &str) -> bool {
    frame.ends_with("_[k]") || frame.starts_with("__libc") || frame == "[unknown]"
}

/// One stack and how many samples found it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stack {
    /// Places in [`Profile::frames`], outermost first, `;`-joined.
    pub frames: String,
    pub samples: u64,
}

/// A process's profile over one step.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub process: String,
    pub tier: String,
    pub kind: ProfileKind,
    /// The step: its servers and users.
    pub servers: usize,
    pub users: usize,
    /// Samples in all (a sample is one busy thread in one dump).
    pub samples: u64,
    pub frames: Vec<String>,
    /// The [`PROFILE_STACKS`] most sampled stacks, most first.
    pub stacks: Vec<Stack>,
}

/// Where a profile was taken: the process and its tier, the step's servers and users.
pub struct Taken<'a> {
    pub process: &'a str,
    pub tier: &'a str,
    pub kind: ProfileKind,
    pub servers: usize,
    pub users: usize,
}

impl Profile {
    /// A profile of `folded` stacks (most samples first), its [`PROFILE_STACKS`] most
    /// sampled kept.
    pub fn of(at: Taken, folded: &[(String, u64)]) -> Profile {
        let mut frames: Vec<String> = Vec::new();
        let mut place: HashMap<String, usize> = HashMap::new();
        let mut stacks = Vec::new();
        for (folded, samples) in folded.iter().take(PROFILE_STACKS) {
            let places: Vec<String> = folded
                .split(';')
                .map(|f| {
                    let at = *place.entry(f.to_string()).or_insert_with(|| {
                        frames.push(f.to_string());
                        frames.len() - 1
                    });
                    at.to_string()
                })
                .collect();
            let frames = places.join(";");
            stacks.push(Stack {
                frames,
                samples: *samples,
            });
        }
        Profile {
            process: at.process.into(),
            tier: at.tier.into(),
            kind: at.kind,
            servers: at.servers,
            users: at.users,
            samples: folded.iter().map(|(_, n)| n).sum(),
            frames,
            stacks,
        }
    }

    /// The collapsed-stack text: a line per stack, its frames `;`-joined, its samples.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        for s in &self.stacks {
            let names: Vec<&str> = s
                .frames
                .split(';')
                .filter_map(|i| {
                    self.frames
                        .get(i.parse::<usize>().ok()?)
                        .map(String::as_str)
                })
                .collect();
            out.push_str(&names.join(";"));
            out.push(' ');
            out.push_str(&s.samples.to_string());
            out.push('\n');
        }
        out
    }

    /// Its file under `--out`: `profiles/app-pid-1234.wall.folded`.
    pub fn file_name(&self) -> String {
        let name: String = self
            .process
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let kind = match self.kind {
            ProfileKind::Wall => "wall",
            ProfileKind::Cpu => "cpu",
        };
        format!(
            "{}.{kind}.folded",
            name.trim_matches('-').replace("--", "-")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_stores_each_frame_once_and_folds_back_to_its_stacks() {
        let folded = [
            ("main;serve;lab.Hot.work".to_string(), 7),
            ("main;serve;java.lang.Thread.sleep".to_string(), 3),
        ];
        let at = Taken {
            process: "app[pid 1234]",
            tier: "app",
            kind: ProfileKind::Wall,
            servers: 2,
            users: 16,
        };
        let p = Profile::of(at, &folded);
        assert_eq!(p.frames.len(), 4, "{:?}", p.frames);
        assert_eq!(p.stacks[1].frames, "0;1;3");
        assert_eq!(p.samples, 10);
        assert_eq!(
            p.folded(),
            "main;serve;lab.Hot.work 7\nmain;serve;java.lang.Thread.sleep 3\n"
        );
        assert_eq!(p.file_name(), "app-pid-1234.wall.folded");
    }

    #[test]
    fn a_native_profiles_own_frames_leave_the_kernel_and_the_c_library_out() {
        let folded = vec![
            (
                "main;serve;__libc_recv;entry_SYSCALL_64_[k];tcp_recvmsg_[k]".to_string(),
                6,
            ),
            ("main;serve;parse".to_string(), 3),
            ("main;idle".to_string(), 1),
        ];
        let p = OnCpu::of("lb[pid 7]", "lb", folded);
        assert_eq!(p.samples, 10);
        assert_eq!(p.top_frames[0].frame, "tcp_recvmsg_[k]");
        assert_eq!(
            p.top_own
                .iter()
                .map(|f| (f.frame.as_str(), f.pct))
                .collect::<Vec<_>>(),
            [("serve", 60.0), ("parse", 30.0), ("idle", 10.0)]
        );
    }
}
