//! Trusted documents: the operations a team's own apps were built with ([`super::manifest`]),
//! each parsed, checked against the query limits and validated against the served schema once,
//! when it is loaded; and the one decision of what a request may run ([`judge`]): a listed
//! operation named by its id or sent in full, or a document of its own, which the mode lets run,
//! logs, or refuses.
//!
//! A request names a listed operation in one of three ways, each its client's:
//!
//! | sent as | names |
//! |---|---|
//! | `extensions.persistedQuery.sha256Hash` (Apollo Client) | the operation with that id in a manifest, or whose text has that SHA-256 |
//! | `doc_id` (Relay's documented network layer) | the operation with that id in a manifest |
//! | `documentId` (GraphQL over HTTP, persisted documents appendix) | `sha256:<hex>`: the operation whose text has that SHA-256; anything else: the operation with that id in a manifest |

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use async_graphql::{
    ServerError,
    parser::{parse_query, types::OperationType},
};
use sha2::{Digest, Sha256};

use super::{
    Api,
    documents::Prepared,
    limits::{self, QueryLimits},
    manifest::{self, Listed, Problem},
    operation,
};

/// What a server does with documents that no manifest lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TrustedMode {
    /// They run, as any document does (listed operations may still be named by id).
    #[default]
    Off,
    /// They run, and each is counted and logged once, by hash and operation name: what
    /// enforcing would refuse.
    Log,
    /// They are refused, unless the caller is exempt (`[auth] unlisted_documents`).
    Enforce,
}

/// The manifests a server loads and what it does with other documents.
#[derive(Debug, Clone, Default)]
pub struct TrustedSettings {
    /// What happens to documents no manifest lists.
    pub mode: TrustedMode,
    /// The operation manifests (Apollo's, Relay's, or a plain map of id to text).
    pub manifests: Vec<PathBuf>,
    /// Whether, when enforcing, even a listed document must be named by its id rather than sent
    /// in full.
    pub require_ids: bool,
}

/// One listed operation, ready to run.
#[derive(Debug)]
pub struct Entry {
    /// The id its manifest gives it.
    pub id: String,
    /// Its operation's name: the manifest's, or the document's single operation's.
    pub name: Option<String>,
    /// Its text, as clients send it in full.
    pub text: Box<str>,
    /// The SHA-256 of its text, in lowercase hex.
    pub sha256: String,
    /// Query, mutation or subscription (of its single operation; a query for several).
    pub kind: OperationType,
    /// The document, parsed, checked and validated at load.
    pub document: Arc<Prepared>,
}

/// The operations of a server's manifests, by each way a request can name them.
#[derive(Debug, Default)]
pub struct TrustedDocuments {
    by_id: HashMap<String, Arc<Entry>>,
    by_sha256: HashMap<String, Arc<Entry>>,
    by_text: HashMap<Box<str>, Arc<Entry>>,
}

