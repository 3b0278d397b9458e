//! The trusted-documents gate every GraphQL request passes before its document is parsed
//! ([`crate::graphql::trusted`] decides; this counts, logs, and holds the listed operations), and
//! their reload without a restart: a manifest's file changing, or `SIGHUP`, loads and validates
//! every manifest again and swaps the new list in at once; a list that does not validate is
//! refused, and the old one keeps serving.

use std::{
    collections::HashSet,
    path::PathBuf,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, SystemTime},
};

use sha2::{Digest, Sha256};

use super::params::Params;
use crate::{
    auth::Caller,
    graphql::{
        Api,
        access::{self, Grant},
        limits::QueryLimits,
        trusted::{self, Id, LoadErrors, TrustedDocuments, TrustedMode, TrustedSettings, Verdict},
    },
    metrics::Metrics,
    model::Access,
};

/// How many unlisted documents `log` mode remembers having logged; past that, new ones are
/// counted but not logged (a client sending ever-new documents cannot grow the set).
const LOGGED_AT_MOST: usize = 10_000;

/// The listed operations and what to do with other documents.
pub struct Gate {
    settings: TrustedSettings,
    /// Callers who may send documents no manifest lists, when enforcing.
    exempt: Access,
    documents: RwLock<Arc<TrustedDocuments>>,
    /// The manifests' files as they were just before they were last read.
    read: Mutex<Fingerprint>,
    /// The unlisted documents logged, by hash and operation name (`log` mode).
    logged: Mutex<HashSet<(String, Option<String>)>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// The gate of `settings`, its manifests loaded and validated against `api`.
    pub fn load(
        settings: TrustedSettings,
        exempt: Access,
        api: &Api,
        limits: &QueryLimits,
    ) -> Result<Self, LoadErrors> {
        let read = fingerprint(&settings.manifests);
        let documents = TrustedDocuments::load(&settings.manifests, api, limits)?;
        Ok(Self {
            settings,
            exempt,
            documents: RwLock::new(Arc::new(documents)),
            read: Mutex::new(read),
            logged: Mutex::default(),
        })
    }

    /// The listed operations now.
    pub fn documents(&self) -> Arc<TrustedDocuments> {
        match self.documents.read() {
            Ok(documents) => Arc::clone(&documents),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The manifests, if any.
    pub fn manifests(&self) -> &[PathBuf] {
        &self.settings.manifests
    }

    /// What the request `params` may run, counted and (in `log` mode) logged.
    pub(super) fn judge(&self, params: &Params, caller: &Caller, metrics: &Metrics) -> Verdict {
        let asked = params.asked();
        // Without manifests and with the mode off, only an id needs a look.
        if self.settings.mode == TrustedMode::Off
            && self.settings.manifests.is_empty()
            && asked.id.is_none()
        {
            return Verdict::Unlisted;
        }
        let documents = self.documents();
        let verdict = trusted::judge(
            &documents,
            self.settings.mode,
            self.settings.require_ids,
            asked,
            || access::grant(&self.exempt, caller) != Grant::Nothing,
        );
        match &verdict {
            Verdict::Listed(_) if asked.id.is_some() => metrics.trusted_document("id"),
            Verdict::Listed(_) => metrics.trusted_document("text"),
            Verdict::Unlisted => {
                metrics.trusted_document("unlisted");
                if self.settings.mode == TrustedMode::Log {
                    self.log_once(asked.text, asked.id, params.operation_name.as_deref());
                }
            }
            Verdict::Refused(refusal) => metrics.trusted_document_refused(refusal.label()),
        }
        verdict
    }

    /// Whether a manifest's file changed since it was last read.
    fn changed(&self) -> bool {
        let now = fingerprint(&self.settings.manifests);
        self.read.lock().map_or(true, |read| *read != now)
    }

    /// Logs an unlisted document the first time its hash and operation name are seen.
    fn log_once(&self, text: Option<&str>, id: Option<Id<'_>>, name: Option<&str>) {
        let hash = match (text, id) {
            (Some(text), _) => format!("{:x}", Sha256::digest(text.as_bytes())),
            (None, Some(Id::Apollo(hash))) => hash.to_owned(),
            _ => return,
        };
        let Ok(mut logged) = self.logged.lock() else {
            return;
        };
        if logged.len() >= LOGGED_AT_MOST {
            return;
        }
        if logged.insert((hash.clone(), name.map(str::to_owned))) {
            tracing::warn!(
                sha256 = %hash,
                operation_name = name.unwrap_or(""),
                "a document no operation manifest lists ran; --trusted-documents enforce would \
                 refuse it"
            );
        }
    }

    /// Loads every manifest again and, if they all validate, swaps the new list in; otherwise
    /// keeps the old one. Logged and counted either way.
    pub fn reload(
        &self,
        api: &Api,
        limits: &QueryLimits,
        metrics: &Metrics,
    ) -> Result<usize, LoadErrors> {
        // Taken before reading: a file written while it is read is read again at the next look.
        let read = fingerprint(&self.settings.manifests);
        if let Ok(mut last) = self.read.lock() {
            *last = read;
        }
        match TrustedDocuments::load(&self.settings.manifests, api, limits) {
            Ok(documents) => {
                let count = documents.len();
                let documents = Arc::new(documents);
                match self.documents.write() {
                    Ok(mut current) => *current = documents,
                    Err(poisoned) => *poisoned.into_inner() = documents,
                }
                metrics.manifest_load("loaded", count);
                tracing::info!(operations = count, "operation manifests reloaded");
                Ok(count)
            }
            Err(errors) => {
                metrics.manifest_load("refused", self.documents().len());
                tracing::error!(
                    "operation manifests not reloaded; the operations loaded before still serve. {errors}"
                );
                Err(errors)
            }
        }
    }
}

/// What the manifests' files look like: a change to any file's modification time or length.
type Fingerprint = Vec<Option<(SystemTime, u64)>>;

/// The manifests' [`Fingerprint`] now.
fn fingerprint(paths: &[PathBuf]) -> Fingerprint {
    paths
        .iter()
        .map(|path| {
            // `metadata` follows symbolic links, so a manifest swapped by relinking (as
            // Kubernetes updates a mounted ConfigMap) is seen as changed.
            let metadata = std::fs::metadata(path).ok()?;
            Some((metadata.modified().ok()?, metadata.len()))
        })
        .collect()
}

/// Reloads `state`'s manifests whenever one of their files changes (looked at every `every`)
/// or the process gets `SIGHUP`, until the server stops. Files are polled rather than watched
/// with inotify: polling sees a file replaced through a symbolic link or by a rename the same
/// way, and a few `stat` calls every seconds cost nothing.
pub async fn watch(state: super::AppState, every: Duration) {
    if state.trusted.manifests().is_empty() {
        return;
    }
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    #[cfg(unix)]
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    loop {
        #[cfg(unix)]
        let hangup = async {
            match &mut hangups {
                Some(hangups) => hangups.recv().await,
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hangup = std::future::pending::<Option<()>>();
        let asked = tokio::select! {
            _ = ticks.tick() => false,
            _ = hangup => true,
        };
        if !asked && !state.trusted.changed() {
            continue;
        }
        if asked {
            tracing::info!("SIGHUP: reloading the operation manifests");
        }
        let _ = state.reload_operations();
    }
}
