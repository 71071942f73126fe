//! HAProxy's runtime API (`stats socket ... level admin`): `show servers state` lists a
//! backend's servers with their admin state, `show stat` which are backups, `set server
//! BACKEND/SERVER state drain|ready` changes the state. A drain lasts until undone: there
//! are no leases.

use super::{choose, enough, Mark, ResizeError};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// `srv_admin_state`'s bit for a drain set through the API (SRV_ADMF_FDRAIN); checked on
/// HAProxy 2.6 by draining a server and reading it back.
const DRAIN: u32 = 0x08;
/// `srv_op_state` of a server up (SRV_ST_RUNNING).
const RUNNING: u32 = 2;
/// How long one command may take: a runtime API answers at once, unlike a backend.
const TIMEOUT: Duration = Duration::from_secs(5);

/// One server of `show servers state`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Server {
    name: String,
    op: u32,
    admin: u32,
}

/// The backend to resize, its servers in service (up, neither in maintenance nor
/// drained, not backups: a backup serves only when the others are down) and their admin
/// states now.
pub(super) fn open(
    socket: &str,
    backend: Option<&str>,
    most: usize,
) -> Result<(String, Vec<String>, Mark), ResizeError> {
    let all = backends(socket, None)?;
    let counts = all.iter().map(|(b, s)| (b.clone(), s.len())).collect();
    let name = choose(&counts, backend, "backend")?;
    let servers = &all[&name];
    let line = "show stat -1 4 -1";
    let backups = backups(&command(socket, line)?, &name)
        .map_err(|why| runtime(socket, format!("{line}: {why}")))?;
    let ready: Vec<String> = servers
        .iter()
        .filter(|s| s.admin == 0 && s.op == RUNNING && !backups.contains(&s.name))
        .map(|s| s.name.clone())
        .collect();
    enough("backend", &name, &ready, most)?;
    Ok((name, ready, states(servers)))
}

/// The backend's servers and their admin states now.
pub(super) fn mark(socket: &str, backend: &str) -> Result<Mark, ResizeError> {
    let all = backends(socket, Some(backend))?;
    Ok(states(all.get(backend).map_or(&[][..], Vec::as_slice)))
}

/// `set server BACKEND/SERVER state drain|ready`; the backend's mark after.
pub(super) fn set(
    socket: &str,
    backend: &str,
    server: &str,
    drain: bool,
) -> Result<Mark, ResizeError> {
    if !drain {
        keep_maintenance(socket, backend, server)?;
    }
    let state = if drain { "drain" } else { "ready" };
    let line = format!("set server {backend}/{server} state {state}");
    let answer = command(socket, &line)?;
    // Success is an empty answer; anything else is HAProxy's refusal in its words.
    if !answer.trim().is_empty() {
        return Err(runtime(socket, format!("{line}: {}", answer.trim())));
    }
    mark(socket, backend)
}

/// Refuses to undrain a server someone else put in maintenance since: `state ready`
/// would end their maintenance too (HAProxy has no command that ends a drain alone).
fn keep_maintenance(socket: &str, backend: &str, server: &str) -> Result<(), ResizeError> {
    let Mark::States(states) = mark(socket, backend)? else {
        return Ok(());
    };
    match states.get(server) {
        Some(state) if state & !DRAIN != 0 => Err(runtime(
            socket,
            format!(
                "{backend}/{server} was put in maintenance by someone else (admin state {state}): \
                 the lab leaves it so; `set server {backend}/{server} state ready` ends both"
            ),
        )),
        _ => Ok(()),
    }
}

/// The admin states once `server`'s drain bit is set (or cleared).
pub(super) fn after(
    states: &BTreeMap<String, u32>,
    server: &str,
    drain: bool,
) -> BTreeMap<String, u32> {
    let mut states = states.clone();
    if let Some(state) = states.get_mut(server) {
        *state = if drain {
            *state | DRAIN
        } else {
            *state & !DRAIN
        };
    }
    states
}

