//! The static file server's tests, on real files in temporary directories.

use super::*;
use proptest::prelude::*;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

const SECRET: &[u8] = b"SECRET outside the root\n";
/// Every file's mtime: 2023-11-14T22:13:20Z, 0x6553f100.
const MTIME: u64 = 1_700_000_000;
const LAST_MODIFIED: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

/// A fresh temp dir: `root/` to serve and `outside/secret.txt` beside it.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = std::process::id();
        let dir = std::env::temp_dir().join(format!("sluice-files-{id}-{name}-{n}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("root")).unwrap();
        fs::create_dir_all(dir.join("outside")).unwrap();
        fs::write(dir.join("outside/secret.txt"), SECRET).unwrap();
        Tree { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.join("root")
    }

    fn outside(&self) -> PathBuf {
        self.dir.join("outside/secret.txt")
    }

    /// Writes `root/<rel>` (and its directories), with mtime `MTIME`.
    fn file(&self, rel: &str, contents: &[u8]) -> PathBuf {
        let path = self.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        set_mtime(&path, UNIX_EPOCH + Duration::from_secs(MTIME));
        path
    }

    fn link(&self, rel: &str, target: &Path) {
        std::os::unix::fs::symlink(target, self.root().join(rel)).unwrap();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn set_mtime(path: &Path, time: SystemTime) {
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(time).unwrap();
}

fn request(path: &[u8]) -> FileRequest<'_> {
    FileRequest {
        method: b"GET",
        path,
        route_prefix: "/",
        range: None,
        if_none_match: None,
        if_modified_since: None,
        if_range: None,
        precompressed: None,
    }
}

fn get(tree: &Tree, path: &str) -> FileReply {
    serve(&tree.root(), &request(path.as_bytes()))
}

fn header_of(reply: &FileReply, name: &str) -> Option<String> {
    let head = String::from_utf8(reply.head.clone()).unwrap();
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(": ")?;
        n.eq_ignore_ascii_case(name).then(|| v.to_string())
    })
}

fn body_of(reply: FileReply) -> Vec<u8> {
    match reply.body {
        Body::None => Vec::new(),
        Body::Bytes(bytes) => bytes,
        Body::File {
            mut file,
            offset,
            len,
        } => {
            file.seek(SeekFrom::Start(offset)).unwrap();
            let mut out = Vec::new();
            file.take(len).read_to_end(&mut out).unwrap();
            out
        }
    }
}

#[test]
fn get_serves_a_file_with_its_head() {
    let tree = Tree::new("get");
    tree.file("a/page.html", b"<p>hi</p>");
    let reply = get(&tree, "/a/page.html");
    assert_eq!(reply.status, 200);
    let head = String::from_utf8(reply.head.clone()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.ends_with("\r\n") && !head.contains("\r\n\r\n"),
        "{head}"
    );
    assert!(!head.to_ascii_lowercase().contains("connection"));
    let h = |name| header_of(&reply, name);
    assert_eq!(h("Content-Type").unwrap(), "text/html; charset=utf-8");
    assert_eq!(h("Content-Length").unwrap(), "9");
    assert_eq!(h("Last-Modified").unwrap(), LAST_MODIFIED);
    assert_eq!(h("ETag").unwrap(), "\"6553f100-9\"");
    assert_eq!(h("Accept-Ranges").unwrap(), "bytes");
    assert_eq!(h("X-Content-Type-Options").unwrap(), "nosniff");
    assert_eq!(h("Content-Range"), None);
    assert!(matches!(
        reply.body,
        Body::File {
            offset: 0,
            len: 9,
            ..
        }
    ));
    assert_eq!(body_of(reply), b"<p>hi</p>");
}

