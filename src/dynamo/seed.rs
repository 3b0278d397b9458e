//! `dynarelay seed`: a file of items, in DynamoDB's typed JSON, checked whole against the
//! model's tables and keys, then written with BatchWriteItem. A file with any problem writes
//! nothing.
//!
//! The file maps table names, as the model names them (before `--table-prefix`), to lists of
//! items:
//!
//! ```json
//! { "Users": [ { "userId": { "S": "u1" }, "name": { "S": "Ada" } } ] }
//! ```

use std::{collections::HashMap, fmt};

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::{Item, Store, StoreError, typed_json};
use crate::{
    cursor::{KeyAttr, KeyType},
    model::Model,
    number::DynamoNumber,
};

/// DynamoDB's largest item, in bytes as it counts them.
const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Problems listed in full; past this, only their number.
const SHOWN: usize = 20;

/// A checked file: each table's full name and its items, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedItems {
    /// Full table names (prefix included) with their items.
    pub tables: Vec<(String, Vec<Item>)>,
}

impl SeedItems {
    /// Every item of every table.
    pub fn count(&self) -> usize {
        self.tables.iter().map(|(_, items)| items.len()).sum()
    }
}

/// Why a file cannot be seeded: every problem found, each located by table and item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SeedErrors {
    /// Problems such as "Users[3]: key attribute `userId` is missing".
    pub problems: Vec<String>,
}

impl fmt::Display for SeedErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "{}, so nothing was written (items are counted from 0: `Table[0]` is a table's \
             first):",
            if count == 1 {
                "1 problem".to_owned()
            } else {
                format!("{count} problems")
            }
        )?;
        for problem in self.problems.iter().take(SHOWN) {
            write!(f, "\n  - {problem}")?;
        }
        if count > SHOWN {
            write!(f, "\n  ... and {} more", count - SHOWN)?;
        }
        Ok(())
    }
}

/// Reads and checks a seed file's text against the model's tables: the JSON's shape, every
/// value's type, each item's primary key (present, of the key's type, not empty, not repeated
/// in the file), index key attributes when present, and item sizes.
pub fn parse(text: &str, model: &Model, prefix: &str) -> Result<SeedItems, SeedErrors> {
    let single = |problem: String| SeedErrors {
        problems: vec![problem],
    };
    let file: FileTables = serde_json::from_str(text).map_err(|err| {
        single(format!(
            "not a JSON object of table names to lists of items: {err}"
        ))
    })?;
    let mut problems = Vec::new();
    let mut tables = Vec::new();
    for (name, items) in file.0 {
        let Some(table) = model.tables.iter().find(|t| t.name == name) else {
            let known: Vec<&str> = model.tables.iter().map(|t| t.name.as_str()).collect();
            problems.push(format!(
                "`{name}` is not a table of the model (its tables: {}; name them without \
                 --table-prefix)",
                known.join(", ")
            ));
            continue;
        };
        let Value::Array(items) = items else {
            problems.push(format!(
                "{name}: a table's items are a JSON array, not {}",
                typed_json::kind(&items)
            ));
            continue;
        };
        let mut keys: HashMap<Vec<String>, usize> = HashMap::new();
        let mut read = Vec::with_capacity(items.len());
        for (index, json) in items.iter().enumerate() {
            let at = format!("{name}[{index}]");
            let item = match typed_json::item_from_json(json) {
                Ok(item) => item,
                Err(err) => {
                    problems.push(format!("{at}: {err}"));
                    continue;
                }
            };
            let found = check_keys(&item, table.key, &table.attributes, &at, &mut problems);
            if let Some(key) = found
                && let Some(first) = keys.insert(key, index)
            {
                problems.push(format!(
                    "{at}: has the same primary key as {name}[{first}]: one would overwrite \
                     the other"
                ));
            }
            let size = item_size(&item);
            if size > MAX_ITEM_BYTES {
                problems.push(format!(
                    "{at}: is {size} bytes as DynamoDB counts them, over its {MAX_ITEM_BYTES}"
                ));
            }
            read.push(item);
        }
        tables.push((format!("{prefix}{name}"), read));
    }
    if problems.is_empty() {
        Ok(SeedItems { tables })
    } else {
        Err(SeedErrors { problems })
    }
}

