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
    if addr.port() != 0 {
        ensure_free(addr)?;
    }
    let first = bind(addr)?;
    let actual = first.local_addr()?;
    let mut group = vec![first];
    for _ in 1..workers {
        group.push(bind(actual)?);
    }
    Ok((actual, group))
}

/// Fails if anything listens on `addr` already. SO_REUSEPORT would otherwise let a second
/// sluice (or any process of ours that set it) share the port silently and take half the
/// connections; a plain bind, without the option, is refused while anyone listens there.
fn ensure_free(addr: SocketAddr) -> io::Result<()> {
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    probe.set_reuse_address(true)?;
    if addr.is_ipv6() {
        probe.set_only_v6(true)?;
    }
    probe.bind(&addr.into()).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            io::Error::new(
                e.kind(),
                format!("{addr} is already in use (is another sluice running?)"),
            )
        } else {
            e
        }
    })
}
