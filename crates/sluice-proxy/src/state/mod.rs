//! What workers share, and what a config generation is built into: per-upstream
//! balancers and retry budgets of each upstream's servers (`group`), each server's state (`server`), its drain and
//! drain's lease (`drain`), a `max_conns` tried for a lease (`trial`), health
//! (`health`) and, while it is limited, idle connections (`idle`), rate limits
//! (`limits`), sticky sessions (`sticky`), connections per client (`clients`), the queue of requests waiting for a
//! server with room (`queue`), the users of htpasswd files (`htpasswd`) and the
//! passwords a worker verified lately (`verified`), and the generation that ties them
//! to a config (`generation`).

pub mod adaptive;
pub mod clients;
pub mod drain;
pub mod generation;
pub mod group;
pub mod health;
pub mod htpasswd;
pub mod idle;
pub mod limits;
pub mod queue;
pub mod server;
pub mod sticky;
pub mod trial;
pub mod verified;
