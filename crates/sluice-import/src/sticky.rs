//! nginx's `sticky` (open source since 1.29.6, NGINX Plus before) as an upstream's
//! `sticky`: `sticky cookie` as sluice's own cookie, `sticky learn` on an application's
//! session cookie as `learn`; `sticky route` noted.

use crate::emit::quote;
use crate::tree::Node;
use crate::Notes;

/// `sticky cookie NAME [expires=] [domain=] [path=] [httponly] [secure] [samesite=]` or
/// `sticky learn create=$upstream_cookie_NAME lookup=$cookie_NAME zone=... [timeout=]`,
/// as the inline table sluice writes; `None` (noted) for what it cannot carry.
pub fn sticky(d: &Node, notes: &mut Notes) -> Option<String> {
    let (kind, params) = d.args.split_first()?;
    let table = match kind.as_str() {
        "cookie" => cookie(params),
        "learn" => learn(params),
        _ => Err(format!("{kind}: sluice keeps sessions by a cookie (its own, or the application's learned); not translated")),
    };
    match table {
        Ok(table) => {
            notes.push(d.note("carried over as the upstream's sticky; a session whose server is drained moves (nginx keeps it there)").of_kind(crate::NoteKind::Changed));
            Some(table)
        }
        Err(why) => {
            notes.push(d.note(why));
            None
        }
    }
}

fn cookie(params: &[String]) -> Result<String, String> {
    let (name, rest) = params
        .split_first()
        .ok_or("no cookie name; not translated")?;
    // nginx sets HttpOnly only when asked; sluice by default: written either way.
    let mut fields = vec![
        format!("cookie = {}", quote(name)),
        "httponly = false".to_string(),
    ];
    for p in rest {
        let (key, value) = p.split_once('=').unwrap_or((p, ""));
        let field = match key {
            "httponly" => {
                fields[1] = "httponly = true".into();
                continue;
            }
            "secure" => "secure = true".into(),
            "path" => format!("path = {}", quote(value)),
            "domain" => format!("domain = {}", quote(value)),
            "samesite" if !value.starts_with('$') => {
                format!("samesite = {}", quote(&value.to_ascii_lowercase()))
            }
            "expires" if value == "max" => "max_age = \"87600h\"".into(),
            "expires" => {
                let age = crate::plan::duration(value)
                    .ok_or(format!("{p}: not a duration sluice reads; not translated"))?;
                format!("max_age = {}", quote(&age))
            }
            _ => return Err(format!("{p}: not translated (sticky not carried over)")),
        };
        fields.push(field);
    }
    Ok(format!("{{ {} }}", fields.join(", ")))
}

fn learn(params: &[String]) -> Result<String, String> {
    let value = |key: &str| {
        params
            .iter()
            .find_map(|p| p.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
    };
    let created = value("create").and_then(|v| v.strip_prefix("$upstream_cookie_"));
    let looked_up = value("lookup").and_then(|v| v.strip_prefix("$cookie_"));
    let name = match (created, looked_up) {
        (Some(c), Some(l)) if c.eq_ignore_ascii_case(l) => c,
        _ => {
            return Err("learn: sluice learns a session cookie the servers set and the clients send back (create=$upstream_cookie_NAME lookup=$cookie_NAME); not translated".into())
        }
    };
    let mut fields = vec![format!("learn = {}", quote(name))];
    // nginx forgets a session after 10 minutes unless `timeout=` says otherwise.
    let timeout = value("timeout").map_or(Some("10m".to_string()), crate::plan::duration);
    fields.extend(timeout.map(|t| format!("timeout = {}", quote(&t))));
    Ok(format!("{{ {} }}", fields.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::{cookie, learn};

    fn args(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn nginxs_sticky_cookie_and_learn_carry_over() {
        assert_eq!(
            cookie(&args("srv_id expires=1h domain=.example.com path=/ secure httponly samesite=Lax")).unwrap(),
            "{ cookie = \"srv_id\", httponly = true, max_age = \"3600s\", domain = \".example.com\", path = \"/\", secure = true, samesite = \"lax\" }"
        );
        assert_eq!(
            cookie(&args("srv")).unwrap(),
            "{ cookie = \"srv\", httponly = false }"
        );
        assert_eq!(
            learn(&args("create=$upstream_cookie_JSESSIONID lookup=$cookie_JSESSIONID zone=client_sessions:1m timeout=30m")).unwrap(),
            "{ learn = \"JSESSIONID\", timeout = \"1800s\" }"
        );
        assert!(learn(&args(
            "create=$upstream_cookie_a lookup=$cookie_b zone=z:1m"
        ))
        .is_err());
    }
}
