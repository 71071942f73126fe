//! Why a request failed, in one shape: which side is to blame, what became of the
//! client's request body, whether another try may help, and the status the client gets.
//!
//! Every stage reports its failures as a [`Failure`]; `forward.rs` decides retries from
//! it alone ([`Failure::may_retry_elsewhere`], [`Failure::may_resend_fresh`]), and the
//! record stage logs it. As in pingora, an error knows its side and its retry class.

use crate::http1::head::Framing;
use std::borrow::Cow;

/// Who is to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client: it went away, sent a bad body, or was too slow.
    Downstream,
    /// The server: refused, reset, timed out or answered nonsense. Counts toward
    /// ejecting it.
    Upstream,
    /// sluice's own decision: no server was available.
    Internal,
}

/// What became of the client's request body when the failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// The request has no body.
    None,
    /// It has one, and none of it was read: another server can still be given it.
    Unread,
    /// It was read to its end: the client connection can carry another request.
    Whole,
    /// Part of it was read: it cannot be replayed, and the rest is still on the client
    /// connection, which must not be read as a next request.
    Partial,
}

impl Body {
    /// The body of a request framed by `framing`, before any of it was read.
    pub fn unread(framing: Framing) -> Body {
        if framing == Framing::None {
            Body::None
        } else {
            Body::Unread
        }
    }

    /// The body of a request framed by `framing`, once all of it was sent on.
    pub fn sent(framing: Framing) -> Body {
        if framing == Framing::None {
            Body::None
        } else {
            Body::Whole
        }
    }

    /// Nothing of the body was taken: the request can go to another server.
    pub fn untouched(self) -> bool {
        matches!(self, Body::None | Body::Unread)
    }

    /// The client connection is at a request boundary.
    pub fn consumed(self) -> bool {
        matches!(self, Body::None | Body::Whole)
    }
}

/// How far the request got, which decides whether trying again can repeat an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Nothing reached the server (connect failed): any request may go elsewhere.
    NotSent,
    /// The connection failed before any byte of a response, the way a pooled connection
    /// the server had just closed fails: the request most likely never reached the
    /// application.
    StaleConnection,
    /// The request may have reached the application and no answer came: only a request
    /// that is safe to repeat may go elsewhere.
    MaybeProcessed,
    /// Never again: the server answered, or the client or sluice is the cause.
    Never,
}

/// What went wrong, as the decisions that follow a failure read it: ejection counts it
/// by kind, the server's last errors and the access log name it. The cause says the
/// rest in words and is never read to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No connection to the server (refused, unreachable, or too slow to accept).
    Connect,
    /// The server did not answer within its `read_timeout`.
    Timeout,
    /// The connection to the server ended or broke before the response was whole.
    Reset,
    /// The server's response cannot be relayed (malformed, or too large).
    BadResponse,
    /// The server answered with a status counted as its failure.
    Status,
    /// The client went away, or could not be written to.
    ClientGone,
    /// The client was too slow sending its request.
    ClientSlow,
    /// The client's request is malformed or refused as it stands (4xx, 501).
    Malformed,
    /// No route matches the request.
    NoRoute,
    /// Over a rate limit or the client's connection limit.
    Limited,
    /// The route's access rules deny the client's address.
    Forbidden,
    /// The route asks for a user and password, and got none valid.
    Unauthorized,
    /// Every server was at its `max_conns` too long, or the queue was full.
    Overloaded,
    /// No server could be picked.
    Unavailable,
    /// No response within the route's `timeout`.
    Deadline,
}

impl Kind {
    /// Its name in the API, logs and metrics: `connect`, `bad_response`...
    pub fn name(self) -> &'static str {
        match self {
            Kind::Connect => "connect",
            Kind::Timeout => "timeout",
            Kind::Reset => "reset",
            Kind::BadResponse => "bad_response",
            Kind::Status => "status",
            Kind::ClientGone => "client_gone",
            Kind::ClientSlow => "client_slow",
            Kind::Malformed => "malformed",
            Kind::NoRoute => "no_route",
            Kind::Limited => "limited",
            Kind::Forbidden => "forbidden",
            Kind::Unauthorized => "unauthorized",
            Kind::Overloaded => "overloaded",
            Kind::Unavailable => "unavailable",
            Kind::Deadline => "deadline",
        }
    }

    /// The kind of a failure reading the request body from the client: too slow, a
    /// malformed body (chunked framing, more than its length), or the client gone.
    pub fn reading_client(e: &std::io::Error) -> Kind {
        match e.kind() {
            std::io::ErrorKind::TimedOut => Kind::ClientSlow,
            std::io::ErrorKind::InvalidData => Kind::Malformed,
            _ => Kind::ClientGone,
        }
    }

    /// The kind of a request sluice refused with `status` as it arrived: too slow
    /// (408), or malformed.
    pub fn refused(status: u16) -> Kind {
        if status == 408 {
            Kind::ClientSlow
        } else {
            Kind::Malformed
        }
    }
}

