//! The process around the data path: binding listeners (`listen`), one worker thread per
//! core (`worker`), the cap on client connections the descriptors allow (`capacity`), the active health-check thread (`checks`), drains and trial limits and
//! the thread that ends their leases (`leases`), when a quiet worker gives its
//! freed memory back (`give_back`), the thread that follows
//! certificate files (`certificates`), and [`server::Proxy`], which starts, reloads and
//! stops them all.

pub mod capacity;
pub mod certificates;
pub mod checks;
pub mod give_back;
pub mod leases;
pub mod listen;
pub mod server;
pub mod view;
pub mod worker;
