//! A [`Proposal`] written out as a model file, laid out as the examples are (tables, enums, one
//! section per entity, root fields), each inference with its evidence in a comment above it.
//!
//! Written as text rather than through a TOML serializer, because the comments are the point:
//! `toml` writes none. Every key and string goes through [`key`] and [`string`], which use
//! `toml`'s own quoting.

use std::fmt::Write;

use crate::dynamo::sample::{KeyKind, LiveProjection};

use super::proposal::{
    ConnectionProposal, ElectroDbKeys, EntityProposal, FieldProposal, PartitionFrom, Proposal,
    SharedKeys, TableProposal,
};

/// A TOML string literal.
fn string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// A TOML key: bare when TOML allows it, quoted otherwise.
fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_owned()
    } else {
        string(name)
    }
}

fn section(out: &mut String, title: &str) {
    let rule = "-".repeat(64);
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    let _ = write!(out, "# {rule} {title}\n\n");
}

/// Comment lines, wrapped at about 96 columns.
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 96 && line.len() > 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// What the file says at its top: how it was made.
#[derive(Debug, Default)]
pub struct Header {
    /// Lines about the run: tables read, items sampled, capacity used.
    pub lines: Vec<String>,
}

/// The model file.
pub fn render(proposal: &Proposal, header: &Header) -> String {
    let mut out = String::new();
    comment(
        &mut out,
        "Written by `dynarelay init` from the live tables. Each field, relation and connection \
         says what it rests on; lines starting `review:` need a person's look. Edit freely: \
         `dynarelay check --model <this file>` checks it, and `dynarelay serve --model <this \
         file>` serves it.",
    );
    for line in &header.lines {
        comment(&mut out, line);
    }
    out.push_str("version = 1\n");
    section(&mut out, "tables");
    for table in &proposal.tables {
        render_table(&mut out, table);
    }
    if !proposal.enums.is_empty() {
        section(&mut out, "enums");
        for e in &proposal.enums {
            let seen: Vec<String> = e.values.iter().map(|(v, n)| format!("{v} ({n})")).collect();
            comment(
                &mut out,
                &format!("Values seen, with their counts: {}.", seen.join(", ")),
            );
            let _ = writeln!(out, "[enums.{}]", key(&e.name));
            let _ = writeln!(
                out,
                "description = {}",
                string(&format!("The values `{}` holds.", e.field))
            );
            let values: Vec<String> = e.values.iter().map(|(v, _)| string(v)).collect();
            let _ = writeln!(out, "values = [{}]\n", values.join(", "));
        }
    }
    for entity in &proposal.entities {
        section(&mut out, &entity.name);
        render_entity(&mut out, entity);
    }
    section(&mut out, "root fields");
    for lookup in &proposal.lookups {
        if let Some(evidence) = &lookup.evidence {
            comment(&mut out, evidence);
        }
        if let Some(review) = &lookup.review {
            comment(&mut out, &format!("review: {review}"));
        }
        let _ = writeln!(out, "[lookups.{}]", key(&lookup.name));
        let _ = writeln!(out, "entity = {}", string(&lookup.entity));
        if let Some(index) = &lookup.index {
            let _ = writeln!(out, "index = {}", string(index));
        }
        let _ = writeln!(out, "description = {}\n", string(&lookup.description));
    }
    for connection in &proposal.connections {
        render_connection(&mut out, "connections", connection);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn render_table(out: &mut String, table: &TableProposal) {
    let live = &table.live;
    let mut about = format!("{}: {} items sampled", live.name, table.sampled);
    if let Some(count) = live.item_count {
        let _ = write!(about, " of about {count} (DynamoDB's estimate)");
    }
    about.push('.');
    if let Some(ttl) = &live.ttl_attribute {
        let _ = write!(about, " Items expire by `{ttl}` (time to live).");
    }
    if let Some(stream) = &live.stream {
        let _ = write!(about, " Its stream carries {stream}.");
    }
    comment(out, &about);
    for note in &table.notes {
        comment(out, note);
    }
    let name = key(&table.name);
    let _ = writeln!(out, "[tables.{name}]");
    let _ = writeln!(out, "partition_key = {}", string(&live.partition.name));
    if let Some(sort) = &live.sort {
        let _ = writeln!(out, "sort_key = {}", string(&sort.name));
    }
    let mut attributes: Vec<(&str, KeyKind)> = Vec::new();
    let keys = std::iter::once(&live.partition)
        .chain(live.sort.as_ref())
        .chain(
            live.indexes
                .iter()
                .flat_map(|i| std::iter::once(&i.partition).chain(i.sort.as_ref())),
        );
    for k in keys {
        if !attributes.iter().any(|(n, _)| *n == k.name) {
            attributes.push((&k.name, k.kind));
        }
    }
    let attributes: Vec<String> = attributes
        .iter()
        .map(|(n, kind)| format!("{} = {}", key(n), string(kind.as_str())))
        .collect();
    let _ = writeln!(out, "attributes = {{ {} }}", attributes.join(", "));
    if let Some(type_attribute) = &table.type_attribute {
        let _ = writeln!(out, "type_attribute = {}", string(type_attribute));
    }
    out.push('\n');
    for index in &live.indexes {
        let _ = writeln!(out, "[tables.{name}.indexes.{}]", key(&index.name));
        if index.local {
            out.push_str("kind = \"local\"\n");
        } else {
            let _ = writeln!(out, "partition_key = {}", string(&index.partition.name));
        }
        if let Some(sort) = &index.sort {
            let _ = writeln!(out, "sort_key = {}", string(&sort.name));
        }
        match &index.projection {
            LiveProjection::All => {}
            LiveProjection::KeysOnly => out.push_str("projection = \"KEYS_ONLY\"\n"),
            LiveProjection::Include(list) => {
                let list: Vec<String> = list.iter().map(|a| string(a)).collect();
                let _ = writeln!(out, "projection = [{}]", list.join(", "));
            }
        }
        out.push('\n');
    }
}

fn render_entity(out: &mut String, entity: &EntityProposal) {
    let name = key(&entity.name);
    let _ = writeln!(out, "[entities.{name}]");
    let _ = writeln!(out, "table = {}", string(&entity.table));
    let _ = writeln!(
        out,
        "description = {}",
        string(&format!("An item of table {}.", entity.table))
    );
    let _ = writeln!(out, "id_tag = {}", string(&entity.id_tag));
    if let Some(shared) = &entity.shared {
        for (_, _, evidence) in &shared.keys {
            comment(out, evidence);
        }
        match &shared.electrodb {
            Some(edb) => render_electrodb(out, shared, edb),
            None => render_keys(out, shared),
        }
    }
    render_mutations(out);
    out.push('\n');
    let _ = writeln!(out, "[entities.{name}.fields]");
    for field in &entity.fields {
        render_field(out, field);
    }
    out.push('\n');
    render_links(out, entity);
}

/// The mutations an entity can have, written off: one line each to turn on. `init` reads
/// only, so it cannot know which writes a team wants its API to take.
fn render_mutations(out: &mut String) {
    comment(
        out,
        "review: writes are off. Remove a line's `# ` to turn one on: create writes a new item \
         (never over another), update changes one and delete deletes one, by its global id.",
    );
    for mutation in MUTATIONS {
        let _ = writeln!(out, "{MUTATION_OFF}{mutation} = true");
    }
}

/// The mutations [`render_mutations`] writes.
pub const MUTATIONS: [&str; 3] = ["create", "update", "delete"];

/// How a mutation's line starts while it is off.
pub const MUTATION_OFF: &str = "# mutations.";

/// A type's key templates, and how they are written (nothing when its keys are plain fields).
fn render_keys(out: &mut String, shared: &SharedKeys) {
    let keys: Vec<String> = shared
        .keys
        .iter()
        .map(|(attribute, template, _)| format!("{} = {}", key(attribute), string(template)))
        .collect();
    if !keys.is_empty() {
        let _ = writeln!(out, "keys = {{ {} }}", keys.join(", "));
        if !shared.escaped {
            out.push_str("escape_keys = false\n");
        }
        if shared.lower {
            out.push_str("key_case = \"lower\"\n");
        }
    }
    if let Some(value) = &shared.type_value {
        let _ = writeln!(out, "type_value = {}", string(value));
    }
    if !shared.constants.is_empty() {
        let constants: Vec<String> = shared
            .constants
            .iter()
            .map(|(name, value)| format!("{} = {}", key(name), string(value)))
            .collect();
        let _ = writeln!(out, "constants = {{ {} }}", constants.join(", "));
    }
}

/// ElectroDB's declaration of an entity, with the keys it gives as read from the items.
fn render_electrodb(out: &mut String, shared: &SharedKeys, edb: &ElectroDbKeys) {
    let keys: Vec<String> = shared
        .keys
        .iter()
        .map(|(attribute, template, _)| format!("{attribute} = `{template}`"))
        .collect();
    comment(
        out,
        &format!(
            "ElectroDB's declaration: it gives exactly the keys read back from the items ({}), \
             lowercased, with `__edb_e__ = \"{}\"` and `__edb_v__ = \"{}\"`",
            keys.join(", "),
            edb.entity,
            edb.version
        ),
    );
    let list = |fields: &[String]| {
        let fields: Vec<String> = fields.iter().map(|f| string(f)).collect();
        format!("[{}]", fields.join(", "))
    };
    let mut parts = vec![
        format!("service = {}", string(&edb.service)),
        format!("entity = {}", string(&edb.entity)),
        format!("version = {}", string(&edb.version)),
        format!("pk = {}", list(&edb.pk)),
    ];
    if !edb.sk.is_empty() {
        parts.push(format!("sk = {}", list(&edb.sk)));
    }
    if !edb.indexes.is_empty() {
        let indexes: Vec<String> = edb
            .indexes
            .iter()
            .map(|(name, pk, sk)| {
                let mut index = format!("pk = {}", list(pk));
                if !sk.is_empty() {
                    let _ = write!(index, ", sk = {}", list(sk));
                }
                format!("{} = {{ {index} }}", key(name))
            })
            .collect();
        parts.push(format!("indexes = {{ {} }}", indexes.join(", ")));
    }
    let _ = writeln!(out, "electrodb = {{ {} }}", parts.join(", "));
}

/// An entity's relations and connections.
fn render_links(out: &mut String, entity: &EntityProposal) {
    let name = key(&entity.name);
    for relation in &entity.relations {
        comment(out, &relation.evidence);
        if let Some(review) = &relation.review {
            comment(out, &format!("review: {review}"));
        }
        let _ = writeln!(out, "[entities.{name}.relations.{}]", key(&relation.name));
        let _ = writeln!(out, "type = {}", string(&relation.target));
        let keys: Vec<String> = relation.key.iter().map(|k| string(k)).collect();
        let _ = writeln!(out, "key = [{}]", keys.join(", "));
        let through = match &relation.index {
            Some(index) => {
                let _ = writeln!(out, "index = {}", string(index));
                format!(" in index {index}")
            }
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "description = {}\n",
            string(&format!(
                "The {} whose key{through} `{}` holds; null when there is none.",
                relation.target,
                relation.key.join("`, `")
            ))
        );
    }
    for connection in &entity.connections {
        render_connection(out, &format!("entities.{name}.connections"), connection);
    }
}

fn render_field(out: &mut String, field: &FieldProposal) {
    comment(out, &field.evidence);
    if let Some(review) = &field.review {
        comment(out, &format!("review: {review}"));
    }
    let mut parts = vec![format!("type = {}", string(&field.ty))];
    if field.attribute != field.name {
        parts.push(format!("attribute = {}", string(&field.attribute)));
    }
    if let Some(stored_as) = field.stored_as {
        parts.push(format!("stored_as = {}", string(stored_as)));
    }
    parts.push(format!(
        "description = {}",
        string(&format!("The item's `{}` attribute.", field.attribute))
    ));
    let _ = writeln!(out, "{} = {{ {} }}", key(&field.name), parts.join(", "));
}

fn render_connection(out: &mut String, table: &str, c: &ConnectionProposal) {
    let _ = writeln!(out, "[{table}.{}]", key(&c.name));
    match &c.collection {
        Some((members, union)) => {
            let members: Vec<String> = members.iter().map(|m| string(m)).collect();
            let _ = writeln!(out, "members = [{}]", members.join(", "));
            let _ = writeln!(out, "union = {}", string(union));
        }
        None => {
            let _ = writeln!(out, "entity = {}", string(&c.entity));
        }
    }
    if let Some(index) = &c.index {
        let _ = writeln!(out, "index = {}", string(index));
    }
    if c.scan {
        out.push_str("scan = true\n");
    }
    match &c.partition {
        Some(PartitionFrom::Field(f)) => {
            let _ = writeln!(out, "partition = {{ field = {} }}", string(f));
        }
        Some(PartitionFrom::Argument(a)) => {
            let _ = writeln!(out, "partition = {{ argument = {} }}", string(a));
        }
        None => {}
    }
    if let Some(sort) = &c.sort {
        if !sort.fixed.is_empty() {
            let fixed: Vec<String> = sort
                .fixed
                .iter()
                .map(|f| match sort.optional {
                    true => format!(
                        "{{ name = {}, optional = true, description = {} }}",
                        string(f),
                        string(&format!(
                            "Only items of this `{f}`; every item of the partition when left out."
                        ))
                    ),
                    false => format!(
                        "{{ name = {}, description = {} }}",
                        string(f),
                        string(&format!("Only items of this `{f}`."))
                    ),
                })
                .collect();
            let _ = writeln!(out, "sort.fixed = [{}]", fixed.join(", "));
        }
        if let Some((min, max)) = &sort.range {
            let _ = writeln!(
                out,
                "sort.min = {{ name = {}, description = {} }}",
                string(min),
                string(&format!(
                    "Only items whose `{}` is at least this.",
                    sort.field
                ))
            );
            let _ = writeln!(
                out,
                "sort.max = {{ name = {}, description = {} }}",
                string(max),
                string(&format!(
                    "Only items whose `{}` is at most this.",
                    sort.field
                ))
            );
        }
        if let Some(prefix) = &sort.prefix {
            let _ = writeln!(
                out,
                "sort.begins_with = {{ name = {}, description = {} }}",
                string(prefix),
                string(&format!(
                    "Only items whose `{}` starts with this.",
                    sort.field
                ))
            );
        }
    }
    if !c.filters.is_empty() {
        comment(
            out,
            "review: filters on fields of a few values; a filter reads the items it leaves out \
             (they cost reads, and a page reads on until it is full): keep those the API needs.",
        );
    }
    for field in &c.filters {
        let _ = writeln!(
            out,
            "filters.{} = {{ field = {}, op = \"=\", description = {} }}",
            key(field),
            string(field),
            string(&format!("Only items whose `{field}` is this."))
        );
    }
    if !c.scan {
        let _ = writeln!(
            out,
            "order = {{ default = \"ASC\", description = {} }}",
            string("`ASC`: ascending (the default); `DESC`: descending.")
        );
    }
    let _ = writeln!(out, "description = {}\n", string(&c.description));
}
