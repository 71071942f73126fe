//! Listening sockets: one per worker and address, all bound with SO_REUSEPORT so the
//! kernel spreads new connections across workers without a shared accept lock; or the
//! sockets a previous sluice handed over ([`Inherited`], a binary upgrade), adopted as
//! they are. Never closes a handed-over socket: its queued connections would go with it.

use socket2::{Domain, Protocol, Socket, Type};
use std::collections::HashMap;
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

/// Listening sockets a previous sluice handed over (a binary upgrade), by the address
/// their listener was configured at.
#[derive(Default)]
pub struct Inherited {
    sockets: HashMap<SocketAddr, Vec<TcpListener>>,
}

impl Inherited {
    /// Adds a socket of the listener configured at `configured`.
    pub fn add(&mut self, configured: SocketAddr, socket: TcpListener) {
        self.sockets.entry(configured).or_default().push(socket);
    }

    /// The sockets of the listener configured at `configured`, if any came.
    fn take(&mut self, configured: SocketAddr) -> Option<Vec<TcpListener>> {
        self.sockets.remove(&configured)
    }

    /// Addresses of sockets that came and that no listener took (the new config left
    /// them): closed when this is dropped.
    fn left(&self) -> Vec<SocketAddr> {
        self.sockets.keys().copied().collect()
    }
}

/// The sockets for the listener configured at `addr`: those handed over if any came
/// (`inherited`), else bound now.
pub fn open_group(
    addr: SocketAddr,
    workers: usize,
    inherited: &mut Inherited,
) -> io::Result<(SocketAddr, Vec<TcpListener>)> {
    match inherited.take(addr) {
        Some(sockets) => adopt(addr, sockets, workers),
        None => bind_group(addr, workers),
    }
}

/// Logs the handed-over sockets no listener took.
pub fn report_left(inherited: &Inherited) {
    for addr in inherited.left() {
        tracing::warn!(listener = %addr, "a listener of the previous process is not in this config: its socket is closed");
    }
}

/// Handed-over sockets of the listener configured at `addr`: every one of them (a
/// socket closed here would drop the connections in its queue, which the kernel gave it
/// among its SO_REUSEPORT group), and new ones joining their group until there is one
/// per worker. Fails if one is not bound where the config says.
fn adopt(
    addr: SocketAddr,
    mut sockets: Vec<TcpListener>,
    workers: usize,
) -> io::Result<(SocketAddr, Vec<TcpListener>)> {
    let mut actual = None;
    for socket in &sockets {
        let bound = socket.local_addr()?;
        let fits = bound.ip() == addr.ip() && (addr.port() == 0 || bound.port() == addr.port());
        if !fits || actual.is_some_and(|a| a != bound) {
            return Err(io::Error::other(format!(
                "a socket handed over for listener {addr} is bound to {bound}"
            )));
        }
        socket.set_nonblocking(true)?;
        actual = Some(bound);
    }
    let actual = actual.ok_or_else(|| io::Error::other(format!("no socket for {addr}")))?;
    while sockets.len() < workers {
        sockets.push(bind(actual)?);
    }
    Ok((actual, sockets))
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

    /// Every socket handed over is kept (fewer workers: several per worker), and more
    /// join their group when there are more workers; all on the same address.
    #[test]
    fn handed_over_sockets_are_kept_and_joined_up_to_one_per_worker() {
        let configured: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (actual, group) = bind_group(configured, 2).unwrap();
        for (workers, expected) in [(1, 2), (3, 3)] {
            let mut inherited = Inherited::default();
            for s in &group {
                inherited.add(configured, s.try_clone().unwrap());
            }
            let (bound, adopted) = open_group(configured, workers, &mut inherited).unwrap();
            assert_eq!(bound, actual);
            assert_eq!(adopted.len(), expected, "{workers} workers");
            assert!(adopted.iter().all(|s| s.local_addr().unwrap() == actual));
            assert!(inherited.left().is_empty());
        }
    }

    #[test]
    fn a_socket_handed_over_for_another_port_is_refused() {
        let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bound = elsewhere.local_addr().unwrap();
        let configured = SocketAddr::from(([127, 0, 0, 1], bound.port() ^ 1));
        let mut inherited = Inherited::default();
        inherited.add(configured, elsewhere);
        let e = open_group(configured, 1, &mut inherited).unwrap_err();
        let expected =
            format!("a socket handed over for listener {configured} is bound to {bound}");
        assert_eq!(e.to_string(), expected);
    }

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
