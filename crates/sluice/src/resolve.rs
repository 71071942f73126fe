//! Server host names (`"app1:8080"`, as docker-compose users write them) resolved into
//! addresses, at start, by `check` and on each reload, as nginx resolves the names in
//! its upstreams. The config crate never resolves; the data path never sees a name.

use sluice_config::{Config, ConfigError, Errors, Server};
use std::net::{SocketAddr, ToSocketAddrs};

/// `config` with each named server replaced by its addresses (a name with several
/// addresses gives a server for each, as in nginx), or every name that failed.
pub fn names(mut config: Config) -> Result<Config, Errors> {
    let mut errors = Vec::new();
    let binds: Vec<SocketAddr> = config.listeners.iter().map(|l| l.bind).collect();
    for up in &mut config.upstreams {
        let mut servers = Vec::with_capacity(up.servers.len());
        for server in up.servers.drain(..) {
            match resolve(&server, &binds) {
                Ok(resolved) => servers.extend(resolved),
                Err(e) => errors.push(e),
            }
        }
        up.servers = servers;
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(Errors(errors))
    }
}

/// One server's addresses: itself when it has no name.
fn resolve(server: &Server, binds: &[SocketAddr]) -> Result<Vec<Server>, ConfigError> {
    let Some((host, place)) = &server.host else {
        return Ok(vec![server.clone()]);
    };
    let port = server.addr.port();
    let mut addrs: Vec<SocketAddr> =
        match (host.as_str(), port).to_socket_addrs() {
            Ok(found) => found.collect(),
            Err(e) => return Err(ConfigError::at_place(
                place,
                format!("server {}: cannot resolve {host}: {e}", server.name),
                "check the name (and /etc/hosts or DNS on this machine), or write its IP address",
            )),
        };
    addrs.dedup();
    if let Some(own) = addrs.iter().find(|a| loops(a, binds)) {
        return Err(ConfigError::at_place(
            place,
            format!(
                "server {} is {own}, one of sluice's own listeners",
                server.name
            ),
            "requests would loop back into sluice; point the upstream at the app servers",
        ));
    }
    // One address keeps the name as written: consistent hashing places the server by
    // that text, as nginx does. Several are told apart by their addresses.
    let single = addrs.len() == 1;
    Ok(addrs
        .into_iter()
        .map(|addr| Server {
            addr,
            name: if single {
                server.name.clone()
            } else {
                addr.to_string()
            },
            host: None,
            ..server.clone()
        })
        .collect())
}

fn loops(addr: &SocketAddr, binds: &[SocketAddr]) -> bool {
    binds.iter().any(|b| {
        b.port() == addr.port()
            && (b.ip() == addr.ip() || (b.ip().is_unspecified() && addr.ip().is_loopback()))
    })
}
