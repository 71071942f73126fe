//! What a process tree uses and what it may use: CPU time, memory and sockets read from
//! /proc (`procfs`), a CPU budget from a cgroup v1 quota (`cpu_budget`) or, where no
//! cgroup can be made, from a duty cycle of SIGSTOP/SIGCONT (`cpu_duty`).
//!
//! The lab measures its tiers and the benchmarks measure balancers with it. It only reads
//! and caps processes; it must never start them (the lab does) nor be imported by the data
//! path.

pub mod cpu_budget;
pub mod cpu_duty;
pub mod procfs;