/// A failed request, as the client will see it and the log will say it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{cause}")]
pub struct Failure {
    pub side: Side,
    pub kind: Kind,
    /// The status the client gets, if it gets a response at all.
    pub status: u16,
    pub cause: Cow<'static, str>,
    pub body: Body,
    pub retry: Retry,
    /// Seconds the client is told to wait before trying again (`Retry-After`).
    pub retry_after: Option<u32>,
}

/// A request refused as it arrived: the client is to blame, and what is left of its
/// body is on the connection, which closes.
impl From<crate::http1::request::Rejection> for Failure {
    fn from(r: crate::http1::request::Rejection) -> Self {
        Failure::downstream(Kind::refused(r.status), r.status, r.reason, Body::Partial)
    }
}

impl Failure {
    /// The server is to blame, with `body` as it stands.
    pub fn upstream(
        kind: Kind,
        status: u16,
        cause: impl Into<Cow<'static, str>>,
        body: Body,
        retry: Retry,
    ) -> Self {
        Failure {
            side: Side::Upstream,
            kind,
            status,
            cause: cause.into(),
            body,
            retry,
            retry_after: None,
        }
    }

    /// The client is to blame (gone, too slow, a malformed body).
    pub fn downstream(
        kind: Kind,
        status: u16,
        cause: impl Into<Cow<'static, str>>,
        body: Body,
    ) -> Self {
        Failure {
            side: Side::Downstream,
            kind,
            status,
            cause: cause.into(),
            body,
            retry: Retry::Never,
            retry_after: None,
        }
    }

    /// No server could be picked at all.
    pub fn unavailable(body: Body) -> Self {
        Failure {
            side: Side::Internal,
            kind: Kind::Unavailable,
            status: 503,
            cause: "no server available".into(),
            body,
            retry: Retry::Never,
            retry_after: None,
        }
    }

    /// Every server was at its `max_conns` for as long as the request could wait, or
    /// the queue was full: the client is told to come back in a second.
    pub fn overloaded(cause: &'static str, body: Body) -> Self {
        Failure {
            side: Side::Internal,
            kind: Kind::Overloaded,
            status: 503,
            cause: cause.into(),
            body,
            retry: Retry::Never,
            retry_after: Some(1),
        }
    }

    /// No response head within the route's `timeout` (sluice's own limit: the server is
    /// not blamed for it).
    pub fn deadline(body: Body) -> Self {
        Failure {
            side: Side::Internal,
            kind: Kind::Deadline,
            status: 504,
            cause: "no response within the route's timeout".into(),
            body,
            retry: Retry::Never,
            retry_after: None,
        }
    }

    /// A response whose status counts as a server failure (it is still delivered).
    pub fn status(status: u16) -> Self {
        Failure::upstream(
            Kind::Status,
            status,
            format!("status {status}"),
            Body::Whole,
            Retry::Never,
        )
    }

    pub fn server_fault(&self) -> bool {
        self.side == Side::Upstream
    }

    /// Whether the request may go to another server: the server is to blame, the body
    /// is untouched (nothing to replay), and repeating cannot do harm, because nothing
    /// was sent or the method is idempotent (or the upstream allows the risk).
    pub fn may_retry_elsewhere(&self, idempotent: bool, risk_non_idempotent: bool) -> bool {
        self.server_fault()
            && self.body.untouched()
            && match self.retry {
                Retry::NotSent => true,
                Retry::StaleConnection | Retry::MaybeProcessed => idempotent || risk_non_idempotent,
                Retry::Never => false,
            }
    }

    /// Whether the request may be sent again at once on a new connection to the same
    /// server: the reused connection had gone stale before the request reached the
    /// application, and the request has no body and is safe to repeat.
    pub fn may_resend_fresh(&self, reused: bool, idempotent: bool) -> bool {
        reused && self.retry == Retry::StaleConnection && self.body == Body::None && idempotent
    }