#[test]
fn head_gets_the_head_of_get_and_no_body() {
    let tree = Tree::new("head");
    tree.file("a.txt", b"hello");
    for path in ["/a.txt", "/missing", "/%zz", "/"] {
        let get = get(&tree, path);
        let mut req = request(path.as_bytes());
        req.method = b"HEAD";
        let head = serve(&tree.root(), &req);
        assert_eq!((head.status, &head.head), (get.status, &get.head), "{path}");
        assert!(matches!(head.body, Body::None), "{path}");
    }
    // Range is for GET only (RFC 9110 14.2): HEAD gets the full response's head.
    let mut req = request(b"/a.txt");
    req.method = b"HEAD";
    req.range = Some(b"bytes=0-1");
    let reply = serve(&tree.root(), &req);
    assert_eq!(reply.status, 200);
    assert_eq!(header_of(&reply, "Content-Length").unwrap(), "5");
}

#[test]
fn other_methods_get_405_with_allow() {
    let tree = Tree::new("405");
    tree.file("a.txt", b"hello");
    let methods: [&[u8]; 7] = [b"POST", b"PUT", b"DELETE", b"OPTIONS", b"get", b"", b"GET "];
    for method in methods {
        let mut req = request(b"/a.txt");
        req.method = method;
        let reply = serve(&tree.root(), &req);
        assert_eq!(reply.status, 405, "{method:?}");
        assert_eq!(header_of(&reply, "Allow").unwrap(), "GET, HEAD");
        assert_eq!(body_of(reply), b"405 Method Not Allowed\n");
    }
}

#[test]
fn dot_segments_in_any_encoding_are_400() {
    let tree = Tree::new("dotdot");
    tree.file("a/b.txt", b"b");
    let paths = [
        "/../outside/secret.txt",
        "/a/../../outside/secret.txt",
        "/a/..",
        "/..",
        "/../",
        "/%2e%2e/outside/secret.txt",
        "/%2E%2E/outside/secret.txt",
        "/.%2e/outside/secret.txt",
        "/%2e./outside/secret.txt",
        "/a/%2e%2e/%2e%2e/outside/secret.txt",
        "/..%2foutside%2fsecret.txt",
        "/%2f..%2foutside%2fsecret.txt",
        "/a%2f..%2f..%2foutside/secret.txt",
        "/%2F%2E%2E%2Foutside",
        "/..%5coutside%5csecret.txt",
        "/..\\outside\\secret.txt",
        "/./a/b.txt",
        "/a/%2e/b.txt",
        "/a/.",
        "/.",
        "/a/b.txt/..",
    ];
    for path in paths {
        let reply = get(&tree, path);
        let status = reply.status;
        assert_eq!(status, 400, "{path}");
        assert_eq!(body_of(reply), b"400 Bad Request\n", "{path}");
    }
    // A `..` after a `?` is query, not path: cut off.
    assert_eq!(get(&tree, "/a/b.txt?x=/../..").status, 200);
}

#[test]
fn malformed_paths_are_400() {
    let tree = Tree::new("bad");
    tree.file("a.txt", b"a");
    let paths: [&[u8]; 19] = [
        b"",
        b"a.txt",
        b"*",
        b"http://host/a.txt",
        b"/a.txt%",
        b"/a.txt%2",
        b"/a%zz.txt",
        b"/a%%32%65",
        b"/a%00.txt",
        b"/%00",
        b"/a%0d%0aX:%20y",
        b"/a%7f",
        b"/a\r\nX: y",
        b"/a b.txt",
        b"/a\tb",
        b"/a.txt#frag",
        b"/\xc3\xa9.txt",
        b"/a\x00.txt",
        b"/a\\b",
    ];
    for path in paths {
        let reply = serve(&tree.root(), &request(path));
        assert_eq!(reply.status, 400, "{:?}", String::from_utf8_lossy(path));
    }
}

#[test]
fn look_alikes_are_plain_names_not_traversal() {
    let tree = Tree::new("lookalike");
    tree.file("%2e%2e/x.txt", b"literal");
    // `%25` is a literal `%`: this is the directory named `%2e%2e`.
    assert_eq!(body_of(get(&tree, "/%252e%252e/x.txt")), b"literal");
    for path in [
        "/%252e%252e/outside/secret.txt",
        "/..;/outside/secret.txt",
        "/a..b",
    ] {
        assert_eq!(get(&tree, path).status, 404, "{path}");
    }
}