/// How a request names a listed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// Apollo's `extensions.persistedQuery.sha256Hash`.
    Apollo(&'a str),
    /// Relay's `doc_id`.
    Relay(&'a str),
    /// GraphQL over HTTP's `documentId`.
    Document(&'a str),
}

impl<'a> Id<'a> {
    /// The SHA-256 (lowercase hex) the id is, when its form makes it a hash of its document's
    /// text: Apollo's hash, and `documentId`'s `sha256:<hex>`. Relay's `doc_id` and other
    /// `documentId`s are whatever the manifest's tool made them.
    pub fn sha256(self) -> Option<&'a str> {
        match self {
            Id::Apollo(hash) => Some(hash),
            Id::Document(id) => id.strip_prefix("sha256:"),
            Id::Relay(_) => None,
        }
    }
}

/// Everything wrong with a server's manifests.
#[derive(Debug)]
pub struct LoadErrors(pub Vec<Problem>);

impl std::fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.len();
        write!(
            f,
            "{count} problem{} in the operation manifests:",
            if count == 1 { "" } else { "s" }
        )?;
        for problem in &self.0 {
            write!(f, "\n  {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

impl TrustedDocuments {
    /// Reads the manifests at `paths`, and parses, checks and validates every operation against
    /// `api`'s schema and `limits`; every problem of every file at once, or the documents.
    pub fn load(paths: &[PathBuf], api: &Api, limits: &QueryLimits) -> Result<Self, LoadErrors> {
        let mut problems = Vec::new();
        let mut documents = Self::default();
        for path in paths {
            match manifest::read(path) {
                Ok(listed) => {
                    for listed in listed {
                        match prepare(path, &listed, api, limits) {
                            Ok(entry) => {
                                if let Err(problem) = documents.insert(path, &listed, entry) {
                                    problems.push(problem);
                                }
                            }
                            Err(mut found) => problems.append(&mut found),
                        }
                    }
                }
                Err(mut found) => problems.append(&mut found),
            }
        }
        if problems.is_empty() {
            Ok(documents)
        } else {
            Err(LoadErrors(problems))
        }
    }

    fn insert(&mut self, path: &Path, listed: &Listed, entry: Entry) -> Result<(), Problem> {
        if let Some(other) = self.by_id.get(&entry.id) {
            if other.text == entry.text {
                return Ok(());
            }
            return Err(Problem {
                operation: Some((entry.id, entry.name)),
                ..Problem::of_operation(
                    path,
                    listed,
                    None,
                    "has the id of another listed operation, with another document",
                )
            });
        }
        let entry = Arc::new(entry);
        self.by_sha256
            .entry(entry.sha256.clone())
            .or_insert_with(|| Arc::clone(&entry));
        self.by_text
            .entry(entry.text.clone())
            .or_insert_with(|| Arc::clone(&entry));
        self.by_id.insert(entry.id.clone(), entry);
        Ok(())
    }

    /// How many operations are listed (under distinct ids).
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no operation is listed.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The listed operation `id` names.
    pub fn by_id(&self, id: Id<'_>) -> Option<&Arc<Entry>> {
        match id {
            Id::Apollo(hash) => self.by_id.get(hash).or_else(|| self.by_sha256.get(hash)),
            Id::Relay(id) => self.by_id.get(id),
            Id::Document(id) => match id.strip_prefix("sha256:") {
                Some(hash) => self.by_sha256.get(hash),
                None => self.by_id.get(id),
            },
        }
    }

    /// The listed operation whose text is exactly `text`.
    pub fn by_text(&self, text: &str) -> Option<&Arc<Entry>> {
        self.by_text.get(text)
    }

    /// Every listed operation, in no order.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.by_id.values()
    }
}

/// `listed`, a manifest's operation, parsed, checked and validated, or what is wrong with it.
fn prepare(
    path: &Path,
    listed: &Listed,
    api: &Api,
    limits: &QueryLimits,
) -> Result<Entry, Vec<Problem>> {
    // Problems name the operation as the manifest does, or as its document does.
    let mut named = listed.clone();
    if named.name.is_none()
        && let Ok(document) = parse_query(&listed.text)
        && let Ok(operation) = operation::choose(&document, None)
    {
        named.name = operation.name.map(str::to_owned);
    }
    let problem = |at: Option<(usize, usize)>, message: String| {
        Problem::of_operation(path, &named, at, message)
    };
    let located = |error: &ServerError| {
        let at = error.locations.first().map(|pos| (pos.line, pos.column));
        // The parser's message draws the text with a caret; its last `= ` line says what it is.
        let message = error
            .message
            .lines()
            .filter_map(|line| line.trim().strip_prefix("= "))
            .next_back()
            .unwrap_or(&error.message);
        problem(at, message.to_owned())
    };
    limits
        .check_text(&listed.text)
        .map_err(|err| vec![problem(None, format!("{} ({})", err.message, err.code))])?;
    let document = parse_query(&listed.text).map_err(|err| vec![located(&err.into())])?;
    limits
        .check_document(&document)
        .map_err(|err| vec![problem(None, format!("{} ({})", err.message, err.code))])?;
    let mut problems: Vec<Problem> = match api.validate(&document) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(located).collect(),
    };
    // What the server checks of each operation before running it, and could refuse.
    let operations = operation::all(&document);
    for &operation in &operations {
        if let Err((message, locations)) = operation.check_single_root_field(&document) {
            let at = locations.first().map(|pos| (pos.line, pos.column));
            problems.push(problem(at, message));
        }
        let depth = limits::depth(&document, operation);
        if depth > limits.depth {
            problems.push(problem(
                Some((
                    operation.definition.pos.line,
                    operation.definition.pos.column,
                )),
                format!(
                    "is nested {depth} deep; the server's --max-depth is {} (QUERY_TOO_DEEP)",
                    limits.depth
                ),
            ));
        }
    }
    if operations.len() > 1
        && let Some(name) = &listed.name
        && !operations.iter().any(|o| o.name == Some(name.as_str()))
    {
        problems.push(problem(
            None,
            format!("names the operation {name:?}, which its document does not hold"),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let single = operation::choose(&document, None).ok();
    let name = listed.name.clone().or_else(|| {
        single
            .and_then(|operation| operation.name)
            .map(str::to_owned)
    });
    let kind = single.map_or(OperationType::Query, |operation| operation.ty());
    let prepared = Prepared::new(document);
    // Validated against the schema just now, as async-graphql's execution would.
    prepared.mark_validated();
    Ok(Entry {
        id: listed.id.clone(),
        name,
        text: listed.text.as_str().into(),
        sha256: sha256_hex(&listed.text),
        kind,
        document: Arc::new(prepared),
    })
}

/// How a request's document is to be found.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    /// The document's full text, if sent.
    pub text: Option<&'a str>,
    /// The id it was named by, if any.
    pub id: Option<Id<'a>>,
}

/// What a request may run.
#[derive(Debug)]
pub enum Verdict {
    /// A listed operation.
    Listed(Arc<Entry>),
    /// The request's own document (or, for Apollo's hash alone, an automatic persisted query),
    /// which may run: the mode or the caller allows documents no manifest lists.
    Unlisted,
    /// Refused, before its document is parsed.
    Refused(Refusal),
}

/// Why a request's document was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its id names no listed operation.
    NotFound,
    /// Its full text is not a listed operation's.
    NotInList,
    /// It sent a document in full where only ids are accepted.
    IdRequired,
    /// The text it sent is not the document its id names: another listed operation's text, or
    /// for a hash (Apollo's, `documentId`'s `sha256:`) a text it is not the hash of.
    Mismatch,
}

impl Refusal {
    /// `extensions.code`: Apollo Router's, where it has one for the case.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::NotFound => "PERSISTED_QUERY_NOT_FOUND",
            Refusal::NotInList => "PERSISTED_QUERY_NOT_IN_LIST",
            Refusal::IdRequired => "PERSISTED_QUERY_ID_REQUIRED",
            Refusal::Mismatch => "BAD_USER_INPUT",
        }
    }

    /// The message for the client.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::NotFound => "No operation is listed under this id.",
            Refusal::NotInList => {
                "This server runs only the operations its apps were built with; this document is \
                 not one of them."
            }
            Refusal::IdRequired => {
                "This server runs listed operations by their ids only: send the operation's id, \
                 not its text."
            }
            Refusal::Mismatch => "The id and the query sent name two different documents.",
        }
    }

    /// Its metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::NotFound => "not_found",
            Refusal::NotInList => "not_in_list",
            Refusal::IdRequired => "id_required",
            Refusal::Mismatch => "mismatch",
        }
    }
}

