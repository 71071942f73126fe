//! Static files: a route's `root` directory served the way nginx's `root` serves it (the
//! file is root + the whole request path, the route's prefix included), with the checks
//! that make a file server a safe boundary.
//!
//! This module owns the mapping from a request path to a file under the root and the
//! response for it: validators, conditional requests, one byte range, small error replies.
//! It does no networking and no async; [`serve`] makes a few blocking `std::fs` calls
//! (canonicalize, stat, open, fstat), which the caller accepts on its thread, and never
//! reads file contents: the caller writes the head and streams the body.
//!
//! It must never produce a path outside the root (through `..`, an encoded separator or a
//! symlink), never open anything but a regular file or a directory, never read a whole
//! file into memory, and never panic on any input.
//!
//! # The reply
//!
//! [`FileReply::head`] is the status line and the header lines, each ending in CRLF,
//! without `Connection` and without the empty line that ends a head: the caller appends
//! its `Connection: ...` line, if any, then `\r\n`. There is no `Date` (this module reads
//! no clock, like sluice's other own replies). A HEAD request gets the head a GET would
//! get, `Content-Length` included, and [`Body::None`]. A 304 has no `Content-Length` and
//! no body. [`Body::File`] comes with the file's cursor at 0: the caller sends `len` bytes
//! from `offset` (pread, sendfile, or seek then read). If the file shrinks meanwhile,
//! fewer bytes come than `Content-Length` promised and the caller must close the
//! connection.
//!
//! # Decisions
//!
//! - **Paths.** Percent-decoded segment by segment. 400 for: a path not starting with
//!   `/`, a raw byte outside visible ASCII, a raw `\` or `#`, bad percent-encoding, and
//!   any decoded `/` (`%2F`: refusing it is simpler and safer than deciding what an
//!   encoded separator means), `\`, NUL or control byte, or a `.` or `..` segment however
//!   encoded (clients normalise dot segments before sending, so only probes send them).
//!   Empty segments (`//`) are skipped. A `?` and what follows it are cut off, so passing
//!   the whole target works too.
//! - **Hidden files.** A segment starting with `.` is 404 (`.git`, `.env`, `.htpasswd`
//!   are the classic leaks; nginx serves them unless told not to), except `.well-known`
//!   as the first segment (RFC 8615; ACME challenges live there) and segments that the
//!   route's own prefix names (the config asked for them). Only the request's segments are
//!   checked, not the root's path or a symlink's target.
//! - **Symlinks.** Followed, but the canonical path must stay under the canonical root,
//!   else 404 (not 403: the answer says nothing about what lies outside). The canonical
//!   path is what gets opened, and the opened file is checked again through
//!   `/proc/self/fd` (Linux), which names the file actually opened, so swapping a
//!   component for a symlink between the check and the open is caught. Without `/proc`,
//!   the opened file must be the one canonicalize found (same device and inode); a swap
//!   and swap back between the two calls would pass that, and takes write access inside
//!   the root.
//! - **Non-regular files** (FIFOs, sockets, devices) are 404, checked before the open
//!   (opening a FIFO blocks until a writer comes) and again on the opened file. The same
//!   write-access-inside-the-root race applies to the first check.
//! - **Directories.** `dir/` serves `dir/index.html` (itself checked like any file);
//!   `dir` without the slash gets a 301 to the path as sent plus `/`, but only when that
//!   index exists. No listings: a directory without an index is 404, not nginx's 403,
//!   so that probing reveals no layout (there is nothing at that URL to get). A file
//!   asked for with a trailing slash (`/a.txt/`) is 404, as in nginx.
//! - **Content-Type** from the extension (case-insensitive) by a built-in table; text
//!   types, JavaScript and JSON carry `charset=utf-8`; XML is `application/xml` (its
//!   declaration names its encoding); anything else is `application/octet-stream`, except
//!   extension-less files under `/.well-known/acme-challenge/` (ACME tokens), which are
//!   `text/plain` as certbot's web server configs make them. Every reply carries
//!   `X-Content-Type-Options: nosniff`, so a browser never renders an unknown type as HTML.
//! - **Validators.** `Last-Modified` is the mtime (seconds; omitted when the mtime is not
//!   within 1970..=9999, which IMF-fixdate cannot write); the ETag is strong, nginx's
//!   `"<hex mtime>-<hex size>"`, so ETags survive a move from nginx.
//! - **Conditionals** (RFC 9110 13.2.2): If-None-Match (`*`, a list, weak comparison) wins
//!   over If-Modified-Since; either gives 304. A malformed If-None-Match matches nothing
//!   and an invalid date is ignored: the full response is always a correct answer. If-Match
//!   and If-Unmodified-Since are not evaluated.
//! - **Ranges** (RFC 9110 14.2), for GET only (HEAD ignores Range, as the RFC says): one
//!   range `a-b`, `a-` or `-n` gives 206; an unsatisfiable one 416 with
//!   `Content-Range: bytes */size`; several ranges, a malformed header or another unit give
//!   the whole file (200), which the RFC allows. If-Range must match by strong comparison
//!   (a weak tag never does) or equal Last-Modified, else the whole file.
//! - **Errors.** 404 missing (and not a directory, name too long), 403 permission denied,
//!   500 anything else (I/O errors, symlink loops, too many open files: the server's
//!   trouble, which a client must not cache as 404), each with a short text body.

