//! Checks a model file and turns it into a [`Model`]: every problem found, each with its place
//! in the file and a hint, reported together.
//!
//! This module owns the model file's rules: its TOML shape (through [`super::file`] and serde),
//! the keys it allows (read from the file's own JSON Schema, so the schema and the checker
//! cannot disagree), and every semantic rule between tables, enums, entities and root fields.
//! It also renders the problems like a compiler does, with `codespan-reporting`.
//!
//! Checking runs in passes: tables, enums, type names, entities (fields and keys), id tags,
//! then everything that refers to other entities (relations, connections, mutation edges) and
//! the root fields. Each pass reports what it finds and carries on with what it could build,
//! staying quiet about things that only fail because of a problem already reported.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    fmt,
    ops::Range,
    path::Path,
};

use base64::Engine as _;
use codespan_reporting::{
    diagnostic::{Diagnostic, Label},
    files::SimpleFile,
    term,
};
use serde_json::Value as Json;
use toml::{
    Spanned,
    de::{DeTable, DeValue},
};

mod access;

use super::{
    Access, Argument, Collection, Connection, CreateMutation, DefaultValue, Entity, EntityId,
    EnumType, Field, FieldId, FieldType, Filter, FilterOp, Generated, Index, InputChecks, Lookup,
    Model, Mutation, Mutations, Order, Partition, PartitionFrom, Projection, Read, Relation,
    Scalar, SortCondition, Table, TableId, TemplateKey, TimeFormat, TypeTest,
    file::{
        ArgumentFile, ConnectionFile, EntityFile, EnumValuesFile, FieldFile, IndexFile,
        IndexKindFile, KeyTypeFile, ModelFile, MutationFile, PageSizeFile, ProjectionFile,
        ProjectionKindFile, RelationFile, StoredAsFile, TableFile,
    },
    leak_shape, leak_str,
    template::KeyTemplate,
};
use crate::{
    cursor::{KeyAttr, KeyType, KeyValue},
    number::DynamoNumber,
    pagination::{HARD_MAX_PAGE_SIZE, MAX_DEFAULT_PAGE_SIZE},
};

// ------------------------------------------------------------------------------- public API

/// One problem of a model file, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// What is wrong.
    pub message: String,
    /// How to fix it, if there is something to say.
    pub hint: Option<String>,
    /// The byte range in the file the problem points at.
    pub span: Range<usize>,
    /// The 1-based line of the span's start; 0 when the problem has no place in the file (it
    /// could not be read).
    pub line: usize,
    /// The 1-based column (in characters) of the span's start; 0 when `line` is.
    pub column: usize,
}

/// Everything wrong with a model file, rendered like a compiler's messages.
#[derive(Debug)]
pub struct ModelErrors {
    /// The rendered report: every problem with a snippet of the file, then a count.
    pub report: String,
    /// How many problems it lists.
    pub count: usize,
    /// The problems, in file order.
    pub diagnostics: Vec<Located>,
}

impl fmt::Display for ModelErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.report)
    }
}

impl std::error::Error for ModelErrors {}

/// Reads and checks the model file at `path`.
pub fn load(path: &Path) -> Result<Model, ModelErrors> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        let message = format!("cannot read the model file {}: {err}", path.display());
        ModelErrors {
            report: format!("error: {message}\n"),
            count: 1,
            diagnostics: vec![Located {
                message,
                hint: None,
                span: 0..0,
                line: 0,
                column: 0,
            }],
        }
    })?;
    let mut model = parse(&path.display().to_string(), &text)?;
    // A JWKS file is named relative to the model file.
    if let Some(super::AuthSpec {
        keys: super::KeysSpec::JwksFile(file),
        ..
    }) = &mut model.auth
        && let Some(dir) = path.parent()
    {
        *file = dir.join(&*file).display().to_string();
    }
    Ok(model)
}

/// Checks the model file `text`, naming it `name` in messages.
pub fn parse(name: &str, text: &str) -> Result<Model, ModelErrors> {
    let mut out = Problems::default();
    let model = check_text(text, &mut out);
    match model {
        Some(model) if out.0.is_empty() => Ok(model),
        _ => {
            if out.0.is_empty() {
                out.error(0..0, "the model file could not be checked");
            }
            Err(render(name, text, out.0))
        }
    }
}

/// The model file's JSON Schema, pretty-printed and ending with a newline.
pub fn json_schema() -> String {
    let mut text = serde_json::to_string_pretty(&schema_value()).unwrap_or_default();
    text.push('\n');
    text
}

fn schema_value() -> Json {
    serde_json::to_value(schemars::schema_for!(ModelFile)).unwrap_or(Json::Null)
}

// ------------------------------------------------------------------------------- problems

/// A problem found while checking, before rendering.
#[derive(Debug)]
struct Problem {
    message: String,
    span: Range<usize>,
    hint: Option<String>,
    /// Other places involved, with a label each.
    also: Vec<(Range<usize>, String)>,
}

impl Problem {
    fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }

    fn also(&mut self, span: Range<usize>, label: impl Into<String>) -> &mut Self {
        self.also.push((span, label.into()));
        self
    }
}

/// The problems found so far.
#[derive(Debug, Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn error(&mut self, span: Range<usize>, message: impl Into<String>) -> &mut Problem {
        self.0.push(Problem {
            message: message.into(),
            span,
            hint: None,
            also: Vec::new(),
        });
        let last = self.0.len() - 1;
        &mut self.0[last]
    }
}

fn render(name: &str, text: &str, mut problems: Vec<Problem>) -> ModelErrors {
    problems.sort_by_key(|p| p.span.start);
    let file = SimpleFile::new(name, text);
    let config = term::Config::default();
    let mut report = String::new();
    let mut diagnostics = Vec::new();
    for problem in problems {
        let span = clamp(text, &problem.span);
        let mut labels = vec![Label::primary((), span.clone())];
        for (other, label) in &problem.also {
            labels.push(Label::secondary((), clamp(text, other)).with_message(label));
        }
        let notes = problem.hint.iter().map(|h| format!("hint: {h}")).collect();
        let diagnostic = Diagnostic::error()
            .with_message(&problem.message)
            .with_labels(labels)
            .with_notes(notes);
        match term::emit_into_string(&config, &file, &diagnostic) {
            Ok(rendered) => report.push_str(&rendered),
            Err(_) => report.push_str(&format!("error: {}\n", problem.message)),
        }
        report.push('\n');
        let (line, column) = line_column(text, span.start);
        diagnostics.push(Located {
            message: problem.message,
            hint: problem.hint,
            span,
            line,
            column,
        });
    }
    let count = diagnostics.len();
    let plural = if count == 1 { "problem" } else { "problems" };
    report.push_str(&format!("{count} {plural} in {name}\n"));
    ModelErrors {
        report,
        count,
        diagnostics,
    }
}

/// `span` cut to `text` and moved to character boundaries.
fn clamp(text: &str, span: &Range<usize>) -> Range<usize> {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = span.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// The 1-based line and column (in characters) of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

// ------------------------------------------------------------------------------- reading

/// Parses the TOML, reports unknown keys and shape errors, then checks the model.
fn check_text(text: &str, out: &mut Problems) -> Option<Model> {
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(err) => {
            toml_error(&err, out);
            return None;
        }
    };
    unknown_keys(doc.get_ref(), out);
    let file: ModelFile = match toml::from_str(text) {
        Ok(file) => file,
        Err(err) => {
            toml_error(&err, out);
            return None;
        }
    };
    Some(check_model(&file, doc.get_ref(), out))
}

/// Reports a TOML syntax error or a value of the wrong type, at its place.
fn toml_error(err: &toml::de::Error, out: &mut Problems) {
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
    out.error(span, message);
}

/// Reports every key the model file format does not have, by walking the document along the
/// file's JSON Schema.
fn unknown_keys(doc: &DeTable<'_>, out: &mut Problems) {
    let schema = schema_value();
    walk_table(&schema, &schema, doc, "", out);
}

fn walk_value(root: &Json, schema: &Json, value: &DeValue<'_>, path: &str, out: &mut Problems) {
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

fn is_table_schema(schema: &Json) -> bool {
    schema.get("properties").is_some()
        || schema
            .get("additionalProperties")
            .is_some_and(Json::is_object)
}

/// Every table shape `schema` allows, through its references and alternatives.
fn table_schemas<'s>(root: &'s Json, schema: &'s Json, depth: usize, found: &mut Vec<&'s Json>) {
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
fn find_schema<'s>(
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

fn walk_table(root: &Json, schema: &Json, table: &DeTable<'_>, path: &str, out: &mut Problems) {
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

// ------------------------------------------------------------------------------- names

const BUILTIN_TYPES: [&str; 15] = [
    "Query",
    "Mutation",
    "Node",
    "PageInfo",
    "SortOrder",
    "String",
    "ID",
    "Int",
    "BigInt",
    "Float",
    "Decimal",
    "Boolean",
    "DateTime",
    "Bytes",
    "JSON",
];

const SCALAR_NAMES: [&str; 10] = [
    "String", "ID", "Int", "BigInt", "Float", "Decimal", "Boolean", "DateTime", "Bytes", "JSON",
];

/// Pagination arguments every connection has.
const RESERVED_ARGUMENTS: [&str; 5] = ["first", "after", "last", "before", "order"];

/// The names of the types generated for entity `name`.
fn generated_type_names(name: &str) -> [String; 8] {
    [
        format!("{name}Connection"),
        format!("{name}Edge"),
        format!("Create{name}Input"),
        format!("Create{name}Payload"),
        format!("Update{name}Input"),
        format!("Update{name}Payload"),
        format!("Delete{name}Input"),
        format!("Delete{name}Payload"),
    ]
}

/// Whether `s` matches `[_A-Za-z][_0-9A-Za-z]*`.
fn is_graphql_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Reports `name` unless it is a GraphQL name not starting with `__`; `what` says what it
/// names. Returns whether it is fine.
fn check_name(span: Range<usize>, name: &str, what: &str, out: &mut Problems) -> bool {
    if !is_graphql_name(name) {
        out.error(span, format!("{what} `{name}` is not a valid GraphQL name"))
            .hint("GraphQL names are letters, digits and `_`, and do not start with a digit");
        false
    } else if name.starts_with("__") {
        out.error(span, format!("{what} `{name}` starts with `__`"))
            .hint("names starting with `__` are reserved for GraphQL introspection");
        false
    } else {
        true
    }
}

/// Whether `s` is a valid DynamoDB table or index name.
fn is_dynamodb_name(s: &str) -> bool {
    (3..=255).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The edit distance between `a` and `b`, ignoring case.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The candidate closest to `word`, if one is close enough to be a likely typo.
fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let length = word.chars().count();
    let limit = if length < 3 { 0 } else { (length / 3).max(1) };
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// A hint for an unknown `word`: the close candidate if any, and the candidates (`what`).
fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    let list = if candidates.is_empty() {
        format!("there are no {what}")
    } else {
        let quoted: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
        format!("the {what} are {}", quoted.join(", "))
    };
    match did_you_mean(word, candidates) {
        Some(close) => format!("did you mean `{close}`? ({list})"),
        None => list,
    }
}

/// The entries of a map keyed by spanned names, in the order the file declares them.
fn in_file_order<V>(map: &BTreeMap<Spanned<String>, V>) -> Vec<(&Spanned<String>, &V)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// Reports names declared twice in `names` (name, span, what), at the later one.
fn check_unique(names: &[(String, Range<usize>, &str)], out: &mut Problems) {
    let mut seen: HashMap<&str, (&Range<usize>, &str)> = HashMap::new();
    let mut sorted: Vec<_> = names.iter().collect();
    sorted.sort_by_key(|(_, span, _)| span.start);
    for (name, span, what) in sorted {
        if let Some((first, first_what)) = seen.get(name.as_str()) {
            out.error(span.clone(), format!("`{name}` is declared twice"))
                .also(
                    (*first).clone(),
                    format!("also declared here, as a {first_what}"),
                )
                .hint(format!("rename this {what} or the other one"));
        } else {
            seen.insert(name, (span, what));
        }
    }
}

// ------------------------------------------------------------------------------- types

/// A field type as written: `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TypeRef<'a> {
    /// The named type.
    name: &'a str,
    /// Whether the value may be null.
    nullable: bool,
    /// For a list, whether its items may be null.
    list: Option<bool>,
}

/// Parses the field type grammar.
fn parse_type_ref(text: &str) -> Result<TypeRef<'_>, String> {
    let text = text.trim();
    let (inner, nullable) = match text.strip_suffix('!') {
        Some(rest) => (rest.trim_end(), false),
        None => (text, true),
    };
    let named = |name: &'_ str| {
        if name.starts_with('[') {
            Err("lists of lists are not supported".to_owned())
        } else if is_graphql_name(name) {
            Ok(())
        } else {
            Err(format!(
                "`{text}` is not a type: write `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`"
            ))
        }
    };
    match inner.strip_prefix('[') {
        Some(rest) => {
            let Some(item) = rest.strip_suffix(']') else {
                return Err(format!("`{text}` is not a type: a list type ends with `]`"));
            };
            let item = item.trim();
            let (name, item_nullable) = match item.strip_suffix('!') {
                Some(name) => (name.trim_end(), false),
                None => (item, true),
            };
            named(name)?;
            Ok(TypeRef {
                name,
                nullable,
                list: Some(item_nullable),
            })
        }
        None => {
            named(inner)?;
            Ok(TypeRef {
                name: inner,
                nullable,
                list: None,
            })
        }
    }
}

/// The built-in scalar named `name` (a `DateTime` as stored by default).
fn builtin_scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "String" => Scalar::String,
        "ID" => Scalar::Id,
        "Int" => Scalar::Int,
        "BigInt" => Scalar::BigInt,
        "Float" => Scalar::Float,
        "Decimal" => Scalar::Decimal,
        "Boolean" => Scalar::Boolean,
        "DateTime" => Scalar::DateTime(TimeFormat::EpochMillis),
        "Bytes" => Scalar::Bytes,
        "JSON" => Scalar::Json,
        _ => return None,
    })
}