    /// Marks the request body as half read: the rest is still on the client connection.
    pub fn with_body_partial(mut self) -> Self {
        self.body = Body::Partial;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The retry decision for every side, body state and retry class.
    #[test]
    fn retry_decisions() {
        use Body::*;
        use Retry::*;
        use Side::*;
        // (side, body, retry, idempotent, allow non-idempotent) -> elsewhere
        let table = [
            (Upstream, None, NotSent, false, false, true),
            (Upstream, Unread, NotSent, false, false, true),
            (Upstream, Whole, NotSent, true, true, false),
            (Upstream, Partial, NotSent, true, true, false),
            (Upstream, None, StaleConnection, true, false, true),
            (Upstream, None, StaleConnection, false, false, false),
            (Upstream, None, StaleConnection, false, true, true),
            (Upstream, None, MaybeProcessed, true, false, true),
            (Upstream, None, MaybeProcessed, false, false, false),
            (Upstream, None, MaybeProcessed, false, true, true),
            (Upstream, Unread, MaybeProcessed, true, false, true),
            (Upstream, Whole, MaybeProcessed, true, true, false),
            (Upstream, None, Never, true, true, false),
            (Downstream, None, NotSent, true, true, false),
            (Internal, None, NotSent, true, true, false),
        ];
        for (side, body, retry, idempotent, risk, expected) in table {
            let f = Failure {
                side,
                kind: Kind::Reset,
                status: 502,
                cause: "x".into(),
                body,
                retry,
                retry_after: Option::None,
            };
            assert_eq!(
                f.may_retry_elsewhere(idempotent, risk),
                expected,
                "{side:?} {body:?} {retry:?} idempotent={idempotent} risk={risk}"
            );
        }
    }

    #[test]
    fn fresh_resends() {
        let stale = Failure::upstream(
            Kind::Reset,
            502,
            "reset",
            Body::None,
            Retry::StaleConnection,
        );
        assert!(stale.may_resend_fresh(true, true));
        assert!(
            !stale.may_resend_fresh(false, true),
            "a new connection failed"
        );
        assert!(!stale.may_resend_fresh(true, false), "not idempotent");
        let with_body = Failure::upstream(
            Kind::Reset,
            502,
            "reset",
            Body::Unread,
            Retry::StaleConnection,
        );
        assert!(
            !with_body.may_resend_fresh(true, true),
            "a body cannot be replayed"
        );
        let processed = Failure::upstream(
            Kind::Timeout,
            504,
            "timeout",
            Body::None,
            Retry::MaybeProcessed,
        );
        assert!(!processed.may_resend_fresh(true, true));
    }

    #[test]
    fn kinds_come_from_what_happened_never_from_the_cause() {
        use std::io::{Error, ErrorKind};
        assert_eq!(
            Kind::reading_client(&Error::from(ErrorKind::TimedOut)),
            Kind::ClientSlow
        );
        assert_eq!(
            Kind::reading_client(&Error::from(ErrorKind::InvalidData)),
            Kind::Malformed
        );
        assert_eq!(
            Kind::reading_client(&Error::from(ErrorKind::ConnectionReset)),
            Kind::ClientGone
        );
        assert_eq!(Kind::refused(408), Kind::ClientSlow);
        for status in [400, 404, 405, 413, 431, 501] {
            assert_eq!(Kind::refused(status), Kind::Malformed, "{status}");
        }
        // A cause that reads like a status is still what its kind says.
        let f = Failure::upstream(Kind::Reset, 502, "status 502", Body::Whole, Retry::Never);
        assert_eq!((f.kind, f.kind.name()), (Kind::Reset, "reset"));
        assert_eq!(Failure::status(500).kind, Kind::Status);
        assert_eq!(Failure::deadline(Body::None).kind.name(), "deadline");
    }

    #[test]
    fn codec_errors_say_what_they_are_and_become_failures_in_one_place() {
        use crate::http1::chunked::Malformed;
        use crate::http1::head::FramingError;
        use crate::http1::request::reject;
        let slow = Failure::from(reject(
            408,
            "request head not received within header_timeout",
        ));
        assert_eq!(
            (slow.side, slow.kind, slow.body),
            (Side::Downstream, Kind::ClientSlow, Body::Partial)
        );
        assert_eq!(
            slow.to_string(),
            "request head not received within header_timeout"
        );
        let large = Failure::from(reject(431, "too many header lines"));
        assert_eq!((large.status, large.kind), (431, Kind::Malformed));
        let smuggle = FramingError::LengthAndChunked;
        assert_eq!(smuggle.to_string(), smuggle.as_str());
        let chunk = Malformed("junk after the chunk size");
        assert_eq!(
            chunk.to_string(),
            "malformed chunked body: junk after the chunk size"
        );
    }

    #[test]
    fn body_states() {
        assert!(Body::None.untouched() && Body::None.consumed());
        assert!(Body::Unread.untouched() && !Body::Unread.consumed());
        assert!(!Body::Whole.untouched() && Body::Whole.consumed());
        assert!(!Body::Partial.untouched() && !Body::Partial.consumed());
        let f = Failure::upstream(
            Kind::Reset,
            502,
            "closed",
            Body::None,
            Retry::MaybeProcessed,
        );
        assert_eq!(f.to_string(), "closed");
        assert_eq!(f.with_body_partial().body, Body::Partial);
    }
}
