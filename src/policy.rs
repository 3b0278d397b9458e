//! `dynarelay policy`: the least-privilege IAM policy a model needs, as the server makes its
//! calls. Each table and index of the model gets exactly the DynamoDB actions some part of the
//! API sends to it:
//!
//! - `DescribeTable` on every table, where the server checks the live tables: `serve` always
//!   does (at start-up and on `/ready`), `lambda` only with `--check-tables true`;
//! - `BatchGetItem` on every table holding an entity: `node`, `nodes`, relations by key and
//!   `check_on_create` read items through the request's loader;
//! - `GetItem` where a lookup reads by the table's key, where a lookup or relation through an
//!   index reads the whole item after an index that does not hold it, and where an update may
//!   read the stored item first (an entity with index keys built from its fields);
//! - `Query` and `Scan` on the table or index each connection reads, and `Query` on each index a
//!   lookup or relation goes through;
//! - `PutItem`, `UpdateItem`, `DeleteItem` for the entity's mutations;
//! - `DescribeStream`, `GetShardIterator` and `GetRecords` on the stream of each table a
//!   subscription can follow (every table whose stream holds old and new images: its
//!   connections' subscriptions, and `nodeChanged`), where the server checks the live tables (`serve`, which reads the
//!   streams; `lambda` holds no subscription open), with `DescribeTable` on the table, which
//!   finds its stream.
//!
//! The processes that only carry changes get the stream part alone: `dynarelay relay` reads the
//! stream of every table with a `stream` as the server does (`DescribeTable` to find it, then
//! `DescribeStream`, `GetShardIterator`, `GetRecords`); the Lambda function given DynamoDB
//! Streams events reads nothing itself, but its event source mapping reads the streams with the
//! function's role, which AWS documents as `DescribeStream`, `GetRecords`, `GetShardIterator`
//! on the streams, and `ListStreams` (on `*`: IAM scopes it to no resource).
//!
//! Written from the model only, as the store's calls are: nothing here reaches DynamoDB.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::model::{LookupIndex, Model, Projection, Read, TableId};

/// What the policy is for: where the tables live, for their ARNs, and whether the server checks
/// them.
#[derive(Debug, Clone)]
pub struct PolicyTarget {
    /// The prefix of every table's name (`--table-prefix`).
    pub prefix: String,
    /// The AWS region, or `*`.
    pub region: String,
    /// The AWS account id, or `*`.
    pub account: String,
    /// Whether the server checks the live tables (a `DescribeTable` per table): `serve` always
    /// does; `lambda` only with `--check-tables true`.
    pub check_tables: bool,
    /// The relays' lease table (`--lease-table`), before the prefix.
    pub lease_table: String,
}

impl Default for PolicyTarget {
    /// Any region and account, no prefix, the table check on, the default lease table.
    fn default() -> Self {
        Self {
            prefix: String::new(),
            region: "*".to_owned(),
            account: "*".to_owned(),
            check_tables: true,
            lease_table: crate::stream::leases::DEFAULT_TABLE.to_owned(),
        }
    }
}

/// What runs with a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// The API: `serve`, or the `lambda` function.
    Api,
    /// `dynarelay relay`, reading the tables' streams into Redis.
    Relay,
    /// The Lambda function given DynamoDB Streams events (`lambda-relay`), whose event source
    /// mapping reads the streams.
    StreamFunction,
}

/// What reading a table's stream takes: the reader's calls, or an event source mapping's.
const STREAM_READS: [&str; 3] = ["DescribeStream", "GetShardIterator", "GetRecords"];

/// What a relay does with its lease table (see `crate::stream::leases`).
pub const LEASE_ACTIONS: [&str; 6] = [
    "CreateTable",
    "DeleteItem",
    "DescribeTable",
    "PutItem",
    "Query",
    "UpdateItem",
];

/// A table, one of its indexes, or its stream.
type Resource = (TableId, Part);

/// The part of a table a statement is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Table,
    Index(usize),
    Stream,
}

/// The actions each table, index and stream needs, for `role`.
fn actions(
    model: &Model,
    check_tables: bool,
    role: Role,
) -> BTreeMap<Resource, BTreeSet<&'static str>> {
    match role {
        Role::Api => api_actions(model, check_tables),
        Role::Relay | Role::StreamFunction => {
            let mut out: BTreeMap<Resource, BTreeSet<&'static str>> = BTreeMap::new();
            for t in model.streamed_tables() {
                out.entry((t, Part::Stream))
                    .or_default()
                    .extend(STREAM_READS);
                if role == Role::Relay {
                    out.entry((t, Part::Table))
                        .or_default()
                        .insert("DescribeTable");
                }
            }
            out
        }
    }
}

