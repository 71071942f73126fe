//! The handover's wire: a manifest (which listener each socket serves, as JSON behind its
//! length) and then the sockets themselves, as descriptors in SCM_RIGHTS messages over
//! the upgrade socket; and the peer's credentials. Owns the format only: what is handed
//! over, and when, is `handover`'s and `takeover`'s.

use rustix::net::{
    recvmsg, sendmsg, sockopt, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// The manifest's version: a new binary refuses a manifest it does not know, and the old
/// one keeps serving.
const PROTOCOL: u64 = 1;
/// Descriptors in one message, below the kernel's limit (SCM_MAX_FD, 253).
const PER_MESSAGE: usize = 200;
/// The longest manifest read: a few hundred bytes per listener.
const MAX_MANIFEST: usize = 1 << 20;

/// What a socket handed over is, with the address its listener was configured at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A worker's socket of a `[[listener]]`.
    Listener(SocketAddr),
    /// The `[admin]` listener's.
    Admin(SocketAddr),
}

/// Sends the manifest of `sockets`, then the sockets, from the process `pid`.
pub fn send(stream: &UnixStream, pid: u32, sockets: &[(Kind, BorrowedFd<'_>)]) -> io::Result<()> {
    let kinds: Vec<serde_json::Value> = sockets.iter().map(|(k, _)| kind_json(*k)).collect();
    let manifest = serde_json::json!({ "protocol": PROTOCOL, "pid": pid, "sockets": kinds });
    let text = manifest.to_string();
    let len = u32::try_from(text.len()).map_err(io::Error::other)?;
    let mut writer = stream;
    writer.write_all(&len.to_be_bytes())?;
    writer.write_all(text.as_bytes())?;
    let fds: Vec<BorrowedFd<'_>> = sockets.iter().map(|(_, fd)| *fd).collect();
    for chunk in fds.chunks(PER_MESSAGE) {
        let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(chunk.len()))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(chunk)) {
            return Err(io::Error::other("descriptors do not fit their message"));
        }
        // One byte of data carries each message's descriptors (none travel alone).
        let count = [chunk.len() as u8];
        sendmsg(
            stream,
            &[IoSlice::new(&count)],
            &mut control,
            SendFlags::empty(),
        )?;
    }
    Ok(())
}

/// Receives a manifest and its sockets: each socket with what it is, and the sending
/// process's id.
pub fn receive(stream: &UnixStream) -> io::Result<(u32, Vec<(Kind, OwnedFd)>)> {
    let (pid, kinds) = read_manifest(stream)?;
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(kinds.len());
    while fds.len() < kinds.len() {
        let mut byte = [0u8; 1];
        let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(PER_MESSAGE))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut data = [IoSliceMut::new(&mut byte)];
        let got = recvmsg(stream, &mut data, &mut control, RecvFlags::CMSG_CLOEXEC)?;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        if got.flags.contains(ReturnFlags::CTRUNC) {
            return Err(io::Error::other(
                "sockets were cut off (the open-file limit?)",
            ));
        }
        if got.bytes == 0 {
            return Err(io::Error::other(format!(
                "the running sluice closed the connection after {} of {} sockets",
                fds.len(),
                kinds.len()
            )));
        }
    }
    if fds.len() != kinds.len() {
        return Err(io::Error::other(
            "more sockets came than the manifest lists",
        ));
    }
    Ok((pid, kinds.into_iter().zip(fds).collect()))
}