fn key_type_name(ty: KeyType) -> &'static str {
    match ty {
        KeyType::S => "S (string)",
        KeyType::N => "N (number)",
        KeyType::B => "B (binary)",
    }
}

/// The field types that can hold a key attribute of type `ty`.
fn key_type_fits(ty: KeyType) -> &'static str {
    match ty {
        KeyType::S => "an S key takes String!, ID!, an enum, or a DateTime! stored as iso8601",
        KeyType::N => {
            "an N key takes Int!, BigInt!, Float!, Decimal!, or a DateTime! stored as \
             epoch_millis or epoch_seconds"
        }
        KeyType::B => "a B key takes Bytes!",
    }
}

fn key_type_of(file: KeyTypeFile) -> KeyType {
    match file {
        KeyTypeFile::S => KeyType::S,
        KeyTypeFile::N => KeyType::N,
        KeyTypeFile::B => KeyType::B,
    }
}

fn is_number(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::Int | Scalar::BigInt | Scalar::Float | Scalar::Decimal
    )
}

fn is_text(s: Scalar) -> bool {
    matches!(s, Scalar::String | Scalar::Id)
}

// ------------------------------------------------------------------------------- the model

/// A table as checked, with what later passes need to stay quiet about its problems.
#[derive(Debug)]
struct TableInfo {
    table: Table,
    /// Its key attributes all have declared types.
    sound: bool,
    /// Indexes that could not be built (their problems are reported).
    broken_indexes: HashSet<String>,
}

/// An entity during checking.
#[derive(Debug)]
struct EntityDraft<'f> {
    name: &'f Spanned<String>,
    file: &'f EntityFile,
    /// Its table, if it exists.
    table: Option<TableId>,
    entity: Entity,
    /// Where each field's name and type are written.
    field_spans: Vec<(Range<usize>, Range<usize>)>,
    /// Fields that could not be built, by name and by attribute.
    broken: HashSet<String>,
    broken_attributes: HashSet<String>,
}

/// What the passes share: the document for looking up places, and what earlier passes built.
struct Ctx<'f, 'i> {
    doc: &'f DeTable<'i>,
    tables: Vec<TableInfo>,
    table_ids: HashMap<&'f str, TableId>,
    enums: Vec<EnumType>,
    enum_ids: HashMap<&'f str, usize>,
    entities: Vec<EntityDraft<'f>>,
    entity_ids: HashMap<&'f str, EntityId>,
}

fn check_model(file: &ModelFile, doc: &DeTable<'_>, out: &mut Problems) -> Model {
    check_version(file, out);
    let mut ctx = Ctx {
        doc,
        tables: Vec::new(),
        table_ids: HashMap::new(),
        enums: Vec::new(),
        enum_ids: HashMap::new(),
        entities: Vec::new(),
        entity_ids: HashMap::new(),
    };
    let mut leaked = HashMap::new();
    for (name, table) in in_file_order(&file.tables) {
        let info = check_table(name, table, &mut leaked, out);
        ctx.table_ids.insert(name.get_ref(), ctx.tables.len());
        ctx.tables.push(info);
    }
    for (name, values) in in_file_order(&file.enums) {
        let checked = ctx.enum_type(name, values, out);
        ctx.enum_ids.insert(name.get_ref(), ctx.enums.len());
        ctx.enums.push(checked);
    }
    check_type_names(file, out);
    for (id, (name, _)) in in_file_order(&file.entities).into_iter().enumerate() {
        ctx.entity_ids.insert(name.get_ref(), id);
    }
    for (name, entity) in in_file_order(&file.entities) {
        let draft = ctx.entity(name, entity, out);
        ctx.entities.push(draft);
    }
    ctx.check_id_tags(out);
    ctx.check_shared_tables(out);

    let relations: Vec<Vec<Relation>> = (0..ctx.entities.len())
        .map(|e| ctx.relations(e, out))
        .collect();
    let connections: Vec<Vec<(&str, Option<Connection>)>> = (0..ctx.entities.len())
        .map(|e| ctx.entity_connections(e, out))
        .collect();
    let mutations: Vec<Mutations> = (0..ctx.entities.len())
        .map(|e| ctx.mutations(e, &connections, out))
        .collect();
    let lookups = ctx.lookups(file, out);
    let root_connections = ctx.root_connections(file, out);
    check_root_names(file, out);

    let Ctx {
        tables,
        enums,
        entities,
        ..
    } = ctx;
    let entities = entities
        .into_iter()
        .zip(relations)
        .zip(connections)
        .zip(mutations)
        .map(|(((draft, relations), connections), mutations)| Entity {
            relations,
            connections: connections.into_iter().filter_map(|(_, c)| c).collect(),
            mutations,
            ..draft.entity
        })
        .collect();
    let mut model = Model {
        tables: tables.into_iter().map(|info| info.table).collect(),
        enums,
        entities,
        lookups,
        connections: root_connections,
        auth: None,
        introspection: Access::default(),
    };
    access::check(file, doc, &mut model, out);
    model
}

fn check_version(file: &ModelFile, out: &mut Problems) {
    if let Some(version) = &file.version
        && *version.get_ref() != 1
    {
        out.error(
            version.span(),
            format!("model format version {} does not exist", version.get_ref()),
        )
        .hint("write `version = 1`, or leave it out");
    }
}

// ------------------------------------------------------------------------------- tables

/// A key attribute of a table, looked up in its `attributes`.
fn key_attr(
    attributes: &HashMap<&str, KeyType>,
    leaked: &mut HashMap<String, &'static str>,
    table: &str,
    attr: &Spanned<String>,
    used: &mut HashSet<String>,
    out: &mut Problems,
) -> Option<KeyAttr> {
    let name = attr.get_ref();
    used.insert(name.clone());
    let Some(ty) = attributes.get(name.as_str()) else {
        let declared: Vec<&str> = attributes.keys().copied().collect();
        out.error(
            attr.span(),
            format!("key attribute `{name}` of table `{table}` is not declared in `attributes`"),
        )
        .hint(match did_you_mean(name, &declared) {
            Some(close) => format!("did you mean `{close}`?"),
            None => format!("add `{name} = \"S\"` (or \"N\", \"B\") to the table's `attributes`"),
        });
        return None;
    };
    let name = *leaked.entry(name.clone()).or_insert_with(|| leak_str(name));
    Some(KeyAttr { name, ty: *ty })
}

fn check_table(
    name: &Spanned<String>,
    file: &TableFile,
    leaked: &mut HashMap<String, &'static str>,
    out: &mut Problems,
) -> TableInfo {
    let table_name = name.get_ref();
    if !is_dynamodb_name(table_name) {
        out.error(
            name.span(),
            format!("`{table_name}` is not a valid DynamoDB table name"),
        )
        .hint("table names are 3 to 255 letters, digits, `_`, `-` and `.`");
    }
    let attributes: HashMap<&str, KeyType> = file
        .attributes
        .iter()
        .map(|(k, v)| (k.get_ref().as_str(), key_type_of(*v.get_ref())))
        .collect();
    let mut used = HashSet::new();
    let partition = key_attr(
        &attributes,
        leaked,
        table_name,
        &file.partition_key,
        &mut used,
        out,
    );
    let sort = file
        .sort_key
        .as_ref()
        .map(|s| key_attr(&attributes, leaked, table_name, s, &mut used, out));
    let sound = partition.is_some() && !matches!(sort, Some(None));
    let key: Vec<KeyAttr> = partition.into_iter().chain(sort.flatten()).collect();
    let mut indexes = Vec::new();
    let mut broken_indexes = HashSet::new();
    for (index_name, index) in in_file_order(&file.indexes) {
        let parts = IndexParts {
            table: table_name,
            table_key: &key,
            table_sound: sound,
            attributes: &attributes,
        };
        match parts.check(index_name, index, leaked, &mut used, out) {
            Some(index) => indexes.push(index),
            None => {
                broken_indexes.insert(index_name.get_ref().clone());
            }
        }
    }
    for (attr, _) in in_file_order(&file.attributes) {
        if !used.contains(attr.get_ref()) {
            out.error(
                attr.span(),
                format!(
                    "attribute `{}` is no key of table `{table_name}` or of its indexes",
                    attr.get_ref()
                ),
            )
            .hint(
                "DynamoDB accepts only key attributes in a table's attribute definitions; \
                 other attributes need no declaration",
            );
        }
    }
    let mut all: Vec<KeyAttr> = key.clone();
    for index in &indexes {
        for attr in index.key {
            if !all.iter().any(|a| a.name == attr.name) {
                all.push(*attr);
            }
        }
    }
    let type_attribute = file.type_attribute.as_ref().and_then(|t| {
        if t.get_ref().is_empty() {
            out.error(t.span(), "an attribute name cannot be empty");
            return None;
        }
        if all.iter().any(|a| a.name == t.get_ref()) {
            out.error(
                t.span(),
                format!(
                    "type attribute `{}` is a key attribute of table `{table_name}`",
                    t.get_ref()
                ),
            )
            .hint("the type attribute holds each item's entity name; choose an attribute that is no key");
            return None;
        }
        Some(t.get_ref().clone())
    });
    TableInfo {
        table: Table {
            name: table_name.clone(),
            key: leak_shape(key),
            attributes: all,
            indexes,
            type_attribute,
            span: name.span(),
        },
        sound,
        broken_indexes,
    }
}

/// What checking an index needs from its table.
struct IndexParts<'a> {
    table: &'a str,
    table_key: &'a [KeyAttr],
    table_sound: bool,
    attributes: &'a HashMap<&'a str, KeyType>,
}

impl IndexParts<'_> {
    fn check(
        &self,
        name: &Spanned<String>,
        file: &IndexFile,
        leaked: &mut HashMap<String, &'static str>,
        used: &mut HashSet<String>,
        out: &mut Problems,
    ) -> Option<Index> {
        let index_name = name.get_ref();
        if !is_dynamodb_name(index_name) {
            out.error(
                name.span(),
                format!("`{index_name}` is not a valid DynamoDB index name"),
            )
            .hint("index names are 3 to 255 letters, digits, `_`, `-` and `.`");
        }
        let local = file
            .kind
            .as_ref()
            .is_some_and(|k| *k.get_ref() == IndexKindFile::Local);
        let mut attr = |a: &Spanned<String>, out: &mut Problems| {
            key_attr(self.attributes, leaked, self.table, a, used, out)
        };
        let partition = if local {
            self.local_partition(name, file, out)
        } else {
            match &file.partition_key {
                Some(p) => attr(p, out),
                None => {
                    out.error(
                        name.span(),
                        format!("global index `{index_name}` has no `partition_key`"),
                    )
                    .hint("add `partition_key`, or `kind = \"local\"` for a local index");
                    None
                }
            }
        };
        let sort = match &file.sort_key {
            Some(s) => Some(attr(s, out)?),
            None if local => {
                out.error(
                    name.span(),
                    format!("local index `{index_name}` has no `sort_key`"),
                )
                .hint("a local index differs from its table only by its sort key");
                return None;
            }
            None => None,
        };
        let key: Vec<KeyAttr> = vec![partition?].into_iter().chain(sort).collect();
        let mut start_key = key.clone();
        for attr in self.table_key {
            if !start_key.iter().any(|a| a.name == attr.name) {
                start_key.push(*attr);
            }
        }
        let projection = match file.projection.as_ref().map(Spanned::get_ref) {
            None | Some(ProjectionFile::Kind(ProjectionKindFile::All)) => Projection::All,
            Some(ProjectionFile::Kind(ProjectionKindFile::KeysOnly)) => Projection::KeysOnly,
            Some(ProjectionFile::Include(list)) => Projection::Include(list.clone()),
        };
        Some(Index {
            name: index_name.clone(),
            local,
            key: leak_shape(key),
            start_key: leak_shape(start_key),
            projection,
            span: name.span(),
        })
    }

    /// The partition key of a local index: the table's.
    fn local_partition(
        &self,
        name: &Spanned<String>,
        file: &IndexFile,
        out: &mut Problems,
    ) -> Option<KeyAttr> {
        let kind_span = file.kind.as_ref().map_or(name.span(), Spanned::span);
        if self.table_key.len() < 2 && self.table_sound {
            out.error(
                kind_span,
                format!(
                    "local index `{}` on table `{}`, which has no sort key",
                    name.get_ref(),
                    self.table
                ),
            )
            .hint("DynamoDB allows local indexes only on tables with a sort key; use a global one");
            return None;
        }
        let partition = self.table_key.first().copied();
        if let (Some(given), Some(table)) = (&file.partition_key, partition)
            && given.get_ref() != table.name
        {
            out.error(
                given.span(),
                format!(
                    "local index `{}` has partition key `{}`, not its table's `{}`",
                    name.get_ref(),
                    given.get_ref(),
                    table.name
                ),
            )
            .hint("a local index shares its table's partition key: leave `partition_key` out");
            return None;
        }
        partition
    }
}

// ------------------------------------------------------------------------------- enums and type names