mod precompressed;

use crate::compress::Coding;
use crate::http1::reply::reason;
use std::ffi::OsStr;
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// What the client asked, as far as files care.
pub struct FileRequest<'a> {
    /// `b"GET"`, `b"HEAD"`, anything else (405).
    pub method: &'a [u8],
    /// The request target's path as sent: percent-encoded, starting with `/`, without the
    /// query (a `?` and what follows are ignored if present).
    pub path: &'a [u8],
    /// The route's path prefix that matched. It does not shorten the path (this is nginx's
    /// `root`, not `alias`); dot segments it names are served.
    pub route_prefix: &'a str,
    pub range: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    /// On a route with precompressed files: the codings the client accepts, best first
    /// (a copy `FILE.gz` is sent for gzip, ...); every answer about a file then varies
    /// with `Accept-Encoding`. `None` on other routes.
    pub precompressed: Option<&'a [Coding]>,
}

/// The answer: see the module documentation for what `head` holds and what the caller
/// adds to it.
#[derive(Debug)]
pub struct FileReply {
    pub status: u16,
    pub head: Vec<u8>,
    pub body: Body,
}

/// What follows the head.
#[derive(Debug)]
pub enum Body {
    /// Nothing: HEAD, 304, an empty file.
    None,
    /// A small generated body (errors, redirects).
    Bytes(Vec<u8>),
    /// `len` bytes of `file` from `offset`; the cursor is at 0.
    File { file: File, offset: u64, len: u64 },
}

/// Answers `req` from the directory `root`.
pub fn serve(root: &Path, req: &FileRequest<'_>) -> FileReply {
    let head_only = match req.method {
        b"GET" => false,
        b"HEAD" => true,
        _ => return error(405, &[("Allow", "GET, HEAD")]),
    };
    let located = Target::parse(req.path, req.route_prefix).and_then(|t| locate(root, &t));
    let mut reply = match located {
        Ok(Located::File(found)) => {
            let found = match req.precompressed {
                Some(codings) => precompressed::swap(*found, codings),
                None => *found,
            };
            respond(found, req, head_only)
        }
        Ok(Located::Redirect(location)) => error(301, &[("Location", &location)]),
        Err(status) => error(status, &[]),
    };
    if head_only {
        reply.body = Body::None;
    }
    reply
}

/// A request path, checked and decoded.
struct Target<'a> {
    /// The path as sent (up to any `?`): visible ASCII only, so safe in a `Location`.
    raw: &'a [u8],
    /// Decoded, none empty, `.` or `..`, none holding `/`, `\`, NUL or a control byte.
    segments: Vec<Vec<u8>>,
    /// The path ends in `/`: it names a directory.
    dir: bool,
}

impl<'a> Target<'a> {
    fn parse(path: &'a [u8], route_prefix: &str) -> Result<Self, u16> {
        let raw = path.split(|&b| b == b'?').next().unwrap_or_default();
        if raw.first() != Some(&b'/') || !raw.iter().all(|&b| allowed_raw(b)) {
            return Err(400);
        }
        let mut segments = Vec::new();
        for part in raw.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
            let segment = decode(part).ok_or(400u16)?;
            if segment == b"." || segment == b".." {
                return Err(400);
            }
            segments.push(segment);
        }
        let named = named_by_prefix(&segments, route_prefix);
        let hidden = |(i, s): (usize, &Vec<u8>)| {
            s.starts_with(b".") && i >= named && !(i == 0 && s == b".well-known")
        };
        if segments.iter().enumerate().any(hidden) {
            return Err(404);
        }
        let dir = raw.ends_with(b"/");
        Ok(Target { raw, segments, dir })
    }

    /// An ACME HTTP-01 token: `/.well-known/acme-challenge/<token>`.
    fn acme(&self) -> bool {
        self.segments.len() >= 3
            && self.segments[0] == b".well-known"
            && self.segments[1] == b"acme-challenge"
    }
}

