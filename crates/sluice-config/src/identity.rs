//! `[request_id]` (or `request_id = true`): every request's identity, and its W3C
//! `traceparent`. Read here, and written into every route's header edits (the server's
//! `X-Request-ID = $request_id`, `traceparent = $traceparent`; the client's
//! `X-Request-ID`) unless the route sets that header itself, so that the proxy sends
//! them as it sends any header a route sets.

use crate::model::{KeyPart, KeyTemplate, RequestIdentity, Route, Variable};
use crate::reader::Reader;
use crate::reference::{names, top};
use toml_edit::TableLike;

/// The identity's header when the config names none.
const HEADER: &str = "X-Request-ID";

/// `[request_id]`, `request_id = true` or `false`; `None` when absent or false.
pub(crate) fn request_id(r: &mut Reader, root: &dyn TableLike) -> Option<RequestIdentity> {
    let item = root.get("request_id")?;
    if let Some(on) = item.as_bool() {
        return on.then(|| RequestIdentity {
            header: HEADER.to_string(),
            from_client: true,
            response: true,
            traceparent: true,
        });
    }
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`request_id` must be true, false or a table",
            "write request_id = true, or [request_id] with header = \"X-Request-ID\"",
        );
        return None;
    };
    r.only_keys(t, &names(top::REQUEST_ID), "[request_id]");
    let header = match r.string(t, "header") {
        Some((h, span)) => crate::headers::header_name(r, &h, span).unwrap_or_default(),
        None => HEADER.to_string(),
    };
    Some(RequestIdentity {
        header,
        from_client: r.boolean(t, "from_client").unwrap_or(true),
        response: r.boolean(t, "response").unwrap_or(true),
        traceparent: r.boolean(t, "traceparent").unwrap_or(true),
    })
}

/// Adds the identity's headers to every route that does not set them itself.
pub(crate) fn apply(identity: &RequestIdentity, routes: &mut [Route]) {
    let var = |v: Variable| KeyTemplate {
        parts: vec![KeyPart::Var(v)],
    };
    for route in routes {
        let set = |edits: &mut crate::model::HeaderEdits, name: &str, value: Variable| {
            if !edits.drops(name) {
                edits.set.push((name.to_string(), var(value)));
            }
        };
        set(
            &mut route.request_headers,
            &identity.header,
            Variable::RequestId,
        );
        if identity.traceparent {
            set(
                &mut route.request_headers,
                "traceparent",
                Variable::Traceparent,
            );
        }
        if identity.response {
            set(
                &mut route.response_headers,
                &identity.header,
                Variable::RequestId,
            );
        }
    }
}
