//! The file's TOML shape: syntax errors, then every key checked against the model file's own
//! JSON Schema (so the schema editors use and the checker cannot disagree), with the nearest
//! known key suggested for an unknown one.

use super::*;

/// Parses the TOML, reports unknown keys and shape errors, then checks the model.
pub(super) fn check_text(text: &str, out: &mut Problems) -> Option<Model> {
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(err) => {
            toml_error(&err, out);
            return None;
        }
    };
    unknown_keys(doc.get_ref(), out);
    let mut file: ModelFile = match toml::from_str(text) {
        Ok(file) => file,
        Err(err) => {
            toml_error(&err, out);
            return None;
        }
    };
    electrodb::expand(&mut file, out);
    Some(check_model(&file, doc.get_ref(), out))
}

/// Reports a TOML syntax error or a value of the wrong type, at its place.
pub(super) fn toml_error(err: &toml::de::Error, out: &mut Problems) {
    let span = err.span().unwrap_or(0..0);
    let message = err.message().trim().to_owned();
    const UNTAGGED: &str = "data did not match any variant of untagged enum ";
    if let Some(at) = message.find(UNTAGGED) {
        let name = message[at + UNTAGGED.len()..].trim();
        let hint = match name {
            "ProjectionFile" => "a projection is \"ALL\", \"KEYS_ONLY\" or a list of attributes",
            "EnumValuesFile" => "`values` is a list of names, or a table of names to descriptions",
            "ArgumentFile" => {
                "an argument is a name, or `{ name = \"...\", description = \"...\" }`"
            }
            "MutationFile" => {
                "a mutation is `true`, `false` or a table such as `{ description = \"...\" }`"
            }
            "RuleFile" => {
                "a rule is \"public\", \"authenticated\", `{ groups = [\"...\"] }` or `{ owner = \"field\" }`"
            }
            _ => "see dynarelay.schema.json for the shapes allowed here",
        };
        out.error(span, "this value has the wrong shape").hint(hint);
        return;
    }
    out.error(span, in_model_terms(&message));
}

