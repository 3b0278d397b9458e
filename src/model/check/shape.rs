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
    let before = out.0.len();
    unknown_keys(doc.get_ref(), out);
    let mut file: ModelFile = match toml::from_str(text) {
        Ok(file) => file,
        Err(err) => {
            // serde stops at the first value it cannot read, which the walk along the schema
            // has usually reported already, in the model's terms, with every other one.
            let span = err.span().unwrap_or(0..0);
            let reported = out.0[before..]
                .iter()
                .any(|problem| overlaps(&problem.span, &span));
            if !reported {
                toml_error(&err, out);
            }
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
    let what = def_terms(&name).unwrap_or("settings");
    let rest = &message[at + STRUCT.len() + name.len()..];
    format!(
        "{}expected {what}, written as a TOML table{rest}",
        &message[..at]
    )
}

/// What a definition of the file's JSON Schema (the Rust type that reads it) is, in the model
/// file's terms.
fn def_terms(name: &str) -> Option<&'static str> {
    Some(match name {
        "ModelFile" => "a model file's tables",
        "AuthFile" => "the `[auth]` settings",
        "TableFile" => "a DynamoDB table's settings (`partition_key`, `attributes`, ...)",
        "IndexFile" => "an index's settings (`partition_key`, `sort_key`, ...)",
        "EnumFile" => "an enum's settings (`values`, `description`)",
        "EntityFile" => "an entity's settings (`table`, `keys`, `fields`, ...)",
        "ElectroDbFile" => "ElectroDB's settings (`service`, `entity`, `pk`, `sk`, ...)",
        "ElectroDbIndexFile" => "an ElectroDB index's settings (`index`, `pk`, `sk`)",
        "FieldFile" => "a field's settings (`type`, `description`, ...)",
        "FieldEntry" => {
            "a field: its type, such as \"String!\", or a table such as `{ type = \"String!\", description = \"...\" }`"
        }
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
        "MutationFile" => {
            "a mutation: `true`, `false` or a table such as `{ description = \"...\" }`"
        }
        "RuleFile" => {
            "a rule: \"public\", \"authenticated\", `{ groups = [\"...\"] }` or `{ owner = \"field\" }`"
        }
        "GroupsRuleFile" | "OwnerRuleFile" => "a rule",
        "ArgumentFile" => "an argument: a name, or `{ name = \"...\", description = \"...\" }`",
        "ProjectionFile" => "a projection: \"ALL\", \"KEYS_ONLY\" or a list of attributes",
        "EnumValuesFile" => {
            "an enum's values: a list of names, or a table of names to descriptions"
        }
        _ => return None,
    })
}

/// Reports every key the model file format does not have, by walking the document along the
/// file's JSON Schema.
pub(super) fn unknown_keys(doc: &DeTable<'_>, out: &mut Problems) {
    let schema = schema_value();
    walk_table(&schema, &schema, doc, "", out);
}

/// Checks `value` against `schema`: its kind (text, number, list, table, ...), the values a
/// setting allows, whole numbers' ranges and a table's required keys, then what it holds, key
/// by key. Every mistake is reported, each once, at its place and in the model file's terms;
/// a value that is no allowed kind is reported alone, not again for what is inside it.
pub(super) fn walk_value(
    root: &Json,
    schema: &Json,
    value: &Spanned<DeValue<'_>>,
    path: &str,
    out: &mut Problems,
) {
    let mut leaves = Vec::new();
    if !schema_leaves(root, schema, 0, &mut leaves) {
        // A setting that takes any value (a field's `default`, which its type decides).
        return;
    }
    let fitting: Vec<&Json> = leaves
        .iter()
        .copied()
        .filter(|leaf| admits(leaf, value.get_ref()))
        .collect();
    if fitting.is_empty() {
        wrong_kind(root, schema, &leaves, value, path, out);
        return;
    }
    match value.get_ref() {
        DeValue::Table(table) => {
            // Of several table shapes (an untagged enum's, such as the kinds of rule), the one
            // the table's keys fit best.
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
            if let Some(shape) = fitting.into_iter().min_by_key(|shape| unknown(shape)) {
                // A required key left out, unless a key the shape does not know stands in for
                // it (`nam` for `name`: one mistake, reported once, as the unknown key).
                if unknown(shape) == 0 {
                    missing_keys(shape, table, value.span(), path, out);
                }
                walk_table(root, shape, table, path, out);
            }
        }
        DeValue::Array(items) => {
            if let Some(item) = fitting.iter().find_map(|leaf| leaf.get("items")) {
                for value in items {
                    walk_value(root, item, value, path, out);
                }
            }
        }
        DeValue::Integer(number) => {
            let Some(n) = whole_number(number) else {
                return;
            };
            if let Some((low, high)) = fitting.iter().find_map(|leaf| range_of(leaf))
                && (n < low || n > high)
            {
                out.error(
                    value.span(),
                    format!("`{path}` is a whole number from {low} to {high}, not {n}"),
                );
            }
        }
        _ => {}
    }
}