impl<'f> Ctx<'f, '_> {
    /// The place of the key at `path` in the document.
    fn key_span(&self, path: &[&str]) -> Option<Range<usize>> {
        self.entry_span(path).map(|(key, _)| key)
    }

    /// The place of the value at `path` in the document.
    fn value_span(&self, path: &[&str]) -> Option<Range<usize>> {
        self.entry_span(path).map(|(_, value)| value)
    }

    /// The places of the key and the value at `path` in the document.
    fn entry_span(&self, path: &[&str]) -> Option<(Range<usize>, Range<usize>)> {
        let (last, parents) = path.split_last()?;
        let mut table = self.doc;
        for key in parents {
            match table.get(*key)?.get_ref() {
                DeValue::Table(inner) => table = inner,
                _ => return None,
            }
        }
        table
            .get_key_value(*last)
            .map(|(k, v)| (k.span(), v.span()))
    }

    fn enum_type(
        &self,
        name: &Spanned<String>,
        file: &crate::model::file::EnumFile,
        out: &mut Problems,
    ) -> EnumType {
        check_name(name.span(), name.get_ref(), "enum", out);
        let mut values: Vec<(String, Option<String>, Range<usize>)> = match file.values.get_ref() {
            EnumValuesFile::Names(names) => {
                let spans = self.enum_value_spans(name.get_ref());
                names
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let span = spans.get(i).cloned().unwrap_or(file.values.span());
                        (v.clone(), None, span)
                    })
                    .collect()
            }
            EnumValuesFile::Described(map) => map
                .iter()
                .map(|(v, d)| {
                    let span = self
                        .key_span(&["enums", name.get_ref(), "values", v])
                        .unwrap_or(file.values.span());
                    (v.clone(), Some(d.clone()), span)
                })
                .collect(),
        };
        values.sort_by_key(|(_, _, span)| span.start);
        if values.is_empty() {
            out.error(
                file.values.span(),
                format!("enum `{}` has no values", name.get_ref()),
            )
            .hint("an enum needs at least one value");
        }
        let mut seen = HashSet::new();
        for (value, _, span) in &values {
            if !check_name(span.clone(), value, "enum value", out) {
                continue;
            }
            if matches!(value.as_str(), "true" | "false" | "null") {
                out.error(span.clone(), format!("`{value}` cannot be an enum value"))
                    .hint("GraphQL reserves `true`, `false` and `null`");
            } else if !seen.insert(value.as_str()) {
                out.error(
                    span.clone(),
                    format!("enum value `{value}` is listed twice"),
                );
            }
        }
        EnumType {
            name: name.get_ref().clone(),
            description: file.description.clone(),
            values: values.into_iter().map(|(v, d, _)| (v, d)).collect(),
        }
    }

    /// The places of the items of an enum's `values` list.
    fn enum_value_spans(&self, name: &str) -> Vec<Range<usize>> {
        let values = self
            .doc
            .get("enums")
            .and_then(|e| match e.get_ref() {
                DeValue::Table(t) => t.get(name),
                _ => None,
            })
            .and_then(|e| match e.get_ref() {
                DeValue::Table(t) => t.get("values"),
                _ => None,
            });
        match values.map(Spanned::get_ref) {
            Some(DeValue::Array(items)) => items.iter().map(Spanned::span).collect(),
            _ => Vec::new(),
        }
    }
}

/// Type names: valid, unique across entities and enums, and none a built-in or generated one.
fn check_type_names(file: &ModelFile, out: &mut Problems) {
    let mut generated: HashMap<String, &str> = HashMap::new();
    for name in file.entities.keys() {
        for g in generated_type_names(name.get_ref()) {
            generated.insert(g, name.get_ref());
        }
    }
    let mut names: Vec<(String, Range<usize>, &str)> = Vec::new();
    for name in file.entities.keys() {
        names.push((name.get_ref().clone(), name.span(), "entity"));
        check_name(name.span(), name.get_ref(), "entity", out);
    }
    for name in file.enums.keys() {
        names.push((name.get_ref().clone(), name.span(), "enum"));
    }
    let connections = file
        .entities
        .values()
        .flat_map(|e| e.connections.values())
        .chain(file.connections.values());
    let mut unions: HashMap<String, (Vec<String>, Range<usize>)> = HashMap::new();
    for connection in connections {
        if let Some(union) = &connection.union {
            if !check_name(union.span(), union.get_ref(), "union", out) {
                continue;
            }
            let mut members: Vec<String> = connection
                .members
                .as_ref()
                .map(|m| m.get_ref().iter().map(|n| n.get_ref().clone()).collect())
                .unwrap_or_default();
            members.sort();
            // Two collections may share a union when their members are the same.
            if let Some((earlier, span)) = unions.get(union.get_ref()) {
                if *earlier != members {
                    out.error(
                        union.span(),
                        format!(
                            "union `{}` is declared again with other members",
                            union.get_ref()
                        ),
                    )
                    .also(span.clone(), "first declared here")
                    .hint("collections may share a union only with the same members; name this one differently");
                }
            } else {
                unions.insert(union.get_ref().clone(), (members, union.span()));
                names.push((union.get_ref().clone(), union.span(), "union"));
                for g in [
                    format!("{}Connection", union.get_ref()),
                    format!("{}Edge", union.get_ref()),
                ] {
                    names.push((g, union.span(), "union's generated type"));
                }
            }
        }
    }
    for (name, span, what) in &names {
        if BUILTIN_TYPES.contains(&name.as_str()) {
            out.error(
                span.clone(),
                format!("{what} `{name}` has the name of a built-in type"),
            )
            .hint(format!(
                "the built-in types are {}",
                BUILTIN_TYPES.join(", ")
            ));
        } else if let Some(entity) = generated.get(name) {
            out.error(
                span.clone(),
                format!("{what} `{name}` has the name of a type generated for entity `{entity}`"),
            )
            .hint("choose another name");
        }
    }
    check_unique(&names, out);
}

/// Root field names: unique among lookups and connections, and not `node` or `nodes`.
fn check_root_names(file: &ModelFile, out: &mut Problems) {
    let mut names = Vec::new();
    for name in file.lookups.keys() {
        names.push((name.get_ref().clone(), name.span(), "lookup"));
    }
    for name in file.connections.keys() {
        names.push((name.get_ref().clone(), name.span(), "connection"));
    }
    for (name, span, what) in &names {
        if check_name(span.clone(), name, what, out) && matches!(name.as_str(), "node" | "nodes") {
            out.error(span.clone(), format!("root field `{name}` is built in"))
                .hint("`node` and `nodes` fetch any entity by global id; choose another name");
        }
    }
    check_unique(&names, out);
}

// ------------------------------------------------------------------------------- entities