/// Bytes a request path may hold as sent: visible ASCII (RFC 9112 allows nothing else in
/// a request target), without `\` (a separator to some file systems and proxies) and `#`
/// (a fragment is never sent).
fn allowed_raw(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b'\\' && b != b'#'
}

/// One segment, percent-decoded; `None` for bad encoding or a byte no segment may hold:
/// `/` would make one segment two, `\` is a separator elsewhere, and NUL and control bytes
/// name no web file and do harm in logs.
fn decode(part: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(part.len());
    let mut bytes = part.iter();
    while let Some(&b) = bytes.next() {
        let b = if b == b'%' {
            let hi = hex(*bytes.next()?)?;
            let lo = hex(*bytes.next()?)?;
            hi << 4 | lo
        } else {
            b
        };
        if b == b'/' || b == b'\\' || b < 0x20 || b == 0x7f {
            return None;
        }
        out.push(b);
    }
    Some(out)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// How many leading segments of the path the route's prefix spells out whole.
fn named_by_prefix(segments: &[Vec<u8>], route_prefix: &str) -> usize {
    route_prefix
        .split('/')
        .filter(|s| !s.is_empty())
        .zip(segments)
        .take_while(|(p, s)| p.as_bytes() == s.as_slice())
        .count()
}

enum Located {
    /// Boxed: a found file's paths make it ten times a redirect's size.
    File(Box<Found>),
    Redirect(String),
}

struct Found {
    file: File,
    meta: Metadata,
    content_type: &'static str,
    /// The file's canonical path, under the canonical root.
    path: PathBuf,
    root: PathBuf,
    /// The coding of the copy sent in its place, if one is.
    coding: Option<Coding>,
}

/// The file a target names under `root`, opened.
fn locate(root: &Path, target: &Target<'_>) -> Result<Located, u16> {
    let root = fs::canonicalize(root).map_err(|e| status_of(&e))?;
    let mut path = root.clone();
    // Each segment holds no `/`, so none can be absolute and replace the root.
    path.extend(target.segments.iter().map(|s| OsStr::from_bytes(s)));
    let (file, meta) = open_under(&root, &path)?;
    if meta.is_file() {
        if target.dir {
            return Err(404);
        }
        let name = target.segments.last().map_or(&[][..], Vec::as_slice);
        let content_type = content_type(name, target.acme());
        return Ok(Located::File(Box::new(Found {
            file,
            meta,
            content_type,
            path,
            root,
            coding: None,
        })));
    }
    let path = path.join("index.html");
    let (file, meta) = open_under(&root, &path)?;
    if !meta.is_file() {
        return Err(404);
    }
    if !target.dir {
        let location = String::from_utf8_lossy(target.raw) + "/";
        return Ok(Located::Redirect(location.into_owned()));
    }
    let content_type = content_type(b"index.html", false);
    Ok(Located::File(Box::new(Found {
        file,
        meta,
        content_type,
        path,
        root,
        coding: None,
    })))
}

/// Opens `path` if it resolves to a regular file or a directory under `root` (canonical).
fn open_under(root: &Path, path: &Path) -> Result<(File, Metadata), u16> {
    let real = fs::canonicalize(path).map_err(|e| status_of(&e))?;
    if !real.starts_with(root) {
        return Err(404);
    }
    // Before the open, because opening a FIFO waits for a writer.
    let kind = fs::metadata(&real).map_err(|e| status_of(&e))?.file_type();
    if !kind.is_file() && !kind.is_dir() {
        return Err(404);
    }
    let file = File::open(&real).map_err(|e| status_of(&e))?;
    let meta = file.metadata().map_err(|e| status_of(&e))?;
    if !meta.is_file() && !meta.is_dir() || !opened_under(&file, &meta, &real, root) {
        return Err(404);
    }
    Ok((file, meta))
}

/// Whether the file actually opened lies under `root`: a component of `real` could have
/// become a symlink after canonicalize looked at it.
fn opened_under(file: &File, meta: &Metadata, real: &Path, root: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // The kernel's name for the open file: no race left.
        let fd = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(name) = fs::read_link(fd) {
            return name.starts_with(root);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    // No /proc: at least the file canonicalize found (see the module documentation).
    fs::metadata(real).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
}

/// The status for a failed lookup or open.
fn status_of(e: &io::Error) -> u16 {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory | io::ErrorKind::InvalidFilename => {
            404
        }
        io::ErrorKind::PermissionDenied => 403,
        _ => 500,
    }
}

const OCTET_STREAM: &str = "application/octet-stream";

const TYPES: &[(&str, &str)] = &[
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("json", "application/json; charset=utf-8"),
    ("map", "application/json; charset=utf-8"),
    ("txt", "text/plain; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("xml", "application/xml"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/x-icon"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("ttf", "font/ttf"),
    ("otf", "font/otf"),
    ("pdf", "application/pdf"),
    ("wasm", "application/wasm"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mp3", "audio/mpeg"),
    ("ogg", "audio/ogg"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
];

/// The Content-Type for a file named `name` (the last segment as requested, so a symlink
/// is typed by its own name, like nginx does by the URI).
fn content_type(name: &[u8], acme: bool) -> &'static str {
    let ext = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => &name[dot + 1..],
        _ if acme => return "text/plain; charset=utf-8",
        _ => return OCTET_STREAM,
    };
    TYPES
        .iter()
        .find(|(e, _)| e.as_bytes().eq_ignore_ascii_case(ext))
        .map_or(OCTET_STREAM, |(_, t)| t)
}

/// A file's validators, as sent and as compared.
struct Validators {
    etag: String,
    /// The mtime in seconds, when `Last-Modified` can say it.
    modified: Option<u64>,
}

/// Seconds from 1970 to the end of 9999: IMF-fixdate's range (httpdate panics beyond it).
const LAST_HTTP_DATE: u64 = 253_402_300_800;

impl Validators {
    fn of(meta: &Metadata) -> Self {
        let secs = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        let etag = format!("\"{:x}-{:x}\"", secs.unwrap_or(0), meta.len());
        let modified = secs.filter(|&s| s < LAST_HTTP_DATE);
        Validators { etag, modified }
    }

    fn write(&self, head: &mut Vec<u8>) {
        if let Some(secs) = self.modified {
            let date = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs));
            header(head, "Last-Modified", &date);
        }
        header(head, "ETag", &self.etag);
    }

    /// RFC 9110 13.2.2 steps 3 and 4, for GET and HEAD.
    fn not_modified(&self, req: &FileRequest<'_>) -> bool {
        if let Some(field) = req.if_none_match {
            return list_has(field, &self.etag);
        }
        let since = req.if_modified_since.and_then(parse_date);
        matches!((since, self.modified), (Some(since), Some(m)) if m <= since)
    }

    /// Whether a Range may be honoured under If-Range (RFC 9110 13.1.5).
    fn range_allowed(&self, if_range: Option<&[u8]>) -> bool {
        let Some(field) = if_range.map(<[u8]>::trim_ascii) else {
            return true;
        };
        if field.starts_with(b"\"") || field.starts_with(b"W/") {
            return matches!(entity_tag(field),
                Some((false, tag, rest)) if rest.trim_ascii().is_empty() && tag == self.etag.as_bytes());
        }
        parse_date(field).is_some_and(|d| Some(d) == self.modified)
    }
}

