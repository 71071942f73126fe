//! Response compression for routes with `compress`: which coding a request accepts
//! (`accept`, read with its head), whether a response is compressed and how its head
//! changes (`response`), and the streaming encoders (`encoder`).
//!
//! A leaf: it reads headers and compresses bytes, and never touches a socket; the
//! stages call it (`session::stages` with the request head, `downstream` with the
//! response head, `io::body` for each pass of the body). It must never buffer a whole
//! body: every pass is flushed, so a slow stream reaches the client as it comes. A
//! route without `compress` never reaches it.

pub mod accept;
pub mod encoder;
pub mod response;

use sluice_config::Compress;

/// The codings sluice compresses with, in its order of preference among those a client
/// accepts equally: zstd (smallest output for the least CPU), brotli, gzip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Zstd,
    Br,
    Gzip,
}

impl Coding {
    pub const PREFERENCE: [Coding; 3] = [Coding::Zstd, Coding::Br, Coding::Gzip];

    /// Its name in `Accept-Encoding` and `Content-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Br => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// The suffix of a file's precompressed copy.
    pub fn suffix(self) -> &'static str {
        match self {
            Coding::Zstd => ".zst",
            Coding::Br => ".br",
            Coding::Gzip => ".gz",
        }
    }

    /// Its level on a route, `None` when the route does not use it.
    pub fn level(self, c: &Compress) -> Option<u32> {
        match self {
            Coding::Zstd => c.zstd,
            Coding::Br => c.br,
            Coding::Gzip => c.gzip,
        }
    }
}

/// What a compressing route does for one request, decided with its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// The client accepts none of the route's codings: a response that could be
    /// compressed only gets `Vary: Accept-Encoding`.
    Identity,
    /// Compress a response that can be with this coding.
    Encode(Coding),
}

/// How a response head changes on its way to the client: `Vary: Accept-Encoding`
/// added, and the coding its body is compressed with, if it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recode {
    pub vary: bool,
    pub coding: Option<Coding>,
}