impl<'f> Ctx<'f, '_> {
    fn entity(
        &self,
        name: &'f Spanned<String>,
        file: &'f EntityFile,
        out: &mut Problems,
    ) -> EntityDraft<'f> {
        let table = self.table_named(&file.table, out);
        let mut draft = EntityDraft {
            name,
            file,
            table,
            entity: Entity {
                name: name.get_ref().clone(),
                description: file.description.clone(),
                table: table.unwrap_or(0),
                id_tag: String::new(),
                fields: Vec::new(),
                key_fields: Vec::new(),
                relations: Vec::new(),
                connections: Vec::new(),
                mutations: Mutations::default(),
                version_field: None,
                templates: Vec::new(),
                type_value: None,
                read: Access::default(),
            },
            field_spans: Vec::new(),
            broken: HashSet::new(),
            broken_attributes: HashSet::new(),
        };
        for (field_name, field) in in_file_order(&file.fields) {
            let attribute = field.attribute.as_ref().unwrap_or(field_name).get_ref();
            match self.field(field_name, field, out) {
                Some(checked) => {
                    draft.entity.fields.push(checked);
                    draft.field_spans.push((field_name.span(), field.ty.span()));
                }
                None => {
                    draft.broken.insert(field_name.get_ref().clone());
                    draft.broken_attributes.insert(attribute.clone());
                }
            }
        }
        check_member_names(name.get_ref(), file, out);
        check_shared_attributes(file, out);
        if let Some(t) = table
            && self.tables[t].sound
        {
            draft.entity.templates = self.templates(&draft, out);
            draft.entity.key_fields = self.key_fields(&draft, out);
            self.index_key_fields(&draft, out);
            draft.entity.type_value = self.type_value(&draft, out);
        }
        draft.entity.version_field = self.version_field(&draft, out);
        draft.entity.id_tag = check_id_tag(name, file, out);
        draft
    }

    fn table_named(&self, name: &Spanned<String>, out: &mut Problems) -> Option<TableId> {
        let found = self.table_ids.get(name.get_ref().as_str()).copied();
        if found.is_none() {
            let tables: Vec<&str> = self.table_ids.keys().copied().collect();
            out.error(name.span(), format!("unknown table `{}`", name.get_ref()))
                .hint(suggest(name.get_ref(), &tables, "tables declared"));
        }
        found
    }

    fn entity_named(&self, name: &str, span: Range<usize>, out: &mut Problems) -> Option<EntityId> {
        let found = self.entity_ids.get(name).copied();
        if found.is_none() {
            let entities: Vec<&str> = self.entity_ids.keys().copied().collect();
            out.error(span, format!("unknown entity `{name}`"))
                .hint(suggest(name, &entities, "entities declared"));
        }
        found
    }

    /// The field of entity `e` named `name`; reported unless it is missing because of a problem
    /// already reported.
    fn field_named(
        &self,
        e: EntityId,
        name: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<FieldId> {
        let draft = &self.entities[e];
        let found = draft
            .entity
            .fields
            .iter()
            .position(|f| &f.name == name.get_ref());
        if found.is_none() && !draft.broken.contains(name.get_ref()) {
            let fields: Vec<&str> = draft
                .entity
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            out.error(
                name.span(),
                format!(
                    "entity `{}` has no field `{}`",
                    draft.entity.name,
                    name.get_ref()
                ),
            )
            .hint(suggest(name.get_ref(), &fields, "fields of the entity"));
        }
        found
    }

    /// Whether entity `e` has a field on `attribute`, or had one that could not be built.
    fn field_on(&self, e: EntityId, attribute: &str) -> Result<FieldId, bool> {
        let draft = &self.entities[e];
        draft
            .entity
            .field_on(attribute)
            .ok_or_else(|| draft.broken_attributes.contains(attribute))
    }

    fn type_text(&self, ty: &FieldType, nullable: bool) -> String {
        let bang = if nullable { "" } else { "!" };
        match ty {
            FieldType::Scalar(s) => format!("{}{bang}", self.scalar_name(*s)),
            FieldType::List {
                item,
                item_nullable,
                ..
            } => {
                let item_bang = if *item_nullable { "" } else { "!" };
                format!("[{}{item_bang}]{bang}", self.scalar_name(*item))
            }
        }
    }

    fn scalar_name(&self, s: Scalar) -> &str {
        match s {
            Scalar::String => "String",
            Scalar::Id => "ID",
            Scalar::Int => "Int",
            Scalar::BigInt => "BigInt",
            Scalar::Float => "Float",
            Scalar::Decimal => "Decimal",
            Scalar::Boolean => "Boolean",
            Scalar::DateTime(_) => "DateTime",
            Scalar::Bytes => "Bytes",
            Scalar::Json => "JSON",
            Scalar::Enum(i) => self.enums.get(i).map_or("enum", |e| e.name.as_str()),
        }
    }

    /// Checks that field `field` of entity `e` can hold key attribute `attr`; `key` says whether
    /// it must be non-null (a table key) or may be absent (an index key).
    fn check_key_field(
        &self,
        draft: &EntityDraft<'_>,
        field: FieldId,
        attr: &KeyAttr,
        table_key: bool,
        out: &mut Problems,
    ) -> bool {
        let f = &draft.entity.fields[field];
        let span = draft.field_spans[field].1.clone();
        let ty = self.type_text(&f.ty, f.nullable);
        let fits = match f.ty {
            FieldType::Scalar(s) => s.key_type() == Some(attr.ty),
            FieldType::List { .. } => false,
        };
        if !fits {
            out.error(
                span,
                format!(
                    "field `{}` of type `{ty}` cannot hold key attribute `{}`, of type {}",
                    f.name,
                    attr.name,
                    key_type_name(attr.ty)
                ),
            )
            .hint(key_type_fits(attr.ty));
            return false;
        }
        if table_key && f.nullable {
            out.error(
                span,
                format!("key field `{}` is nullable: write `{ty}!`", f.name),
            )
            .hint("every item has its key attributes, so their fields are non-null");
            return false;
        }
        true
    }

    fn key_fields(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Vec<FieldId> {
        let Some(t) = draft.table else {
            return Vec::new();
        };
        let table = &self.tables[t].table;
        let mut key_fields = Vec::new();
        for attr in table.key {
            if let Some(template) = draft.entity.template_on(attr.name) {
                for &facet in &template.facets {
                    if !key_fields.contains(&facet) {
                        key_fields.push(facet);
                    }
                }
                continue;
            }
            if draft.file.keys.keys().any(|k| k.get_ref() == attr.name) {
                // Its template has a problem, already reported.
                continue;
            }
            match draft.entity.field_on(attr.name) {
                Some(field) => {
                    self.check_key_field(draft, field, attr, true, out);
                    key_fields.push(field);
                }
                None if draft.broken_attributes.contains(attr.name) => {}
                None => {
                    let example = match attr.ty {
                        KeyType::S => "String!",
                        KeyType::N => "Int!",
                        KeyType::B => "Bytes!",
                    };
                    out.error(
                        draft.name.span(),
                        format!(
                            "entity `{}` has no field on key attribute `{}` of table `{}`",
                            draft.entity.name, attr.name, table.name
                        ),
                    )
                    .hint(format!(
                        "add a field such as `{} = {{ type = \"{example}\" }}` to \
                         `[entities.{}.fields]`",
                        attr.name, draft.entity.name
                    ));
                }
            }
        }
        key_fields
    }

    /// Fields on index key attributes must be able to hold them.
    fn index_key_fields(&self, draft: &EntityDraft<'_>, out: &mut Problems) {
        let Some(t) = draft.table else {
            return;
        };
        let table = &self.tables[t].table;
        for attr in table.attributes.iter().skip(table.key.len()) {
            if draft.entity.template_on(attr.name).is_some() {
                continue;
            }
            if let Some(field) = draft.entity.field_on(attr.name) {
                self.check_key_field(draft, field, attr, false, out);
            }
        }
    }

    /// The entity's key templates (`keys = { ... }`), the table's keys first.
    fn templates(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Vec<TemplateKey> {
        let Some(t) = draft.table else {
            return Vec::new();
        };
        let table = &self.tables[t].table;
        let entity = &draft.entity.name;
        let mut templates = Vec::new();
        for (attr, text) in in_file_order(&draft.file.keys) {
            let Some(key_attr) = table.attributes.iter().find(|a| a.name == attr.get_ref()) else {
                let names: Vec<&str> = table.attributes.iter().map(|a| a.name).collect();
                out.error(
                    attr.span(),
                    format!(
                        "`{}` is no key attribute of table `{}` or of its indexes",
                        attr.get_ref(),
                        table.name
                    ),
                )
                .hint(suggest(attr.get_ref(), &names, "key attributes"));
                continue;
            };
            if key_attr.ty != KeyType::S {
                out.error(
                    text.span(),
                    format!(
                        "key attribute `{}` has type {}, but a template writes a string",
                        key_attr.name,
                        key_type_name(key_attr.ty)
                    ),
                )
                .hint("declare the attribute as \"S\", or give it a field instead of a template");
                continue;
            }
            if let Some(field) = draft.entity.field_on(key_attr.name) {
                out.error(
                    draft.field_spans[field].0.clone(),
                    format!(
                        "field `{}` reads attribute `{}`, which `keys` builds from a template",
                        draft.entity.fields[field].name, key_attr.name
                    ),
                )
                .also(text.span(), "the template")
                .hint("the template's facets are the fields: remove this field, or the template");
                continue;
            }
            let template = match KeyTemplate::parse(text.get_ref()) {
                Ok(template) => template,
                Err(err) => {
                    // The span of the string's value starts at its opening quote.
                    let span = text.span();
                    let span = match err.at() {
                        Some(at) if span.len() > at + 1 => span.start + 1 + at..span.start + 2 + at,
                        _ => span,
                    };
                    out.error(
                        span,
                        format!("key template `{}`: {err}", text.get_ref()),
                    )
                    .hint("a template is literal text and `{facet}`s, such as \"ORDER#{placedAt}#{orderId}\"");
                    continue;
                }
            };
            let mut facets = Vec::new();
            let mut ok = true;
            for facet in template.facets() {
                let found = draft.entity.fields.iter().position(|f| f.name == facet);
                let Some(field) = found else {
                    ok = false;
                    if !draft.broken.contains(facet) {
                        let names: Vec<&str> = draft
                            .entity
                            .fields
                            .iter()
                            .map(|f| f.name.as_str())
                            .collect();
                        out.error(
                            text.span(),
                            format!(
                                "facet `{facet}` of key template `{}` is no field of entity `{entity}`",
                                text.get_ref()
                            ),
                        )
                        .hint(suggest(facet, &names, "fields of the entity"));
                    }
                    continue;
                };
                let f = &draft.entity.fields[field];
                let facet_type = matches!(
                    f.ty,
                    FieldType::Scalar(
                        Scalar::String
                            | Scalar::Id
                            | Scalar::Enum(_)
                            | Scalar::Int
                            | Scalar::BigInt
                            | Scalar::DateTime(TimeFormat::Iso8601)
                    )
                );
                if !facet_type || f.nullable {
                    ok = false;
                    out.error(
                        draft.field_spans[field].1.clone(),
                        format!(
                            "field `{}` of type `{}` cannot be a facet of key `{}`",
                            f.name,
                            self.type_text(&f.ty, f.nullable),
                            key_attr.name
                        ),
                    )
                    .also(text.span(), "the template")
                    .hint(
                        "facets are non-null String, ID, enum, Int, BigInt, or DateTime stored as \
                         iso8601",
                    );
                    continue;
                }
                facets.push(field);
            }
            if ok {
                templates.push(TemplateKey {
                    attribute: key_attr.name,
                    template,
                    facets,
                    primary: table.key.iter().any(|a| a.name == key_attr.name),
                });
            }
        }
        templates.sort_by_key(|t| !t.primary);
        templates
    }

    /// The entity's value of its table's type attribute.
    fn type_value(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Option<String> {
        let table = &self.tables[draft.table?].table;
        match (&table.type_attribute, &draft.file.type_value) {
            (Some(_), None) => Some(draft.entity.name.clone()),
            (Some(_), Some(value)) if value.get_ref().is_empty() => {
                out.error(value.span(), "a type value cannot be empty");
                None
            }
            (Some(_), Some(value)) => Some(value.get_ref().clone()),
            (None, Some(value)) => {
                out.error(
                    value.span(),
                    format!(
                        "table `{}` has no `type_attribute` to hold `type_value`",
                        table.name
                    ),
                )
                .hint(format!(
                    "add `type_attribute = \"_type\"` (or another name) to `[tables.{}]`",
                    table.name
                ));
                None
            }
            (None, None) => None,
        }
    }

    fn version_field(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Option<FieldId> {
        let name = draft.file.version_field.as_ref()?;
        let fields = &draft.entity.fields;
        let Some(id) = fields.iter().position(|f| &f.name == name.get_ref()) else {
            if !draft.broken.contains(name.get_ref()) {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                out.error(
                    name.span(),
                    format!(
                        "entity `{}` has no field `{}`",
                        draft.entity.name,
                        name.get_ref()
                    ),
                )
                .hint(suggest(name.get_ref(), &names, "fields of the entity"));
            }
            return None;
        };
        let field = &fields[id];
        let ok =
            matches!(field.ty, FieldType::Scalar(Scalar::Int | Scalar::BigInt)) && !field.nullable;
        if !ok {
            out.error(
                name.span(),
                format!(
                    "version field `{}` has type `{}`, not `Int!` or `BigInt!`",
                    field.name,
                    self.type_text(&field.ty, field.nullable)
                ),
            );
            return None;
        }
        if draft.entity.key_fields.contains(&id) {
            out.error(
                name.span(),
                format!("version field `{}` is a key field", field.name),
            )
            .hint("a version changes on every update, and a key never does");
            return None;
        }
        Some(id)
    }

    /// The entities of a table without a type attribute must be told apart by their keys, in
    /// the table and in each index: no two may have key templates that start alike, or a page
    /// of one would read the other's items.
    fn check_shared_tables(&self, out: &mut Problems) {
        for (t, info) in self.tables.iter().enumerate() {
            let ids: Vec<EntityId> = (0..self.entities.len())
                .filter(|&e| self.entities[e].table == Some(t))
                .collect();
            if ids.len() < 2 || !info.sound {
                continue;
            }
            if info.table.type_attribute.is_some() {
                for (i, &a) in ids.iter().enumerate() {
                    for &b in &ids[i + 1..] {
                        let (da, db) = (&self.entities[a], &self.entities[b]);
                        if da.entity.type_value.is_some()
                            && da.entity.type_value == db.entity.type_value
                        {
                            let span = |d: &EntityDraft<'_>| {
                                d.file
                                    .type_value
                                    .as_ref()
                                    .map_or(d.name.span(), Spanned::span)
                            };
                            out.error(
                                span(db),
                                format!(
                                    "entities `{}` and `{}` have the same type value `{}`",
                                    da.entity.name,
                                    db.entity.name,
                                    db.entity.type_value.as_deref().unwrap_or_default()
                                ),
                            )
                            .also(span(da), format!("`{}`'s type value", da.entity.name))
                            .hint("the type attribute tells the entities of a table apart: give each its own value");
                        }
                    }
                }
                continue;
            }
            let mut spaces: Vec<(&[KeyAttr], String)> =
                vec![(info.table.key, format!("table `{}`", info.table.name))];
            for index in &info.table.indexes {
                spaces.push((index.key, format!("index `{}`", index.name)));
            }
            for (i, &a) in ids.iter().enumerate() {
                for &b in &ids[i + 1..] {
                    let Some((key, what)) = spaces.iter().find(|(key, _)| self.overlap(a, b, key))
                    else {
                        continue;
                    };
                    self.report_overlap(a, b, key, what, out);
                }
            }
        }
    }

    fn report_overlap(
        &self,
        a: EntityId,
        b: EntityId,
        key: &[KeyAttr],
        what: &str,
        out: &mut Problems,
    ) {
        let (da, db) = (&self.entities[a], &self.entities[b]);
        let (na, nb) = (&da.entity.name, &db.entity.name);
        let span_of = |d: &EntityDraft<'_>| {
            key.iter()
                .rev()
                .find_map(|attr| {
                    self.value_span(&["entities", d.name.get_ref(), "keys", attr.name])
                })
                .unwrap_or(d.name.span())
        };
        let table = self.tables[da.table.unwrap_or(0)].table.name.as_str();
        let hint = format!(
            "give one of them key templates with a distinct literal start, or add \
             `type_attribute = \"_type\"` to `[tables.{table}]`"
        );
        let templates = |d: &EntityDraft<'_>| {
            key.iter()
                .filter_map(|attr| d.entity.template_on(attr.name))
                .map(|t| format!("`{}`", t.template))
                .collect::<Vec<_>>()
        };
        let (ta, tb) = (templates(da), templates(db));
        if ta.len() < key.len() && tb.len() < key.len() {
            out.error(
                span_of(db),
                format!(
                    "entities `{na}` and `{nb}` share {what}, and nothing tells their items apart"
                ),
            )
            .also(span_of(da), format!("`{na}` is declared here"))
            .hint(hint);
            return;
        }
        let starts = |e: EntityId| {
            key.iter()
                .map(|attr| self.key_start(e, attr.name).unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let (sa, sb) = (starts(a), starts(b));
        if sa == sb {
            out.error(
                span_of(db),
                format!(
                    "entities `{na}` and `{nb}` could both match the same keys of {what}: their \
                     templates ({} and {}) start alike",
                    ta.join(", "),
                    tb.join(", ")
                ),
            )
            .also(span_of(da), format!("`{na}`'s template"))
            .hint(hint);
        } else {
            let (short, long, ns, nl) = if sa.iter().zip(&sb).all(|(x, y)| y.starts_with(*x)) {
                (&sa, &sb, na, nb)
            } else {
                (&sb, &sa, nb, na)
            };
            // The attribute whose starts differ (the others start alike).
            let at = (0..key.len())
                .find(|&i| short[i] != long[i])
                .unwrap_or(key.len() - 1);
            out.error(
                span_of(db),
                format!(
                    "the key prefix `{}` of `{ns}` shadows `{}` of `{nl}` on `{}` in {what}: a \
                     page of `{ns}` would read `{nl}`'s items",
                    short[at], long[at], key[at].name
                ),
            )
            .also(span_of(da), format!("`{na}`'s template"))
            .hint(hint);
        }
    }

    /// No entity's id tag may begin another's.
    fn check_id_tags(&self, out: &mut Problems) {
        let tag_span =
            |d: &EntityDraft<'_>| d.file.id_tag.as_ref().map_or(d.name.span(), Spanned::span);
        for (i, a) in self.entities.iter().enumerate() {
            for b in self.entities.iter().skip(i + 1) {
                let (ta, tb) = (&a.entity.id_tag, &b.entity.id_tag);
                if ta.is_empty() || tb.is_empty() {
                    continue;
                }
                let (first, second) = if tb.starts_with(ta.as_str()) {
                    (a, b)
                } else if ta.starts_with(tb.as_str()) {
                    (b, a)
                } else {
                    continue;
                };
                out.error(
                    tag_span(second),
                    format!(
                        "the id tag `{}` of entity `{}` begins with the id tag `{}` of entity `{}`",
                        second.entity.id_tag,
                        second.entity.name,
                        first.entity.id_tag,
                        first.entity.name
                    ),
                )
                .also(
                    tag_span(first),
                    format!("the id tag of `{}`", first.entity.name),
                )
                .hint(
                    "global ids start with the tag: no tag may begin another; change one of them",
                );
            }
        }
    }
}

/// The entity's id tag; reports an empty or too long one.
fn check_id_tag(name: &Spanned<String>, file: &EntityFile, out: &mut Problems) -> String {
    let Some(tag) = &file.id_tag else {
        return format!("{}:", name.get_ref());
    };
    let text = tag.get_ref();
    if text.is_empty() {
        out.error(tag.span(), "an id tag cannot be empty")
            .hint("global ids start with the tag, which tells their type");
        return String::new();
    }
    if text.len() > 16 {
        out.error(
            tag.span(),
            format!("id tag `{text}` is longer than 16 bytes"),
        )
        .hint("a short tag such as \"U\" keeps global ids compact");
        return String::new();
    }
    text.clone()
}

/// Field, relation and connection names: valid, not `id`, unique within the entity.
fn check_member_names(entity: &str, file: &EntityFile, out: &mut Problems) {
    let mut names = Vec::new();
    let groups = [
        (file.fields.keys().collect::<Vec<_>>(), "field"),
        (file.relations.keys().collect(), "relation"),
        (file.connections.keys().collect(), "connection"),
    ];
    for (keys, what) in groups {
        for name in keys {
            if !check_name(name.span(), name.get_ref(), what, out) {
                continue;
            }
            if name.get_ref() == "id" {
                let hint = if what == "field" {
                    "name it for example `itemId`, with `attribute = \"id\"` to keep reading the \
                     `id` attribute"
                        .to_owned()
                } else {
                    "choose another name".to_owned()
                };
                out.error(
                    name.span(),
                    format!(
                        "{what} `id` of entity `{entity}`: `id` is the global id of every entity"
                    ),
                )
                .hint(hint);
                continue;
            }
            names.push((name.get_ref().clone(), name.span(), what));
        }
    }
    check_unique(&names, out);
}

/// Two fields may not read the same attribute.
fn check_shared_attributes(file: &EntityFile, out: &mut Problems) {
    let mut seen: HashMap<&str, (&str, Range<usize>)> = HashMap::new();
    for (name, field) in in_file_order(&file.fields) {
        let (attribute, span) = match &field.attribute {
            Some(a) => (a.get_ref().as_str(), a.span()),
            None => (name.get_ref().as_str(), name.span()),
        };
        if attribute.is_empty() {
            out.error(span, "an attribute name cannot be empty");
            continue;
        }
        if let Some((other, other_span)) = seen.get(attribute) {
            out.error(
                span,
                format!(
                    "fields `{other}` and `{}` both read attribute `{attribute}`",
                    name.get_ref()
                ),
            )
            .also(other_span.clone(), format!("`{other}` reads it here"))
            .hint("each attribute has at most one field");
        } else {
            seen.insert(attribute, (name.get_ref(), span));
        }
    }
}

// ------------------------------------------------------------------------------- fields

impl Ctx<'_, '_> {
    fn field(&self, name: &Spanned<String>, file: &FieldFile, out: &mut Problems) -> Option<Field> {
        let (ty, nullable) = self.field_type(file, out)?;
        let default = file
            .default
            .as_ref()
            .and_then(|d| self.default_value(&ty, d, out));
        let generated = file.generated.as_ref().and_then(|g| generated(&ty, g, out));
        if let (Some(d), Some(_)) = (&file.default, &file.generated) {
            out.error(
                d.span(),
                "a field cannot have both `default` and `generated`",
            )
            .hint("`generated` values are never in inputs, so a default is never used");
        }
        let checks = input_checks(&ty, file, out);
        Some(Field {
            name: name.get_ref().clone(),
            attribute: file.attribute.as_ref().unwrap_or(name).get_ref().clone(),
            description: file.description.clone(),
            input_description: file.input_description.clone(),
            ty,
            nullable,
            default,
            generated,
            checks,
            access: None,
        })
    }

    /// The field's type, with its storage.
    fn field_type(&self, file: &FieldFile, out: &mut Problems) -> Option<(FieldType, bool)> {
        let span = file.ty.span();
        let written = match parse_type_ref(file.ty.get_ref()) {
            Ok(written) => written,
            Err(message) => {
                out.error(span, message)
                    .hint("a type is `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`");
                return None;
            }
        };
        let scalar = match builtin_scalar(written.name) {
            Some(s) => s,
            None => match self.enum_ids.get(written.name) {
                Some(e) => Scalar::Enum(*e),
                None => {
                    let mut known: Vec<&str> = SCALAR_NAMES.to_vec();
                    known.extend(self.enum_ids.keys().copied());
                    out.error(span, format!("unknown type `{}`", written.name))
                        .hint(suggest(written.name, &known, "types"));
                    return None;
                }
            },
        };
        let stored_as = file.stored_as.as_ref();
        let ty = match written.list {
            None => FieldType::Scalar(scalar_storage(scalar, stored_as, out)?),
            Some(item_nullable) => list_storage(scalar, item_nullable, stored_as, out)?,
        };
        Some((ty, written.nullable))
    }

    fn default_value(
        &self,
        ty: &FieldType,
        value: &Spanned<toml::Value>,
        out: &mut Problems,
    ) -> Option<DefaultValue> {
        let span = value.span();
        if value.get_ref().as_str() == Some("now") {
            if matches!(ty, FieldType::Scalar(Scalar::DateTime(_))) {
                return Some(DefaultValue::Now);
            }
            out.error(span, "`default = \"now\"` is for DateTime fields only");
            return None;
        }
        let literal = match ty {
            FieldType::Scalar(s) => self.literal(*s, value.get_ref()),
            FieldType::List { item, .. } => match value.get_ref() {
                toml::Value::Array(items) => items
                    .iter()
                    .map(|v| self.literal(*item, v))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Json::Array),
                other => Err(format!("a list default is a list, not {}", describe(other))),
            },
        };
        match literal {
            Ok(json) => Some(DefaultValue::Value(json)),
            Err(message) => {
                out.error(span, format!("bad default: {message}"));
                None
            }
        }
    }

    /// A literal of scalar `s`, as the GraphQL input parser accepts it.
    fn literal(&self, s: Scalar, value: &toml::Value) -> Result<Json, String> {
        use toml::Value as V;
        let name = self.scalar_name(s);
        let wrong = || format!("{} is not a {name}", describe(value));
        match (s, value) {
            (Scalar::String | Scalar::Id, V::String(text)) => Ok(Json::String(text.clone())),
            (Scalar::Enum(e), V::String(text)) => {
                let Some(enum_type) = self.enums.get(e) else {
                    return Err(wrong());
                };
                if enum_type.values.iter().any(|(v, _)| v == text) {
                    Ok(Json::String(text.clone()))
                } else {
                    let values: Vec<&str> =
                        enum_type.values.iter().map(|(v, _)| v.as_str()).collect();
                    Err(format!(
                        "`{text}` is not a value of enum `{name}` ({})",
                        values.join(", ")
                    ))
                }
            }
            (Scalar::Int, V::Integer(i)) => i32::try_from(*i)
                .map(Json::from)
                .map_err(|_| format!("{i} is out of range for Int (32 bits)")),
            (Scalar::BigInt, V::Integer(i)) => Ok(Json::String(i.to_string())),
            (Scalar::Float, V::Integer(i)) => Ok(Json::from(*i)),
            (Scalar::Float, V::Float(f)) => serde_json::Number::from_f64(*f)
                .map(Json::Number)
                .ok_or_else(|| format!("{f} is not a finite number")),
            (Scalar::Decimal, V::Integer(_) | V::Float(_) | V::String(_)) => {
                decimal(value).map(|n| Json::String(n.into_string()))
            }
            (Scalar::Boolean, V::Boolean(b)) => Ok(Json::Bool(*b)),
            (Scalar::DateTime(_), V::String(text)) => chrono::DateTime::parse_from_rfc3339(text)
                .map(|_| Json::String(text.clone()))
                .map_err(|_| format!("`{text}` is not an RFC 3339 date-time, nor \"now\"")),
            (Scalar::DateTime(_), V::Datetime(d)) => {
                let text = d.to_string();
                chrono::DateTime::parse_from_rfc3339(&text)
                    .map(|_| Json::String(text.clone()))
                    .map_err(|_| format!("`{text}` has no time zone offset"))
            }
            (Scalar::Bytes, V::String(text)) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(|_| Json::String(text.clone()))
                .map_err(|_| format!("`{text}` is not base64")),
            (Scalar::Json, v) => serde_json::to_value(v).map_err(|e| e.to_string()),
            _ => Err(wrong()),
        }
    }
}

/// A short description of a TOML value, for messages.
fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("the string \"{s}\""),
        toml::Value::Integer(i) => format!("the integer {i}"),
        toml::Value::Float(f) => format!("the number {f}"),
        toml::Value::Boolean(b) => format!("the boolean {b}"),
        toml::Value::Datetime(d) => format!("the date-time {d}"),
        toml::Value::Array(_) => "a list".to_owned(),
        toml::Value::Table(_) => "a table".to_owned(),
    }
}