/// serde's message about a value of the wrong type, worded in the model file's terms: what it
/// expected named as the file names it (`a table of an entity's settings`), never as the Rust
/// type that reads it (`struct EntityFile`, `u32`).
pub(super) fn in_model_terms(message: &str) -> String {
    const STRUCT: &str = "expected struct ";
    let Some(at) = message.find(STRUCT) else {
        return message
            .replace(
                "expected u32",
                "expected a whole number from 0 to 4294967295",
            )
            .replace("expected u16", "expected a whole number from 0 to 65535")
            .replace("expected a map", "expected a table (`{ key = value }`)");
    };
    let name: String = message[at + STRUCT.len()..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let what = match name.as_str() {
        "ModelFile" => "a model file's tables",
        "AuthFile" => "the `[auth]` settings",
        "TableFile" => "a DynamoDB table's settings (`partition_key`, `attributes`, ...)",
        "IndexFile" => "an index's settings (`partition_key`, `sort_key`, ...)",
        "EnumFile" => "an enum's settings (`values`, `description`)",
        "EntityFile" => "an entity's settings (`table`, `keys`, `fields`, ...)",
        "ElectroDbFile" => "ElectroDB's settings (`service`, `entity`, `pk`, `sk`, ...)",
        "ElectroDbIndexFile" => "an ElectroDB index's settings (`index`, `pk`, `sk`)",
        "FieldFile" => "a field's settings (`type`, `description`, ...)",
        "RelationFile" => "a relation's settings (`type`, `key`, ...)",
        "LookupFile" => "a lookup's settings (`entity`, `description`, ...)",
        "ConnectionFile" => "a connection's settings (`entity`, `partition`, `sort`, ...)",
        "PartitionFile" => {
            "a partition (`{ argument = \"...\" }`, `{ field = \"...\" }` or `{ value = \"...\" }`)"
        }
        "SortFile" => "sort conditions (`min`, `max`, `begins_with`, `fixed`)",
        "FilterFile" => "a filter's settings (`field`, `op`, ...)",
        "OrderFile" => "the `order` settings (`default`, `description`)",
        "PageSizeFile" => "page sizes (`default`, `max`)",
        "MutationsFile" => "mutations (`create`, `update`, `delete`)",
        "MutationSettingsFile" => "a mutation's settings (`description`, `allow`, ...)",
        "GroupsRuleFile" | "OwnerRuleFile" => "a rule",
        _ => "settings",
    };
    let rest = &message[at + STRUCT.len() + name.len()..];
    format!(
        "{}expected {what}, written as a TOML table{rest}",
        &message[..at]
    )
}

/// Reports every key the model file format does not have, by walking the document along the
/// file's JSON Schema.
pub(super) fn unknown_keys(doc: &DeTable<'_>, out: &mut Problems) {
    let schema = schema_value();
    walk_table(&schema, &schema, doc, "", out);
}

pub(super) fn walk_value(
    root: &Json,
    schema: &Json,
    value: &DeValue<'_>,
    path: &str,
    out: &mut Problems,
) {
    match value {
        DeValue::Table(table) => {
            // Of several table shapes (an untagged enum's, such as the kinds of rule), the one
            // the table's keys fit best.
            let mut shapes = Vec::new();
            table_schemas(root, schema, 0, &mut shapes);
            let unknown = |shape: &Json| {
                table
                    .iter()
                    .filter(|(key, _)| {
                        shape
                            .get("properties")
                            .and_then(|p| p.get(key.get_ref().as_ref() as &str))
                            .is_none()
                            && !shape
                                .get("additionalProperties")
                                .is_some_and(Json::is_object)
                    })
                    .count()
            };
            if let Some(schema) = shapes.into_iter().min_by_key(|shape| unknown(shape)) {
                walk_table(root, schema, table, path, out);
            }
        }
        DeValue::Array(items) => {
            if let Some(item) = find_schema(root, schema, 0, &|s| s.get("items").is_some())
                .and_then(|s| s.get("items"))
            {
                for value in items {
                    walk_value(root, item, value.get_ref(), path, out);
                }
            }
        }
        _ => {}
    }
}

pub(super) fn is_table_schema(schema: &Json) -> bool {
    schema.get("properties").is_some()
        || schema
            .get("additionalProperties")
            .is_some_and(Json::is_object)
}

/// Every table shape `schema` allows, through its references and alternatives.
pub(super) fn table_schemas<'s>(
    root: &'s Json,
    schema: &'s Json,
    depth: usize,
    found: &mut Vec<&'s Json>,
) {
    if depth > 16 {
        return;
    }
    if let Some(reference) = schema.get("$ref").and_then(Json::as_str) {
        if let Some(target) = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))
        {
            table_schemas(root, target, depth + 1, found);
        }
        return;
    }
    if is_table_schema(schema) {
        found.push(schema);
        return;
    }
    for alternative in ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Json::as_array))
        .flatten()
    {
        table_schemas(root, alternative, depth + 1, found);
    }
}

/// `schema`, or one of its references or alternatives, that `accept`s.
pub(super) fn find_schema<'s>(
    root: &'s Json,
    schema: &'s Json,
    depth: usize,
    accept: &dyn Fn(&Json) -> bool,
) -> Option<&'s Json> {
    if depth > 16 {
        return None;
    }
    if let Some(reference) = schema.get("$ref").and_then(Json::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))?;
        return find_schema(root, target, depth + 1, accept);
    }
    if accept(schema) {
        return Some(schema);
    }
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Json::as_array))
        .flatten()
        .find_map(|alternative| find_schema(root, alternative, depth + 1, accept))
}

pub(super) fn walk_table(
    root: &Json,
    schema: &Json,
    table: &DeTable<'_>,
    path: &str,
    out: &mut Problems,
) {
    let properties = schema.get("properties").and_then(Json::as_object);
    let additional = schema.get("additionalProperties").filter(|s| s.is_object());
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    for (key, value) in entries {
        let name: &str = key.get_ref();
        let here = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        match properties.and_then(|p| p.get(name)).or(additional) {
            Some(sub) => walk_value(root, sub, value.get_ref(), &here, out),
            None => {
                let allowed: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let place = if path.is_empty() {
                    "at the top level".to_owned()
                } else {
                    format!("in `{path}`")
                };
                out.error(key.span(), format!("unknown key `{name}` {place}"))
                    .hint(suggest(name, &allowed, "keys allowed here"));
            }
        }
    }
}
