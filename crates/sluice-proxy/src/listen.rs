//! Listening sockets: one per worker and address, all bound with SO_REUSEPORT so the
//! kernel spreads new connections across workers without a shared accept lock.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener};

/// Backlog asked of the kernel (it caps this at net.core.somaxconn).
const BACKLOG: i32 = 4096;

pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nodelay(true)?;
    socket.set_nonblocking(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// `workers` listeners on `addr`. Port 0 is resolved by the first bind, and the others
/// join that port, so every worker serves the same address.
pub fn bind_group(addr: SocketAddr, workers: usize) -> io::Result<(SocketAddr, Vec<TcpListener>)> {
    let first = bind(addr)?;
    let actual = first.local_addr()?;
    let mut group = vec![first];
    for _ in 1..workers {
        group.push(bind(actual)?);
    }
    Ok((actual, group))
}
