//! A request's `Accept-Encoding` (RFC 9110 12.5.3): the q-value it gives each coding
//! sluice knows, and the coding a route answers it with.

use super::{Coding, Plan};
use sluice_config::Compress;

/// The q-value (in thousandths) a request gives each of sluice's codings, 0 for a
/// coding it refuses or does not name (nor `*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    q: [u16; 3],
}

impl Accepted {
    /// What the request's `Accept-Encoding` lines say. No header accepts nothing: a
    /// client that says nothing gets the response as it is, as from every server.
    pub fn read(headers: &[httparse::Header<'_>]) -> Accepted {
        let mut named: [Option<u16>; 3] = [None; 3];
        let mut any = None;
        let lines = headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("accept-encoding"));
        for item in lines.flat_map(|h| h.value.split(|b| *b == b',')) {
            let Some((name, q)) = coding_and_q(item) else {
                continue;
            };
            let slot = match name {
                _ if name == b"*" => &mut any,
                _ if name.eq_ignore_ascii_case(b"gzip") || name.eq_ignore_ascii_case(b"x-gzip") => {
                    &mut named[index(Coding::Gzip)]
                }
                _ if name.eq_ignore_ascii_case(b"br") => &mut named[index(Coding::Br)],
                _ if name.eq_ignore_ascii_case(b"zstd") => &mut named[index(Coding::Zstd)],
                _ => continue,
            };
            // Named twice: the higher weight stands.
            *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
        }
        Accepted {
            q: named.map(|q| q.or(any).unwrap_or(0)),
        }
    }

    /// The q-value of `coding`, in thousandths.
    pub fn q(&self, coding: Coding) -> u16 {
        self.q[index(coding)]
    }

    /// The accepted codings that `usable` allows, by q-value, the earliest in
    /// [`Coding::PREFERENCE`] first among equals.
    pub fn ranked(&self, usable: impl Fn(Coding) -> bool) -> impl Iterator<Item = Coding> {
        let mut codings: Vec<Coding> = Coding::PREFERENCE
            .into_iter()
            .filter(|c| self.q(*c) > 0 && usable(*c))
            .collect();
        // Stable: equal q-values keep the order of preference.
        codings.sort_by_key(|c| std::cmp::Reverse(self.q(*c)));
        codings.into_iter()
    }

    /// The route's coding for this request: the accepted one it uses, highest q first.
    pub fn plan(&self, compress: &Compress) -> Plan {
        let mut best: Option<Coding> = None;
        for c in Coding::PREFERENCE {
            let better = best.is_none_or(|b| self.q(c) > self.q(b));
            if c.level(compress).is_some() && self.q(c) > 0 && better {
                best = Some(c);
            }
        }
        best.map_or(Plan::Identity, Plan::Encode)
    }
}

fn index(coding: Coding) -> usize {
    match coding {
        Coding::Zstd => 0,
        Coding::Br => 1,
        Coding::Gzip => 2,
    }
}

/// `gzip;q=0.8` -> (`gzip`, 800). `None` for an empty item; a malformed weight counts
/// as a refusal, the reading that never sends a client what it cannot decode.
fn coding_and_q(item: &[u8]) -> Option<(&[u8], u16)> {
    let mut parts = item.split(|b| *b == b';');
    let name = parts.next()?.trim_ascii();
    if name.is_empty() {
        return None;
    }
    let mut q = 1000;
    for param in parts {
        let param = param.trim_ascii();
        if let Some(value) = param.strip_prefix(b"q=").or(param.strip_prefix(b"Q=")) {
            q = weight(value).unwrap_or(0);
        }
    }
    Some((name, q))
}

/// A qvalue (`0`, `0.5`, `1.000`) in thousandths.
fn weight(value: &[u8]) -> Option<u16> {
    let (whole, fraction) = match value.iter().position(|b| *b == b'.') {
        Some(dot) => (&value[..dot], &value[dot + 1..]),
        None => (value, &b""[..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if whole.len() != 1 || fraction.len() > 3 || !digits(whole) || !digits(fraction) {
        return None;
    }
    let mut q = u16::from(whole[0] - b'0') * 1000;
    for (i, d) in fraction.iter().enumerate() {
        q += u16::from(d - b'0') * [100, 10, 1][i];
    }
    (q <= 1000).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(value: &str) -> Accepted {
        let headers = [httparse::Header {
            name: "Accept-Encoding",
            value: value.as_bytes(),
        }];
        Accepted::read(&headers)
    }

    fn all() -> Compress {
        Compress {
            gzip: Some(1),
            br: Some(4),
            zstd: Some(3),
            types: vec!["*".into()],
            min_length: 0,
            precompressed: false,
        }
    }

    #[test]
    fn the_highest_q_wins_and_the_servers_order_breaks_ties() {
        let c = all();
        let plan = |v| accepted(v).plan(&c);
        assert_eq!(plan("gzip, deflate, br, zstd"), Plan::Encode(Coding::Zstd));
        assert_eq!(plan("gzip, br"), Plan::Encode(Coding::Br));
        assert_eq!(plan("gzip;q=1, br;q=0.5"), Plan::Encode(Coding::Gzip));
        assert_eq!(plan("x-gzip"), Plan::Encode(Coding::Gzip));
        assert_eq!(plan("GZIP ; Q=0.9 , identity"), Plan::Encode(Coding::Gzip));
        assert_eq!(plan("*"), Plan::Encode(Coding::Zstd));
        assert_eq!(plan("*;q=0.5, zstd;q=0.1"), Plan::Encode(Coding::Br));
        let gzip_only = Compress {
            br: None,
            zstd: None,
            ..all()
        };
        assert_eq!(
            accepted("br, zstd, gzip;q=0.1").plan(&gzip_only),
            Plan::Encode(Coding::Gzip)
        );
    }

    #[test]
    fn q0_a_bad_weight_and_no_header_refuse() {
        let c = all();
        for refused in [
            "gzip;q=0",
            "gzip;q=0.000",
            "identity",
            "",
            "gzip;q=2",
            "gzip;q=abc",
            "*;q=0",
            "br;q=0, *",
        ] {
            let got = accepted(refused).plan(&c);
            let expected = if refused == "br;q=0, *" {
                Plan::Encode(Coding::Zstd)
            } else {
                Plan::Identity
            };
            assert_eq!(got, expected, "{refused:?}");
        }
        assert_eq!(Accepted::read(&[]).plan(&c), Plan::Identity);
    }

    #[test]
    fn ranked_lists_the_accepted_by_weight() {
        let got: Vec<Coding> = accepted("gzip, br;q=0.5, zstd;q=0")
            .ranked(|_| true)
            .collect();
        assert_eq!(got, [Coding::Gzip, Coding::Br]);
        let got: Vec<Coding> = accepted("gzip, br, zstd")
            .ranked(|c| c != Coding::Zstd)
            .collect();
        assert_eq!(got, [Coding::Br, Coding::Gzip]);
    }

    #[test]
    fn weights_read_as_the_rfc_writes_them() {
        assert_eq!(weight(b"1"), Some(1000));
        assert_eq!(weight(b"1.000"), Some(1000));
        assert_eq!(weight(b"0.5"), Some(500));
        assert_eq!(weight(b"0.125"), Some(125));
        assert_eq!(weight(b"1.5"), None);
        assert_eq!(weight(b"0.1234"), None);
        assert_eq!(weight(b".5"), None);
    }
}
