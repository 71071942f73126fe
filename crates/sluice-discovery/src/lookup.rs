//! One `dns` entry looked up: its A/AAAA or SRV records turned into servers, with how
//! long the answer holds.

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::proto::rr::RData;
use hickory_resolver::TokioResolver;
use sluice_config::{Discover, DnsQuery, Resolver, Server};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// What a lookup found: the servers (sorted by address) and when to ask again.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub servers: Vec<Server>,
    pub ttl: Duration,
}

/// The largest weight a server takes (the config's bound): SRV weights go to 65,535,
/// and consistent hashing places points in proportion to the weight.
const MAX_WEIGHT: u32 = 10_000;

/// A resolver asking `settings.servers`, or the system's name servers when none are
/// given. Nothing is cached: each lookup asks, as it is made when the last answer ran out
/// (or when `max_ttl` cut it short, to follow changes sooner). Each query is sent twice
/// before it counts as failed: one lost UDP datagram must not look like an outage.
pub fn resolver(settings: &Resolver) -> Result<TokioResolver, NetError> {
    let provider = TokioRuntimeProvider::default();
    let mut builder = if settings.servers.is_empty() {
        TokioResolver::builder(provider)?
    } else {
        let servers = settings.servers.iter().map(|a| name_server(*a)).collect();
        TokioResolver::builder_with_config(ResolverConfig::from_name_servers(servers), provider)
    };
    let opts: &mut ResolverOpts = builder.options_mut();
    opts.cache_size = 0;
    opts.timeout = settings.timeout;
    opts.attempts = 2;
    builder.build()
}

fn name_server(addr: SocketAddr) -> NameServerConfig {
    let mut udp = ConnectionConfig::udp();
    udp.port = addr.port();
    let mut tcp = ConnectionConfig::tcp();
    tcp.port = addr.port();
    NameServerConfig::new(addr.ip(), true, vec![udp, tcp])
}

/// The servers `d` names now. A name that does not exist, or has no records, is an
/// answer (no servers); a resolver that fails or does not answer is an error.
pub async fn lookup(resolver: &TokioResolver, d: &Discover) -> Result<Answer, String> {
    let found = match &d.query {
        DnsQuery::Address { host, port } => addresses(resolver, d, host, *port).await,
        DnsQuery::Service(name) => services(resolver, d, name).await,
    };
    let mut answer = found.map_err(|e| e.to_string())?;
    // One server per address, whatever order the records came in: the primary one if
    // any, then the heaviest.
    answer
        .servers
        .sort_by_key(|s| (s.addr, s.backup, std::cmp::Reverse(s.weight)));
    answer.servers.dedup_by_key(|s| s.addr);
    Ok(answer)
}

/// How long to wait before asking for a name that has no records (its negative TTL is
/// not kept by the resolver, so a fixed short time).
const EMPTY_TTL: Duration = Duration::from_secs(5);

async fn addresses(
    resolver: &TokioResolver,
    d: &Discover,
    host: &str,
    port: u16,
) -> Result<Answer, NetError> {
    let (ips, ttl) = match ips(resolver, host).await? {
        Some(found) => found,
        None => return Ok(empty()),
    };
    let servers = ips
        .into_iter()
        .map(|ip| server(d, SocketAddr::new(ip, port), None, d.weight, d.backup))
        .collect();
    Ok(Answer { servers, ttl })
}