#[test]
fn encoded_names_are_decoded() {
    let tree = Tree::new("encoded");
    tree.file("é.txt", b"e acute");
    tree.file("a b.txt", b"space");
    tree.file("100%.txt", b"percent");
    tree.file("caf\u{e9}/x.txt", b"dir");
    assert_eq!(body_of(get(&tree, "/%C3%A9.txt")), b"e acute");
    assert_eq!(body_of(get(&tree, "/%c3%a9.txt")), b"e acute");
    assert_eq!(body_of(get(&tree, "/a%20b.txt")), b"space");
    assert_eq!(body_of(get(&tree, "/100%25.txt")), b"percent");
    assert_eq!(body_of(get(&tree, "/caf%C3%A9/x.txt")), b"dir");
    assert_eq!(body_of(get(&tree, "//caf%C3%A9//x.txt")), b"dir");
    // Bytes that are not UTF-8 name files too (Unix names are bytes).
    assert_eq!(get(&tree, "/%ff.txt").status, 404);
}

#[test]
fn symlinks_out_of_the_root_are_404() {
    let tree = Tree::new("symlink");
    tree.file("a.txt", b"inside");
    tree.file("d/index.html", b"index");
    fs::create_dir_all(tree.root().join("e")).unwrap();
    tree.link("leak.txt", &tree.outside());
    tree.link("rel.txt", Path::new("../outside/secret.txt"));
    tree.link("out", &tree.dir.join("outside"));
    tree.link("etc", Path::new("/etc"));
    tree.link("e/index.html", &tree.outside());
    tree.link("loop", Path::new("loop"));
    for path in [
        "/leak.txt",
        "/rel.txt",
        "/out/secret.txt",
        "/out/",
        "/out",
        "/etc/passwd",
        "/etc/hostname",
        "/e/",
        "/e",
    ] {
        let reply = get(&tree, path);
        assert_eq!(reply.status, 404, "{path}");
        assert_ne!(body_of(reply), SECRET, "{path}");
    }
    // A loop is the server's trouble, not a missing file.
    assert_eq!(get(&tree, "/loop").status, 500);
}

#[test]
fn symlinks_inside_the_root_are_followed() {
    let tree = Tree::new("symlink-in");
    tree.file("a.txt", b"inside");
    tree.file("d/index.html", b"index");
    tree.link("alias.js", Path::new("a.txt"));
    tree.link("dl", Path::new("d"));
    let reply = get(&tree, "/alias.js");
    // Typed by the name asked for, like nginx.
    assert_eq!(
        header_of(&reply, "Content-Type").unwrap(),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(body_of(reply), b"inside");
    assert_eq!(body_of(get(&tree, "/dl/")), b"index");
    // The root may itself be a symlink.
    let root_link = tree.dir.join("root-link");
    std::os::unix::fs::symlink(tree.root(), &root_link).unwrap();
    assert_eq!(body_of(serve(&root_link, &request(b"/a.txt"))), b"inside");
}

#[test]
fn the_opened_file_itself_is_checked_against_the_root() {
    let tree = Tree::new("opened");
    let inside = tree.file("a.txt", b"a");
    let root = fs::canonicalize(tree.root()).unwrap();
    let check = |path: &Path| {
        let file = File::open(path).unwrap();
        let meta = file.metadata().unwrap();
        opened_under(&file, &meta, path, &root)
    };
    assert!(check(&fs::canonicalize(inside).unwrap()));
    // What a swapped symlink would have opened: outside, whatever path was checked.
    assert!(!check(&fs::canonicalize(tree.outside()).unwrap()));
}

#[test]
fn only_regular_files_and_directories_are_opened() {
    let tree = Tree::new("special");
    let _socket = std::os::unix::net::UnixListener::bind(tree.root().join("sock")).unwrap();
    assert_eq!(get(&tree, "/sock").status, 404);
    let fifo = tree.root().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.expect("mkfifo (coreutils) runs").success());
    // Opening it would block until a writer came: this must return at once.
    assert_eq!(get(&tree, "/fifo").status, 404);
    assert_eq!(get(&tree, "/missing").status, 404);
    assert_eq!(serve(&tree.dir.join("no-root"), &request(b"/")).status, 404);
}