/// Checks the key attributes of an item, adding a problem for each mistake; returns its primary
/// key (in a form equal for equal keys) when that is sound.
fn check_keys(
    item: &Item,
    key: &[KeyAttr],
    attributes: &[KeyAttr],
    at: &str,
    problems: &mut Vec<String>,
) -> Option<Vec<String>> {
    let before = problems.len();
    let mut primary = Vec::with_capacity(key.len());
    for attr in attributes {
        let is_key = key.contains(attr);
        let role = if is_key { "key" } else { "index key" };
        let Some(value) = item.get(attr.name) else {
            if is_key {
                problems.push(format!(
                    "{at}: key attribute `{}` ({}) is missing",
                    attr.name,
                    type_name(attr.ty)
                ));
            }
            continue;
        };
        let text = match (attr.ty, value) {
            (KeyType::S, AttributeValue::S(s)) if !s.is_empty() => Some(s.clone()),
            (KeyType::N, AttributeValue::N(n)) => DynamoNumber::normalize(n)
                .ok()
                .map(DynamoNumber::into_string),
            (KeyType::B, AttributeValue::B(b)) if !b.as_ref().is_empty() => {
                Some(format!("{:?}", b.as_ref()))
            }
            (KeyType::S | KeyType::B, AttributeValue::S(_) | AttributeValue::B(_))
                if same_type(attr.ty, value) =>
            {
                problems.push(format!(
                    "{at}: {role} attribute `{}` is empty: DynamoDB refuses empty key values",
                    attr.name
                ));
                None
            }
            _ => {
                problems.push(format!(
                    "{at}: {role} attribute `{}` is {}, but the model declares it {}",
                    attr.name,
                    typed_json::type_name(value),
                    type_name(attr.ty)
                ));
                None
            }
        };
        if is_key && let Some(text) = text {
            primary.push(text);
        }
    }
    (problems.len() == before).then_some(primary)
}

fn same_type(ty: KeyType, value: &AttributeValue) -> bool {
    matches!(
        (ty, value),
        (KeyType::S, AttributeValue::S(_)) | (KeyType::B, AttributeValue::B(_))
    )
}

fn type_name(ty: KeyType) -> &'static str {
    match ty {
        KeyType::S => "S, a string",
        KeyType::N => "N, a number",
        KeyType::B => "B, binary",
    }
}

/// An item's size as DynamoDB documents counting it: names and values in bytes, a number about
/// one byte per two significant digits plus one, a list or map 3 bytes plus one per element.
fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    let number = |n: &String| n.len().div_ceil(2) + 1;
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(number).sum(),
        AttributeValue::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// The file's top level: table names to their (unchecked) items, in the file's order, each name
/// once (serde_json's own map would keep the last of two silently).
struct FileTables(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for FileTables {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Tables;
        impl<'de> Visitor<'de> for Tables {
            type Value = FileTables;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of table names to lists of items")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileTables, A::Error> {
                let mut tables: Vec<(String, Value)> = Vec::new();
                while let Some((name, items)) = map.next_entry::<String, Value>()? {
                    if tables.iter().any(|(seen, _)| *seen == name) {
                        return Err(serde::de::Error::custom(format!(
                            "the table `{name}` is named twice"
                        )));
                    }
                    tables.push((name, items));
                }
                Ok(FileTables(tables))
            }
        }
        deserializer.deserialize_map(Tables)
    }
}

/// What [`write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seeded {
    /// Every item was written: each table's full name and its number of items.
    Written(Vec<(String, usize)>),
    /// `if_empty` was asked and this table already holds items: nothing was written.
    NotEmpty(String),
}