/// The addresses of `host` (A and AAAA asked apart) and their TTL; `None` when it has
/// neither. Only when both say "no records" is the name empty: any other failure of
/// either is a failed lookup, never a name without servers.
async fn ips(
    resolver: &TokioResolver,
    host: &str,
) -> Result<Option<(Vec<IpAddr>, Duration)>, NetError> {
    let name = absolute(host);
    let (v4, v6) = tokio::join!(
        resolver.ipv4_lookup(name.as_str()),
        resolver.ipv6_lookup(name.as_str())
    );
    let mut ips = Vec::new();
    let mut ttl: Option<Duration> = None;
    for found in [v4, v6] {
        match found {
            Ok(lookup) => {
                let left = lookup
                    .valid_until()
                    .saturating_duration_since(Instant::now());
                ttl = Some(ttl.map_or(left, |t| t.min(left)));
                ips.extend(lookup.answers().iter().filter_map(|r| match &r.data {
                    RData::A(a) => Some(IpAddr::V4(a.0)),
                    RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                    _ => None,
                }));
            }
            Err(e) if e.is_no_records_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok((!ips.is_empty()).then(|| (ips, ttl.unwrap_or(EMPTY_TTL))))
}

/// SRV records: each target's addresses on the record's port, weighted as the record
/// says; the records of the lowest priority serve, the others are backups.
async fn services(resolver: &TokioResolver, d: &Discover, name: &str) -> Result<Answer, NetError> {
    let found = match resolver.srv_lookup(absolute(name).as_str()).await {
        Ok(found) => found,
        Err(e) if e.is_no_records_found() => return Ok(empty()),
        Err(e) => return Err(e),
    };
    let mut ttl = found
        .valid_until()
        .saturating_duration_since(Instant::now());
    let records: Vec<_> = found
        .answers()
        .iter()
        .filter_map(|r| match &r.data {
            RData::SRV(srv) if !srv.target.is_root() => Some(srv.clone()),
            _ => None,
        })
        .collect();
    let first = records.iter().map(|s| s.priority).min();
    let mut servers = Vec::new();
    for srv in &records {
        let absolute = srv.target.to_utf8();
        let Some((ips, target_ttl)) = ips(resolver, &absolute).await? else {
            continue;
        };
        ttl = ttl.min(target_ttl);
        let target = absolute.trim_end_matches('.');
        let backup = d.backup || Some(srv.priority) != first;
        let weight = u32::from(srv.weight).clamp(1, MAX_WEIGHT);
        let several = ips.len() > 1;
        for ip in ips {
            let addr = SocketAddr::new(ip, srv.port);
            // Named by its target, which stays as a pod's address changes (consistent
            // hashing keeps its keys); a target with several addresses adds each.
            let name = if several {
                format!("{target}:{}/{ip}", srv.port)
            } else {
                format!("{target}:{}", srv.port)
            };
            servers.push(server(d, addr, Some(name), weight, backup));
        }
    }
    Ok(Answer { servers, ttl })
}

fn empty() -> Answer {
    Answer {
        servers: Vec::new(),
        ttl: EMPTY_TTL,
    }
}

/// A name with a dot is asked as written (`app.ns.svc.cluster.local` would otherwise
/// go through the search list first: with Kubernetes' ndots:5, six queries that fail
/// before the one that answers); a single label (`app`, Docker's and Kubernetes' short
/// names) goes through the search list as the system's resolver would send it.
fn absolute(name: &str) -> String {
    let name = name.trim_end_matches('.');
    if name.contains('.') {
        format!("{name}.")
    } else {
        name.to_string()
    }
}

/// A server found by `d`: named by its address (the same in every sluice that finds
/// it, so consistent hashing agrees) unless given a name.
fn server(
    d: &Discover,
    addr: SocketAddr,
    name: Option<String>,
    weight: u32,
    backup: bool,
) -> Server {
    Server {
        addr,
        weight,
        name: name.unwrap_or_else(|| addr.to_string()),
        backup,
        max_conns: d.max_conns,
        host: None,
    }
}

#[cfg(test)]
mod tests {
    use super::absolute;

    #[test]
    fn dotted_names_are_asked_as_written_and_short_ones_through_the_search_list() {
        assert_eq!(
            absolute("app.ns.svc.cluster.local"),
            "app.ns.svc.cluster.local."
        );
        assert_eq!(absolute("app.internal."), "app.internal.");
        assert_eq!(absolute("app"), "app");
    }
}