#[test]
fn dotfiles_are_404_but_well_known_is_served() {
    let tree = Tree::new("hidden");
    tree.file(".env", b"KEY=1");
    tree.file("a/.git/config", b"git");
    tree.file(".well-known/acme-challenge/tok-EN_1", b"token.thumb");
    tree.file(".well-known/security.txt", b"contact");
    tree.file(".well-known/.secret", b"no");
    tree.file("a/.well-known/x", b"no");
    tree.file(".private/x.txt", b"named");
    tree.file(".private/.y", b"no");
    for path in [
        "/.env",
        "/a/.git/config",
        "/.well-known/.secret",
        "/a/.well-known/x",
        "/.private/x.txt",
    ] {
        assert_eq!(get(&tree, path).status, 404, "{path}");
    }
    let token = get(&tree, "/.well-known/acme-challenge/tok-EN_1");
    assert_eq!(
        header_of(&token, "Content-Type").unwrap(),
        "text/plain; charset=utf-8"
    );
    assert_eq!(body_of(token), b"token.thumb");
    let mut req = request(b"/.well-known/acme-challenge/tok-EN_1");
    req.route_prefix = "/.well-known/acme-challenge/";
    assert_eq!(serve(&tree.root(), &req).status, 200);
    assert_eq!(get(&tree, "/.well-known/security.txt").status, 200);
    // Dot segments the route's own prefix names are served; no others.
    let named = |path: &'static [u8], prefix| {
        let mut req = request(path);
        req.route_prefix = prefix;
        serve(&tree.root(), &req).status
    };
    assert_eq!(named(b"/.private/x.txt", "/.private/"), 200);
    assert_eq!(named(b"/.private/x.txt", "/.private"), 200);
    assert_eq!(named(b"/.private/x.txt", "/.priv"), 404);
    assert_eq!(named(b"/.private/.y", "/.private/"), 404);
}

#[test]
fn directories_serve_index_html_or_redirect_or_404() {
    let tree = Tree::new("dirs");
    tree.file("index.html", b"top");
    tree.file("docs/index.html", b"docs");
    tree.file("my docs/index.html", b"spaced");
    tree.file("a.txt", b"a");
    tree.file("odd/index.html/x", b"index is a directory");
    fs::create_dir_all(tree.root().join("empty")).unwrap();
    let redirect = get(&tree, "/docs");
    assert_eq!(redirect.status, 301);
    assert_eq!(header_of(&redirect, "Location").unwrap(), "/docs/");
    assert_eq!(body_of(redirect), b"301 Moved Permanently\n");
    let spaced = get(&tree, "/my%20docs?q=1");
    assert_eq!(header_of(&spaced, "Location").unwrap(), "/my%20docs/");
    let index = get(&tree, "/docs/");
    assert_eq!(
        header_of(&index, "Content-Type").unwrap(),
        "text/html; charset=utf-8"
    );
    assert_eq!(body_of(index), b"docs");
    assert_eq!(body_of(get(&tree, "/")), b"top");
    assert_eq!(body_of(get(&tree, "//docs//")), b"docs");
    // No listings, and no redirect that would reveal an index-less directory.
    for path in ["/empty", "/empty/", "/a.txt/", "/odd/", "/odd"] {
        assert_eq!(get(&tree, path).status, 404, "{path}");
    }
}