/// The actions each table, index and stream needs, for the API.
fn api_actions(model: &Model, check_tables: bool) -> BTreeMap<Resource, BTreeSet<&'static str>> {
    let mut out: BTreeMap<Resource, BTreeSet<&'static str>> = BTreeMap::new();
    let mut allow = |resource: Resource, action: &'static str| {
        out.entry(resource).or_default().insert(action);
    };
    if check_tables {
        for t in 0..model.tables.len() {
            allow((t, Part::Table), "DescribeTable");
        }
    }
    // Through an index: a Query, then the whole item when the index does not hold it.
    let through =
        |table: TableId, index: &LookupIndex, allow: &mut dyn FnMut(Resource, &'static str)| {
            allow((table, Part::Index(index.index)), "Query");
            if model.tables[table].indexes[index.index].projection != Projection::All {
                allow((table, Part::Table), "GetItem");
            }
        };
    for entity in &model.entities {
        let t = entity.table;
        allow((t, Part::Table), "BatchGetItem");
        for relation in &entity.relations {
            let target = model.entities[relation.target].table;
            match &relation.index {
                Some(index) => through(target, index, &mut allow),
                None => allow((target, Part::Table), "BatchGetItem"),
            }
        }
        let mutations = &entity.mutations;
        let update = mutations.update.is_some();
        for (on, action) in [
            (mutations.create.is_some(), "PutItem"),
            (update, "UpdateItem"),
            (mutations.delete.is_some(), "DeleteItem"),
            // An update may read the item first to rewrite an index key.
            (
                update && entity.templates.iter().any(|k| !k.primary),
                "GetItem",
            ),
        ] {
            if on {
                allow((t, Part::Table), action);
            }
        }
    }
    for lookup in &model.lookups {
        let t = model.entities[lookup.entity].table;
        match &lookup.index {
            Some(index) => through(t, index, &mut allow),
            None => allow((t, Part::Table), "GetItem"),
        }
    }
    let connections = model
        .connections
        .iter()
        .chain(model.entities.iter().flat_map(|e| e.connections.iter()));
    for connection in connections {
        let t = model.entities[connection.entity].table;
        let action = match connection.read {
            Read::Query { .. } => "Query",
            Read::Scan => "Scan",
        };
        let part = connection.index.map_or(Part::Table, Part::Index);
        allow((t, part), action);
    }
    // The streams subscriptions follow: a connection's, or `nodeChanged`'s on any table whose
    // stream holds old and new images.
    if check_tables {
        for (t, table) in model.tables.iter().enumerate() {
            if table.stream == Some(crate::model::StreamView::NewAndOldImages)
                && model.entities.iter().any(|e| e.table == t)
            {
                allow((t, Part::Table), "DescribeTable");
                for action in STREAM_READS {
                    allow((t, Part::Stream), action);
                }
            }
        }
    }
    out
}

/// A statement id from a name: its ASCII letters and digits.
fn sid(words: &[&str]) -> String {
    words
        .iter()
        .flat_map(|w| w.chars())
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

/// The API's policy document: one statement per table and per index, each allowing exactly
/// the actions the model sends there, on exactly that resource.
pub fn policy(model: &Model, target: &PolicyTarget) -> Value {
    policy_for(model, target, Role::Api)
}

/// The policy document of what runs as `role`.
pub fn policy_for(model: &Model, target: &PolicyTarget, role: Role) -> Value {
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let mut statements: Vec<Value> = actions(model, target.check_tables, role)
        .into_iter()
        .map(|((t, index), actions)| {
            let table = &model.tables[t];
            let arn = format!(
                "arn:aws:dynamodb:{}:{}:table/{}{}",
                target.region, target.account, target.prefix, table.name
            );
            let (id, resource) = match index {
                Part::Index(i) => {
                    let index = &table.indexes[i].name;
                    (
                        sid(&["Index", &table.name, index]),
                        format!("{arn}/index/{index}"),
                    )
                }
                // A stream's ARN ends with its creation time: every stream the table has had.
                Part::Stream => (sid(&["Stream", &table.name]), format!("{arn}/stream/*")),
                Part::Table => (sid(&["Table", &table.name]), arn),
            };
            // Names that differ only in other characters keep distinct ids.
            let mut id = id;
            let base = id.clone();
            for n in 2.. {
                if ids.insert(id.clone()) {
                    break;
                }
                id = format!("{base}{n}");
            }
            let actions: Vec<String> = actions.iter().map(|a| format!("dynamodb:{a}")).collect();
            json!({
                "Sid": id,
                "Effect": "Allow",
                "Action": actions,
                "Resource": resource,
            })
        })
        .collect();
    // `ListStreams` names no resource (IAM takes only `*` for it) and returns only streams' ARNs.
    if role == Role::StreamFunction && model.streamed_tables().next().is_some() {
        statements.push(json!({
            "Sid": "ListStreams",
            "Effect": "Allow",
            "Action": ["dynamodb:ListStreams"],
            "Resource": "*",
        }));
    }
    // The relays' leases and checkpoints: the table is made by the first relay if missing.
    if role == Role::Relay && model.streamed_tables().next().is_some() {
        statements.push(json!({
            "Sid": "Leases",
            "Effect": "Allow",
            "Action": LEASE_ACTIONS.iter().map(|a| format!("dynamodb:{a}")).collect::<Vec<_>>(),
            "Resource": format!(
                "arn:aws:dynamodb:{}:{}:table/{}{}",
                target.region, target.account, target.prefix, target.lease_table
            ),
        }));
    }
    json!({ "Version": "2012-10-17", "Statement": statements })
}
