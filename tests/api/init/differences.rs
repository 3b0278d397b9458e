//! How a model `init` wrote differs from the hand-written one over the same tables, one line a
//! difference, each part matched by what it reads rather than by its name.

use dynarelay::model::{Entity, FieldType, Model, Read, Scalar};

use super::walk::graphql_type;

/// How a field is stored, when that is not the type's default.
fn storage(ty: &FieldType) -> String {
    match ty {
        FieldType::Scalar(Scalar::DateTime(format)) => format!(" stored as {format:?}"),
        FieldType::List { set: true, .. } => " stored as a set".to_owned(),
        _ => String::new(),
    }
}

/// The ways `inferred` differs from `hand`, one per line: entities, fields, relations, lookups,
/// connections and mutations, each matched by what it reads (table, attribute, key, index) rather
/// than by name.
pub(super) fn differences(hand: &Model, inferred: &Model) -> String {
    let mut out = Vec::new();
    for h in &hand.entities {
        let table = &hand.tables[h.table].name;
        let kind = type_of;
        let Some(i) = inferred.entities.iter().find(|e| {
            inferred.tables[e.table].name == *table && kind(inferred, e) == kind(hand, h)
        }) else {
            out.push(format!("{}: no entity over table {table}", h.name));
            continue;
        };
        if h.name != i.name {
            out.push(format!("{}: named {}", h.name, i.name));
        }
        for hf in &h.fields {
            let Some(f) = i.fields.iter().find(|f| f.attribute == hf.attribute) else {
                out.push(format!(
                    "{}.{}: no field (no sampled item holds `{}`)",
                    h.name, hf.name, hf.attribute
                ));
                continue;
            };
            let (ht, it) = (
                format!(
                    "{}{}",
                    graphql_type(hand, &hf.ty, hf.nullable),
                    storage(&hf.ty)
                ),
                format!(
                    "{}{}",
                    graphql_type(inferred, &f.ty, f.nullable),
                    storage(&f.ty)
                ),
            );
            if ht != it {
                out.push(format!(
                    "{}.{}: {ht} by hand, {it} inferred",
                    h.name, hf.name
                ));
            }
            if hf.name != f.name {
                out.push(format!("{}.{}: named {}", h.name, hf.name, f.name));
            }
        }
        for f in &i.fields {
            if !h.fields.iter().any(|hf| hf.attribute == f.attribute) {
                out.push(format!("{}.{}: inferred only", h.name, f.name));
            }
        }
        let relation = |m: &Model, e: &Entity, r: &dynarelay::model::Relation| {
            let keys: Vec<&str> = r
                .key
                .iter()
                .map(|&k| e.fields[k].attribute.as_str())
                .collect();
            (
                m.tables[m.entities[r.target].table].name.clone(),
                keys.join(","),
            )
        };
        for hr in &h.relations {
            let want = relation(hand, h, hr);
            match i
                .relations
                .iter()
                .find(|r| relation(inferred, i, r) == want)
            {
                None => out.push(format!("{}.{}: no relation", h.name, hr.name)),
                Some(r) if r.name != hr.name => {
                    out.push(format!("{}.{}: named {}", h.name, hr.name, r.name))
                }
                Some(_) => {}
            }
        }
        for ir in &i.relations {
            let got = relation(inferred, i, ir);
            if !h.relations.iter().any(|r| relation(hand, h, r) == got) {
                out.push(format!("{}.{}: inferred only", h.name, ir.name));
            }
        }
        let m = &h.mutations;
        let mutations = [
            (m.create.is_some(), "create"),
            (m.update.is_some(), "update"),
            (m.delete.is_some(), "delete"),
        ];
        for (on, name) in mutations {
            if on {
                out.push(format!("{}: {name} mutation by hand only", h.name));
            }
        }
        connection_differences(
            hand,
            inferred,
            &h.connections,
            &i.connections,
            &h.name,
            &mut out,
        );
    }
    connection_differences(
        hand,
        inferred,
        &hand.connections,
        &inferred.connections,
        "Query",
        &mut out,
    );
    // A lookup by what it reads: the table, the type's items in a table of several, the index.
    let lookup = |m: &Model, l: &dynarelay::model::Lookup| {
        let entity = &m.entities[l.entity];
        let table = &m.tables[entity.table];
        let of = type_of(m, entity).map_or(String::new(), |t| format!(" for `{t}` items"));
        let through = l.index.as_ref().map_or(String::new(), |i| {
            format!(" through index {}", table.indexes[i.index].name)
        });
        format!("{}{of}{through}", table.name)
    };
    for hl in &hand.lookups {
        match inferred
            .lookups
            .iter()
            .find(|l| lookup(inferred, l) == lookup(hand, hl))
        {
            None => out.push(format!("Query.{}: no lookup", hl.name)),
            Some(l) if l.name != hl.name => {
                out.push(format!("Query.{}: named {}", hl.name, l.name))
            }
            Some(_) => {}
        }
    }
    for il in &inferred.lookups {
        if !hand
            .lookups
            .iter()
            .any(|l| lookup(hand, l) == lookup(inferred, il))
        {
            out.push(format!(
                "Query.{}: inferred only (a lookup in {})",
                il.name,
                lookup(inferred, il)
            ));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// In a table of several types, which one `entity` is: its type attribute's value, or, in a
/// table without one, its name.
fn type_of(m: &Model, entity: &Entity) -> Option<String> {
    let table = &m.tables[entity.table];
    if table.type_attribute.is_some() {
        return Some(
            entity
                .type_value
                .clone()
                .unwrap_or_else(|| entity.name.clone()),
        );
    }
    let shared = m
        .entities
        .iter()
        .filter(|e| e.table == entity.table)
        .count()
        > 1;
    shared.then(|| entity.name.clone())
}

/// Connections matched by what they read: the table, the index, and a Scan or a Query (with
/// its sort-key arguments).
fn connection_differences(
    hand: &Model,
    inferred: &Model,
    h: &[dynarelay::model::Connection],
    i: &[dynarelay::model::Connection],
    owner: &str,
    out: &mut Vec<String>,
) {
    let what = |m: &Model, c: &dynarelay::model::Connection| {
        let entity = &m.entities[c.entity];
        let table = &m.tables[entity.table];
        let read = if matches!(c.read, Read::Scan) {
            "a Scan"
        } else {
            "Queries"
        };
        let of = match &c.collection {
            Some(collection) => {
                let mut members: Vec<&str> = collection
                    .members
                    .iter()
                    .map(|&e| m.entities[e].name.as_str())
                    .collect();
                members.sort_unstable();
                format!(" for the collection of {}", members.join(", "))
            }
            None => type_of(m, entity).map_or(String::new(), |t| format!(" for `{t}` items")),
        };
        match c.index {
            Some(x) => format!(
                "{read} of {} index {}{of}",
                table.name, table.indexes[x].name
            ),
            None => format!("{read} of {}{of}", table.name),
        }
    };
    // Sort conditions by what they condition: the attributes of the fixed facets, and of the
    // facet or field `min`/`max` and `begins_with` bound.
    let conditions = |m: &Model, c: &dynarelay::model::Connection| match &c.read {
        Read::Query { sort: Some(s), .. } => {
            let fields = &m.entities[c.entity].fields;
            let mut parts = Vec::new();
            if !s.fixed.is_empty() {
                let fixed: Vec<&str> = s
                    .fixed
                    .iter()
                    .map(|(f, _)| fields[*f].attribute.as_str())
                    .collect();
                parts.push(format!("fixed {}", fixed.join(", ")));
            }
            let on = &fields[s.field].attribute;
            if s.min.is_some() || s.max.is_some() {
                parts.push(format!("min/max on {on}"));
            }
            if s.begins_with.is_some() {
                parts.push(format!("begins_with on {on}"));
            }
            parts.join("; ")
        }
        _ => String::new(),
    };
    // The attributes of the fixed facets.
    let fixed = |m: &Model, c: &dynarelay::model::Connection| -> Vec<String> {
        match &c.read {
            Read::Query { sort: Some(s), .. } => s
                .fixed
                .iter()
                .map(|(f, _)| m.entities[c.entity].fields[*f].attribute.clone())
                .collect(),
            _ => Vec::new(),
        }
    };
    let sort_args = |c: &dynarelay::model::Connection| match &c.read {
        Read::Query { sort: Some(s), .. } => {
            let names: Vec<&str> = s
                .fixed
                .iter()
                .map(|(_, a)| a)
                .chain([&s.min, &s.max, &s.begins_with].into_iter().flatten())
                .map(|a| a.name.as_str())
                .collect();
            names.join(", ")
        }
        _ => String::new(),
    };
    for hc in h {
        // The inferred connection reading the same, with the same conditions when there is one.
        let same: Vec<&dynarelay::model::Connection> = i
            .iter()
            .filter(|c| what(inferred, c) == what(hand, hc))
            .collect();
        let found = same
            .iter()
            .find(|c| conditions(inferred, c) == conditions(hand, hc))
            .or_else(|| same.iter().find(|c| fixed(inferred, c) == fixed(hand, hc)))
            .or(same.first());
        match found {
            None => out.push(format!(
                "{owner}.{}: no connection ({})",
                hc.name,
                what(hand, hc)
            )),
            Some(c) => {
                if c.name != hc.name {
                    out.push(format!("{owner}.{}: named {}", hc.name, c.name));
                }
                let (hs, is) = (conditions(hand, hc), conditions(inferred, c));
                if hs != is {
                    out.push(format!(
                        "{owner}.{}: sort conditions ({hs}) by hand, ({is}) inferred",
                        hc.name
                    ));
                } else if sort_args(hc) != sort_args(c) {
                    out.push(format!(
                        "{owner}.{}: sort arguments named ({}) by hand, ({}) inferred",
                        hc.name,
                        sort_args(hc),
                        sort_args(c)
                    ));
                }
                if hc.filters.len() != c.filters.len() {
                    out.push(format!(
                        "{owner}.{}: {} filters by hand, {} inferred",
                        hc.name,
                        hc.filters.len(),
                        c.filters.len()
                    ));
                }
            }
        }
    }
    for ic in i {
        // Inferred only: nothing by hand reads the same, or, of several inferred connections
        // reading the same, one whose fixed facets none by hand has.
        let same = |c: &&dynarelay::model::Connection| what(hand, c) == what(inferred, ic);
        let several = i
            .iter()
            .filter(|c| what(inferred, c) == what(inferred, ic))
            .count()
            > 1;
        let matched = h
            .iter()
            .filter(same)
            .any(|c| !several || fixed(hand, c) == fixed(inferred, ic));
        if !matched {
            let with = if several {
                format!(", sort conditions ({})", conditions(inferred, ic))
            } else {
                String::new()
            };
            out.push(format!(
                "{owner}.{}: inferred only ({}{with})",
                ic.name,
                what(inferred, ic)
            ));
        }
    }
}