/// How `found` differs from `expected`, server by server.
pub(super) fn differences(
    expected: &BTreeMap<String, u32>,
    found: &BTreeMap<String, u32>,
) -> String {
    let names: std::collections::BTreeSet<_> = expected.keys().chain(found.keys()).collect();
    let said: Vec<String> = names
        .into_iter()
        .filter(|n| expected.get(*n) != found.get(*n))
        .map(|n| match (expected.get(n), found.get(n)) {
            (Some(e), Some(f)) => format!("{n}'s admin state is {f} where the lab left {e}"),
            (Some(_), None) => format!("{n} was removed"),
            _ => format!("{n} was added"),
        })
        .collect();
    said.join("; ")
}

/// The command that puts `server` back in service by hand, with socat.
pub(super) fn ready_by_hand(socket: &str, backend: &str, server: &str) -> String {
    let to = match is_unix(socket) {
        true => format!("UNIX:{socket}"),
        false => format!("TCP:{socket}"),
    };
    format!("echo \"set server {backend}/{server} state ready\" | socat stdio {to}")
}

fn states(servers: &[Server]) -> Mark {
    Mark::States(servers.iter().map(|s| (s.name.clone(), s.admin)).collect())
}

/// `show servers state [BACKEND]`, by backend.
fn backends(
    socket: &str,
    backend: Option<&str>,
) -> Result<BTreeMap<String, Vec<Server>>, ResizeError> {
    let line = match backend {
        Some(b) => format!("show servers state {b}"),
        None => "show servers state".to_string(),
    };
    let answer = command(socket, &line)?;
    parse(&answer).map_err(|why| runtime(socket, format!("{line}: {why}")))
}

/// `show servers state`'s answer: a format version (1), a `#` header naming the columns
/// (be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state ...), a line a
/// server. Anything else is an error HAProxy wrote instead ("Can't find backend.").
fn parse(answer: &str) -> Result<BTreeMap<String, Vec<Server>>, String> {
    let mut lines = answer.lines();
    if lines.next().map(str::trim) != Some("1") {
        return Err(format!("answered {:?}", answer.trim()));
    }
    let mut all: BTreeMap<String, Vec<Server>> = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| f.get(i).and_then(|v| v.parse::<u32>().ok());
        let (Some(backend), Some(name), Some(op), Some(admin)) =
            (f.get(1), f.get(3), number(5), number(6))
        else {
            return Err(format!("a line not of the version 1 format: {line:?}"));
        };
        all.entry(backend.to_string()).or_default().push(Server {
            name: name.to_string(),
            op,
            admin,
        });
    }
    Ok(all)
}

/// The backup servers of `backend`, from `show stat`'s CSV: a `# pxname,svname,...`
/// header, then a line a server with `bck` 1 for a backup.
fn backups(csv: &str, backend: &str) -> Result<std::collections::BTreeSet<String>, String> {
    let mut lines = csv.lines();
    let header = lines.next().and_then(|h| h.strip_prefix("# "));
    let columns: Vec<&str> = header.map_or(Vec::new(), |h| h.split(',').collect());
    let at = |name: &str| columns.iter().position(|c| *c == name);
    let (Some(px), Some(sv), Some(bck)) = (at("pxname"), at("svname"), at("bck")) else {
        return Err(format!("answered {:?}", csv.lines().next().unwrap_or("")));
    };
    let rows = lines.map(|l| l.split(',').collect::<Vec<_>>());
    Ok(rows
        .filter(|f| f.get(px) == Some(&backend) && f.get(bck) == Some(&"1"))
        .filter_map(|f| f.get(sv).map(|s| s.to_string()))
        .collect())
}

