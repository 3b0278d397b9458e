//! A [`ReadSpec`] as the Query or Scan request that reads it (key condition, sort-key
//! condition, filters and projection through placeholders), sent one page-filling step at a
//! time.

use std::collections::HashMap;

use aws_sdk_dynamodb::{
    Client,
    operation::{query::builders::QueryFluentBuilder, scan::builders::ScanFluentBuilder},
    types::ReturnConsumedCapacity,
};

use super::{
    FilterTest, ReadSpec, SortKeyCondition, Store, StoreError,
    calls::{CallName, read_cost},
};
use crate::dynamo::Item;

/// A Query or Scan request, sent once per page-filling step with a new `Limit` and start key.
pub(super) enum Request {
    Query(QueryFluentBuilder),
    Scan(ScanFluentBuilder),
}

impl Request {
    pub(super) async fn send(
        &self,
        store: &Store,
        (table, index): (&str, Option<&str>),
        limit: i32,
        start: Option<Item>,
    ) -> Result<Batch, StoreError> {
        let name = |operation| CallName {
            index,
            limit: Some(limit),
            ..CallName::on(operation, &table)
        };
        match self {
            Request::Query(query) => {
                let send = query.clone().limit(limit).set_exclusive_start_key(start);
                let out = store
                    .observe(name("Query"), Box::pin(send.send()), |out| {
                        read_cost(out.consumed_capacity(), out.scanned_count, out.count)
                    })
                    .await
                    .map_err(|e| StoreError::dynamo("Query", table, e))?;
                Ok(Batch::new(
                    out.items,
                    out.last_evaluated_key,
                    out.scanned_count,
                    out.count,
                ))
            }
            Request::Scan(scan) => {
                let send = scan.clone().limit(limit).set_exclusive_start_key(start);
                let out = store
                    .observe(name("Scan"), Box::pin(send.send()), |out| {
                        read_cost(out.consumed_capacity(), out.scanned_count, out.count)
                    })
                    .await
                    .map_err(|e| StoreError::dynamo("Scan", table, e))?;
                Ok(Batch::new(
                    out.items,
                    out.last_evaluated_key,
                    out.scanned_count,
                    out.count,
                ))
            }
        }
    }
}

impl Request {
    /// The same read asking only for the number of items that pass its filters.
    pub(super) fn counting(self) -> Self {
        match self {
            Request::Query(query) => Request::Query(
                query
                    .set_projection_expression(None)
                    .select(aws_sdk_dynamodb::types::Select::Count),
            ),
            Request::Scan(scan) => Request::Scan(
                scan.set_projection_expression(None)
                    .select(aws_sdk_dynamodb::types::Select::Count),
            ),
        }
    }
}

/// One Query or Scan response, reduced to what paging needs.
pub(super) struct Batch {
    pub(super) items: Vec<Item>,
    pub(super) last: Option<Item>,
    pub(super) evaluated: usize,
    pub(super) matched: usize,
}

impl Batch {
    fn new(items: Option<Vec<Item>>, last: Option<Item>, scanned: i32, count: i32) -> Self {
        Self {
            items: items.unwrap_or_default(),
            last: last.filter(|key| !key.is_empty()),
            evaluated: usize::try_from(scanned).unwrap_or(0),
            matched: usize::try_from(count).unwrap_or(0),
        }
    }
}

impl ReadSpec<'_> {
    /// The Query or Scan request. Attribute names go through placeholders, so no name can
    /// collide with a DynamoDB reserved word.
    pub(super) fn build(&self, client: &Client, ascending: bool) -> Request {
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let mut filter = Vec::new();
        for (i, (name, test)) in self.filters.iter().chain(&self.expected).enumerate() {
            let (n, v) = (format!("#f{i}"), format!(":f{i}"));
            filter.push(match test {
                FilterTest::Compare(op, value) => {
                    values.insert(v.clone(), value.clone());
                    format!("{n} {op} {v}")
                }
                FilterTest::BeginsWith(value) => {
                    values.insert(v.clone(), value.clone());
                    format!("begins_with({n}, {v})")
                }
                FilterTest::Contains(value) => {
                    values.insert(v.clone(), value.clone());
                    format!("contains({n}, {v})")
                }
                FilterTest::In(list) => {
                    let placeholders: Vec<String> = list
                        .iter()
                        .enumerate()
                        .map(|(j, value)| {
                            let v = format!(":f{i}_{j}");
                            values.insert(v.clone(), value.clone());
                            v
                        })
                        .collect();
                    format!("{n} IN ({})", placeholders.join(", "))
                }
                FilterTest::Exists(true) => format!("attribute_exists({n})"),
                FilterTest::Exists(false) => format!("attribute_not_exists({n})"),
            });
            names.insert(n, (*name).to_owned());
        }
        let filter = (!filter.is_empty()).then(|| filter.join(" AND "));
        let projection = self.projection.as_ref().map(|wanted| {
            let mut read: Vec<&str> = self.shape.iter().map(|k| k.name).collect();
            for attribute in wanted {
                if !read.contains(attribute) {
                    read.push(attribute);
                }
            }
            let mut expression = String::new();
            for (i, attribute) in read.into_iter().enumerate() {
                let n = format!("#p{i}");
                if i > 0 {
                    expression.push_str(", ");
                }
                expression.push_str(&n);
                names.insert(n, attribute.to_owned());
            }
            expression
        });
        let Some((pk, pk_value)) = &self.partition else {
            let scan = client
                .scan()
                .table_name(self.table)
                .set_index_name(self.index.map(str::to_owned))
                .set_filter_expression(filter)
                .set_projection_expression(projection)
                .set_expression_attribute_names((!names.is_empty()).then_some(names))
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                .set_consistent_read(self.consistent.then_some(true))
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            return Request::Scan(scan);
        };
        let mut condition = "#pk = :pk".to_owned();
        names.insert("#pk".to_owned(), (*pk).to_owned());
        values.insert(":pk".to_owned(), pk_value.clone());
        match &self.sort {
            Some((sk, SortKeyCondition::Range(lower, upper)))
                if lower.is_some() || upper.is_some() =>
            {
                names.insert("#sk".to_owned(), (*sk).to_owned());
                condition.push_str(match (lower, upper) {
                    (Some(_), Some(_)) => " AND #sk BETWEEN :lo AND :hi",
                    (Some(_), None) => " AND #sk >= :lo",
                    _ => " AND #sk <= :hi",
                });
                if let Some(lower) = lower {
                    values.insert(":lo".to_owned(), lower.clone());
                }
                if let Some(upper) = upper {
                    values.insert(":hi".to_owned(), upper.clone());
                }
            }
            Some((sk, SortKeyCondition::Prefix(prefix))) => {
                names.insert("#sk".to_owned(), (*sk).to_owned());
                condition.push_str(" AND begins_with(#sk, :prefix)");
                values.insert(":prefix".to_owned(), prefix.clone());
            }
            _ => {}
        }
        Request::Query(
            client
                .query()
                .table_name(self.table)
                .set_index_name(self.index.map(str::to_owned))
                .key_condition_expression(condition)
                .set_filter_expression(filter)
                .set_projection_expression(projection)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .scan_index_forward(ascending)
                .set_consistent_read(self.consistent.then_some(true))
                .return_consumed_capacity(ReturnConsumedCapacity::Total),
        )
    }
}
