//! `dynarelay check --sample N`: a model held against a sample of its tables' items, for what
//! has drifted since it was written. Each sampled item is typed by the same rule every read
//! applies ([`values::entity_of`]) and each of its entity's fields read as a response would read
//! it ([`values::field_value`], [`values::output`]): a stored value the field cannot give, an
//! item of a type the model does not know, and an index the live table has and the model does
//! not are reported, with counts, never with the values themselves.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::{Client, types::AttributeValue};

use super::{observe::kind_of, single_table::is_tool_record as sample_is_tool_record};
use crate::{
    dynamo::{
        Tables,
        sample::{self, TableFailure},
    },
    graphql::values,
    model::Model,
};

/// What a sampled table shows against the model.
#[derive(Debug, Default)]
pub struct DriftReport {
    /// One line per finding.
    pub warnings: Vec<String>,
    /// Items sampled in all.
    pub items: usize,
}

/// Samples up to `limit` items of each of the model's tables and reports what no longer fits.
/// A table that cannot be read is a warning too; only a failure to reach DynamoDB at all is an
/// error.
pub async fn drift(
    client: &Client,
    model: &Model,
    names: &Tables,
    limit: usize,
) -> Result<DriftReport, TableFailure> {
    let mut report = DriftReport::default();
    for (t, table) in model.tables.iter().enumerate() {
        let name = names.name(t);
        let live = match sample::describe(client, name).await {
            Ok(live) => live,
            Err(failure) if failure.transient => return Err(failure),
            Err(failure) => {
                report
                    .warnings
                    .push(format!("table {name} was not sampled: {}", failure.reason));
                continue;
            }
        };
        for index in &live.indexes {
            if !table.indexes.iter().any(|i| i.name == index.name) {
                report.warnings.push(format!(
                    "table {name} has the index `{}`, which the model does not declare: add it \
                     under [tables.{}.indexes] to page through it",
                    index.name, table.name
                ));
            }
        }
        let sampled = sample::sample(client, name, limit, |_| {}).await?;
        report.items += sampled.items.len();
        let candidates: Vec<usize> = (0..model.entities.len())
            .filter(|&e| model.entities[e].table == t)
            .collect();
        // (entity, field, stored kind) -> items; unknown types -> items.
        let mut misfits: BTreeMap<(usize, usize, &'static str), usize> = BTreeMap::new();
        let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
        let partition = table.key[0].name;
        for item in &sampled.items {
            if sample_is_tool_record(item, partition) {
                continue;
            }
            let Some(e) = values::entity_of(model, &candidates, item) else {
                let label = match &table.type_attribute {
                    Some(attribute) => match item.get(attribute) {
                        Some(AttributeValue::S(v)) => format!("`{attribute}` = `{v}`"),
                        _ => format!("no `{attribute}`"),
                    },
                    None => "keys of no entity's templates".to_owned(),
                };
                *unknown.entry(label).or_default() += 1;
                continue;
            };
            for (f, field) in model.entities[e].fields.iter().enumerate() {
                let value = values::field_value(model, e, f, item);
                if values::output(model, field, value.as_deref()).is_err() {
                    *misfits
                        .entry((e, f, item.get(&field.attribute).map_or("absent", kind_of)))
                        .or_default() += 1;
                }
            }
        }
        let n = sampled.items.len();
        for ((e, f, stored), count) in misfits {
            let entity = &model.entities[e];
            let field = &entity.fields[f];
            let why = if stored == "absent" {
                "the field is non-null"
            } else {
                "its type no longer fits what is stored"
            };
            report.warnings.push(format!(
                "table {name}: `{}.{}` (attribute `{}`) cannot be read from {count} of {n} \
                 sampled items, where it is {stored}: {why}",
                entity.name, field.name, field.attribute
            ));
        }
        for (label, count) in unknown {
            report.warnings.push(format!(
                "table {name}: {count} of {n} sampled items are of no entity of the model \
                 ({label}): no connection or lookup returns them"
            ));
        }
    }
    Ok(report)
}