/// One command on its own connection and HAProxy's whole answer: without `prompt`, it
/// answers one command and closes.
fn command(socket: &str, line: &str) -> Result<String, ResizeError> {
    let talk = || -> std::io::Result<String> {
        if is_unix(socket) {
            let stream = UnixStream::connect(socket)?;
            stream.set_read_timeout(Some(TIMEOUT))?;
            stream.set_write_timeout(Some(TIMEOUT))?;
            exchange(stream, line)
        } else {
            let stream = TcpStream::connect(socket)?;
            stream.set_read_timeout(Some(TIMEOUT))?;
            stream.set_write_timeout(Some(TIMEOUT))?;
            exchange(stream, line)
        }
    };
    talk().map_err(|e| {
        runtime(
            socket,
            format!("{line}: {e} (is there a `stats socket {socket} level admin` in HAProxy's global section?)"),
        )
    })
}

fn exchange(mut stream: impl Read + Write, line: &str) -> std::io::Result<String> {
    stream.write_all(format!("{line}\n").as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// A path is a unix socket; `HOST:PORT` is TCP (`stats socket ipv4@HOST:PORT`).
fn is_unix(socket: &str) -> bool {
    socket.contains('/') || !socket.contains(':')
}

fn runtime(socket: &str, why: String) -> ResizeError {
    ResizeError::Runtime {
        socket: socket.into(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Read from HAProxy 2.6 with s2 drained and s3 in maintenance.
    const STATE: &str =
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight\n\
        3 app 1 s1 127.0.0.1 2 0 1 1 1 1 0 2 0 0 0 0 - 19001 - 0 0 - - 0\n\
        3 app 2 s2 127.0.0.1 2 8 1 1 0 1 0 2 0 0 0 0 - 19002 - 0 0 - - 0\n\
        3 app 3 s3 127.0.0.1 0 1 1 1 1 1 0 0 0 0 0 0 - 19003 - 0 0 - - 0\n\
        4 static 1 web 127.0.0.1 2 0 1 1 1 1 0 2 0 0 0 0 - 80 - 0 0 - - 0\n\n";

    #[test]
    fn servers_in_maintenance_or_drained_are_not_in_service() {
        let all = parse(STATE).unwrap();
        let app = &all["app"];
        assert_eq!(app.len(), 3);
        let ready: Vec<_> = app
            .iter()
            .filter(|s| s.admin == 0 && s.op == RUNNING)
            .collect();
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].name, "s1");
        assert_eq!(app[1].admin & DRAIN, DRAIN);
        let counts = all.iter().map(|(b, s)| (b.clone(), s.len())).collect();
        assert_eq!(choose(&counts, None, "backend").unwrap(), "app");
    }

    #[test]
    fn backups_are_read_from_show_stat() {
        // Read from HAProxy 2.6 (columns cut after `bck`): s2 is `backup`.
        let csv = "# pxname,svname,qcur,status,weight,act,bck,chkfail\n\
                   app,s1,0,no check,1,1,0,\n\
                   app,s2,0,no check,1,0,1,\n\
                   static,web,0,no check,1,0,1,\n\n";
        let found = backups(csv, "app").unwrap();
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["s2"]);
        assert!(backups("Unknown command.\n", "app")
            .unwrap_err()
            .contains("Unknown"));
    }

    #[test]
    fn haproxys_own_errors_are_said() {
        let e = parse("Can't find backend.\n\n").unwrap_err();
        assert!(e.contains("Can't find backend."), "{e}");
    }

    #[test]
    fn a_change_by_someone_else_is_named() {
        let Mark::States(left) = states(&parse(STATE).unwrap()["app"]) else {
            unreachable!()
        };
        let expected = after(&left, "s1", true);
        assert_eq!(expected["s1"], DRAIN);
        let mut found = expected.clone();
        found.insert("s2".into(), 0);
        let why = differences(&expected, &found);
        assert_eq!(why, "s2's admin state is 0 where the lab left 8");
    }

    #[test]
    fn the_commands_by_hand_name_the_socket() {
        assert_eq!(
            ready_by_hand("/run/haproxy/admin.sock", "app", "s2"),
            "echo \"set server app/s2 state ready\" | socat stdio UNIX:/run/haproxy/admin.sock"
        );
        assert!(ready_by_hand("127.0.0.1:9999", "app", "s2").ends_with("TCP:127.0.0.1:9999"));
    }
}
