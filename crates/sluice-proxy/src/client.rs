//! A client connection as accepted: who it is, which listener it came in on and how it
//! speaks there. Built once at accept (`runtime::worker`), after the PROXY protocol
//! header if any, and read by every stage of every request on the connection: the
//! forwarding headers (`http1::encode`), routing and hash keys (`route`), the limits
//! (`session`) and the record (`record`). Plain data: it owns no socket and no counter.

use std::net::SocketAddr;

/// One client connection's facts, fixed for its life.
#[derive(Clone, Debug)]
pub struct Client {
    /// The client's address (the one a PROXY protocol header named, if any).
    pub peer: SocketAddr,
    /// `peer`'s IP as text: `X-Forwarded-For`, `X-Real-IP`, `$remote_addr`, hash keys.
    pub ip: String,
    /// The listener it came in on, as configured: routes may be limited to some.
    pub listener: SocketAddr,
    /// Clients use `https` there (else `http`): see [`Client::proto`].
    pub https: bool,
    /// The client is one of `trusted_proxies`: the X-Real-IP, X-Forwarded-Proto and
    /// X-Forwarded-Host it sends are kept, not replaced.
    pub trusted: bool,
    /// The client had `max_conns_per_client` open already: its requests are answered 429
    /// and the connection closed.
    pub crowded: bool,
}

impl Client {
    /// A client at `peer` on the listener configured at `listener`, neither trusted nor
    /// crowded.
    pub fn new(peer: SocketAddr, listener: SocketAddr, proto: &'static str) -> Self {
        Client {
            peer,
            ip: peer.ip().to_string(),
            listener,
            https: proto == "https",
            trusted: false,
            crowded: false,
        }
    }

    /// The scheme clients use on its listener (`http` or `https`), for
    /// `X-Forwarded-Proto` and `$scheme`. A flag, not the text: every connection holds
    /// a `Client`, idle ones too (issue 32).
    pub fn proto(&self) -> &'static str {
        if self.https {
            "https"
        } else {
            "http"
        }
    }
}