#[test]
fn content_types_come_from_the_extension() {
    let table = [
        ("a.html", "text/html; charset=utf-8"),
        ("a.css", "text/css; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"),
        ("a.mjs", "text/javascript; charset=utf-8"),
        ("a.json", "application/json; charset=utf-8"),
        ("a.txt", "text/plain; charset=utf-8"),
        ("a.xml", "application/xml"),
        ("a.svg", "image/svg+xml"),
        ("a.png", "image/png"),
        ("a.jpg", "image/jpeg"),
        ("a.jpeg", "image/jpeg"),
        ("a.gif", "image/gif"),
        ("a.webp", "image/webp"),
        ("a.avif", "image/avif"),
        ("a.ico", "image/x-icon"),
        ("a.woff", "font/woff"),
        ("a.woff2", "font/woff2"),
        ("a.ttf", "font/ttf"),
        ("a.otf", "font/otf"),
        ("a.pdf", "application/pdf"),
        ("a.wasm", "application/wasm"),
        ("a.mp4", "video/mp4"),
        ("a.webm", "video/webm"),
        ("a.mp3", "audio/mpeg"),
        ("a.ogg", "audio/ogg"),
        ("a.zip", "application/zip"),
        ("a.tar.gz", "application/gzip"),
        ("a.csv", "text/csv; charset=utf-8"),
        ("a.md", "text/markdown; charset=utf-8"),
        ("a.js.map", "application/json; charset=utf-8"),
        ("A.PNG", "image/png"),
        ("a.xyz", OCTET_STREAM),
        ("a.", OCTET_STREAM),
        ("noext", OCTET_STREAM),
        ("", OCTET_STREAM),
    ];
    for (name, expected) in table {
        assert_eq!(content_type(name.as_bytes(), false), expected, "{name}");
    }
    assert_eq!(content_type(b"token", true), "text/plain; charset=utf-8");
    assert_eq!(content_type(b"a.png", true), "image/png");
}

fn conditional(tree: &Tree, inm: Option<&str>, ims: Option<&str>) -> FileReply {
    let mut req = request(b"/a.txt");
    req.if_none_match = inm.map(str::as_bytes);
    req.if_modified_since = ims.map(str::as_bytes);
    serve(&tree.root(), &req)
}

#[test]
fn if_none_match_gives_304_on_a_weak_match() {
    let tree = Tree::new("inm");
    tree.file("a.txt", b"hello");
    let etag = "\"6553f100-5\"";
    for inm in [
        etag.to_string(),
        format!("W/{etag}"),
        format!("\"x\", {etag} ,W/\"y\""),
        format!(",{etag},"),
        "*".to_string(),
        " * ".to_string(),
    ] {
        let reply = conditional(&tree, Some(&inm), None);
        assert_eq!(reply.status, 304, "{inm}");
        let head = String::from_utf8(reply.head.clone()).unwrap();
        assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n"));
        assert_eq!(header_of(&reply, "ETag").unwrap(), etag);
        assert_eq!(header_of(&reply, "Last-Modified").unwrap(), LAST_MODIFIED);
        assert_eq!(header_of(&reply, "Content-Length"), None);
        assert!(matches!(reply.body, Body::None));
    }
    let misses = [
        "\"6553f100-6\"",
        "6553f100-5",
        "\"6553f100-5",
        "\"a\" \"6553f100-5\"",
    ];
    for inm in misses
        .into_iter()
        .chain(["W/ \"6553f100-5\"", "", "\"a\",*"])
    {
        assert_eq!(conditional(&tree, Some(inm), None).status, 200, "{inm}");
    }
    // If-None-Match decides alone: a matching If-Modified-Since is ignored.
    let reply = conditional(&tree, Some("\"other\""), Some(LAST_MODIFIED));
    assert_eq!(reply.status, 200);
    let mut head = request(b"/a.txt");
    head.method = b"HEAD";
    head.if_none_match = Some(etag.as_bytes());
    assert_eq!(serve(&tree.root(), &head).status, 304);
}

#[test]
fn if_modified_since_gives_304_when_not_modified() {
    let tree = Tree::new("ims");
    tree.file("a.txt", b"hello");
    for ims in [
        LAST_MODIFIED,
        "Tuesday, 14-Nov-23 22:13:20 GMT",
        "Tue Nov 14 22:13:20 2023",
        "Wed, 15 Nov 2023 00:00:00 GMT",
        " Tue, 14 Nov 2023 22:13:20 GMT ",
    ] {
        assert_eq!(conditional(&tree, None, Some(ims)).status, 304, "{ims}");
    }
    for ims in [
        "Tue, 14 Nov 2023 22:13:19 GMT",
        "Thu, 01 Jan 1970 00:00:00 GMT",
        "yesterday",
        "",
        "Tue, 14 Nov 2023 22:13:20 CET",
    ] {
        assert_eq!(conditional(&tree, None, Some(ims)).status, 200, "{ims}");
    }
}