/// A number written as an integer, a float or a numeric string.
fn decimal(value: &toml::Value) -> Result<DynamoNumber, String> {
    let text = match value {
        toml::Value::Integer(i) => return Ok(DynamoNumber::from_i64(*i)),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::String(s) => s.clone(),
        other => return Err(format!("{} is not a number", describe(other))),
    };
    DynamoNumber::normalize(&text).map_err(|e| format!("`{text}`: {e}"))
}

/// A scalar field's storage: only `DateTime` has a choice.
fn scalar_storage(
    scalar: Scalar,
    stored_as: Option<&Spanned<StoredAsFile>>,
    out: &mut Problems,
) -> Option<Scalar> {
    let Some(stored_as) = stored_as else {
        return Some(scalar);
    };
    let format = match stored_as.get_ref() {
        StoredAsFile::EpochMillis => TimeFormat::EpochMillis,
        StoredAsFile::EpochSeconds => TimeFormat::EpochSeconds,
        StoredAsFile::Iso8601 => TimeFormat::Iso8601,
        StoredAsFile::List | StoredAsFile::Set => {
            out.error(
                stored_as.span(),
                "`list` and `set` storage is for list fields",
            )
            .hint("a DateTime is stored as epoch_millis, epoch_seconds or iso8601");
            return None;
        }
    };
    if let Scalar::DateTime(_) = scalar {
        Some(Scalar::DateTime(format))
    } else {
        out.error(stored_as.span(), "`stored_as` with a time format is for DateTime fields")
            .hint("only DateTime fields (epoch_millis, epoch_seconds, iso8601) and lists (list, set) choose their storage");
        None
    }
}

/// A list field's storage: a list, or a set of strings, numbers or binaries.
fn list_storage(
    item: Scalar,
    item_nullable: bool,
    stored_as: Option<&Spanned<StoredAsFile>>,
    out: &mut Problems,
) -> Option<FieldType> {
    let set = match stored_as.map(|s| (s, s.get_ref())) {
        None | Some((_, StoredAsFile::List)) => false,
        Some((_, StoredAsFile::Set)) => true,
        Some((s, _)) => {
            out.error(s.span(), "a list field is stored as `list` or `set`")
                .hint("its items are stored as their type's default");
            return None;
        }
    };
    if set {
        let span = stored_as.map_or(0..0, Spanned::span);
        let settable =
            is_text(item) || is_number(item) || matches!(item, Scalar::Enum(_) | Scalar::Bytes);
        if !settable {
            out.error(span, "sets hold strings, numbers or binaries only")
                .hint("set items are String, ID, an enum (SS), Int, BigInt, Float, Decimal (NS) or Bytes (BS)");
            return None;
        }
        if item_nullable {
            out.error(span, "set items cannot be null")
                .hint("make the items non-null, as in `[String!]`");
            return None;
        }
    }
    Some(FieldType::List {
        item,
        item_nullable,
        set,
    })
}

fn generated(ty: &FieldType, value: &Spanned<String>, out: &mut Problems) -> Option<Generated> {
    if value.get_ref() != "now" {
        out.error(
            value.span(),
            format!("unknown generated value `{}`", value.get_ref()),
        )
        .hint("only `generated = \"now\"` exists");
        return None;
    }
    if !matches!(ty, FieldType::Scalar(Scalar::DateTime(_))) {
        out.error(
            value.span(),
            "`generated = \"now\"` is for DateTime fields only",
        );
        return None;
    }
    Some(Generated::Now)
}

fn input_checks(ty: &FieldType, file: &FieldFile, out: &mut Problems) -> InputChecks {
    let scalar = match ty {
        FieldType::Scalar(s) => Some(*s),
        FieldType::List { .. } => None,
    };
    let numeric = scalar.is_some_and(is_number);
    let bound = |value: &Spanned<toml::Value>, out: &mut Problems| {
        if !numeric {
            out.error(
                value.span(),
                "`min` and `max` are for Int, BigInt, Float and Decimal fields",
            );
            return None;
        }
        decimal(value.get_ref())
            .map_err(|message| out.error(value.span(), format!("bad bound: {message}")))
            .ok()
    };
    let min = file.min.as_ref().and_then(|v| bound(v, out));
    let max = file.max.as_ref().and_then(|v| bound(v, out));
    if let (Some(lo), Some(hi), Some(span)) = (&min, &max, file.max.as_ref().map(Spanned::span))
        && lo.numeric_cmp(hi) == std::cmp::Ordering::Greater
    {
        out.error(
            span,
            format!("`max` {} is below `min` {}", hi.as_str(), lo.as_str()),
        );
    }
    let textual = scalar.is_some_and(is_text);
    let length = |value: &Spanned<u32>, out: &mut Problems| {
        if textual {
            Some(*value.get_ref())
        } else {
            out.error(
                value.span(),
                "`min_length` and `max_length` are for String and ID fields",
            );
            None
        }
    };
    let min_length = file.min_length.as_ref().and_then(|v| length(v, out));
    let max_length = file.max_length.as_ref().and_then(|v| length(v, out));
    if let (Some(lo), Some(hi), Some(span)) = (
        min_length,
        max_length,
        file.max_length.as_ref().map(Spanned::span),
    ) && lo > hi
    {
        out.error(
            span,
            format!("`max_length` {hi} is below `min_length` {lo}"),
        );
    }
    let email = match &file.format {
        None => false,
        Some(format) if format.get_ref() != "email" => {
            out.error(
                format.span(),
                format!("unknown format `{}`", format.get_ref()),
            )
            .hint("only `format = \"email\"` exists");
            false
        }
        Some(format) if scalar != Some(Scalar::String) => {
            out.error(format.span(), "`format` is for String fields only");
            false
        }
        Some(_) => true,
    };
    InputChecks {
        min,
        max,
        min_length,
        max_length,
        email,
    }
}

// ------------------------------------------------------------------------------- relations

impl Ctx<'_, '_> {
    fn relations(&self, e: EntityId, out: &mut Problems) -> Vec<Relation> {
        let file = self.entities[e].file;
        in_file_order(&file.relations)
            .into_iter()
            .filter_map(|(name, relation)| self.relation(e, name, relation, out))
            .collect()
    }

    fn relation(
        &self,
        e: EntityId,
        name: &Spanned<String>,
        file: &RelationFile,
        out: &mut Problems,
    ) -> Option<Relation> {
        let written = file.ty.get_ref().trim();
        let (target_name, nullable) = match written.strip_suffix('!') {
            Some(rest) => (rest.trim_end(), false),
            None => (written, true),
        };
        let target = self.entity_named(target_name, file.ty.span(), out)?;
        let table = self.entities[target].table?;
        let info = &self.tables[table];
        if !info.sound {
            return None;
        }
        let key_attrs = info.table.key;
        let fields = file.key.get_ref();
        let target_entity = &self.entities[target].entity;
        let templated = !target_entity.templates.is_empty();
        // What each relation field gives: a key attribute, or a facet of the target's key.
        let wanted: Vec<(String, KeyType)> = if templated {
            target_entity
                .key_fields
                .iter()
                .filter_map(|&f| {
                    let field = &target_entity.fields[f];
                    let ty = match field.ty {
                        FieldType::Scalar(s) => s.key_type()?,
                        FieldType::List { .. } => return None,
                    };
                    Some((format!("facet `{}`", field.name), ty))
                })
                .collect()
        } else {
            key_attrs
                .iter()
                .map(|a| (format!("key attribute `{}`", a.name), a.ty))
                .collect()
        };
        if fields.len() != wanted.len() {
            let (what, count, names): (String, usize, Vec<String>) = if templated {
                (
                    format!("entity `{target_name}` is keyed by"),
                    wanted.len(),
                    target_entity
                        .key_fields
                        .iter()
                        .map(|&f| target_entity.fields[f].name.clone())
                        .collect(),
                )
            } else {
                (
                    format!("table `{}` of entity `{target_name}` has", info.table.name),
                    key_attrs.len(),
                    key_attrs.iter().map(|a| a.name.to_owned()).collect(),
                )
            };
            out.error(
                file.key.span(),
                format!(
                    "relation `{}` gives {} key field(s), but {what} {count} key {}",
                    name.get_ref(),
                    fields.len(),
                    if templated {
                        "facet(s)"
                    } else {
                        "attribute(s)"
                    }
                ),
            )
            .hint(format!(
                "list the fields holding {}, in that order",
                names.join(", ")
            ));
            return None;
        }
        let mut key = Vec::new();
        for (field_name, (what, ty)) in fields.iter().zip(&wanted) {
            let field = self.field_named(e, field_name, out)?;
            let f = &self.entities[e].entity.fields[field];
            let fits = matches!(f.ty, FieldType::Scalar(s) if s.key_type() == Some(*ty));
            if !fits {
                out.error(
                    field_name.span(),
                    format!(
                        "field `{}` of type `{}` cannot hold {what} of `{}`, of type {}",
                        f.name,
                        self.type_text(&f.ty, f.nullable),
                        target_name,
                        key_type_name(*ty)
                    ),
                )
                .hint(key_type_fits(*ty));
                return None;
            }
            key.push(field);
        }
        Some(Relation {
            name: name.get_ref().clone(),
            description: file.description.clone(),
            target,
            nullable,
            key,
            check_on_create: file.check_on_create,
        })
    }
}

