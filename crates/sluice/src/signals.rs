//! The process's signals as messages on a channel, read by `serve`'s main loop (and by
//! `bench` and `demo`, for a stop): SIGTERM and SIGINT, SIGHUP, SIGUSR1, SIGUSR2, and the
//! requests that act like one (the admin API's reload, the upgrade socket's asks). Owns
//! the handlers only; what each message does is the main loop's.

use crate::upgrade::Ask;
use std::sync::mpsc::{Receiver, Sender};

/// What a signal, or a request that acts like one, asks of the running process.
#[derive(Debug)]
pub enum Signal {
    /// SIGTERM or SIGINT: drain and exit.
    Stop,
    /// SIGHUP: reload the config.
    Reload,
    /// SIGUSR1: reopen the access log (logrotate moved it).
    Reopen,
    /// SIGUSR2: start the binary sluice was started from as a new process that takes
    /// over (a binary upgrade).
    Upgrade,
    /// The upgrade socket asks: copies of the sockets for a new process, or, once that
    /// one serves, to drain as at a stop, and exit.
    Handover(Ask),
}

/// SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2, delivered over a channel by a thread of their own. The
/// handlers are installed before this returns, so no early signal is lost.
pub fn signals() -> anyhow::Result<Receiver<Signal>> {
    signal_channel().map(|(_, rx)| rx)
}

/// The signals' channel, and a sender into it for requests that act like a signal.
pub fn signal_channel() -> anyhow::Result<(Sender<Signal>, Receiver<Signal>)> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut term, mut int, mut hup, mut usr1, mut usr2) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
            signal(SignalKind::user_defined1())?,
            signal(SignalKind::user_defined2())?,
        ))
    })?;
    let (tx, rx) = std::sync::mpsc::channel();
    let sender = tx.clone();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            loop {
                let signal = tokio::select! {
                    _ = term.recv() => Signal::Stop,
                    _ = int.recv() => Signal::Stop,
                    _ = hup.recv() => Signal::Reload,
                    _ = usr1.recv() => Signal::Reopen,
                    _ = usr2.recv() => Signal::Upgrade,
                };
                if tx.send(signal).is_err() {
                    return;
                }
            }
        })
    });
    Ok((sender, rx))
}