#[test]
fn byte_ranges_parse_per_rfc_9110() {
    use Ranged::*;
    let part = |start, len| Part { start, len };
    let table: [(&str, Ranged); 27] = [
        ("bytes=0-4", part(0, 5)),
        ("bytes=2-2", part(2, 1)),
        ("bytes=5-", part(5, 5)),
        ("bytes=-3", part(7, 3)),
        ("bytes=-100", part(0, 10)),
        ("bytes=0-999999", part(0, 10)),
        ("bytes=9-99999999999999999999999", part(9, 1)),
        ("BYTES=0-0", part(0, 1)),
        (" bytes= 1-2 ", part(1, 2)),
        ("bytes=1-2,", part(1, 2)),
        ("bytes=10-", Unsatisfiable),
        ("bytes=10-20", Unsatisfiable),
        ("bytes=99999999999999999999999-", Unsatisfiable),
        ("bytes=-0", Unsatisfiable),
        ("bytes=0-1,3-4", Full),
        ("bytes=0-1, 10-", Full),
        ("bytes=5-2", Full),
        ("bytes=abc", Full),
        ("bytes=", Full),
        ("bytes=-", Full),
        ("bytes=1-2-3", Full),
        ("bytes=+1-2", Full),
        ("bytes=0x1-2", Full),
        ("bytes 0-1", Full),
        ("items=0-1", Full),
        ("", Full),
        ("=0-1", Full),
    ];
    for (field, expected) in table {
        assert_eq!(byte_range(field.as_bytes(), 10), expected, "{field}");
    }
    assert_eq!(byte_range(b"bytes=-5", 0), Unsatisfiable);
    assert_eq!(byte_range(b"bytes=0-", 0), Unsatisfiable);
}

fn ranged(tree: &Tree, path: &[u8], range: &str, if_range: Option<&str>) -> FileReply {
    let mut req = request(path);
    req.range = Some(range.as_bytes());
    req.if_range = if_range.map(str::as_bytes);
    serve(&tree.root(), &req)
}

#[test]
fn a_range_gets_206_with_content_range() {
    let tree = Tree::new("range");
    tree.file("a.txt", b"0123456789");
    let reply = ranged(&tree, b"/a.txt", "bytes=2-5", None);
    assert_eq!(reply.status, 206);
    let head = String::from_utf8(reply.head.clone()).unwrap();
    assert!(head.starts_with("HTTP/1.1 206 Partial Content\r\n"));
    assert_eq!(header_of(&reply, "Content-Range").unwrap(), "bytes 2-5/10");
    assert_eq!(header_of(&reply, "Content-Length").unwrap(), "4");
    assert_eq!(header_of(&reply, "ETag").unwrap(), "\"6553f100-a\"");
    assert!(matches!(
        reply.body,
        Body::File {
            offset: 2,
            len: 4,
            ..
        }
    ));
    assert_eq!(body_of(reply), b"2345");
    let tail = ranged(&tree, b"/a.txt", "bytes=-3", None);
    assert_eq!(header_of(&tail, "Content-Range").unwrap(), "bytes 7-9/10");
    assert_eq!(body_of(tail), b"789");
    let whole = ranged(&tree, b"/a.txt", "bytes=0-1,4-5", None);
    assert_eq!(whole.status, 200);
    assert_eq!(body_of(whole), b"0123456789");
    assert_eq!(ranged(&tree, b"/a.txt", "bytes=9-1", None).status, 200);
}