/// An HTTP-date in any of its three forms, in seconds from 1970.
fn parse_date(field: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(field.trim_ascii()).ok()?;
    let time = httpdate::parse_http_date(text).ok()?;
    Some(time.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

/// One entity-tag at the start of `s`: (weak, the tag with its quotes, the rest).
fn entity_tag(s: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (weak, s) = match s.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let inner = s.strip_prefix(b"\"")?;
    let end = inner.iter().position(|&b| b == b'"')?;
    let etagc = |&b: &u8| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80;
    if !inner[..end].iter().all(etagc) {
        return None;
    }
    Some((weak, &s[..end + 2], &inner[end + 1..]))
}

/// Whether an If-None-Match list holds `etag` by weak comparison (`*` holds any). A
/// malformed list holds nothing, so the client gets the full response.
fn list_has(field: &[u8], etag: &str) -> bool {
    let mut rest = field.trim_ascii();
    if rest == b"*" {
        return true;
    }
    let mut found = false;
    loop {
        while let Some(after) = rest.strip_prefix(b",") {
            rest = after.trim_ascii_start();
        }
        if rest.is_empty() {
            return found;
        }
        let Some((_, tag, after)) = entity_tag(rest) else {
            return false;
        };
        found |= tag == etag.as_bytes();
        rest = after.trim_ascii_start();
        if !rest.is_empty() && !rest.starts_with(b",") {
            return false;
        }
    }
}

#[derive(Debug, PartialEq)]
enum Ranged {
    Full,
    Part { start: u64, len: u64 },
    Unsatisfiable,
}

/// A Range field against a file of `size` bytes. Anything but one well-formed byte range
/// is the whole file (RFC 9110 14.2 lets a server ignore Range).
fn byte_range(field: &[u8], size: u64) -> Ranged {
    let Some((unit, set)) = split_once(field.trim_ascii(), b'=') else {
        return Ranged::Full;
    };
    if !unit.eq_ignore_ascii_case(b"bytes") {
        return Ranged::Full;
    }
    let mut specs = set
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|s| !s.is_empty());
    match (specs.next(), specs.next()) {
        (Some(spec), None) => one_range(spec, size).unwrap_or(Ranged::Full),
        _ => Ranged::Full,
    }
}

/// `a-b`, `a-` or `-n`; `None` when malformed (including `b < a`).
fn one_range(spec: &[u8], size: u64) -> Option<Ranged> {
    let (first, last) = split_once(spec, b'-')?;
    if first.is_empty() {
        let n = digits(last)?;
        if n == 0 || size == 0 {
            return Some(Ranged::Unsatisfiable);
        }
        let len = n.min(size);
        return Some(Ranged::Part {
            start: size - len,
            len,
        });
    }
    let first = digits(first)?;
    let last = if last.is_empty() {
        u64::MAX
    } else {
        digits(last)?
    };
    if last < first {
        return None;
    }
    if first >= size {
        return Some(Ranged::Unsatisfiable);
    }
    let len = last.min(size - 1) - first + 1;
    Some(Ranged::Part { start: first, len })
}

/// `1*DIGIT`, saturating: a position past u64 is past any file's end, which it means.
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let add = |n: u64, &d: &u8| n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
    Some(s.iter().fold(0, add))
}

