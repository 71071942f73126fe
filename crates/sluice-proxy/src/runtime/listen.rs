//! Listening sockets: one per worker and address, all bound with SO_REUSEPORT so the
//! kernel spreads new connections across workers without a shared accept lock.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener};

/// A worker's listening socket, with the address the config gave it (its key in the
/// generation's TLS listeners).
pub type Bound = (SocketAddr, TcpListener);

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
    let first = bind(addr).map_err(|e| explain(addr, e))?;
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
    probe.bind(&addr.into()).map_err(|e| explain(addr, e))
}

/// A bind error that names the address and why: who holds the port, or the
/// capability a privileged port needs.
fn explain(addr: SocketAddr, e: io::Error) -> io::Error {
    let why = match e.kind() {
        io::ErrorKind::AddrInUse => match who_listens(addr.port()) {
            Some(owner) => format!("{addr} is already in use by {owner}"),
            None => format!("{addr} is already in use (is another sluice running?)"),
        },
        io::ErrorKind::PermissionDenied if addr.port() < 1024 => format!(
            "{addr}: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability (setcap cap_net_bind_service=+ep on the binary, or AmbientCapabilities= in a systemd unit)"
        ),
        io::ErrorKind::AddrNotAvailable => {
            format!("{addr}: no network interface of this machine has that address")
        }
        _ => format!("{addr}: {e}"),
    };
    io::Error::new(e.kind(), why)
}

/// The process listening on TCP `port`, as `name (pid N)`, when /proc tells (a
/// process of another user may not be visible).
fn who_listens(port: u16) -> Option<String> {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|table| listening_inode(&table, port))?;
    let wanted = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str())
        });
        if holds {
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            return Some(format!("{} (pid {pid})", name.trim()));
        }
    }
    None
}

/// The inode of the socket listening on `port` in a /proc/net/tcp table.
fn listening_inode(table: &str, port: u16) -> Option<String> {
    let local = format!(":{port:04X}");
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // local_address is field 1, st field 3 (0A: LISTEN), inode field 9.
        (f.len() > 9 && f[1].ends_with(&local) && f[3] == "0A").then(|| f[9].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_names_its_owner() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let e = bind_group(addr, 1).unwrap_err();
        let me = std::fs::read_to_string("/proc/self/comm").unwrap();
        let expected = format!(
            "{addr} is already in use by {} (pid {})",
            me.trim(),
            std::process::id()
        );
        assert_eq!(e.to_string(), expected);
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }
}
