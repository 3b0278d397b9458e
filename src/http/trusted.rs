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

use super::params::Params;
use crate::{
    auth::Caller,
    graphql::{
        Api,
        access::{self, Grant},
        limits::QueryLimits,
        trusted::{
            self, LoadErrors, Refusal, TrustedDocuments, TrustedMode, TrustedSettings, Verdict,
        },
    },
    hangups::Hangups,
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

    /// What the request `params` may run; refusals are counted here, documents that run where
    /// they run ([`Gate::ran`]).
    pub(super) fn judge(&self, params: &Params, caller: &Caller, metrics: &Metrics) -> Verdict {
        let asked = params.asked();
        // Without manifests and with the mode off, only an id needs a look.
        if !self.counting() && asked.id.is_none() {
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
        if let Verdict::Refused(refusal) = &verdict {
            self.refused(*refusal, metrics);
        }
        verdict
    }

    /// Whether the gate counts how documents were found: manifests are loaded, or the mode is
    /// not off.
    fn counting(&self) -> bool {
        self.settings.mode != TrustedMode::Off || !self.settings.manifests.is_empty()
    }

    /// Counts a request refused for `refusal` (by the gate, or a hash found beside a text it is
    /// not the hash of once the gate let it by).
    pub(super) fn refused(&self, refusal: Refusal, metrics: &Metrics) {
        metrics.trusted_document_refused(refusal.label());
    }

    /// Counts an automatic persisted query's hash that names no document registered (answered
    /// `PERSISTED_QUERY_NOT_FOUND`, as an unlisted id is) under `not_found`, when the gate
    /// counts: it did not run.
    pub(super) fn missed(&self, metrics: &Metrics) {
        if self.counting() {
            self.refused(Refusal::NotFound, metrics);
        }
    }

    /// Counts a document that passed every check and goes to be executed, by how it was found,
    /// and (in `log` mode) logs an unlisted one the first time its hash and operation name are
    /// seen.
    pub(super) fn ran(&self, found: Found<'_>, metrics: &Metrics) {
        if !self.counting() {
            return;
        }
        match found {
            Found::Listed { by_id: true } => metrics.trusted_document("id"),
            Found::Listed { by_id: false } => metrics.trusted_document("text"),
            Found::Unlisted { text, hash, name } => {
                metrics.trusted_document("unlisted");
                if self.settings.mode == TrustedMode::Log {
                    self.log_once(text, hash, name);
                }
            }
        }
    }

    /// Whether a manifest's file changed since it was last read.
    fn changed(&self) -> bool {
        let now = fingerprint(&self.settings.manifests);
        self.read.lock().map_or(true, |read| *read != now)
    }

    /// Logs an unlisted document that ran, the first time its hash and operation name are seen.
    fn log_once(&self, text: &str, hash: Option<&str>, name: Option<&str>) {
        let hash = match hash {
            Some(hash) if text.is_empty() => hash.to_owned(),
            _ => trusted::sha256_hex(text),
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

/// How a document that runs was found (see [`Gate::ran`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum Found<'a> {
    /// A listed operation, named by its id or sent in full.
    Listed {
        /// Named by its id.
        by_id: bool,
    },
    /// A document no manifest lists.
    Unlisted {
        /// Its text; empty for an automatic persisted query named by its hash alone.
        text: &'a str,
        /// The automatic persisted query's hash it was sent with, if any.
        hash: Option<&'a str>,
        /// The name of the operation that runs, from the request or the document.
        name: Option<&'a str>,
    },
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
/// or the process gets `SIGHUP` (from `hangups`), until the server stops; without manifests, a
/// `SIGHUP` is logged as reloading nothing. Files are polled rather than watched with inotify:
/// polling sees a file replaced through a symbolic link or by a rename the same way, and a few
/// `stat` calls every seconds cost nothing.
pub async fn watch(state: super::AppState, every: Duration, mut hangups: Hangups) {
    if state.trusted.manifests().is_empty() {
        hangups
            .changing_nothing("serve reloads its operation manifests, and it has none")
            .await;
        return;
    }
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let asked = tokio::select! {
            _ = ticks.tick() => false,
            () = hangups.next() => true,
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
