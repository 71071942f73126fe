//! A listener's `tls`: the certificate files it serves. Only paths and their places in
//! the config are read here; reading the files and checking the certificates (parse,
//! key match, expiry) is the proxy's, which reports with the places kept here.

use crate::error::ConfigError;
use crate::model::{CertificateFiles, Place, Tls, UpstreamTls};
use crate::reader::Reader;
use crate::reference::{listener, names, upstream};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::TableLike;

/// `tls = { cert = "fullchain.pem", key = "privkey.pem" }`, with more certificates for
/// other names in `certificates = [{ cert, key }, ...]` (chosen by SNI; the first listed
/// is the default). Paths are relative to the config file's directory.
pub(crate) fn tls(r: &mut Reader, listener: &dyn TableLike) -> Option<Tls> {
    let item = listener.get("tls")?;
    let Some(table) = item.as_table_like() else {
        r.error(
            item.span(),
            "`tls` must be a table",
            "write tls = { cert = \"fullchain.pem\", key = \"privkey.pem\" }",
        );
        return None;
    };
    r.only_keys(table, &names(listener::TLS), "`tls`");
    let mut certificates = Vec::new();
    if table.contains_key("cert") || table.contains_key("key") {
        certificates.extend(pair(r, table, item.span()));
    }
    certificates.extend(more(r, table));
    let acme = match r.boolean(table, "acme") {
        Some(true) => Some(place(r, table.get("acme").and_then(|v| v.span()))),
        _ => None,
    };
    let named = ["cert", "key", "certificates"]
        .iter()
        .any(|k| table.contains_key(k))
        || acme.is_some();
    if !named {
        r.error(
            item.span(),
            "`tls` names no certificate",
            "add cert = \"fullchain.pem\" and key = \"privkey.pem\", or acme = true",
        );
    }
    Some(Tls { certificates, acme })
}

/// An upstream's `tls = true`, or `tls = { server_name = "api.internal", ca = "ca.pem" }`.
pub(crate) fn upstream(r: &mut Reader, t: &dyn TableLike) -> Option<UpstreamTls> {
    let item = t.get("tls")?;
    let at = place(r, item.span());
    if let Some(on) = item.as_bool() {
        return on.then_some(UpstreamTls {
            server_name: None,
            ca: None,
            at,
        });
    }
    let Some(table) = item.as_table_like() else {
        r.error(
            item.span(),
            "an upstream's `tls` must be true or a table",
            "write tls = true, or tls = { server_name = \"api.internal\", ca = \"ca.pem\" }",
        );
        return None;
    };
    r.only_keys(table, &names(upstream::UPSTREAM_TLS), "an upstream's `tls`");
    let server_name = r
        .string(table, "server_name")
        .map(|(n, _)| n.to_ascii_lowercase());
    let ca = r.string(table, "ca").map(|(c, _)| beside(r.file, &c));
    Some(UpstreamTls {
        server_name,
        ca,
        at,
    })
}

/// `certificates = [{ cert, key }, ...]`.
fn more(r: &mut Reader, table: &dyn TableLike) -> Vec<CertificateFiles> {
    let Some(v) = r.value(table, "certificates", "a list of { cert, key } tables") else {
        return Vec::new();
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            "`certificates` must be a list",
            "write certificates = [{ cert = \"a.pem\", key = \"a.key\" }]",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in list.iter() {
        match entry.as_inline_table() {
            Some(t) => {
                r.only_keys(t, &names(listener::CERTIFICATE), "a `certificates` entry");
                out.extend(pair(r, t, entry.span()));
            }
            None => r.error(
                entry.span(),
                "each `certificates` entry must be a table",
                "write { cert = \"a.pem\", key = \"a.key\" }",
            ),
        }
    }
    out
}

/// One `cert` and `key`, both required.
fn pair(r: &mut Reader, t: &dyn TableLike, span: Option<Range<usize>>) -> Option<CertificateFiles> {
    let cert = r.string(t, "cert");
    let key = r.string(t, "key");
    for (name, value) in [("cert", &cert), ("key", &key)] {
        if value.is_none() && t.get(name).is_none() {
            r.error(
                span.clone(),
                format!("a certificate without `{name}`"),
                "give both cert = \"fullchain.pem\" and key = \"privkey.pem\"",
            );
        }
        if matches!(value, Some((p, _)) if p.is_empty()) {
            r.error(
                value.as_ref().and_then(|v| v.1.clone()),
                format!("`{name}` is empty"),
                "write the path of a PEM file",
            );
        }
    }
    let ((cert, at), (key, _)) = (cert?, key?);
    Some(CertificateFiles {
        cert: beside(r.file, &cert),
        key: beside(r.file, &key),
        at: place(r, at),
        acme: false,
    })
}

/// `path` as written, relative to the directory of the config file `file`.
pub(crate) fn beside(file: &str, path: &str) -> PathBuf {
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    dir.join(path)
}

pub(crate) fn place(r: &Reader, span: Option<Range<usize>>) -> Place {
    let e = ConfigError::at(r.file, r.text, span, "", "");
    Place {
        file: e.file,
        line: e.line,
        col: e.col,
    }
}