/// The alternatives `schema` allows, through its references and `anyOf`/`oneOf`, without
/// `null` (which stands for a setting left out); `false` when one of them allows anything.
fn schema_leaves<'s>(
    root: &'s Json,
    schema: &'s Json,
    depth: usize,
    out: &mut Vec<&'s Json>,
) -> bool {
    if depth > 16 {
        return false;
    }
    if let Some(reference) = schema.get("$ref").and_then(Json::as_str) {
        return match reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))
        {
            Some(target) => schema_leaves(root, target, depth + 1, out),
            None => false,
        };
    }
    let alternatives: Vec<&Json> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Json::as_array))
        .flatten()
        .collect();
    if !alternatives.is_empty() {
        return alternatives
            .into_iter()
            .filter(|alternative| alternative.get("type") != Some(&Json::from("null")))
            .all(|alternative| schema_leaves(root, alternative, depth + 1, out));
    }
    if schema.get("type").is_none() && schema.get("const").is_none() && !is_table_schema(schema) {
        return false;
    }
    out.push(schema);
    true
}

/// The JSON Schema types of a TOML value (an integer is a number too).
fn json_types(value: &DeValue<'_>) -> &'static [&'static str] {
    match value {
        DeValue::String(_) => &["string"],
        DeValue::Integer(_) => &["integer", "number"],
        DeValue::Float(_) => &["number"],
        DeValue::Boolean(_) => &["boolean"],
        DeValue::Array(_) => &["array"],
        DeValue::Table(_) => &["object"],
        DeValue::Datetime(_) => &[],
    }
}

/// Whether a value is of a kind `leaf` allows, and its constant if it has one.
fn admits(leaf: &Json, value: &DeValue<'_>) -> bool {
    if let Some(constant) = leaf.get("const") {
        return value.as_str().is_some() && constant.as_str() == value.as_str();
    }
    let types: Vec<&str> = match leaf.get("type") {
        Some(Json::String(one)) => vec![one.as_str()],
        Some(Json::Array(several)) => several.iter().filter_map(Json::as_str).collect(),
        _ => vec!["object"],
    };
    json_types(value).iter().any(|kind| types.contains(kind))
}

/// A TOML whole number's value.
fn whole_number(number: &toml::de::DeInteger<'_>) -> Option<i128> {
    i128::from_str_radix(&number.as_str().replace('_', ""), number.radix()).ok()
}

/// The range of whole numbers a leaf allows: its `minimum` and its format's largest value.
fn range_of(leaf: &Json) -> Option<(i128, i128)> {
    let high = match leaf.get("format").and_then(Json::as_str)? {
        "uint8" => i128::from(u8::MAX),
        "uint16" => i128::from(u16::MAX),
        "uint32" => i128::from(u32::MAX),
        "uint64" | "uint" => i128::from(u64::MAX),
        "int32" => i128::from(i32::MAX),
        "int64" => i128::from(i64::MAX),
        _ => return None,
    };
    let low = leaf
        .get("minimum")
        .and_then(Json::as_i64)
        .map_or(i128::MIN, i128::from);
    Some((low, high))
}

/// Reports the keys a table shape requires that `table` leaves out.
fn missing_keys(
    shape: &Json,
    table: &DeTable<'_>,
    span: Range<usize>,
    path: &str,
    out: &mut Problems,
) {
    for key in shape
        .get("required")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
    {
        if !table
            .iter()
            .any(|(name, _)| name.get_ref().as_ref() as &str == key)
        {
            out.error(span.clone(), format!("`{path}` needs `{key}`"));
        }
    }
}

/// Reports a value of a kind its setting does not take: what the setting takes, in the model
/// file's terms (the values allowed, when it is one of a few), and what was found; with how
/// to write it when the value would do inside a list (`allow = "public"`).
fn wrong_kind(
    root: &Json,
    schema: &Json,
    leaves: &[&Json],
    value: &Spanned<DeValue<'_>>,
    path: &str,
    out: &mut Problems,
) {
    let found = match value.get_ref() {
        DeValue::String(text) => format!("the text \"{text}\""),
        DeValue::Integer(number) => format!("the number {number}"),
        DeValue::Float(number) => format!("the number {number}"),
        DeValue::Boolean(flag) => format!("`{flag}`"),
        DeValue::Datetime(when) => format!("the date-time {when}"),
        DeValue::Array(_) => "a list".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    };
    let problem = out.error(
        value.span(),
        format!("`{path}` is {}, not {found}", describe(root, schema, 0)),
    );
    let in_a_list = leaves
        .iter()
        .filter_map(|leaf| leaf.get("items"))
        .any(|item| {
            let mut inner = Vec::new();
            !schema_leaves(root, item, 0, &mut inner)
                || inner.iter().any(|leaf| admits(leaf, value.get_ref()))
        });
    if in_a_list {
        let key = path.rsplit('.').next().unwrap_or(path);
        let written = match value.get_ref() {
            DeValue::String(text) => format!("\"{text}\""),
            _ => "...".to_owned(),
        };
        problem.hint(format!(
            "a list is written in brackets: `{key} = [{written}]`"
        ));
    }
}

/// What `schema` allows, in the model file's terms.
fn describe(root: &Json, schema: &Json, depth: usize) -> String {
    if depth > 8 {
        return "settings".to_owned();
    }
    if let Some(reference) = schema.get("$ref").and_then(Json::as_str) {
        let name = reference.strip_prefix("#/$defs/").unwrap_or(reference);
        if let Some(terms) = def_terms(name) {
            return terms.to_owned();
        }
        return match root.get("$defs").and_then(|defs| defs.get(name)) {
            Some(target) => describe(root, target, depth + 1),
            None => "settings".to_owned(),
        };
    }
    let alternatives: Vec<&Json> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Json::as_array))
        .flatten()
        .filter(|alternative| alternative.get("type") != Some(&Json::from("null")))
        .collect();
    if !alternatives.is_empty() {
        let constants: Vec<&str> = alternatives
            .iter()
            .filter_map(|alternative| alternative.get("const").and_then(Json::as_str))
            .collect();
        if constants.len() == alternatives.len() {
            let listed: Vec<String> = constants.iter().map(|c| format!("`{c}`")).collect();
            return format!("one of {}", listed.join(", "));
        }
        let described: Vec<String> = alternatives
            .iter()
            .map(|alternative| describe(root, alternative, depth + 1))
            .collect();
        return described.join(", or ");
    }
    if let Some(constant) = schema.get("const").and_then(Json::as_str) {
        return format!("`{constant}`");
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Json::String(one)) => vec![one.as_str()],
        Some(Json::Array(several)) => several.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let described: Vec<String> = types
        .iter()
        .filter(|kind| **kind != "null")
        .map(|kind| match *kind {
            "string" => "text in quotes".to_owned(),
            "integer" => "a whole number".to_owned(),
            "number" => "a number".to_owned(),
            "boolean" => "`true` or `false`".to_owned(),
            "array" => match schema.get("items") {
                Some(item) => format!("a list of {}", plural(&describe(root, item, depth + 1))),
                None => "a list".to_owned(),
            },
            _ if schema
                .get("additionalProperties")
                .is_some_and(Json::is_object) =>
            {
                "a table".to_owned()
            }
            _ => "a table of settings".to_owned(),
        })
        .collect();
    if described.is_empty() {
        "settings".to_owned()
    } else {
        described.join(" or ")
    }
}

/// "a rule: ..." as the items of a list: "rules (each ...)".
fn plural(one: &str) -> String {
    let one = one
        .strip_prefix("a ")
        .or_else(|| one.strip_prefix("an "))
        .unwrap_or(one);
    match one.split_once(": ") {
        Some((what, shapes)) => format!("{what}s (each {shapes})"),
        None if one.starts_with("text") => one.to_owned(),
        None => format!("{one}s"),
    }
}

/// Whether two places in the file share a byte (or are the same empty place).
fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a == b || (a.start < b.end && b.start < a.end)
}

pub(super) fn is_table_schema(schema: &Json) -> bool {
    schema.get("properties").is_some()
        || schema
            .get("additionalProperties")
            .is_some_and(Json::is_object)
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
            Some(sub) => walk_value(root, sub, value, &here, out),
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
