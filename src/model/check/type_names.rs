//! Enums, and the names of the types and root fields the schema will have: each unique, none
//! taken by a built-in or a generated type.

use super::*;

impl<'f> Ctx<'f, '_> {
    /// The place of the key at `path` in the document.
    pub(super) fn key_span(&self, path: &[&str]) -> Option<Range<usize>> {
        self.entry_span(path).map(|(key, _)| key)
    }

    /// The place of the value at `path` in the document.
    pub(super) fn value_span(&self, path: &[&str]) -> Option<Range<usize>> {
        self.entry_span(path).map(|(_, value)| value)
    }

    /// The places of the key and the value at `path` in the document.
    pub(super) fn entry_span(&self, path: &[&str]) -> Option<(Range<usize>, Range<usize>)> {
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

    pub(super) fn enum_type(
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
    pub(super) fn enum_value_spans(&self, name: &str) -> Vec<Range<usize>> {
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
pub(super) fn check_type_names(file: &ModelFile, out: &mut Problems) {
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
                    format!("{}CountedConnection", union.get_ref()),
                    format!("{}Edge", union.get_ref()),
                    format!("{}Change", union.get_ref()),
                ] {
                    names.push((g, union.span(), "union's generated type"));
                }
            }
        }
    }
    for (name, span, what) in &names {
        if file.federation.is_some() && FEDERATION_TYPES.contains(&name.as_str()) {
            out.error(
                span.clone(),
                format!("{what} `{name}` has the name of a type Apollo Federation adds"),
            )
            .hint(format!(
                "a subgraph's schema holds {}; choose another name",
                FEDERATION_TYPES.join(", ")
            ));
        } else if BUILTIN_TYPES.contains(&name.as_str()) {
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
    check_subscription_names(file, out);
}

/// Subscription field names: valid and unique.
fn check_subscription_names(file: &ModelFile, out: &mut Problems) {
    let connections = file
        .entities
        .values()
        .flat_map(|e| e.connections.values())
        .chain(file.connections.values());
    let mut names = Vec::new();
    for connection in connections {
        if let Some(subscription) = &connection.subscription {
            let name = match subscription.get_ref() {
                ArgumentFile::Name(name) | ArgumentFile::Described { name, .. } => name,
            };
            if check_name(subscription.span(), name, "subscription", out) {
                names.push((name.clone(), subscription.span(), "subscription"));
            }
        }
    }
    check_unique(&names, out);
}

/// Root field names: unique among lookups and connections, and not `node` or `nodes`.
pub(super) fn check_root_names(file: &ModelFile, out: &mut Problems) {
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
        } else if matches!(name.as_str(), "_service" | "_entities") {
            out.error(
                span.clone(),
                format!("root field `{name}` is one Apollo Federation uses"),
            )
            .hint("a federated subgraph answers `_service` and `_entities` for the gateway; choose another name");
        }
    }
    check_unique(&names, out);
}
