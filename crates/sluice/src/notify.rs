//! Telling systemd where sluice is (`Type=notify`, `dist/sluice.service`): ready once its
//! listeners are bound, reloading while a new config is applied, stopping at shutdown;
//! after a binary upgrade, the new process's pid as the main one.
//! Started by anything else ($NOTIFY_SOCKET unset), each call does nothing.

use sd_notify::NotifyState;

/// Listening and serving; `status` is what `systemctl status` shows.
pub fn ready(status: &str) {
    // One line: a newline would start another assignment in the message (a reload's
    // errors span several).
    let status = status.split_whitespace().collect::<Vec<_>>().join(" ");
    send(&[NotifyState::Ready, NotifyState::Status(&status)]);
}

/// [`ready`], from a process that took over from the running one (a binary upgrade):
/// with its pid as the service's main pid (the unit's `NotifyAccess=all` lets it tell).
pub fn ready_as_main(status: &str, upgraded: bool) {
    if !upgraded {
        return ready(status);
    }
    let status = status.split_whitespace().collect::<Vec<_>>().join(" ");
    send(&[
        NotifyState::MainPid(std::process::id()),
        NotifyState::Ready,
        NotifyState::Status(&status),
    ]);
}

/// A reload begins (with the monotonic time systemd's `notify-reload` asks for).
pub fn reloading() {
    let mut states = vec![NotifyState::Reloading];
    states.extend(NotifyState::monotonic_usec_now().ok());
    send(&states);
}

/// Shutting down: no new connections, requests in flight finishing.
pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

fn send(states: &[NotifyState]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(cause = %e, "could not notify systemd ($NOTIFY_SOCKET)");
    }
}