/// The manifest: the sender's pid and what each socket to come is.
fn read_manifest(stream: &UnixStream) -> io::Result<(u32, Vec<Kind>)> {
    let mut reader = stream;
    let mut len = [0u8; 4];
    reader.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MANIFEST {
        return Err(io::Error::other(format!("a manifest of {len} bytes")));
    }
    // Exactly the manifest's bytes: a read past them would take the first descriptors'
    // message without its descriptors.
    let mut text = vec![0u8; len];
    reader.read_exact(&mut text)?;
    let bad = |what: &str| io::Error::other(format!("the running sluice's manifest: {what}"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
    if manifest["protocol"].as_u64() != Some(PROTOCOL) {
        return Err(bad(&format!(
            "protocol {} where this binary speaks {PROTOCOL}",
            manifest["protocol"]
        )));
    }
    let pid = manifest["pid"].as_u64().and_then(|p| u32::try_from(p).ok());
    let pid = pid.ok_or_else(|| bad("no pid"))?;
    let sockets = manifest["sockets"]
        .as_array()
        .ok_or_else(|| bad("no sockets"))?;
    let kinds = sockets
        .iter()
        .map(|s| parse_kind(s).ok_or_else(|| bad(&s.to_string())));
    Ok((pid, kinds.collect::<io::Result<_>>()?))
}

fn kind_json(kind: Kind) -> serde_json::Value {
    match kind {
        Kind::Listener(addr) => serde_json::json!({ "listener": addr.to_string() }),
        Kind::Admin(addr) => serde_json::json!({ "admin": addr.to_string() }),
    }
}

fn parse_kind(value: &serde_json::Value) -> Option<Kind> {
    let addr = |key: &str| value[key].as_str()?.parse::<SocketAddr>().ok();
    addr("listener")
        .map(Kind::Listener)
        .or_else(|| addr("admin").map(Kind::Admin))
}

/// The longest line a request or an answer takes.
const MAX_LINE: usize = 4096;

/// One line from the peer, read a byte at a time: a buffer could read on into the
/// manifest, or into a message of descriptors, which would be lost.
pub fn read_line(stream: &UnixStream) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    let mut reader = stream;
    while line.len() < MAX_LINE {
        if reader.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed",
            ));
        }
        if byte[0] == b'\n' {
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        line.push(byte[0]);
    }
    Err(io::Error::other("a line longer than the protocol's"))
}

/// Refuses a peer of another user (root excepted): the upgrade socket's mode (0600)
/// already does, where its directory lets others create a socket in its place.
pub fn check_peer(stream: &UnixStream) -> io::Result<u32> {
    let peer = sockopt::socket_peercred(stream)?;
    let me = rustix::process::geteuid();
    if peer.uid != me && !peer.uid.is_root() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a process of user {} (pid {}) is not this sluice's user",
                peer.uid.as_raw(),
                peer.pid.as_raw_nonzero()
            ),
        ));
    }
    Ok(peer.pid.as_raw_nonzero().get() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Sockets handed over arrive as the same sockets (the listener's address), in
    /// order, with their kinds; more than one message's worth too.
    #[test]
    fn sockets_arrive_with_their_kinds_in_order() {
        let (a, b) = UnixStream::pair().unwrap();
        let listeners: Vec<std::net::TcpListener> = (0..PER_MESSAGE + 5)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let configured: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut sockets: Vec<(Kind, BorrowedFd<'_>)> = listeners
            .iter()
            .map(|l| (Kind::Listener(configured), l.as_fd()))
            .collect();
        let admin = Kind::Admin("127.0.0.1:9901".parse().unwrap());
        sockets[3].0 = admin;
        let (pid, received) = std::thread::scope(|scope| {
            let sender = scope.spawn(|| send(&a, 42, &sockets));
            let received = receive(&b).unwrap();
            sender.join().unwrap().unwrap();
            received
        });
        assert_eq!(pid, 42);
        assert_eq!(received.len(), listeners.len());
        for (i, ((kind, fd), original)) in received.into_iter().zip(&listeners).enumerate() {
            let expected = if i == 3 {
                admin
            } else {
                Kind::Listener(configured)
            };
            assert_eq!(kind, expected);
            let got = std::net::TcpListener::from(fd).local_addr().unwrap();
            assert_eq!(got, original.local_addr().unwrap());
        }
    }

    #[test]
    fn an_unknown_protocol_is_refused_by_name() {
        let (a, b) = UnixStream::pair().unwrap();
        let text = br#"{"protocol":9,"pid":1,"sockets":[]}"#;
        (&a).write_all(&(text.len() as u32).to_be_bytes()).unwrap();
        (&a).write_all(text).unwrap();
        let e = receive(&b).unwrap_err().to_string();
        assert!(e.contains("protocol 9 where this binary speaks 1"), "{e}");
    }
}
