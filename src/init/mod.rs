//! `dynarelay init`: a serving model written from live tables. Lists or takes the tables,
//! describes each, samples a bounded number of its items ([`crate::dynamo::sample`]), infers
//! entities and connections ([`infer`], and [`shared_table`] for a table of several types) and
//! field types ([`fields`]) into a [`proposal`], and writes it out with its evidence
//! ([`render`]). The file is checked as `dynarelay check` would before it is handed back, so
//! what `init` writes always loads: a table whose types, told apart, give a model that fails is
//! proposed as one type, with the reason. Only reads: nothing is written to DynamoDB.

pub mod drift;
pub mod electrodb;
pub mod fields;
pub mod infer;
pub mod key_links;
pub mod key_only;
pub mod names;
pub mod observe;
pub mod proposal;
pub mod render;
pub mod shared_table;
pub mod single_table;
pub mod templates;

use anyhow::bail;
use aws_sdk_dynamodb::Client;

use crate::dynamo::sample::{self, TableFailure};

/// What to read.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The tables, by their names without `prefix`; `None` for every table the credentials
    /// can list whose name starts with `prefix`.
    pub tables: Option<Vec<String>>,
    /// The prefix of the tables' names, left out of the model (`serve --table-prefix` puts it
    /// back).
    pub prefix: String,
    /// The most items sampled per table.
    pub sample: usize,
}

/// What `init` did.
#[derive(Debug)]
pub struct InitOutcome {
    /// The model file's text, checked.
    pub text: String,
    /// Tables left out, and why.
    pub skipped: Vec<TableFailure>,
    /// Tables in the model.
    pub tables: usize,
    /// Items sampled in all.
    pub items: usize,
    /// Scan calls made.
    pub scans: usize,
    /// Read capacity units the Scans consumed, as DynamoDB reported them.
    pub capacity: f64,
}

/// Progress while sampling: the table, items read so far, the most that will be read.
pub trait Progress {
    /// After each Scan call.
    fn sampled(&mut self, table: &str, items: usize, limit: usize);
}

impl<F: FnMut(&str, usize, usize)> Progress for F {
    fn sampled(&mut self, table: &str, items: usize, limit: usize) {
        self(table, items, limit);
    }
}

/// Reads the tables and writes the model's text. Tables that are missing, not ACTIVE, or that
/// the credentials may not read are left out and listed; throttling that outlasts the SDK's
/// retries, or DynamoDB not answering, fails the whole run, so that no model is written from
/// part of what was asked for.
pub async fn init(
    client: &Client,
    options: &InitOptions,
    progress: &mut impl Progress,
) -> anyhow::Result<InitOutcome> {
    let names = match &options.tables {
        Some(tables) => tables
            .iter()
            .map(|t| format!("{}{t}", options.prefix))
            .collect(),
        None => sample::list_tables(client, &options.prefix)
            .await
            .map_err(|err| err.context("no model was written"))?,
    };
    if names.is_empty() {
        bail!(
            "no tables to read: {}",
            if options.prefix.is_empty() {
                "the credentials list none (pass --tables to name them)".to_owned()
            } else {
                format!("none is named with the prefix `{}`", options.prefix)
            }
        );
    }
    let mut inputs = Vec::new();
    let mut skipped = Vec::new();
    let (mut items, mut scans, mut capacity) = (0, 0, 0.0);
    for name in names {
        let read = async {
            let live = sample::describe(client, &name).await?;
            let sampled = sample::sample(client, &name, options.sample, |n| {
                progress.sampled(&name, n, options.sample);
            })
            .await?;
            Ok::<_, TableFailure>((live, sampled))
        };
        match read.await {
            Ok((live, sampled)) => {
                items += sampled.items.len();
                scans += sampled.calls;
                capacity += sampled.capacity;
                inputs.push(proposal::TableInput {
                    name: name[options.prefix.len()..].to_owned(),
                    live,
                    items: sampled.items,
                    complete: sampled.complete,
                });
            }
            Err(failure) if failure.transient => bail!(
                "table {}: {}; no model was written (run it again later, or with a smaller \
                 --sample)",
                failure.table,
                failure.reason
            ),
            Err(failure) => skipped.push(failure),
        }
    }
    if inputs.is_empty() {
        let reasons: Vec<String> = skipped
            .iter()
            .map(|f| format!("{}: {}", f.table, f.reason))
            .collect();
        bail!("no table could be read:\n  {}", reasons.join("\n  "));
    }
    let tables = inputs.len();
    let mut header = render::Header::default();
    header.lines.push(format!(
        "Sampled {items} items of {tables} table(s) with {scans} Scan call(s), {capacity} read \
         capacity units."
    ));
    if !options.prefix.is_empty() {
        header.lines.push(format!(
            "Table names are given without their prefix: serve with `--table-prefix {}`.",
            options.prefix
        ));
    }
    for failure in &skipped {
        header.lines.push(format!(
            "Not included: table {} ({}).",
            failure.table, failure.reason
        ));
    }
    let text = checked(inputs, &header);
    if let Err(problems) = crate::model::parse("the model init wrote", &text) {
        bail!(
            "the model written from these tables does not pass its own check, which is a bug in \
             `dynarelay init`; please report it with these problems:\n{problems}"
        );
    }
    Ok(InitOutcome {
        text,
        skipped,
        tables,
        items,
        scans,
        capacity,
    })
}

/// The model's text for `inputs`. Where it fails its check, each table whose types, told apart,
/// give a model of its own that fails is proposed as one type instead, with the first problem
/// as the reason: `init` writes what loads, and says what it could not tell apart.
fn checked(inputs: Vec<proposal::TableInput>, header: &render::Header) -> String {
    let model = |inputs: Vec<proposal::TableInput>,
                 one_type: &std::collections::BTreeMap<String, String>| {
        render::render(&infer::propose_with(inputs, one_type), header)
    };
    let none = std::collections::BTreeMap::new();
    let text = model(inputs.clone(), &none);
    if crate::model::parse("the model init wrote", &text).is_ok() {
        return text;
    }
    let mut one_type = std::collections::BTreeMap::new();
    for input in &inputs {
        let alone = model(vec![input.clone()], &none);
        if let Err(problems) = crate::model::parse("the model init wrote", &alone) {
            let first = problems
                .diagnostics
                .first()
                .map_or_else(|| problems.report.clone(), |d| d.message.clone())
                .replace('\n', " ");
            one_type.insert(input.name.clone(), first);
        }
    }
    model(inputs, &one_type)
}

/// A sampled item for the unit tests, from `(attribute, text)` pairs (`N:42` for a number).
#[cfg(test)]
fn test_item(pairs: &[(&str, &str)]) -> crate::dynamo::Item {
    use aws_sdk_dynamodb::types::AttributeValue;
    pairs
        .iter()
        .map(|(k, v)| {
            let value = match v.strip_prefix("N:") {
                Some(n) => AttributeValue::N(n.to_owned()),
                None => AttributeValue::S((*v).to_owned()),
            };
            ((*k).to_owned(), value)
        })
        .collect()
}
