//! `[acme]`: certificates obtained and renewed from an ACME CA (Let's Encrypt by
//! default) over HTTP-01, for the listeners whose `tls` says `acme = true`. Only the
//! settings are read here; the protocol is `sluice-acme`'s, the challenge answers the
//! proxy's.

use crate::model::{Acme, CertificateFiles, Listener};
use crate::reader::Reader;
use crate::reference::{self, top};
use std::path::Path;
use toml_edit::{Item, TableLike};

/// Let's Encrypt's production directory.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

pub(crate) fn acme(r: &mut Reader, root: &dyn TableLike) -> Option<Acme> {
    let item = root.get("acme")?;
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`acme` must be a table",
            "write [acme] with domains = [\"example.com\"]",
        );
        return None;
    };
    r.only_keys(t, &reference::names(top::ACME), "[acme]");
    let directory = r
        .string(t, "directory")
        .map_or(LETS_ENCRYPT.to_string(), |(d, _)| d);
    if !directory.starts_with("https://") {
        let span = t.get("directory").and_then(Item::span);
        r.error(
            span,
            "the ACME `directory` must be an https:// URL",
            "Let's Encrypt's is the default",
        );
    }
    let domains = names(r, t, "domains");
    if domains.is_empty() && t.get("domains").is_none() {
        r.error(
            item.span(),
            "[acme] has no `domains`",
            "add domains = [\"example.com\", \"www.example.com\"]",
        );
    }
    let beside = |p: &str| Path::new(r.file).parent().unwrap_or(Path::new("")).join(p);
    let storage = r
        .string(t, "storage")
        .map_or_else(|| beside("acme"), |(s, _)| beside(&s));
    let ca = r.string(t, "ca").map(|(c, _)| beside(&c));
    let renew_days = r.integer(t, "renew_days", 365).unwrap_or(30) as u32;
    let contact = strings(r, t, "contact");
    let at = crate::tls::place(r, item.span());
    Some(Acme {
        directory,
        contact,
        domains,
        storage,
        ca,
        renew_days,
        at,
    })
}

/// `domains`: host names (no wildcard: HTTP-01 cannot prove one), lower-case.
fn names(r: &mut Reader, t: &dyn TableLike, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(v) = r.value(t, key, "a list of host names") else {
        return out;
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            format!("`{key}` must be a list of host names"),
            "write domains = [\"example.com\"]",
        );
        return out;
    };
    for d in list.iter() {
        let name = d.as_str().map(str::to_ascii_lowercase);
        let valid = name.as_deref().is_some_and(|n| {
            !n.is_empty()
                && n.split('.').all(|l| {
                    !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        });
        match name {
            Some(n) if valid => out.push(n),
            _ => r.error(
                d.span(),
                "not a host name an ACME CA can issue for over HTTP-01",
                "write \"example.com\": no wildcard, scheme or port",
            ),
        }
    }
    out
}

fn strings(r: &mut Reader, t: &dyn TableLike, key: &str) -> Vec<String> {
    let Some(v) = r.value(t, key, "a list of strings") else {
        return Vec::new();
    };
    match v.as_array().map(|a| {
        a.iter()
            .map(|s| s.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
    }) {
        Some(Some(list)) => list,
        _ => {
            r.error(
                v.span(),
                format!("`{key}` must be a list of strings"),
                "write contact = [\"mailto:ops@example.com\"]",
            );
            Vec::new()
        }
    }
}

/// Gives each listener whose `tls` asks for it the ACME certificate (first: the
/// default), or an error at its `acme` key when there is no `[acme]`.
pub(crate) fn attach(r: &mut Reader, acme: Option<&Acme>, listeners: &mut [Listener]) {
    for l in listeners.iter_mut() {
        let Some(tls) = l.tls.as_mut() else { continue };
        let Some(place) = tls.acme.clone() else {
            continue;
        };
        match acme {
            Some(a) => tls.certificates.insert(
                0,
                CertificateFiles {
                    cert: a.storage.join("fullchain.pem"),
                    key: a.storage.join("privkey.pem"),
                    at: a.at.clone(),
                    acme: true,
                },
            ),
            None => {
                r.errors.push(crate::error::ConfigError::at_place(
                    &place,
                    "`acme = true` but there is no [acme] section",
                    "add [acme] with domains = [\"example.com\"] (and contact = [\"mailto:...\"])",
                ));
            }
        }
    }
}