#[test]
fn an_unsatisfiable_range_gets_416() {
    let tree = Tree::new("416");
    tree.file("a.txt", b"0123456789");
    tree.file("empty.txt", b"");
    let reply = ranged(&tree, b"/a.txt", "bytes=10-", None);
    assert_eq!(reply.status, 416);
    assert_eq!(header_of(&reply, "Content-Range").unwrap(), "bytes */10");
    assert_eq!(body_of(reply), b"416 Range Not Satisfiable\n");
    let empty = ranged(&tree, b"/empty.txt", "bytes=0-", None);
    assert_eq!(header_of(&empty, "Content-Range").unwrap(), "bytes */0");
    let whole = get(&tree, "/empty.txt");
    assert_eq!(header_of(&whole, "Content-Length").unwrap(), "0");
    assert!(matches!(whole.body, Body::None));
}

#[test]
fn if_range_honours_the_range_only_when_it_matches_strongly() {
    let tree = Tree::new("if-range");
    tree.file("a.txt", b"0123456789");
    let etag = "\"6553f100-a\"";
    for if_range in [etag, LAST_MODIFIED, " \"6553f100-a\" "] {
        let reply = ranged(&tree, b"/a.txt", "bytes=0-0", Some(if_range));
        assert_eq!(reply.status, 206, "{if_range}");
    }
    let weak = format!("W/{etag}");
    for if_range in [
        weak.as_str(),
        "\"6553f100-b\"",
        "Tue, 14 Nov 2023 22:13:21 GMT",
        "Wed, 15 Nov 2023 00:00:00 GMT",
        "garbage",
        "\"6553f100-a\" x",
    ] {
        let reply = ranged(&tree, b"/a.txt", "bytes=0-0", Some(if_range));
        assert_eq!(reply.status, 200, "{if_range}");
        assert_eq!(body_of(reply).len(), 10);
    }
    // An unsatisfiable range under a stale If-Range: the whole file, not 416.
    let stale = ranged(&tree, b"/a.txt", "bytes=50-", Some("\"old\""));
    assert_eq!(stale.status, 200);
}

#[test]
fn errors_map_to_404_403_and_500() {
    use io::ErrorKind::*;
    for (kind, status) in [
        (NotFound, 404),
        (NotADirectory, 404),
        (InvalidFilename, 404),
        (PermissionDenied, 403),
        (Other, 500),
        (TimedOut, 500),
    ] {
        assert_eq!(status_of(&io::Error::from(kind)), status, "{kind:?}");
    }
    let tree = Tree::new("errors");
    tree.file("a.txt", b"a");
    assert_eq!(get(&tree, "/a.txt/b").status, 404);
    let long = format!("/{}", "x".repeat(5000));
    assert_eq!(get(&tree, &long).status, 404);
    let reply = error(500, &[]);
    assert!(reply
        .head
        .starts_with(b"HTTP/1.1 500 Internal Server Error\r\n"));
}

