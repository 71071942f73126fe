//! A file's precompressed copy (`app.js.br` beside `app.js`), sent in its place to a
//! client that accepts its coding: nginx's `gzip_static`. The copy is opened with the
//! same checks as any file (under the root, a regular file), and keeps the original's
//! `Content-Type`; its length and validators are its own.

use super::{open_under, Found};
use crate::compress::Coding;

/// `found`, or its copy for the first of `codings` (best first) that has one.
pub(super) fn swap(found: Found, codings: &[Coding]) -> Found {
    if !found.meta.is_file() {
        return found;
    }
    for coding in codings {
        let mut name = found.path.clone().into_os_string();
        name.push(coding.suffix());
        if let Ok((file, meta)) = open_under(&found.root, name.as_ref()) {
            if meta.is_file() {
                return Found {
                    file,
                    meta,
                    coding: Some(*coding),
                    ..found
                };
            }
        }
    }
    found
}

/// The header lines of an answer about a file on a route with precompressed copies:
/// it varies with `Accept-Encoding`, and names the copy's coding when one is sent.
pub(super) fn put(head: &mut Vec<u8>, coding: Option<Coding>) {
    super::header(head, "Vary", "Accept-Encoding");
    if let Some(c) = coding {
        super::header(head, "Content-Encoding", c.token());
    }
}
