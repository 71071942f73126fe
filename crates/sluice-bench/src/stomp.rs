//! STOMP 1.2 frames as a client writes and reads them (over WebSocket text messages),
//! and the marker a SEND carries so that each subscriber's copy is matched to it.
//!
//! Written here, not shared with the lab's simulated broker, so that a bug on one side
//! cannot hide the same bug on the other.

/// A frame as read: command, headers (escapes undone), body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub command: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Frame {
    pub fn header(&self, name: &str) -> Option<&str> {
        // STOMP 1.2: when a header repeats, the first one counts.
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A frame's text, NUL-terminated. Header values are escaped as STOMP 1.2 says, except
/// in CONNECT (brokers read those raw); a body gets its `content-length`.
pub fn encode(command: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut out = String::with_capacity(64 + body.len());
    out.push_str(command);
    out.push('\n');
    let escape = command != "CONNECT" && command != "STOMP";
    for (name, value) in headers {
        out.push_str(name);
        out.push(':');
        if escape {
            push_escaped(&mut out, value);
        } else {
            out.push_str(value);
        }
        out.push('\n');
    }
    if !body.is_empty() {
        out.push_str(&format!("content-length:{}\n", body.len()));
    }
    out.push('\n');
    out.push_str(body);
    out.push('\0');
    out
}

fn push_escaped(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            ':' => out.push_str("\\c"),
            c => out.push(c),
        }
    }
}

/// Why a STOMP frame from the server cannot be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a STOMP frame without a blank line")]
    NoBlankLine,
    #[error("not a STOMP command: {0:?}")]
    Command(String),
    #[error("bad STOMP header line {0:?}")]
    HeaderLine(String),
    #[error("bad escape in a STOMP header: \\{0:?}")]
    Escape(Option<char>),
}

/// The frames in one WebSocket message (a broker may batch several, and send bare
/// end-of-lines as heart-beats).
pub fn frames(text: &str) -> impl Iterator<Item = Result<Frame, FrameError>> + '_ {
    text.split('\0')
        .map(|f| f.trim_start_matches(['\r', '\n']))
        .filter(|f| !f.is_empty())
        .map(parse)
}

/// One frame, without its NUL.
pub fn parse(text: &str) -> Result<Frame, FrameError> {
    let (head, body) = split_head(text).ok_or(FrameError::NoBlankLine)?;
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let command = lines.next().unwrap_or_default().to_string();
    if command.is_empty() || !command.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(FrameError::Command(command));
    }
    let raw = command == "CONNECTED";
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| FrameError::HeaderLine(line.to_string()))?;
        let value = if raw {
            value.to_string()
        } else {
            unescape(value)?
        };
        headers.push((name.to_string(), value));
    }
    Ok(Frame {
        command,
        headers,
        body: body.to_string(),
    })
}

fn split_head(text: &str) -> Option<(&str, &str)> {
    let lf = text.find("\n\n").map(|i| (i, 2));
    let crlf = text.find("\r\n\r\n").map(|i| (i, 4));
    let (i, len) = match (lf, crlf) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some((&text[..i], &text[i + len..]))
}

fn unescape(value: &str) -> Result<String, FrameError> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('n') => '\n',
            Some('r') => '\r',
            Some('c') => ':',
            Some('\\') => '\\',
            other => return Err(FrameError::Escape(other)),
        });
    }
    Ok(out)
}

/// The marker appended to a SEND's body: who sent it and its number. Plain ASCII
/// without quotes or backslashes, so it survives an application that copies the text
/// into JSON.
pub fn marker(sender: u32, seq: u32) -> String {
    format!("[sluice:{sender}:{seq}]")
}

/// The (sender, number) of the marker in `body`, if it has one.
pub fn find_marker(body: &str) -> Option<(u32, u32)> {
    let start = body.rfind("[sluice:")? + "[sluice:".len();
    let rest = &body[start..];
    let end = rest.find(']')?;
    let (sender, seq) = rest[..end].split_once(':')?;
    Some((sender.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let text = encode(
            "SEND",
            &[("destination", "/topic/a:b"), ("x", "1\n2")],
            "hi",
        );
        assert_eq!(
            text,
            "SEND\ndestination:/topic/a\\cb\nx:1\\n2\ncontent-length:2\n\nhi\0"
        );
        let frames: Vec<_> = frames(&format!("\n{text}\n{text}")).collect();
        assert_eq!(frames.len(), 2);
        let f = frames[0].as_ref().unwrap();
        assert_eq!(f.header("destination"), Some("/topic/a:b"));
        assert_eq!(f.header("x"), Some("1\n2"));
        assert_eq!(f.body, "hi");
        let connected = parse("CONNECTED\r\nversion:1.2\r\nserver:a:b\r\n\r\n").unwrap();
        assert_eq!(connected.header("server"), Some("a:b"));
        assert!(parse("lower\n\n").is_err());
        assert!(parse("SEND\nno-colon\n\n").is_err());
        assert!(parse("SEND\nx:\\t\n\n").is_err());
    }

    #[test]
    fn a_broken_frame_says_what_is_wrong() {
        let table = [
            ("MESSAGE\nno blank line", FrameError::NoBlankLine),
            ("message\n\n", FrameError::Command("message".into())),
            (
                "MESSAGE\nno colon\n\n",
                FrameError::HeaderLine("no colon".into()),
            ),
            ("MESSAGE\na:\\x\n\n", FrameError::Escape(Some('x'))),
        ];
        for (text, error) in table {
            assert_eq!(parse(text).unwrap_err(), error, "{text:?}");
        }
        assert_eq!(
            FrameError::Escape(Some('x')).to_string(),
            "bad escape in a STOMP header: \\Some('x')"
        );
    }

    #[test]
    fn markers() {
        let body = format!("{{\"text\":\"hello {}\"}}", marker(12, 7));
        assert_eq!(find_marker(&body), Some((12, 7)));
        assert_eq!(find_marker("no marker"), None);
        assert_eq!(find_marker("[sluice:x:1]"), None);
    }
}
