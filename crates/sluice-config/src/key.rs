//! Parsing hash-key templates: literal text and nginx-style `$variables`.

use crate::model::{KeyPart, KeyTemplate, Variable};

/// A problem at byte `offset` of the template text.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyError {
    pub offset: usize,
    pub message: String,
}

const KNOWN: &str = "$request_uri, $uri, $args, $arg_NAME, $http_NAME, $cookie_NAME, \
    $remote_addr, $host, $scheme, $msec, $request_id, $traceparent, $0 to $9 (a regex's match and groups)";

/// A hash key: a template with at least one variable.
pub fn parse(text: &str) -> Result<KeyTemplate, KeyError> {
    let template = template(text)?;
    if !template.parts.iter().any(|p| matches!(p, KeyPart::Var(_))) {
        return Err(KeyError {
            offset: 0,
            message: "the key has no variable, so every request would go to one server".into(),
        });
    }
    Ok(template)
}

/// Text with `$variables` (a header value, a redirect's location); plain text is fine.
pub fn template(text: &str) -> Result<KeyTemplate, KeyError> {
    template_with(text, &[])
}

/// A template that may also name the groups of a regular expression: `$1` to `$9` by
/// number, and `names` (each with its number) by name, as nginx's named captures.
pub fn template_with(text: &str, names: &[(String, usize)]) -> Result<KeyTemplate, KeyError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        literal.push_str(&rest[..dollar]);
        let offset = text.len() - rest.len() + dollar;
        let (name, used) = variable_name(&rest[dollar + 1..]).ok_or_else(|| KeyError {
            offset,
            message: "`$` is not followed by a variable name".into(),
        })?;
        let named = names.iter().find(|(n, _)| n == name);
        let var = named.map(|(_, i)| Variable::Capture(*i));
        let var = var.or_else(|| variable(name)).ok_or_else(|| KeyError {
            offset,
            message: format!("unknown variable `${name}` (known: {KNOWN})"),
        })?;
        if !literal.is_empty() {
            parts.push(KeyPart::Literal(std::mem::take(&mut literal)));
        }
        parts.push(KeyPart::Var(var));
        rest = &rest[dollar + 1 + used..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(KeyPart::Literal(literal));
    }
    Ok(KeyTemplate { parts })
}

/// The name after `$` (`name` or `{name}`) and how many bytes it spans.
fn variable_name(s: &str) -> Option<(&str, usize)> {
    if let Some(inner) = s.strip_prefix('{') {
        let end = inner.find('}')?;
        return (end > 0).then(|| (&inner[..end], end + 2));
    }
    // `$1x` is group 1 and the text `x`, as nginx reads it.
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return Some((&s[..1], 1));
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], end))
}

fn variable(name: &str) -> Option<Variable> {
    let with = |prefix: &str| name.strip_prefix(prefix).filter(|rest| !rest.is_empty());
    Some(match name {
        "request_uri" => Variable::RequestUri,
        "uri" => Variable::Uri,
        "args" | "query_string" => Variable::Args,
        "remote_addr" => Variable::RemoteAddr,
        "host" => Variable::Host,
        "scheme" => Variable::Scheme,
        "msec" => Variable::Msec,
        "request_id" => Variable::RequestId,
        "traceparent" => Variable::Traceparent,
        digit if digit.len() == 1 && digit.as_bytes()[0].is_ascii_digit() => {
            Variable::Capture(usize::from(digit.as_bytes()[0] - b'0'))
        }
        _ => {
            if let Some(arg) = with("arg_") {
                Variable::Arg(arg.to_string())
            } else if let Some(header) = with("http_") {
                Variable::Http(header.replace('_', "-"))
            } else if let Some(cookie) = with("cookie_") {
                Variable::Cookie(cookie.to_string())
            } else {
                return None;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = parse("room-$arg_room").unwrap();
        assert_eq!(
            t.parts,
            vec![
                KeyPart::Literal("room-".into()),
                KeyPart::Var(Variable::Arg("room".into()))
            ]
        );
        let t = parse("$host$uri").unwrap();
        assert_eq!(
            t.parts,
            vec![KeyPart::Var(Variable::Host), KeyPart::Var(Variable::Uri)]
        );
        let t = parse("${http_x_user}:x").unwrap();
        assert_eq!(
            t.parts,
            vec![
                KeyPart::Var(Variable::Http("x-user".into())),
                KeyPart::Literal(":x".into())
            ]
        );
    }

    #[test]
    fn errors_point_at_the_variable() {
        assert_eq!(parse("a$nope").unwrap_err().offset, 1);
        assert!(parse("abc").unwrap_err().message.contains("no variable"));
        assert!(parse("$").is_err());
        assert!(parse("$arg_").is_err());
        // `$0` is the whole match, as nginx has it.
        assert_eq!(
            template("$0").unwrap().parts,
            vec![KeyPart::Var(Variable::Capture(0))]
        );
    }

    #[test]
    fn groups_by_number_and_by_name() {
        let names = [("slug".to_string(), 2)];
        let t = template_with("/s/$slug/$1x", &names).unwrap();
        assert_eq!(
            t.parts,
            vec![
                KeyPart::Literal("/s/".into()),
                KeyPart::Var(Variable::Capture(2)),
                KeyPart::Literal("/".into()),
                KeyPart::Var(Variable::Capture(1)),
                KeyPart::Literal("x".into()),
            ]
        );
        assert!(template("/s/$slug").is_err());
    }
}