#[test]
fn unreadable_files_are_403() {
    use std::os::unix::fs::PermissionsExt;
    let tree = Tree::new("403");
    let file = tree.file("locked.txt", b"locked");
    tree.file("shut/a.txt", b"a");
    let dir = tree.root().join("shut");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o000)).unwrap();
    if File::open(&file).is_ok() {
        // Root (CAP_DAC_OVERRIDE) reads anything: nothing to check here;
        // `errors_map_to_404_403_and_500` covers the mapping.
        eprintln!("skipped: permissions do not bind this process");
    } else {
        assert_eq!(get(&tree, "/locked.txt").status, 403);
        assert_eq!(get(&tree, "/shut/a.txt").status, 403);
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn out_of_range_mtimes_drop_last_modified_without_panicking() {
    let tree = Tree::new("mtime");
    let path = tree.file("old.txt", b"old");
    let before_1970 = UNIX_EPOCH - Duration::from_secs(86_400);
    set_mtime(&path, before_1970);
    let reply = get(&tree, "/old.txt");
    assert_eq!(reply.status, 200);
    assert_eq!(header_of(&reply, "Last-Modified"), None);
    assert_eq!(header_of(&reply, "ETag").unwrap(), "\"0-3\"");
    let mut req = request(b"/old.txt");
    req.if_modified_since = Some(b"Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(serve(&tree.root(), &req).status, 200);
}

/// Paths made of the pieces traversal attacks are made of.
fn tricky_path() -> impl Strategy<Value = Vec<u8>> {
    let words = "/ .. . %2e %2E %2f %2F %5c \\ %00 % %25 a a.txt d index.html outside \
                 secret.txt leak out .env .well-known ; ? # é ~ %c3%a9 //";
    let mut pieces: Vec<&str> = words.split_whitespace().collect();
    pieces.extend([" ", "\r\n"]);
    let piece = proptest::sample::select(pieces);
    proptest::collection::vec(piece, 0..10).prop_map(|v| v.concat().into_bytes())
}

fn header_value() -> impl Strategy<Value = Option<Vec<u8>>> {
    let typical = proptest::sample::select(vec![
        "bytes=0-1",
        "bytes=-2",
        "bytes=5-",
        "*",
        "\"6553f100-5\"",
        "W/\"x\"",
        LAST_MODIFIED,
        "bytes=0-1,2-3",
        "",
    ])
    .prop_map(|s| s.as_bytes().to_vec());
    let random = proptest::collection::vec(any::<u8>(), 0..40);
    proptest::option::of(prop_oneof![typical, random])
}

fn fixture(name: &str) -> Tree {
    let tree = Tree::new(name);
    tree.file("a.txt", b"hello");
    tree.file("d/index.html", b"index");
    tree.file(".env", b"hidden");
    tree.link("leak", &tree.outside());
    tree.link("out", &tree.dir.join("outside"));
    tree
}

/// Whatever comes in: no panic, a known status, a head that is lines, and never the
/// secret outside the root nor a hidden file.
fn check(tree: &Tree, method: &[u8], path: &[u8], headers: [Option<Vec<u8>>; 4]) {
    let [range, inm, ims, if_range] = headers;
    let req = FileRequest {
        method,
        path,
        route_prefix: "/",
        range: range.as_deref(),
        if_none_match: inm.as_deref(),
        if_modified_since: ims.as_deref(),
        if_range: if_range.as_deref(),
        precompressed: None,
    };
    let reply = serve(&tree.root(), &req);
    let known = [200, 206, 301, 304, 400, 403, 404, 405, 416, 500];
    assert!(known.contains(&reply.status), "{}", reply.status);
    let head = String::from_utf8(reply.head.clone()).unwrap();
    assert!(head.ends_with("\r\n") && !head.contains("\r\n\r\n"));
    assert!(head.split("\r\n").all(|l| !l.contains(['\r', '\n'])));
    let body = body_of(reply);
    assert!(
        body != SECRET && body != b"hidden",
        "{:?}",
        String::from_utf8_lossy(path)
    );
}

fn fuzz_config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: 512,
        failure_persistence: None,
        ..Default::default()
    }
}

#[test]
fn random_requests_never_panic_or_escape() {
    let tree = fixture("fuzz-random");
    let method = proptest::sample::select(vec![&b"GET"[..], b"HEAD", b"POST"]);
    let path = prop_oneof![tricky_path(), proptest::collection::vec(any::<u8>(), 0..64)];
    let headers = [
        header_value(),
        header_value(),
        header_value(),
        header_value(),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(fuzz_config());
    runner
        .run(&(method, path, headers), |(method, path, headers)| {
            check(&tree, method, &path, headers);
            Ok(())
        })
        .unwrap();
}

#[test]
fn random_bytes_after_a_slash_never_panic_or_escape() {
    let tree = fixture("fuzz-bytes");
    let path = proptest::collection::vec(any::<u8>(), 0..64).prop_map(|mut v| {
        v.insert(0, b'/');
        v
    });
    let mut runner = proptest::test_runner::TestRunner::new(fuzz_config());
    runner
        .run(&path, |path| {
            check(&tree, b"GET", &path, [None, None, None, None]);
            Ok(())
        })
        .unwrap();
}