// ------------------------------------------------------------------------------- connections

/// Where a connection is declared.
#[derive(Clone, Copy)]
enum Owner<'a> {
    /// A root field.
    Root,
    /// A field of this entity.
    Entity(EntityId, &'a str),
}

/// Arguments of one connection, for checking their names together.
#[derive(Default)]
struct ArgumentNames(Vec<(String, Range<usize>)>);

impl ArgumentNames {
    fn add(&mut self, name: &str, span: Range<usize>) {
        self.0.push((name.to_owned(), span));
    }

    fn check(&self, out: &mut Problems) {
        let mut names = Vec::new();
        for (name, span) in &self.0 {
            if !check_name(span.clone(), name, "argument", out) {
                continue;
            }
            if RESERVED_ARGUMENTS.contains(&name.as_str()) {
                out.error(
                    span.clone(),
                    format!("argument `{name}` is a pagination argument"),
                )
                .hint("every connection has `first`, `after`, `last`, `before` and `order`");
                continue;
            }
            names.push((name.clone(), span.clone(), "argument"));
        }
        check_unique(&names, out);
    }
}

fn argument(file: &ArgumentFile) -> Argument {
    match file {
        ArgumentFile::Name(name) => Argument {
            name: name.clone(),
            description: None,
        },
        ArgumentFile::Described { name, description } => Argument {
            name: name.clone(),
            description: description.clone(),
        },
    }
}

/// What a connection reads: the key of the table or index, and the key of its items.
struct Target<'a> {
    table: &'a Table,
    index: Option<(usize, &'a Index)>,
}

impl Target<'_> {
    fn key(&self) -> &'static [KeyAttr] {
        self.index.map_or(self.table.key, |(_, i)| i.key)
    }

    fn start_key(&self) -> &'static [KeyAttr] {
        self.index.map_or(self.table.key, |(_, i)| i.start_key)
    }

    fn what(&self) -> String {
        match self.index {
            Some((_, index)) => format!("index `{}` of table `{}`", index.name, self.table.name),
            None => format!("table `{}`", self.table.name),
        }
    }
}

