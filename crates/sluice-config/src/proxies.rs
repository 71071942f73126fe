//! Who stands in front of sluice: `trusted_proxies` (the addresses whose forwarding
//! headers are kept), as IP networks.

use crate::model::Network;
use crate::reader::Reader;
use std::net::IpAddr;
use toml_edit::TableLike;

/// `trusted_proxies = ["10.0.0.0/8", "127.0.0.1"]`.
pub fn trusted(r: &mut Reader, root: &dyn TableLike) -> Vec<Network> {
    networks(r, root, "trusted_proxies")
}

/// A list of addresses and networks under `key` (none when absent).
pub fn networks(r: &mut Reader, t: &dyn TableLike, key: &str) -> Vec<Network> {
    let Some(item) = t.get(key) else {
        return Vec::new();
    };
    let Some(list) = item.as_array() else {
        r.error(
            item.span(),
            format!("`{key}` must be a list"),
            format!("write {key} = [\"10.0.0.0/8\", \"127.0.0.1\"]"),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in list.iter() {
        match v.as_str().and_then(network) {
            Some(n) => out.push(n),
            None => r.error(
                v.span(),
                format!("`{key}` entry {} is not an IP address or network", v.to_string().trim()),
                "write an address (\"10.0.0.5\") or a network in CIDR form (\"10.0.0.0/8\", \"fd00::/8\")",
            ),
        }
    }
    out
}

/// `IP` or `IP/prefix`, the prefix within the address's length.
pub(crate) fn network(text: &str) -> Option<Network> {
    let (ip, prefix) = match text.split_once('/') {
        Some((ip, p)) => (ip.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
        None => (text.parse::<IpAddr>().ok()?, None),
    };
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = prefix.unwrap_or(bits);
    if prefix > bits {
        return None;
    }
    // `::ffff:10.0.0.0/104` is 10.0.0.0/8: clients are matched as IPv4 (see
    // `Network::contains`), so a rule written in the mapped form must be too.
    match ip {
        IpAddr::V6(v6) if prefix >= 96 => match v6.to_ipv4_mapped() {
            Some(v4) => Some(Network {
                ip: IpAddr::V4(v4),
                prefix: prefix - 96,
            }),
            None => Some(Network { ip, prefix }),
        },
        _ => Some(Network { ip, prefix }),
    }
}

#[cfg(test)]
mod tests {
    use super::network;

    #[test]
    fn networks_contain_their_addresses_only() {
        let ten = network("10.0.0.0/8").unwrap();
        assert!(ten.contains("10.200.3.4".parse().unwrap()));
        assert!(!ten.contains("11.0.0.1".parse().unwrap()));
        assert!(!ten.contains("::1".parse().unwrap()));
        let one = network("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!(network("fd00::/8")
            .unwrap()
            .contains("fd12::1".parse().unwrap()));
        // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d.
        assert!(ten.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(network("10.0.0.0/33").is_none() && network("ten").is_none());
        let mapped = network("::ffff:10.0.0.0/104").unwrap();
        assert!(mapped.contains("10.9.9.9".parse().unwrap()));
        assert!(mapped.contains("::ffff:10.9.9.9".parse().unwrap()));
        assert!(!mapped.contains("11.0.0.1".parse().unwrap()));
    }
}