/// What a request may run, from the listed documents, the server's settings and whether its
/// caller may send documents no manifest lists (`exempt`: asked only when it matters).
pub fn judge(
    documents: &TrustedDocuments,
    mode: TrustedMode,
    require_ids: bool,
    asked: Asked<'_>,
    exempt: impl FnOnce() -> bool,
) -> Verdict {
    let mut exempt = Some(exempt);
    let mut strict = || mode == TrustedMode::Enforce && !exempt.take().is_some_and(|f| f());
    match (asked.id, asked.text) {
        // An id beside a text: the text must be the id's document, whatever the id's form and
        // the mode, or the request is refused as a mismatch.
        (Some(id), Some(text)) => match (documents.by_id(id), id.sha256()) {
            (Some(entry), _) if *entry.text == *text => Verdict::Listed(Arc::clone(entry)),
            (Some(_), _) => Verdict::Refused(Refusal::Mismatch),
            // A hash no manifest lists still names the text it is the hash of.
            (None, Some(hash)) if sha256_hex(text) != hash => Verdict::Refused(Refusal::Mismatch),
            // Apollo's hash with its text is an automatic persisted query's registration,
            // judged by its text.
            (None, Some(_)) if matches!(id, Id::Apollo(_)) => {
                judge_text(documents, text, require_ids, &mut strict)
            }
            (None, _) => Verdict::Refused(Refusal::NotFound),
        },
        (Some(id), None) => match documents.by_id(id) {
            Some(entry) => Verdict::Listed(Arc::clone(entry)),
            // Apollo's hash alone may name an automatic persisted query where they may run.
            None if matches!(id, Id::Apollo(_)) && !strict() => Verdict::Unlisted,
            None => Verdict::Refused(Refusal::NotFound),
        },
        (None, Some(text)) => judge_text(documents, text, require_ids, &mut strict),
        (None, None) => Verdict::Unlisted,
    }
}

/// The SHA-256 of `text`, in lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

fn judge_text(
    documents: &TrustedDocuments,
    text: &str,
    require_ids: bool,
    strict: &mut impl FnMut() -> bool,
) -> Verdict {
    match documents.by_text(text) {
        Some(_) if require_ids && strict() => Verdict::Refused(Refusal::IdRequired),
        Some(entry) => Verdict::Listed(Arc::clone(entry)),
        None if !strict() => Verdict::Unlisted,
        None if require_ids => Verdict::Refused(Refusal::IdRequired),
        None => Verdict::Refused(Refusal::NotInList),
    }
}

#[cfg(test)]
mod tests;
