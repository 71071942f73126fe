//! Server host names (`"app1:8080"`, as docker-compose users write them) resolved into
//! addresses, at start, by `check` and on each reload, as nginx resolves the names in
//! its upstreams. The config crate never resolves; the data path never sees a name.

use sluice_config::{Config, ConfigError, Errors, Place, Server};
use std::net::{SocketAddr, ToSocketAddrs};

/// `config` with each named server replaced by its addresses (a name with several
/// addresses gives a server for each, as in nginx), or every name that failed.
pub fn names(mut config: Config) -> Result<Config, Errors> {
    let mut errors = Vec::new();
    let binds: Vec<SocketAddr> = config.listeners.iter().map(|l| l.bind).collect();
    for up in &mut config.upstreams {
        // Each server found, with where the config names it (for a name).
        let mut servers: Vec<(Server, Option<Place>)> = Vec::with_capacity(up.servers.len());
        for server in up.servers.drain(..) {
            let place = server.host.as_ref().map(|(_, p)| p.clone());
            let resolved = resolve(&server, &binds).and_then(|found| {
                let twice = found
                    .iter()
                    .find_map(|f| servers.iter().find(|(s, _)| s.addr == f.addr));
                match twice {
                    Some((earlier, at)) => Err(listed_twice(
                        &server,
                        earlier,
                        place.as_ref().or(at.as_ref()),
                    )),
                    None => Ok(found),
                }
            });
            match resolved {
                Ok(found) => servers.extend(found.into_iter().map(|s| (s, place.clone()))),
                Err(e) => errors.push(e),
            }
        }
        up.servers = servers.into_iter().map(|(s, _)| s).collect();
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
    addrs.sort();
    addrs.dedup();
    let place_error = |message: String, hint: &str| ConfigError::at_place(place, message, hint);
    if addrs.is_empty() {
        return Err(place_error(
            format!("server {}: {host} has no address", server.name),
            "check the name's records, or write its IP address",
        ));
    }
    if let Some(odd) = addrs.iter().find(|a| unconnectable(a)) {
        return Err(place_error(
            format!(
                "server {}: {host} is {odd}, not an address to connect to",
                server.name
            ),
            "check the name's records, or write the server's own IP address",
        ));
    }
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

/// A server whose address `earlier` of the same upstream has already; one of the two
/// is a name, and `at` is where the config writes it.
fn listed_twice(server: &Server, earlier: &Server, at: Option<&Place>) -> ConfigError {
    let message = format!(
        "server {} is {}, as is {} of the same upstream",
        server.name, earlier.addr, earlier.name
    );
    let hint = "list each server once (by name or by address, not both)";
    let nowhere = Place {
        file: String::new(),
        line: 0,
        col: 0,
    };
    ConfigError::at_place(at.unwrap_or(&nowhere), message, hint)
}

/// An address no server can be at: port 0, or the unspecified address.
pub fn unconnectable(addr: &SocketAddr) -> bool {
    addr.port() == 0 || addr.ip().is_unspecified()
}

/// Whether `addr` is one of sluice's own listeners (`binds`).
pub fn loops(addr: &SocketAddr, binds: &[SocketAddr]) -> bool {
    binds.iter().any(|b| {
        b.port() == addr.port()
            && (b.ip() == addr.ip() || (b.ip().is_unspecified() && addr.ip().is_loopback()))
    })
}
