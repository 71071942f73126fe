//! `sluice lab`: runs an experiment (app servers behind a balancer, a shared database,
//! users in steps), samples every tier each second, and names the saturated tier with
//! the numbers that prove it, then proves it by re-running with that resource enlarged.
//!
//! This crate owns experiments (`spec`), asking a deployment's target whether it
//! answers before its steps (`probe`), starting tiers (`topology`, `lb_config`),
//! sampling them (`sample`, `prom`, `real` for tiers it did not start, `resize` for
//! the upstream of a running sluice drained to each configuration's servers (or, behind
//! another balancer, the user's command), `change` what its proof may change there,
//! `shell` the user's own commands for both, `database`
//! for a database's sessions, `redis`, `prometheus` for a job's targets through its
//! server, `fetch` their one HTTP GET, `url` their URLs shown without passwords; `usl`
//! fits the scalability law to the steps), judging
//! (`judge`), CPU budgets and who holds them (`budget`: the kernel's cgroups or the
//! lab's own duty cycle) and reporting (`report` the data, `text` the terminal's
//! rendering, `html`; `live` while it runs), and says why a run failed in typed errors
//! (`error`). It must never be imported by the data path, and it never generates load
//! itself: `sluice-bench` does, so the lab measures with the same generator users run.

pub mod budget;
pub mod builtin;
pub mod change;
pub mod database;
pub mod error;
pub mod fetch;
pub mod html;
pub mod judge;
pub mod jvm;
pub mod lb_config;
pub mod live;
pub mod oncpu;
pub mod probe;
pub mod profile;
pub mod prom;
pub mod prometheus;
pub mod real;
pub mod redis;
pub mod report;
pub mod resize;
pub mod run;
pub mod sample;
pub mod shell;
pub mod spec;
pub mod text;
pub mod topology;
pub mod url;
pub mod usl;
