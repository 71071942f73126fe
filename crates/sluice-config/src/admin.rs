//! The `[admin]` section: where the admin listener (metrics, JSON API, dashboard) binds
//! and the token it asks for. Loopback needs no token; any other address does, so that
//! drain and reload are never open to the network by accident.

use crate::model::{Admin, Listener};
use crate::reader::Reader;
use crate::reference::{names, top};
use crate::servers::socket_addr;
use toml_edit::{Item, TableLike};

/// Where the admin listener binds when `[admin]` gives no `bind`.
pub const DEFAULT_BIND: &str = "127.0.0.1:9901";

/// The shortest token accepted: a guessable token is no protection.
const MIN_TOKEN: usize = 16;

pub(crate) fn admin(r: &mut Reader, root: &dyn TableLike, listeners: &[Listener]) -> Option<Admin> {
    let item = root.get("admin")?;
    let Some(table) = item.as_table_like() else {
        r.error(
            item.span(),
            "`admin` must be a table",
            "write it as [admin] with bind = \"127.0.0.1:9901\"",
        );
        return None;
    };
    r.only_keys(table, &names(top::ADMIN), "[admin]");
    let bind = match r.string(table, "bind") {
        Some((text, span)) => (socket_addr(r, &text, span.clone(), "bind")?, span),
        None => (DEFAULT_BIND.parse().expect("a valid default"), None),
    };
    let token = r.string(table, "token").map(|(t, span)| {
        if t.len() < MIN_TOKEN || t.chars().any(|c| !c.is_ascii_graphic()) {
            r.error(
                span,
                format!("`token` must be at least {MIN_TOKEN} visible characters"),
                "generate one, e.g. with: openssl rand -hex 32",
            );
        }
        t
    });
    let (addr, span) = bind;
    let span = span.or_else(|| root.get("admin").and_then(Item::span));
    if !addr.ip().is_loopback() && token.is_none() {
        r.error(
            span.clone(),
            format!("the admin listener on {addr} is reachable from the network and has no `token`"),
            "add token = \"...\" (clients send it as `Authorization: Bearer ...`), or bind to 127.0.0.1",
        );
    }
    // Port 0 is any free port: two of them never collide.
    if addr.port() != 0 && listeners.iter().any(|l| l.bind == addr) {
        r.error(
            span,
            format!("the admin listener's {addr} is also a [[listener]]"),
            "give the admin listener a port of its own: proxied traffic never shares it",
        );
    }
    let hint = "leave it out for 64, enough for a few scrapers and dashboards";
    let max_conns =
        crate::limits::count(r, table, "max_conns", hint).unwrap_or(Admin::DEFAULT_MAX_CONNS);
    let header_timeout = r
        .timeout(table, "header_timeout")
        .unwrap_or(Admin::DEFAULT_HEADER_TIMEOUT);
    Some(Admin {
        bind: addr,
        token,
        max_conns,
        header_timeout,
    })
}
