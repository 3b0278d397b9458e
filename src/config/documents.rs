//! The flags of what a GraphQL document may ask for and of the operation manifests, shared by
//! `serve`, `lambda` and `check --operations`.

use std::path::PathBuf;

use clap::{ArgAction, Args};

use crate::graphql::{
    limits::QueryLimits,
    trusted::{TrustedMode, TrustedSettings},
};

/// What a GraphQL document may ask for, and the operation manifests: the same for `serve`,
/// `lambda` and `check --operations`, so that `check` finds what the server would refuse.
#[derive(Debug, Clone, Args)]
pub struct DocumentArgs {
    /// Deepest nesting of selections a query may have; deeper gets QUERY_TOO_DEEP.
    #[arg(long, env = "DYNARELAY_MAX_DEPTH", default_value_t = 10)]
    pub max_depth: usize,

    /// Largest query complexity: each field costs 1, and a connection costs its page size
    /// (`first` or `last`; when omitted, the connection's own default page size, or
    /// --default-page-size) times its children. Larger gets QUERY_TOO_COMPLEX.
    #[arg(long, env = "DYNARELAY_MAX_COMPLEXITY", default_value_t = 10_000)]
    pub max_complexity: usize,

    /// Most aliased fields in one query; more gets TOO_MANY_ALIASES.
    #[arg(long, env = "DYNARELAY_MAX_ALIASES", default_value_t = 15)]
    pub max_aliases: usize,

    /// Longest query document, in bytes; longer gets QUERY_TOO_LONG.
    #[arg(long, env = "DYNARELAY_MAX_QUERY_BYTES", default_value_t = 16 * 1024)]
    pub max_query_bytes: usize,

    /// Most lexical tokens in one query document; more gets TOO_MANY_TOKENS.
    #[arg(long, env = "DYNARELAY_MAX_TOKENS", default_value_t = 2_000)]
    pub max_tokens: usize,

    /// Answer introspection queries (true or false). Turn off in production if the schema
    /// should not be discoverable.
    #[arg(long, env = "DYNARELAY_INTROSPECTION", default_value_t = true, action = ArgAction::Set)]
    pub introspection: bool,

    /// Suggest similar field and argument names ("Did you mean ...?") in validation errors (true
    /// or false), to callers who may introspect: everyone, unless `[auth] introspection` or
    /// `--introspection false` says otherwise.
    #[arg(long, env = "DYNARELAY_SUGGESTIONS", default_value_t = true, action = ArgAction::Set)]
    pub suggestions: bool,

    /// An operation manifest: the operations a team's apps were built with, each under the id
    /// its client sends. Apollo's persisted query manifest
    /// (`@apollo/generate-persisted-query-manifest`), Relay's persisted operations file
    /// (`relay-compiler` with `persistConfig`) or a JSON map of id to document. Repeat the flag
    /// for several (in the environment variable, separate them with `,`). Every operation is
    /// validated against the schema at start: one that does not validate stops the start.
    /// `serve` reloads them when a file changes or on SIGHUP.
    #[arg(
        long = "operations",
        env = "DYNARELAY_OPERATIONS",
        value_name = "FILE",
        value_delimiter = ','
    )]
    pub operations: Vec<PathBuf>,

    /// What happens to documents no operation manifest lists: `off` (they run), `log` (they
    /// run, and each is counted and logged once by hash and operation name), or `enforce`
    /// (they are refused before parsing, with PERSISTED_QUERY_NOT_IN_LIST, or
    /// PERSISTED_QUERY_ID_REQUIRED under `--require-operation-ids true`, and unknown ids with
    /// PERSISTED_QUERY_NOT_FOUND; callers `[auth] unlisted_documents` admits are exempt).
    /// Listed operations may be named by id in every mode; an id sent beside a text that is
    /// not its document is refused in every mode.
    #[arg(
        long,
        env = "DYNARELAY_TRUSTED_DOCUMENTS",
        value_enum,
        default_value_t = TrustedDocumentsMode::Off
    )]
    pub trusted_documents: TrustedDocumentsMode,

    /// With `--trusted-documents enforce`, refuse every document sent in full, listed or not,
    /// with PERSISTED_QUERY_ID_REQUIRED (true or false): clients must name operations by id.
    #[arg(long, env = "DYNARELAY_REQUIRE_OPERATION_IDS", default_value_t = false, action = ArgAction::Set)]
    pub require_operation_ids: bool,
}

/// `--trusted-documents`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrustedDocumentsMode {
    /// Documents no manifest lists run.
    Off,
    /// They run, counted and logged once each.
    Log,
    /// They are refused.
    Enforce,
}

impl DocumentArgs {
    /// The limits on documents.
    pub fn query_limits(&self) -> QueryLimits {
        QueryLimits {
            depth: self.max_depth,
            complexity: self.max_complexity,
            aliases: self.max_aliases,
            query_bytes: self.max_query_bytes,
            tokens: self.max_tokens,
            introspection: self.introspection,
            suggestions: self.suggestions,
        }
    }

    /// The operation manifests and what other documents may do.
    pub fn trusted(&self) -> TrustedSettings {
        TrustedSettings {
            mode: match self.trusted_documents {
                TrustedDocumentsMode::Off => TrustedMode::Off,
                TrustedDocumentsMode::Log => TrustedMode::Log,
                TrustedDocumentsMode::Enforce => TrustedMode::Enforce,
            },
            manifests: self.operations.clone(),
            require_ids: self.require_operation_ids,
        }
    }

    /// Checks what clap cannot check flag by flag.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.trusted_documents == TrustedDocumentsMode::Enforce && self.operations.is_empty() {
            anyhow::bail!(
                "--trusted-documents enforce (DYNARELAY_TRUSTED_DOCUMENTS) refuses every operation \
                 no manifest lists, and no --operations (DYNARELAY_OPERATIONS) names a manifest"
            );
        }
        if self.require_operation_ids && self.trusted_documents != TrustedDocumentsMode::Enforce {
            anyhow::bail!(
                "--require-operation-ids (DYNARELAY_REQUIRE_OPERATION_IDS) applies only with \
                 --trusted-documents enforce"
            );
        }
        Ok(())
    }
}
