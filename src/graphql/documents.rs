//! Query documents by their text, parsed and checked against the document limits once: clients
//! send the same few documents again and again (every page of a walk repeats its query), and
//! parsing was the largest piece of per-request work that did not depend on the request's
//! variables (see the profile in docs/src/benchmarks.md). Validation still runs on every request, because depth
//! and complexity depend on the variables (`first: $n`).
//!
//! The cache holds documents that passed [`QueryLimits::check_text`] and
//! [`QueryLimits::check_document`]; a rejected document is never cached, so it is rejected (and
//! counted) again each time. Memory is bounded by the total length of the cached texts, least
//! recently used first out.

use std::sync::{
    Arc, Mutex, MutexGuard, OnceLock,
    atomic::{AtomicBool, Ordering},
};

use async_graphql::{
    ServerError,
    parser::{parse_query, types::ExecutableDocument},
};
use lru::LruCache;

use super::{
    direct::Plan,
    limits::{LimitExceeded, QueryLimits},
};

/// Why a document was refused before execution.
#[derive(Debug)]
pub enum Rejected {
    /// Over one of the [`QueryLimits`].
    Limit(LimitExceeded),
    /// Not a GraphQL document.
    Parse(ServerError),
}

/// Parsed, limit-checked documents by text.
#[derive(Debug)]
pub struct Documents {
    limits: QueryLimits,
    /// `None` when caching is off (a budget of 0).
    cache: Option<Mutex<Cache>>,
}

#[derive(Debug)]
struct Cache {
    entries: LruCache<Box<str>, Arc<Prepared>>,
    /// Bytes of text held, at most `budget`.
    bytes: usize,
    budget: usize,
}

impl Documents {
    /// Checks documents against `limits`, caching up to `budget_bytes` of document text (a
    /// parsed document takes several times its text; 0 turns the cache off).
    pub fn new(limits: QueryLimits, budget_bytes: usize) -> Self {
        Self {
            limits,
            cache: (budget_bytes > 0).then(|| {
                Mutex::new(Cache {
                    entries: LruCache::unbounded(),
                    bytes: 0,
                    budget: budget_bytes,
                })
            }),
        }
    }

    /// The parsed document for `query`, from the cache or parsed and checked now. Shared: the
    /// executor takes a copy, and the handler keeps it to correct the response's nulls.
    pub fn prepare(&self, query: &str) -> Result<Arc<Prepared>, Rejected> {
        if let Some(document) = self.cached(query) {
            return Ok(document);
        }
        self.limits.check_text(query).map_err(Rejected::Limit)?;
        let document = parse_query(query).map_err(|err| Rejected::Parse(err.into()))?;
        self.limits
            .check_document(&document)
            .map_err(Rejected::Limit)?;
        let document = Arc::new(Prepared::new(document));
        self.remember(query, &document);
        Ok(document)
    }

    /// How many documents are cached.
    pub fn len(&self) -> usize {
        self.lock().map_or(0, |cache| cache.entries.len())
    }

    /// Whether no document is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> Option<MutexGuard<'_, Cache>> {
        // A panic while holding the lock leaves only a cache behind: carry on without it.
        self.cache.as_ref()?.lock().ok()
    }

    fn cached(&self, query: &str) -> Option<Arc<Prepared>> {
        self.lock()?.entries.get(query).cloned()
    }

    fn remember(&self, query: &str, document: &Arc<Prepared>) {
        let Some(mut cache) = self.lock() else {
            return;
        };
        // A document longer than a quarter of the budget would push out too many others.
        if query.len() > cache.budget / 4 || cache.entries.contains(query) {
            return;
        }
        cache.bytes += query.len();
        cache.entries.put(query.into(), Arc::clone(document));
        while cache.bytes > cache.budget {
            let Some((text, _)) = cache.entries.pop_lru() else {
                break;
            };
            cache.bytes -= text.len();
        }
    }
}

/// A parsed, limit-checked document, with what its executions taught: whether async-graphql
/// has executed it without request errors (so it is valid, whatever the variables), and its
/// plan for the direct executor.
#[derive(Debug)]
pub struct Prepared {
    document: ExecutableDocument,
    validated: AtomicBool,
    plan: OnceLock<Option<Plan>>,
}

impl Prepared {
    /// A document not yet executed.
    pub fn new(document: ExecutableDocument) -> Self {
        Self {
            document,
            validated: AtomicBool::new(false),
            plan: OnceLock::new(),
        }
    }

    /// Whether async-graphql has executed the document without request errors.
    pub fn validated(&self) -> bool {
        self.validated.load(Ordering::Relaxed)
    }

    /// Records that async-graphql executed the document without request errors.
    pub fn mark_validated(&self) {
        self.validated.store(true, Ordering::Relaxed);
    }

    /// The direct executor's plan, made by `plan` the first time it is asked for.
    pub fn plan(&self, plan: impl FnOnce() -> Option<Plan>) -> Option<&Plan> {
        self.plan.get_or_init(plan).as_ref()
    }
}

impl std::ops::Deref for Prepared {
    type Target = ExecutableDocument;

    fn deref(&self) -> &ExecutableDocument {
        &self.document
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: &str = "{ customer(customerId: \"u\") { name } }";

    #[test]
    fn a_repeated_document_is_served_from_the_cache_unchanged() {
        let documents = Documents::new(QueryLimits::default(), 64 * 1024);
        let first = documents.prepare(QUERY).unwrap();
        assert_eq!(documents.len(), 1);
        let again = documents.prepare(QUERY).unwrap();
        assert_eq!(documents.len(), 1);
        assert_eq!(format!("{first:?}"), format!("{again:?}"));
    }

    #[test]
    fn rejected_documents_are_not_cached_and_stay_rejected() {
        let limits = QueryLimits {
            aliases: 0,
            ..QueryLimits::default()
        };
        let documents = Documents::new(limits, 64 * 1024);
        for _ in 0..2 {
            assert!(matches!(
                documents.prepare("{ a: customer(customerId: \"u\") { name } }"),
                Err(Rejected::Limit(LimitExceeded {
                    code: "TOO_MANY_ALIASES",
                    ..
                }))
            ));
            assert!(matches!(
                documents.prepare("{ user("),
                Err(Rejected::Parse(_))
            ));
        }
        assert!(documents.is_empty());
    }

    #[test]
    fn the_cache_keeps_to_its_byte_budget_dropping_the_least_recently_used() {
        let query = |i: usize| format!("{{ customer(customerId: \"{i:04}\") {{ name }} }}");
        let each = query(0).len();
        let documents = Documents::new(QueryLimits::default(), each * 4);
        for i in 0..4 {
            documents.prepare(&query(i)).unwrap();
        }
        assert_eq!(documents.len(), 4);
        // Touch 0, then add 4: 1 is the least recently used and goes.
        documents.prepare(&query(0)).unwrap();
        documents.prepare(&query(4)).unwrap();
        assert_eq!(documents.len(), 4);
        let cache = documents.lock().unwrap();
        assert!(cache.entries.contains(query(0).as_str()));
        assert!(!cache.entries.contains(query(1).as_str()));
        assert!(cache.bytes <= each * 4);
    }

    #[test]
    fn long_documents_and_a_zero_budget_are_not_cached() {
        let documents = Documents::new(QueryLimits::default(), QUERY.len() * 2);
        documents.prepare(QUERY).unwrap();
        assert!(documents.is_empty(), "longer than a quarter of the budget");
        let off = Documents::new(QueryLimits::default(), 0);
        off.prepare(QUERY).unwrap();
        assert!(off.is_empty());
    }
}
