//! The profile of the step a run's verdict is about (its configuration's last valid
//! step: where throughput stopped growing, or the most loaded): each sampled JVM's
//! request threads' stacks (a wall-clock profile, `crate::jvm`), kept in the report for
//! the page's flame graph and written by `--out` as collapsed stacks (`a;b;c 12` a
//! line, outermost frame first), the format FlameGraph's `flamegraph.pl`, speedscope
//! and inferno read.
//!
//! In the JSON each frame's name is stored once (`frames`) and a stack is its places in
//! that list, `;`-joined (`"0;1;7"`): Spring's stacks run to a hundred frames, most
//! shared.

use crate::judge::thread_states::{ThreadStates, PROFILE_STACKS};
use serde::Serialize;
use std::collections::HashMap;

/// What a profile's samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// Threads sampled whatever they were doing (on CPU, waiting): where the time went.
    Wall,
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

impl Profile {
    /// The wall-clock profile of a JVM's request threads over a step.
    pub fn of_threads(t: &ThreadStates, servers: usize, users: usize) -> Profile {
        let mut frames: Vec<String> = Vec::new();
        let mut place: HashMap<String, usize> = HashMap::new();
        let mut stacks = Vec::new();
        for (folded, samples) in t.folded.iter().take(PROFILE_STACKS) {
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
            process: t.process.clone(),
            tier: t.tier.clone(),
            kind: ProfileKind::Wall,
            servers,
            users,
            samples: t.folded.iter().map(|(_, n)| n).sum(),
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
        let t = ThreadStates {
            process: "app[pid 1234]".into(),
            tier: "app".into(),
            server: Some("Tomcat"),
            samples: 10,
            threads: 2.0,
            states: Default::default(),
            blocked_at: Vec::new(),
            top_frames: Vec::new(),
            top_own: Vec::new(),
            gc: None,
            stopped_pct: 0.1,
            cost: String::new(),
            folded: vec![
                ("main;serve;lab.Hot.work".into(), 7),
                ("main;serve;java.lang.Thread.sleep".into(), 3),
            ],
        };
        let p = Profile::of_threads(&t, 2, 16);
        assert_eq!(p.frames.len(), 4, "{:?}", p.frames);
        assert_eq!(p.stacks[1].frames, "0;1;3");
        assert_eq!(p.samples, 10);
        assert_eq!(
            p.folded(),
            "main;serve;lab.Hot.work 7\nmain;serve;java.lang.Thread.sleep 3\n"
        );
        assert_eq!(p.file_name(), "app-pid-1234.wall.folded");
    }
}
