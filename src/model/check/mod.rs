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
//!
//! One file a pass, sharing the context [`Ctx`] defined here: [`shape`] (the TOML against the
//! JSON Schema), [`tables`], [`type_names`] (enums and the schema's type names), [`entities`]
//! and their [`fields`], [`relations`], [`connections`] with their [`queries`] and [`filters`],
//! [`mutations`], and [`access`] (`[auth]` and `allow`); [`problems`], [`names`] and [`types`]
//! are what the passes share.

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
mod connections;
mod electrodb;
mod entities;
mod federation;
mod fields;
mod filters;
mod mutations;
mod names;
mod problems;
mod queries;
mod relations;
mod shape;
mod tables;
mod type_names;
mod types;

use super::{
    Access, Argument, Collection, Connection, CreateMutation, DefaultValue, Entity, EntityId,
    EnumType, ExternalType, Federation, Field, FieldId, FieldType, Filter, FilterOp, Generated,
    Index, InputChecks, Lookup, LookupIndex, Model, Mutation, Mutations, Order, Partition,
    PartitionFrom, Projection, Read, Reference, Relation, Scalar, SortCondition, StreamView, Table,
    TableId, TemplateKey, TextFormat, TimeFormat, TypeTest,
    file::{
        ArgumentFile, ConnectionFile, EntityFile, EnumValuesFile, FieldFile, IndexFile,
        IndexKindFile, KeyCaseFile, KeyTypeFile, ModelFile, MutationFile, PageSizeFile,
        ProjectionFile, ProjectionKindFile, RelationFile, StoredAsFile, StreamViewFile, TableFile,
    },
    leak_shape, leak_str,
    sortable_id::SortableId,
    template::{DATE_TEXT, FacetText, INTEGER_TEXT, KeyCase, KeyTemplate, TIME_TEXT},
};
use crate::{
    cursor::{KeyAttr, KeyType, KeyValue},
    number::DynamoNumber,
    pagination::{HARD_MAX_PAGE_SIZE, MAX_DEFAULT_PAGE_SIZE},
};

// What the passes share: each file's items are seen by the others through `use super::*`.
use self::{
    connections::*, fields::*, filters::*, names::*, problems::*, shape::*, tables::*,
    type_names::*, types::*,
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
    /// Other subgraphs' types (`[federation.types]`), by name: their position.
    external_ids: HashMap<&'f str, usize>,
    external: Vec<ExternalType>,
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
        external_ids: HashMap::new(),
        external: Vec::new(),
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

    ctx.external_types(file, out);
    let relations: Vec<Vec<Relation>> = (0..ctx.entities.len())
        .map(|e| ctx.relations(e, out))
        .collect();
    let references: Vec<Vec<Reference>> = (0..ctx.entities.len())
        .map(|e| ctx.references(e, out))
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
        external,
        ..
    } = ctx;
    let entities = entities
        .into_iter()
        .zip(relations.into_iter().zip(references))
        .zip(connections)
        .zip(mutations)
        .map(
            |(((draft, (relations, references)), connections), mutations)| Entity {
                relations,
                references,
                connections: connections.into_iter().filter_map(|(_, c)| c).collect(),
                mutations,
                ..draft.entity
            },
        )
        .collect();
    let mut model = Model {
        tables: tables.into_iter().map(|info| info.table).collect(),
        enums,
        entities,
        lookups,
        connections: root_connections,
        auth: None,
        introspection: Access::default(),
        unlisted_documents: Access(Vec::new()),
        federation: file.federation.as_ref().map(|f| Federation {
            node: f.get_ref().node.unwrap_or(true),
            types: external,
        }),
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