fn split_once(s: &[u8], at: u8) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == at)?;
    Some((&s[..i], &s[i + 1..]))
}

/// The reply for a file found: 304, 206, 416 or 200.
fn respond(found: Found, req: &FileRequest<'_>, head_only: bool) -> FileReply {
    let size = found.meta.len();
    let validators = Validators::of(&found.meta);
    if validators.not_modified(req) {
        let mut head = status_line(304);
        validators.write(&mut head);
        if req.precompressed.is_some() {
            precompressed::put(&mut head, found.coding);
        }
        let body = Body::None;
        return FileReply {
            status: 304,
            head,
            body,
        };
    }
    let range = match req.range {
        Some(field) if !head_only && validators.range_allowed(req.if_range) => {
            byte_range(field, size)
        }
        _ => Ranged::Full,
    };
    let vary = req.precompressed.is_some();
    match range {
        Ranged::Full => contents(found, (&validators, vary), 0, size, None),
        Ranged::Part { start, len } => {
            let range = format!("bytes {start}-{}/{size}", start + len - 1);
            contents(found, (&validators, vary), start, len, Some(&range))
        }
        Ranged::Unsatisfiable => error(416, &[("Content-Range", &format!("bytes */{size}"))]),
    }
}

/// 200, or 206 with `content_range`: `len` bytes of the file from `start`.
fn contents(
    found: Found,
    (validators, vary): (&Validators, bool),
    start: u64,
    len: u64,
    content_range: Option<&str>,
) -> FileReply {
    let status = if content_range.is_some() { 206 } else { 200 };
    let mut head = status_line(status);
    header(&mut head, "Content-Type", found.content_type);
    header(&mut head, "Content-Length", &len.to_string());
    if let Some(range) = content_range {
        header(&mut head, "Content-Range", range);
    }
    validators.write(&mut head);
    header(&mut head, "Accept-Ranges", "bytes");
    header(&mut head, "X-Content-Type-Options", "nosniff");
    if vary {
        precompressed::put(&mut head, found.coding);
    }
    let body = match len {
        0 => Body::None,
        _ => Body::File {
            file: found.file,
            offset: start,
            len,
        },
    };
    FileReply { status, head, body }
}

/// A reply with a short text body, and `extra` headers.
fn error(status: u16, extra: &[(&str, &str)]) -> FileReply {
    let body = format!("{status} {}\n", reason(status)).into_bytes();
    let mut head = status_line(status);
    header(&mut head, "Content-Type", "text/plain; charset=utf-8");
    header(&mut head, "Content-Length", &body.len().to_string());
    header(&mut head, "X-Content-Type-Options", "nosniff");
    for (name, value) in extra {
        header(&mut head, name, value);
    }
    let body = Body::Bytes(body);
    FileReply { status, head, body }
}

fn status_line(status: u16) -> Vec<u8> {
    format!("HTTP/1.1 {status} {}\r\n", reason(status)).into_bytes()
}

fn header(head: &mut Vec<u8>, name: &str, value: &str) {
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(b": ");
    head.extend_from_slice(value.as_bytes());
    head.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests;
