//! `parse_response` on arbitrary bytes (the first byte's low bit: the request was HEAD):
//! never panics, and the head it writes for the client is well formed, keeps the status,
//! and announces chunked framing only when sluice frames the body that way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_proxy::testing::{parse_response, AcceptedResponse};

fuzz_target!(|data: &[u8]| {
    let Some((&flag, input)) = data.split_first() else {
        return;
    };
    let head = flag & 1 == 1;
    let result = parse_response(input, head);
    if let Ok(Some(acc)) = &result {
        check_accepted(input, head, acc);
    }
    // A prefix that is accepted or rejected decides the whole input the same way.
    for cut in [input.len() / 2, input.len().saturating_sub(1)] {
        if cut >= input.len() {
            continue;
        }
        match (parse_response(&input[..cut], head), &result) {
            (Ok(None), _) => {}
            (Ok(Some(p)), Ok(Some(w))) if &p == w => {}
            (Err(a), Err(b)) if a == *b => {}
            (part, _) => panic!("prefix of {cut} bytes gives {part:?}, whole input gives {result:?}"),
        }
    }
});

fn check_accepted(input: &[u8], head: bool, acc: &AcceptedResponse) {
    assert!(acc.head_len > 0 && acc.head_len <= input.len(), "head_len {} of {}", acc.head_len, input.len());
    assert_eq!(
        parse_response(&input[..acc.head_len], head),
        Ok(Some(acc.clone())),
        "the head alone parses differently"
    );
    if head || matches!(acc.status, 100..=199 | 204 | 304) {
        assert_eq!(acc.framing, "none", "status {} (HEAD: {head}) has a body", acc.status);
    }

    let out = &acc.client_head;
    check_lines(out);
    let mut headers = [httparse::EMPTY_HEADER; 256];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(out) {
        Ok(httparse::Status::Complete(n)) => assert_eq!(n, out.len(), "client head has bytes after its end"),
        other => panic!("client head does not re-parse: {other:?}\n{}", show(out)),
    }
    assert_eq!(res.code, Some(acc.status), "status changed\n{}", show(out));
    assert_eq!(res.version, Some(1));
    let te: Vec<_> = res
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .collect();
    if acc.framing == "chunked" {
        assert_eq!(te.len(), 1, "chunked framing needs one Transfer-Encoding\n{}", show(out));
        assert_eq!(te[0].value, b"chunked");
    } else {
        assert!(te.is_empty(), "Transfer-Encoding with framing {}\n{}", acc.framing, show(out));
    }
}

/// Only CRLF-terminated lines: no bare CR, no bare LF, no NUL, ending with the blank line.
fn check_lines(head: &[u8]) {
    assert!(head.ends_with(b"\r\n\r\n"), "head does not end with a blank line\n{}", show(head));
    for (i, &b) in head.iter().enumerate() {
        assert_ne!(b, 0, "NUL at {i}\n{}", show(head));
        if b == b'\r' {
            assert_eq!(head.get(i + 1), Some(&b'\n'), "bare CR at {i}\n{}", show(head));
        }
        if b == b'\n' {
            assert!(i > 0 && head[i - 1] == b'\r', "bare LF at {i}\n{}", show(head));
        }
    }
}

fn show(bytes: &[u8]) -> String {
    format!("b\"{}\"", bytes.escape_ascii())
}