/// Writes checked items, table by table in the file's order, with BatchWriteItem (25 items a
/// call, unprocessed items retried with a bounded backoff). Each table is first read with a
/// one-item Scan, so that a missing table stops the seed before anything is written; with
/// `if_empty`, a table that holds items stops it too.
pub async fn write(store: &Store, items: SeedItems, if_empty: bool) -> anyhow::Result<Seeded> {
    for (table, _) in &items.tables {
        let empty = match store.is_empty(table).await {
            Ok(empty) => empty,
            Err(StoreError::Dynamo { source, .. })
                if matches!(
                    *source,
                    aws_sdk_dynamodb::Error::ResourceNotFoundException(_)
                ) =>
            {
                anyhow::bail!(
                    "the table {table} does not exist, so nothing was written: `dynarelay \
                     tables create` creates the model's tables"
                );
            }
            Err(err) => {
                return Err(anyhow::Error::new(err).context("nothing was written"));
            }
        };
        if !empty && if_empty {
            return Ok(Seeded::NotEmpty(table.clone()));
        }
    }
    let mut written = Vec::with_capacity(items.tables.len());
    for (table, items) in items.tables {
        let count = items.len();
        store.put_items(&table, items).await?;
        written.push((table, count));
    }
    Ok(Seeded::Written(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        crate::model::parse(
            "t.toml",
            r#"
version = 1
[tables.Things]
partition_key = "id"
sort_key = "n"
attributes = { id = "S", n = "N", tag = "B" }
[tables.Things.indexes.ByTag]
partition_key = "tag"
[entities.Thing]
table = "Things"
fields.thingId = { type = "String!", attribute = "id" }
fields.n = "Int!"
"#,
        )
        .unwrap()
    }

    fn problems(text: &str) -> Vec<String> {
        parse(text, &model(), "p_").unwrap_err().problems
    }

    #[test]
    fn a_sound_file_is_read_in_order_under_the_prefix() {
        let items = parse(
            r#"{"Things": [{"id": {"S": "a"}, "n": {"N": "1"}, "tag": {"B": "AQ=="}},
                           {"id": {"S": "a"}, "n": {"N": "2"}}]}"#,
            &model(),
            "p_",
        )
        .unwrap();
        assert_eq!(items.tables.len(), 1);
        assert_eq!(items.tables[0].0, "p_Things");
        assert_eq!(items.count(), 2);
    }

    #[test]
    fn every_problem_is_reported_with_its_table_and_item() {
        let found = problems(
            r#"{"Things": [
                {"id": {"S": "a"}},
                {"id": {"N": "1"}, "n": {"N": "1"}},
                {"id": {"S": ""}, "n": {"N": "1"}},
                {"id": {"S": "a"}, "n": {"N": "1"}, "tag": {"S": "x"}},
                {"id": {"S": "b"}, "n": {"N": "1.0"}},
                {"id": {"S": "b"}, "n": {"N": "1"}},
                {"id": {"S": "c"}, "n": {"N": "x"}},
                "nope"
              ],
              "Other": []}"#,
        );
        let expected = [
            "Things[0]: key attribute `n` (N, a number) is missing",
            "Things[1]: key attribute `id` is N, but the model declares it S, a string",
            "Things[2]: key attribute `id` is empty",
            "Things[3]: index key attribute `tag` is S, but the model declares it B, binary",
            "Things[5]: has the same primary key as Things[4]",
            "Things[6]: attribute `n`: `x` is not a DynamoDB number",
            "Things[7]: an item is a JSON object",
            "`Other` is not a table of the model (its tables: Things;",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (problem, start) in found.iter().zip(expected) {
            assert!(problem.starts_with(start), "{problem} / {start}");
        }
    }

    #[test]
    fn malformed_json_repeated_tables_and_non_lists_are_refused() {
        let err = problems(r#"{"Things": [}"#);
        assert!(err[0].contains("line 1 column 13"), "{err:?}");
        let err = problems(r#"{"Things": [], "Things": []}"#);
        assert!(err[0].contains("`Things` is named twice"), "{err:?}");
        let err = problems(r#"{"Things": {}}"#);
        assert!(
            err[0].contains("a JSON array, not an empty object"),
            "{err:?}"
        );
        let err = problems("[]");
        assert!(err[0].contains("an object of table names"), "{err:?}");
    }

    #[test]
    fn an_item_over_400_kb_is_refused() {
        let big = "x".repeat(MAX_ITEM_BYTES);
        let err = problems(&format!(
            r#"{{"Things": [{{"id": {{"S": "a"}}, "n": {{"N": "1"}}, "blob": {{"S": "{big}"}}}}]}}"#
        ));
        assert!(err[0].starts_with("Things[0]: is 409610 bytes"), "{err:?}");
    }

    #[test]
    fn the_message_lists_twenty_problems_and_counts_the_rest() {
        let items: Vec<String> = (0..25).map(|_| "{}".to_owned()).collect();
        let err = parse(
            &format!(r#"{{"Things": [{}]}}"#, items.join(",")),
            &model(),
            "",
        )
        .unwrap_err();
        // Each empty item lacks both key attributes.
        assert_eq!(err.problems.len(), 50);
        let text = err.to_string();
        assert!(text.starts_with("50 problems, so nothing was written"));
        assert_eq!(text.matches("\n  - ").count(), 20);
        assert!(text.ends_with("... and 30 more"), "{text}");
    }
}