impl<'f> Ctx<'f, '_> {
    fn entity_connections(
        &self,
        e: EntityId,
        out: &mut Problems,
    ) -> Vec<(&'f str, Option<Connection>)> {
        let draft = &self.entities[e];
        in_file_order(&draft.file.connections)
            .into_iter()
            .map(|(name, file)| {
                let owner = Owner::Entity(e, draft.name.get_ref());
                (
                    name.get_ref().as_str(),
                    self.connection(owner, name, file, out),
                )
            })
            .collect()
    }

    fn root_connections(&self, file: &ModelFile, out: &mut Problems) -> Vec<Connection> {
        in_file_order(&file.connections)
            .into_iter()
            .filter_map(|(name, c)| self.connection(Owner::Root, name, c, out))
            .collect()
    }

    fn lookups(&self, file: &ModelFile, out: &mut Problems) -> Vec<Lookup> {
        in_file_order(&file.lookups)
            .into_iter()
            .filter_map(|(name, lookup)| {
                let entity =
                    self.entity_named(lookup.entity.get_ref(), lookup.entity.span(), out)?;
                Some(Lookup {
                    name: name.get_ref().clone(),
                    description: lookup.description.clone(),
                    entity,
                    access: Access::default(),
                })
            })
            .collect()
    }

    /// The place of `key` in a connection's table, or of the connection's name.
    fn connection_span(&self, owner: Owner<'_>, name: &Spanned<String>, key: &str) -> Range<usize> {
        let found = match owner {
            Owner::Root => self.key_span(&["connections", name.get_ref(), key]),
            Owner::Entity(_, entity) => {
                self.key_span(&["entities", entity, "connections", name.get_ref(), key])
            }
        };
        found.unwrap_or(name.span())
    }

    fn connection(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<Connection> {
        let (node, collection) = self.connection_nodes(owner, name, file, out)?;
        let table_id = self.entities[node].table?;
        let info = &self.tables[table_id];
        if !info.sound {
            return None;
        }
        let index = match &file.index {
            None => None,
            Some(index) => Some(self.index_named(info, index, out)?),
        };
        let target = Target {
            table: &info.table,
            index,
        };
        let scan = file.scan.as_ref().is_some_and(|s| *s.get_ref());
        let mut arguments = ArgumentNames::default();
        let single = [node];
        let members = collection.as_ref().map_or(&single[..], |c| &c.members[..]);
        let read = if scan {
            self.scan_read(owner, name, file, out)
        } else {
            self.query_read(owner, name, file, members, &target, &mut arguments, out)
        };
        let tellable = match &collection {
            Some(_) => self.check_members(owner, name, file, members, &target, out),
            None => Some(()),
        };
        let filters = self.filters(file, node, &target, scan, &mut arguments, out);
        arguments.check(out);
        let order = self.order(owner, name, file, scan, out);
        let page_size = file
            .page_size
            .as_ref()
            .and_then(|p| page_size(p, name, out));
        if let (Some(p), Some((_, index))) = (&file.index, target.index) {
            self.check_projection(node, &target, index, p.span(), out);
        }
        let parent = match owner {
            Owner::Root => "Query",
            Owner::Entity(_, entity) => entity,
        };
        Some(Connection {
            name: name.get_ref().clone(),
            label: super::leak_str(&format!("{parent}.{}", name.get_ref())),
            description: file.description.clone(),
            entity: node,
            index: target.index.map(|(i, _)| i),
            read: read?,
            filters: filters?,
            order: order?,
            page_size: match (&file.page_size, page_size) {
                (Some(_), None) => return None,
                (_, sizes) => sizes,
            },
            start_key: target.start_key(),
            type_filters: match (&collection, tellable) {
                (_, None) => return None,
                (Some(_), _) => Vec::new(),
                (None, _) => self.type_filters(node, &target, scan),
            },
            shared: self
                .entities
                .iter()
                .filter(|d| d.table == Some(table_id))
                .count()
                > 1,
            collection,
            access: Access::default(),
        })
    }

    /// The node entity of a connection, or the members of an item collection (the first then
    /// standing as the node entity).
    fn connection_nodes(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<(EntityId, Option<Collection>)> {
        match (&file.entity, &file.members, &file.union) {
            (Some(entity), None, None) => Some((
                self.entity_named(entity.get_ref(), entity.span(), out)?,
                None,
            )),
            (None, Some(members), Some(union)) => {
                let mut ids = Vec::new();
                for member in members.get_ref() {
                    let id = self.entity_named(member.get_ref(), member.span(), out)?;
                    if ids.contains(&id) {
                        out.error(
                            member.span(),
                            format!("`{}` is listed twice in `members`", member.get_ref()),
                        );
                        return None;
                    }
                    ids.push(id);
                }
                let Some(&first) = ids.first() else {
                    out.error(
                        members.span(),
                        "an item collection needs at least one member",
                    );
                    return None;
                };
                let table = self.entities[first].table?;
                for (&id, member) in ids.iter().zip(members.get_ref()).skip(1) {
                    if self.entities[id].table? != table {
                        out.error(
                            member.span(),
                            format!(
                                "member `{}` is stored in table `{}`, not in `{}` like `{}`",
                                member.get_ref(),
                                self.tables[self.entities[id].table?].table.name,
                                self.tables[table].table.name,
                                self.entities[first].entity.name
                            ),
                        )
                        .hint("an item collection reads one partition of one table");
                        return None;
                    }
                }
                Some((
                    first,
                    Some(Collection {
                        union: union.get_ref().clone(),
                        members: ids,
                    }),
                ))
            }
            (Some(entity), Some(_), _) => {
                out.error(
                    entity.span(),
                    "a connection has an `entity`, or `members` and a `union`, not both",
                );
                None
            }
            (None, Some(members), None) => {
                out.error(
                    members.span(),
                    "an item collection needs a `union`: the name of its nodes' type",
                )
                .hint("add for example `union = \"CustomerActivity\"`");
                None
            }
            (_, None, Some(union)) => {
                out.error(
                    union.span(),
                    "`union` names the type of an item collection's `members`",
                )
                .hint("list the collection's entities in `members`, or remove `union`");
                None
            }
            (None, None, None) => {
                out.error(
                    self.connection_span(owner, name, "entity").start..name.span().end,
                    format!("connection `{}` has no `entity`", name.get_ref()),
                )
                .hint("name the nodes' entity with `entity = \"...\"`, or list an item collection's `members`");
                None
            }
        }
    }

    /// An item collection reads every item of its partition: its members must each have the
    /// partition key (with the same template), and be told apart.
    fn check_members(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        out: &mut Problems,
    ) -> Option<()> {
        let span = self.connection_span(owner, name, "members");
        let mut ok = true;
        if let Some((key, _)) = file.filters.iter().next() {
            out.error(
                key.span(),
                "an item collection has no filters: its members have different fields",
            );
            ok = false;
        }
        if file.sort.is_some() {
            out.error(
                self.connection_span(owner, name, "sort"),
                "an item collection has no sort conditions: its members' sort keys differ",
            );
            ok = false;
        }
        let table = target.table;
        for (i, &a) in members.iter().enumerate() {
            let ea = &self.entities[a].entity;
            for &b in &members[i + 1..] {
                let eb = &self.entities[b].entity;
                if table.type_attribute.is_none() && self.overlap(a, b, target.key()) {
                    out.error(
                        span.clone(),
                        format!(
                            "members `{}` and `{}` cannot be told apart in {}: their keys start alike",
                            ea.name,
                            eb.name,
                            target.what()
                        ),
                    )
                    .hint(format!(
                        "give their sort keys templates with distinct literal starts, or add a \
                         `type_attribute` to table `{}`",
                        table.name
                    ));
                    ok = false;
                }
            }
        }
        ok.then_some(())
    }

    /// The literal start of entity `e`'s key attribute `attribute`: its template's text before
    /// the first facet, `""` for a field (any value), `None` when the entity has neither.
    fn key_start(&self, e: EntityId, attribute: &str) -> Option<&str> {
        let entity = &self.entities[e].entity;
        match entity.template_on(attribute) {
            Some(t) => Some(t.template.literal_prefix()),
            None if self.entities[e]
                .file
                .keys
                .keys()
                .any(|k| k.get_ref() == attribute) =>
            {
                None
            }
            None => entity.field_on(attribute).map(|_| ""),
        }
    }

    /// Whether items of `a` and `b` could share a partition and a sort-key prefix of `key` (a
    /// table's or an index's key): then a `begins_with` on either's prefix reads the other's.
    fn overlap(&self, a: EntityId, b: EntityId, key: &[KeyAttr]) -> bool {
        let alike = |x: &str, y: &str| x.starts_with(y) || y.starts_with(x);
        key.iter().all(
            |attr| match (self.key_start(a, attr.name), self.key_start(b, attr.name)) {
                (Some(x), Some(y)) => alike(x, y),
                _ => false,
            },
        )
    }

    /// Filters selecting `node`'s items where key conditions cannot: a Scan of a shared table,
    /// or a Query whose partition other entities share with the same sort-key prefix (only
    /// possible with a type attribute, which then tells them apart).
    fn type_filters(
        &self,
        node: EntityId,
        target: &Target<'_>,
        scan: bool,
    ) -> Vec<(&'static str, TypeTest)> {
        let table = self.entities[node].table;
        let others: Vec<EntityId> = (0..self.entities.len())
            .filter(|&e| e != node && self.entities[e].table == table)
            .collect();
        if others.is_empty() {
            return Vec::new();
        }
        let entity = &self.entities[node].entity;
        if let (Some(attribute), Some(value)) = (&target.table.type_attribute, &entity.type_value) {
            if scan || others.iter().any(|&o| self.overlap(node, o, target.key())) {
                return vec![(leak_str(attribute), TypeTest::Equals(value.clone()))];
            }
            return Vec::new();
        }
        if !scan {
            return Vec::new();
        }
        target
            .key()
            .iter()
            .filter_map(|attr| {
                let start = entity.template_on(attr.name)?.template.literal_prefix();
                (!start.is_empty()).then(|| (attr.name, TypeTest::BeginsWith(start.to_owned())))
            })
            .collect()
    }

    fn index_named<'t>(
        &self,
        info: &'t TableInfo,
        name: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<(usize, &'t Index)> {
        let found = info
            .table
            .indexes
            .iter()
            .enumerate()
            .find(|(_, i)| &i.name == name.get_ref());
        if found.is_none() && !info.broken_indexes.contains(name.get_ref()) {
            let indexes: Vec<&str> = info.table.indexes.iter().map(|i| i.name.as_str()).collect();
            out.error(
                name.span(),
                format!(
                    "table `{}` has no index `{}`",
                    info.table.name,
                    name.get_ref()
                ),
            )
            .hint(suggest(name.get_ref(), &indexes, "indexes of the table"));
        }
        found
    }

    fn scan_read(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<Read> {
        let mut ok = true;
        if file.partition.is_some() {
            out.error(
                self.connection_span(owner, name, "partition"),
                "a connection scans (`scan = true`) or reads one `partition`, not both",
            );
            ok = false;
        }
        if file.sort.is_some() {
            out.error(
                self.connection_span(owner, name, "sort"),
                "a Scan has no sort-key conditions",
            )
            .hint("`sort` needs a Query on one partition: give a `partition` instead of `scan`");
            ok = false;
        }
        ok.then_some(Read::Scan)
    }

    #[allow(clippy::too_many_arguments)]
    fn query_read(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Read> {
        let node = members[0];
        let attribute = *target.key().first()?;
        let span = self.connection_span(owner, name, "partition");
        let entity = &self.entities[node].entity;
        let template = entity.template_on(attribute.name).map(|t| &t.template);
        for &m in &members[1..] {
            let other = &self.entities[m].entity;
            let same = match (template, other.template_on(attribute.name)) {
                (Some(a), Some(b)) => a.to_string() == b.template.to_string(),
                (None, None) => other.field_on(attribute.name).is_some(),
                _ => false,
            };
            if !same {
                out.error(
                    self.connection_span(owner, name, "members"),
                    format!(
                        "members `{}` and `{}` do not write partition key `{}` of {} alike",
                        entity.name,
                        other.name,
                        attribute.name,
                        target.what()
                    ),
                )
                .hint("an item collection's members share one partition: give them the same key template");
                return None;
            }
        }
        if let Some(template) = template
            && template.facets().count() == 0
        {
            if let Some(partition) = &file.partition {
                let at = partition
                    .field
                    .as_ref()
                    .or(partition.argument.as_ref())
                    .map_or(span, Spanned::span);
                out.error(
                    at,
                    format!(
                        "partition key `{}` of `{}` is always `{template}`: leave `partition` out",
                        attribute.name, entity.name
                    ),
                );
                return None;
            }
            let sort = self.query_sort(owner, name, file, members, target, arguments, out)?;
            return Some(Read::Query {
                partition: Partition {
                    attribute,
                    from: PartitionFrom::Constant(KeyValue::S(template.to_string())),
                    template: None,
                },
                sort: sort.0,
                prefix: sort.1,
            });
        }
        let Some(partition) = &file.partition else {
            out.error(
                name.span(),
                format!(
                    "connection `{}` has neither a `partition` nor `scan = true`",
                    name.get_ref()
                ),
            )
            .hint(
                "read one partition with `partition = { ... }`, or every item with `scan = true`",
            );
            return None;
        };
        let given = [
            partition.argument.is_some(),
            partition.field.is_some(),
            partition.value.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            out.error(
                span,
                "a partition has exactly one of `argument`, `field` and `value`",
            );
            return None;
        }
        let facet = match template {
            None => None,
            Some(template) => {
                let facets = &entity.template_on(attribute.name)?.facets;
                if facets.len() != 1 {
                    out.error(
                        span,
                        format!(
                            "partition key `{}` of `{}` is built from {} facets (`{template}`), but a \
                             connection's partition gives one value",
                            attribute.name,
                            entity.name,
                            facets.len()
                        ),
                    )
                    .hint("read an index whose partition key template has one facet");
                    return None;
                }
                Some(facets[0])
            }
        };
        let from = if let Some(argument) = &partition.argument {
            arguments.add(argument.get_ref(), argument.span());
            match (facet, owner) {
                // The argument takes the facet's type; `partition_argument` reports the rest.
                (Some(field), Owner::Root) => Some(PartitionFrom::Argument {
                    argument: Argument {
                        name: argument.get_ref().clone(),
                        description: partition.description.clone(),
                    },
                    field,
                }),
                _ => self.partition_argument(
                    owner,
                    argument,
                    partition.description.clone(),
                    node,
                    &attribute,
                    out,
                ),
            }
        } else if let Some(field) = &partition.field {
            match facet {
                Some(facet) => self.partition_facet_field(owner, field, node, facet, out),
                None => self.partition_field(owner, field, target, &attribute, out),
            }
        } else {
            let value = partition.value.as_ref()?;
            match (template, facet) {
                (Some(template), Some(facet)) => {
                    let f = &entity.fields[facet];
                    match value.get_ref() {
                        toml::Value::String(text) if matches!(f.ty, FieldType::Scalar(s) if is_text(s)) =>
                        {
                            let key = template.render(|_| Some(text.as_str())).ok()?;
                            Some(PartitionFrom::Constant(KeyValue::S(key)))
                        }
                        _ => {
                            out.error(
                                value.span(),
                                format!(
                                    "a constant partition of a key template takes a string for \
                                     facet `{}`",
                                    f.name
                                ),
                            );
                            None
                        }
                    }
                }
                _ => partition_value(value, &attribute, out),
            }
        };
        let sort = self.query_sort(owner, name, file, members, target, arguments, out);
        let (sort, prefix) = sort?;
        Some(Read::Query {
            partition: Partition {
                attribute,
                from: from?,
                template: facet.and(template.cloned()),
            },
            sort,
            prefix,
        })
    }

    /// A Query's sort-key conditions, and the node entity's sort-key prefix.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn query_sort(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<(Option<SortCondition>, Option<(&'static str, String)>)> {
        let node = members[0];
        let sort_attr = target.key().get(1).copied();
        let template = sort_attr.and_then(|a| self.entities[node].entity.template_on(a.name));
        let prefix = match (members.len(), sort_attr, template) {
            (1, Some(attr), Some(t)) if !t.template.literal_prefix().is_empty() => {
                Some((attr.name, t.template.literal_prefix().to_owned()))
            }
            _ => None,
        };
        let sort = match (&file.sort, template) {
            (None, _) => None,
            (Some(sort), Some(template)) => {
                let span = self.connection_span(owner, name, "sort");
                Some(self.facet_condition(sort, span, node, template, arguments, out)?)
            }
            (Some(sort), None) => {
                let span = self.connection_span(owner, name, "sort");
                self.sort_condition(sort, span, node, target, arguments, out)?
            }
        };
        Some((sort, prefix))
    }

    /// The parent entity's field a `field` partition names; only connections on entities have
    /// one.
    fn parent_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<(EntityId, FieldId)> {
        let Owner::Entity(parent, _) = owner else {
            out.error(
                field.span(),
                "`field` partitions are for connections on entities",
            )
            .hint("a root connection takes its partition from an `argument` or a `value`");
            return None;
        };
        Some((parent, self.field_named(parent, field, out)?))
    }

    /// A partition given by a parent's field into the node's one-facet partition template.
    fn partition_facet_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        node: EntityId,
        facet: FieldId,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        let (parent, id) = self.parent_field(owner, field, out)?;
        let f = &self.entities[parent].entity.fields[id];
        let want = &self.entities[node].entity.fields[facet];
        let scalar = |ty: &FieldType| match ty {
            FieldType::Scalar(s) if is_text(*s) => Some(Scalar::String),
            FieldType::Scalar(s) => Some(*s),
            FieldType::List { .. } => None,
        };
        if scalar(&f.ty) != scalar(&want.ty) || f.nullable {
            out.error(
                field.span(),
                format!(
                    "field `{}` of type `{}` cannot give facet `{}` of `{}`, of type `{}`",
                    f.name,
                    self.type_text(&f.ty, f.nullable),
                    want.name,
                    self.entities[node].entity.name,
                    self.type_text(&want.ty, false)
                ),
            );
            return None;
        }
        Some(PartitionFrom::Parent(id))
    }

    /// Sort conditions over the first facet of a sort-key template. Ranges need the key's
    /// string order to be the facet's order: a type whose text sorts like its values (integers
    /// at fixed width, ISO 8601 times), and separators below every character of those values.
    fn facet_condition(
        &self,
        sort: &crate::model::file::SortFile,
        span: Range<usize>,
        node: EntityId,
        template: &TemplateKey,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<SortCondition> {
        let entity = &self.entities[node].entity;
        let Some(&field) = template.facets.first() else {
            out.error(
                span,
                format!(
                    "sort key `{}` of `{}` is always `{}`: there is nothing to give conditions on",
                    template.attribute, entity.name, template.template
                ),
            );
            return None;
        };
        let f = &entity.fields[field];
        let scalar = match f.ty {
            FieldType::Scalar(s) => s,
            FieldType::List { .. } => return None,
        };
        let alphabet: Option<&str> = match scalar {
            Scalar::Int | Scalar::BigInt => Some("0123456789"),
            Scalar::DateTime(_) => Some("+-.0123456789:TZ"),
            _ => None,
        };
        let mut ok = true;
        if sort.min.is_some() || sort.max.is_some() {
            let at = sort
                .min
                .as_ref()
                .or(sort.max.as_ref())
                .map_or(span.clone(), Spanned::span);
            match alphabet {
                None => {
                    out.error(
                        at,
                        format!(
                            "`min` and `max` need a facet that sorts as its values: `{}` is `{}`",
                            f.name,
                            self.type_text(&f.ty, f.nullable)
                        ),
                    )
                    .hint("ranges work on Int, BigInt and DateTime facets; use `begins_with` for text");
                    ok = false;
                }
                Some(alphabet) => {
                    let lowest = alphabet.chars().min().unwrap_or('0');
                    let next = template.template.text_after(&f.name).chars().next();
                    let clash = template
                        .template
                        .separators()
                        .iter()
                        .find(|c| alphabet.contains(**c));
                    if let Some(c) = clash {
                        out.error(
                            at,
                            format!(
                                "separator `{c}` of key template `{}` appears in `{}` values, so \
                                 the keys do not sort as the values",
                                template.template, f.name
                            ),
                        )
                        .hint("separate facets with a character such as `#`");
                        ok = false;
                    } else if let Some(c) = next
                        && (c as u32) + 1 >= lowest as u32
                    {
                        out.error(
                            at,
                            format!(
                                "`{c}` after facet `{}` in key template `{}` does not sort at least \
                                 two places below `{lowest}`, the lowest character `{}` values \
                                 hold, so a range cannot be bounded exactly",
                                f.name, template.template, f.name
                            ),
                        )
                        .hint("follow the facet with a character that sorts low, such as `#`");
                        ok = false;
                    }
                }
            }
        }
        if let Some(begins_with) = &sort.begins_with
            && !matches!(scalar, Scalar::String | Scalar::Id | Scalar::DateTime(_))
        {
            out.error(
                begins_with.span(),
                format!(
                    "`begins_with` needs a text or DateTime facet; `{}` is `{}`",
                    f.name,
                    self.type_text(&f.ty, f.nullable)
                ),
            );
            ok = false;
        }
        let [min, max, begins_with] = [&sort.min, &sort.max, &sort.begins_with].map(|a| {
            a.as_ref().map(|a| {
                let arg = argument(a.get_ref());
                arguments.add(&arg.name, a.span());
                arg
            })
        });
        ok.then(|| SortCondition {
            attribute: KeyAttr {
                name: template.attribute,
                ty: KeyType::S,
            },
            field,
            template: Some(template.template.clone()),
            min,
            max,
            begins_with,
        })
    }

    fn partition_argument(
        &self,
        owner: Owner<'_>,
        argument: &Spanned<String>,
        description: Option<String>,
        node: EntityId,
        attribute: &KeyAttr,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        if let Owner::Entity(..) = owner {
            out.error(
                argument.span(),
                "`argument` partitions are for root connections",
            )
            .hint("on an entity, take the partition from one of its fields: `field = \"...\"`");
            return None;
        }
        match self.field_on(node, attribute.name) {
            Ok(field) => Some(PartitionFrom::Argument {
                argument: Argument {
                    name: argument.get_ref().clone(),
                    description,
                },
                field,
            }),
            Err(true) => None,
            Err(false) => {
                let entity = &self.entities[node].entity.name;
                out.error(
                    argument.span(),
                    format!(
                        "entity `{entity}` has no field on partition key attribute `{}`, which \
                         would type argument `{}`",
                        attribute.name,
                        argument.get_ref()
                    ),
                )
                .hint(format!(
                    "add a field on `{}` to `[entities.{entity}.fields]`",
                    attribute.name
                ));
                None
            }
        }
    }

    fn partition_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        target: &Target<'_>,
        attribute: &KeyAttr,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        let (parent, id) = self.parent_field(owner, field, out)?;
        let f = &self.entities[parent].entity.fields[id];
        let fits = matches!(f.ty, FieldType::Scalar(s) if s.key_type() == Some(attribute.ty));
        if !fits {
            out.error(
                field.span(),
                format!(
                    "field `{}` of type `{}` cannot hold partition key attribute `{}` of {}, of \
                     type {}",
                    f.name,
                    self.type_text(&f.ty, f.nullable),
                    attribute.name,
                    target.what(),
                    key_type_name(attribute.ty)
                ),
            )
            .hint(key_type_fits(attribute.ty));
            return None;
        }
        Some(PartitionFrom::Parent(id))
    }

    fn sort_condition(
        &self,
        sort: &crate::model::file::SortFile,
        span: Range<usize>,
        node: EntityId,
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Option<SortCondition>> {
        let Some(attribute) = target.key().get(1).copied() else {
            out.error(
                span,
                format!("{} has no sort key to give conditions on", target.what()),
            )
            .hint("remove `sort`, or read an index with a sort key");
            return None;
        };
        let field = match self.field_on(node, attribute.name) {
            Ok(field) => field,
            Err(true) => return None,
            Err(false) => {
                let entity = &self.entities[node].entity.name;
                out.error(
                    span,
                    format!(
                        "entity `{entity}` has no field on sort key attribute `{}`",
                        attribute.name
                    ),
                )
                .hint("sort arguments take the type of the node entity's field on the sort key");
                return None;
            }
        };
        let mut args = [&sort.min, &sort.max, &sort.begins_with].map(|a| {
            a.as_ref().map(|a| {
                let arg = argument(a.get_ref());
                arguments.add(&arg.name, a.span());
                arg
            })
        });
        if let Some(begins_with) = &sort.begins_with {
            let f = &self.entities[node].entity.fields[field];
            if !matches!(f.ty, FieldType::Scalar(s) if is_text(s)) {
                out.error(
                    begins_with.span(),
                    format!(
                        "`begins_with` needs a String or ID sort key field; `{}` is `{}`",
                        f.name,
                        self.type_text(&f.ty, f.nullable)
                    ),
                );
                return None;
            }
        }
        if args.iter().all(Option::is_none) {
            return Some(None);
        }
        let [min, max, begins_with] = std::mem::take(&mut args);
        Some(Some(SortCondition {
            attribute,
            field,
            template: None,
            min,
            max,
            begins_with,
        }))
    }

    fn filters(
        &self,
        file: &ConnectionFile,
        node: EntityId,
        target: &Target<'_>,
        scan: bool,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Vec<Filter>> {
        let mut filters = Vec::new();
        let mut ok = true;
        for (name, filter) in in_file_order(&file.filters) {
            arguments.add(name.get_ref(), name.span());
            let Some(field) = self.field_named(node, &filter.field, out) else {
                ok = false;
                continue;
            };
            let f = &self.entities[node].entity.fields[field];
            if !scan && target.key().iter().any(|a| a.name == f.attribute) {
                out.error(
                    filter.field.span(),
                    format!(
                        "field `{}` is on key attribute `{}` of {}, which a Query cannot filter on",
                        f.name,
                        f.attribute,
                        target.what()
                    ),
                )
                .hint("DynamoDB refuses key attributes in a Query's filter: use `sort` conditions for the sort key");
                ok = false;
                continue;
            }
            match self.filter_op(&filter.op, f, out) {
                Some(op) => filters.push(Filter {
                    argument: Argument {
                        name: name.get_ref().clone(),
                        description: filter.description.clone(),
                    },
                    field,
                    op,
                }),
                None => ok = false,
            }
        }
        ok.then_some(filters)
    }

    fn filter_op(
        &self,
        op: &Spanned<String>,
        field: &Field,
        out: &mut Problems,
    ) -> Option<FilterOp> {
        let Some(parsed) = parse_filter_op(op.get_ref()) else {
            out.error(op.span(), format!("unknown filter operator `{}`", op.get_ref()))
                .hint("the operators are =, <>, <, <=, >, >=, begins_with, contains, IN and attribute_exists");
            return None;
        };
        let scalar = match field.ty {
            FieldType::Scalar(s) => Some(s),
            FieldType::List { .. } => None,
        };
        let fits = match parsed {
            FilterOp::BeginsWith => scalar.is_some_and(is_text),
            FilterOp::Contains => scalar.is_none_or(is_text),
            FilterOp::Lt | FilterOp::Le | FilterOp::Gt | FilterOp::Ge => {
                scalar.is_some_and(|s| !matches!(s, Scalar::Boolean | Scalar::Json))
            }
            FilterOp::In => scalar.is_some_and(|s| s != Scalar::Json),
            FilterOp::Eq | FilterOp::Ne => scalar != Some(Scalar::Json),
            FilterOp::Exists => true,
        };
        if !fits {
            out.error(
                op.span(),
                format!(
                    "operator `{}` does not apply to field `{}` of type `{}`",
                    op.get_ref(),
                    field.name,
                    self.type_text(&field.ty, field.nullable)
                ),
            )
            .hint(match parsed {
                FilterOp::BeginsWith => "`begins_with` needs a String or ID field",
                FilterOp::Contains => "`contains` needs a String or ID field, or a list",
                FilterOp::In => "`IN` needs a scalar field other than JSON",
                FilterOp::Eq | FilterOp::Ne => "JSON values cannot be compared",
                _ => "ordering needs a scalar field other than Boolean or JSON",
            });
            return None;
        }
        Some(parsed)
    }

    fn order(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        scan: bool,
        out: &mut Problems,
    ) -> Option<Option<Order>> {
        let Some(order) = &file.order else {
            return Some((!scan).then_some(Order {
                default_desc: false,
                description: None,
            }));
        };
        if scan {
            out.error(
                self.connection_span(owner, name, "order"),
                "a Scan has no `order`",
            )
            .hint("Scans page forward only, in DynamoDB's order");
            return None;
        }
        let default_desc = match order.default.as_ref() {
            None => false,
            Some(d) if d.get_ref() == "ASC" => false,
            Some(d) if d.get_ref() == "DESC" => true,
            Some(d) => {
                out.error(d.span(), format!("unknown order `{}`", d.get_ref()))
                    .hint("the default order is \"ASC\" or \"DESC\"");
                return None;
            }
        };
        Some(Some(Order {
            default_desc,
            description: order.description.clone(),
        }))
    }

    /// Reads through a KEYS_ONLY or INCLUDE index return only what it holds.
    fn check_projection(
        &self,
        node: EntityId,
        target: &Target<'_>,
        index: &Index,
        span: Range<usize>,
        out: &mut Problems,
    ) {
        let included: &[String] = match &index.projection {
            Projection::All => return,
            Projection::KeysOnly => &[],
            Projection::Include(list) => list,
        };
        let holds = |attribute: &str| {
            target.table.key.iter().any(|a| a.name == attribute)
                || index.key.iter().any(|a| a.name == attribute)
                || included.iter().any(|a| a == attribute)
        };
        let entity = &self.entities[node].entity;
        let missing: Vec<String> = entity
            .fields
            .iter()
            .filter(|f| !holds(&f.attribute))
            .map(|f| format!("`{}`", f.attribute))
            .collect();
        if !missing.is_empty() {
            out.error(
                span,
                format!(
                    "index `{}` does not hold attribute(s) {} that entity `{}` reads",
                    index.name,
                    missing.join(", "),
                    entity.name
                ),
            )
            .hint("set `projection = \"ALL\"` on the index, or include these attributes");
        }
    }
}

fn parse_filter_op(op: &str) -> Option<FilterOp> {
    Some(match op {
        "=" => FilterOp::Eq,
        "<>" => FilterOp::Ne,
        "<" => FilterOp::Lt,
        "<=" => FilterOp::Le,
        ">" => FilterOp::Gt,
        ">=" => FilterOp::Ge,
        "begins_with" => FilterOp::BeginsWith,
        "contains" => FilterOp::Contains,
        "IN" => FilterOp::In,
        "attribute_exists" => FilterOp::Exists,
        _ => return None,
    })
}

/// A constant partition key value.
fn partition_value(
    value: &Spanned<toml::Value>,
    attribute: &KeyAttr,
    out: &mut Problems,
) -> Option<PartitionFrom> {
    let key = match (attribute.ty, value.get_ref()) {
        (KeyType::S, toml::Value::String(s)) if !s.is_empty() => Ok(KeyValue::S(s.clone())),
        (KeyType::S, toml::Value::String(_)) => Err("a key string cannot be empty".to_owned()),
        (KeyType::N, toml::Value::Integer(_) | toml::Value::String(_) | toml::Value::Float(_)) => {
            decimal(value.get_ref()).map(KeyValue::N)
        }
        (KeyType::B, _) => Err("a constant partition cannot be binary".to_owned()),
        (ty, other) => Err(format!(
            "{} does not fit partition key attribute `{}`, of type {}",
            describe(other),
            attribute.name,
            key_type_name(ty)
        )),
    };
    match key {
        Ok(key) => Some(PartitionFrom::Constant(key)),
        Err(message) => {
            out.error(value.span(), message);
            None
        }
    }
}

/// The connection's own page sizes: `1 <= default <= max <= 1000`, and `default <= 100`.
fn page_size(
    file: &PageSizeFile,
    name: &Spanned<String>,
    out: &mut Problems,
) -> Option<(u32, u32)> {
    let (Some(default), Some(max)) = (&file.default, &file.max) else {
        let span = file
            .default
            .as_ref()
            .or(file.max.as_ref())
            .map_or(name.span(), Spanned::span);
        out.error(span, "`page_size` needs both `default` and `max`");
        return None;
    };
    let (d, m) = (*default.get_ref(), *max.get_ref());
    let mut ok = true;
    if d == 0 || d > MAX_DEFAULT_PAGE_SIZE {
        out.error(
            default.span(),
            format!("default page size {d} is not between 1 and {MAX_DEFAULT_PAGE_SIZE}"),
        );
        ok = false;
    }
    if m > HARD_MAX_PAGE_SIZE {
        out.error(
            max.span(),
            format!("largest page size {m} is above {HARD_MAX_PAGE_SIZE}"),
        );
        ok = false;
    } else if ok && d > m {
        out.error(
            max.span(),
            format!("largest page size {m} is below the default page size {d}"),
        );
        ok = false;
    }
    ok.then_some((d, m))
}

// ------------------------------------------------------------------------------- mutations

impl<'f> Ctx<'f, '_> {
    fn mutations(
        &self,
        e: EntityId,
        connections: &[Vec<(&'f str, Option<Connection>)>],
        out: &mut Problems,
    ) -> Mutations {
        let draft = &self.entities[e];
        let file = &draft.file.mutations;
        let settings = |m: &Spanned<MutationFile>| match m.get_ref() {
            MutationFile::Enabled(false) => None,
            MutationFile::Enabled(true) => Some((None, None)),
            MutationFile::Settings(s) => Some((s.description.clone(), s.edge.clone())),
        };
        let name = draft.name.get_ref();
        let create = file.create.as_ref().and_then(|m| {
            let (description, edge) = settings(m)?;
            let edge = edge.and_then(|edge| {
                let span = self
                    .value_span(&["entities", name, "mutations", "create", "edge"])
                    .unwrap_or(m.span());
                self.edge(e, &edge, span, connections, out)
            });
            Some(CreateMutation {
                description,
                edge,
                access: Access::default(),
            })
        });
        let mut other = |m: &Option<Spanned<MutationFile>>, which: &str| {
            let m = m.as_ref()?;
            let (description, edge) = settings(m)?;
            if edge.is_some() {
                let span = self
                    .value_span(&["entities", name, "mutations", which, "edge"])
                    .unwrap_or(m.span());
                out.error(span, format!("`edge` is for create mutations, not {which}"))
                    .hint("only a created item is new to a connection");
            }
            Some(Mutation {
                description,
                access: Access::default(),
            })
        };
        let update = other(&file.update, "update");
        let delete = other(&file.delete, "delete");
        Mutations {
            create,
            update,
            delete,
        }
    }

    /// A create mutation's `edge`: `Entity.connection`, a connection of `Entity` whose nodes are
    /// entity `e` and whose partition is a field of `Entity`.
    fn edge(
        &self,
        e: EntityId,
        edge: &str,
        span: Range<usize>,
        connections: &[Vec<(&'f str, Option<Connection>)>],
        out: &mut Problems,
    ) -> Option<(EntityId, usize)> {
        let Some((owner_name, connection_name)) = edge.split_once('.') else {
            out.error(
                span,
                format!("`edge = \"{edge}\"` is not `Entity.connection`"),
            )
            .hint("name a connection of an entity, such as \"Customer.orders\"");
            return None;
        };
        let owner = self.entity_named(owner_name, span.clone(), out)?;
        let Some(position) = connections[owner]
            .iter()
            .position(|(n, _)| *n == connection_name)
        else {
            let names: Vec<&str> = connections[owner].iter().map(|(n, _)| *n).collect();
            out.error(
                span,
                format!("entity `{owner_name}` has no connection `{connection_name}`"),
            )
            .hint(suggest(
                connection_name,
                &names,
                "connections of the entity",
            ));
            return None;
        };
        let connection = connections[owner][position].1.as_ref()?;
        let entity = &self.entities[e].entity.name;
        if connection.entity != e {
            out.error(
                span,
                format!("the nodes of `{edge}` are not `{entity}` items"),
            )
            .hint("the edge of a create mutation is in a connection of the created entity");
            return None;
        }
        let from_parent = matches!(
            connection.read,
            Read::Query {
                partition: Partition {
                    from: PartitionFrom::Parent(_),
                    ..
                },
                ..
            }
        );
        if !from_parent {
            out.error(
                span,
                format!("the partition of `{edge}` is not a field of `{owner_name}`"),
            )
            .hint("an edge needs a connection whose partition comes from `field = ...`");
            return None;
        }
        Some((owner, position))
    }
}

// ------------------------------------------------------------------------------- tests

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_grammar_accepts_the_six_forms() {
        let t = |s| parse_type_ref(s).ok();
        let r = |name, nullable, list| {
            Some(TypeRef {
                name,
                nullable,
                list,
            })
        };
        assert_eq!(t("String"), r("String", true, None));
        assert_eq!(t("String!"), r("String", false, None));
        assert_eq!(t("[Int]"), r("Int", true, Some(true)));
        assert_eq!(t("[Int!]"), r("Int", true, Some(false)));
        assert_eq!(t("[Int]!"), r("Int", false, Some(true)));
        assert_eq!(t("[Int!]!"), r("Int", false, Some(false)));
    }

    #[test]
    fn the_type_grammar_refuses_nested_lists_and_garbage() {
        for bad in [
            "[[Int]]", "String!!", "[Int", "", "!", "[]", "Str ing", "1Int",
        ] {
            assert!(parse_type_ref(bad).is_err(), "{bad}");
        }
        assert!(
            parse_type_ref("[[Int]]")
                .unwrap_err()
                .contains("lists of lists")
        );
    }

    #[test]
    fn did_you_mean_finds_close_names_only() {
        let keys = ["partition_key", "sort_key", "attributes", "indexes"];
        assert_eq!(did_you_mean("partiton_key", &keys), Some("partition_key"));
        assert_eq!(did_you_mean("Sort_Key", &keys), Some("sort_key"));
        assert_eq!(did_you_mean("colour", &keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn graphql_names_follow_the_spec() {
        assert!(is_graphql_name("_a1"));
        assert!(is_graphql_name("Customer"));
        assert!(!is_graphql_name("1a"));
        assert!(!is_graphql_name("a-b"));
        assert!(!is_graphql_name(""));
    }

    #[test]
    fn line_and_column_count_characters_from_one() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é\nx", 3), (2, 1));
        assert_eq!(line_column("éx", 2), (1, 2));
    }
}
