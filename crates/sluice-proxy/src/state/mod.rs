//! What workers share, and what a config generation is built into: per-upstream
//! balancers, retry budgets and server state (`upstream`), each server's health
//! (`health`), and the generation that ties them to a config (`generation`).

pub mod generation;
pub mod health;
pub mod upstream;
