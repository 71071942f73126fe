//! Server names turned into addresses, for the config the proxy runs: host names
//! (`"app1:8080"`) resolved once at start, by `check` and on each reload (`names`), and
//! `dns` entries followed while sluice runs, each asked again when its TTL runs out, the
//! running config rebuilt and applied as a reload when the answer changes (`follow`,
//! over `lookup`'s A/AAAA and SRV queries).
//!
//! The config crate never resolves and the data path never sees a name: this crate is
//! the only place sluice asks DNS. It must never change a config in any other way than
//! replacing names with the servers they gave.

mod follow;
mod lookup;
pub mod names;

pub use follow::Discovery;
