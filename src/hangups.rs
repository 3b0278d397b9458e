//! `SIGHUP`, the signal a service manager sends to make a process read its files again. Every
//! command that runs until stopped takes it from start-up on, so that the signal's default
//! action (ending the process) never meets one: a reload sent to a whole fleet by one service
//! definition reloads the servers that have something to reload and leaves the rest running.
//! `serve` reloads its operation manifests on it ([`crate::http::trusted::watch`]); whatever
//! has nothing to reload logs that it has not.

/// The process's `SIGHUP`s from when it was made (none where the platform has no such signal).
#[derive(Debug)]
pub struct Hangups {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangups {
    /// Takes the process's `SIGHUP`s from now on. Call it inside the runtime, before the process
    /// says it is ready: a signal sent earlier meets the default action.
    pub fn listen() -> Self {
        Self {
            #[cfg(unix)]
            signal: match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
                Ok(signal) => Some(signal),
                Err(err) => {
                    tracing::warn!(error = %err, "SIGHUP cannot be handled");
                    None
                }
            },
        }
    }

    /// Resolves at the next `SIGHUP`; never where none can come.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = &mut self.signal {
            if signal.recv().await.is_some() {
                return;
            }
            self.signal = None;
        }
        std::future::pending::<()>().await;
    }

    /// Logs each `SIGHUP` as changing nothing, for a process that has nothing to reload, until
    /// the process ends.
    pub async fn changing_nothing(mut self, what: &'static str) {
        loop {
            self.next().await;
            tracing::info!("SIGHUP: nothing to reload ({what})");
        }
    }
}
