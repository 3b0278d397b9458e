//! `[federation]`: the types of other subgraphs this model's relations refer to, and those
//! relations (references).

use super::*;

/// The GraphQL types a key field of another subgraph's type may have here.
const KEY_TYPES: [&str; 3] = ["ID", "String", "Int"];

impl<'f> Ctx<'f, '_> {
    /// Checks `[federation.types]` and keeps each type that is sound.
    pub(super) fn external_types(&mut self, file: &'f ModelFile, out: &mut Problems) {
        let Some(federation) = &file.federation else {
            return;
        };
        for (name, ty) in in_file_order(&federation.get_ref().types) {
            if !check_name(name.span(), name.get_ref(), "federation type", out) {
                continue;
            }
            if self.entity_ids.contains_key(name.get_ref().as_str())
                || self.enum_ids.contains_key(name.get_ref().as_str())
                || BUILTIN_TYPES.contains(&name.get_ref().as_str())
            {
                out.error(
                    name.span(),
                    format!(
                        "federation type `{}` has the name of a type of this model",
                        name.get_ref()
                    ),
                )
                .hint("a federation type is another subgraph's; name it as that subgraph does, and no entity, enum or built-in type here the same");
                continue;
            }
            let mut fields: Vec<(&Spanned<String>, &Spanned<String>)> =
                ty.key.get_ref().iter().collect();
            fields.sort_by_key(|(field, _)| field.span().start);
            if fields.is_empty() {
                out.error(
                    ty.key.span(),
                    format!("federation type `{}` has no key fields", name.get_ref()),
                )
                .hint("write the fields of its `@key` with their types: `key = { id = \"ID!\" }`");
                continue;
            }
            let mut key = Vec::new();
            for (field, written) in fields {
                let base = written.get_ref().trim().trim_end_matches('!').trim_end();
                if !check_name(field.span(), field.get_ref(), "key field", out) {
                    continue;
                }
                if !KEY_TYPES.contains(&base) {
                    out.error(
                        written.span(),
                        format!(
                            "key field `{}` of federation type `{}` has type `{}`",
                            field.get_ref(),
                            name.get_ref(),
                            written.get_ref()
                        ),
                    )
                    .hint("a reference's key fields are `ID`, `String` or `Int` (with `!` as the owning subgraph declares them)");
                    continue;
                }
                key.push((field.get_ref().clone(), written.get_ref().trim().to_owned()));
            }
            if key.len() != ty.key.get_ref().len() {
                continue;
            }
            self.external_ids
                .insert(name.get_ref().as_str(), self.external.len());
            self.external.push(ExternalType {
                name: name.get_ref().clone(),
                description: ty.description.clone(),
                key,
            });
        }
    }

    /// The relations of entity `e` whose type is another subgraph's.
    pub(super) fn references(&self, e: EntityId, out: &mut Problems) -> Vec<Reference> {
        let file = self.entities[e].file;
        in_file_order(&file.relations)
            .into_iter()
            .filter_map(|(name, relation)| {
                let (target, nullable) = split_type(relation.ty.get_ref());
                let target = *self.external_ids.get(target)?;
                self.reference(e, name, relation, target, nullable, out)
            })
            .collect()
    }

    /// Whether `relation` names another subgraph's type (checked by [`Self::references`]).
    pub(super) fn is_reference(&self, relation: &RelationFile) -> bool {
        self.external_ids
            .contains_key(split_type(relation.ty.get_ref()).0)
    }

    fn reference(
        &self,
        e: EntityId,
        name: &Spanned<String>,
        file: &RelationFile,
        target: usize,
        nullable: bool,
        out: &mut Problems,
    ) -> Option<Reference> {
        let ty = &self.external[target];
        if let Some(index) = &file.index {
            out.error(
                index.span(),
                format!(
                    "relation `{}` refers to `{}`, another subgraph's type, which has no index here",
                    name.get_ref(),
                    ty.name
                ),
            )
            .hint("leave `index` out: the gateway finds the item by its key in its own subgraph");
            return None;
        }
        if file.check_on_create {
            out.error(
                file.ty.span(),
                format!(
                    "relation `{}` refers to `{}`, another subgraph's type, whose items `check_on_create` cannot read",
                    name.get_ref(),
                    ty.name
                ),
            )
            .hint("leave `check_on_create` out");
            return None;
        }
        let fields = file.key.get_ref();
        if fields.len() != ty.key.len() {
            out.error(
                file.key.span(),
                format!(
                    "relation `{}` gives {} key field(s), but `{}` is keyed by {}",
                    name.get_ref(),
                    fields.len(),
                    ty.name,
                    ty.key.len()
                ),
            )
            .hint(format!(
                "list the fields holding {}, in that order",
                ty.key
                    .iter()
                    .map(|(f, _)| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            return None;
        }
        let mut key = Vec::new();
        for (field_name, (key_field, key_type)) in fields.iter().zip(&ty.key) {
            let field = self.field_named(e, field_name, out)?;
            let f = &self.entities[e].entity.fields[field];
            let base = key_type.trim_end_matches('!');
            let fits = match f.ty {
                FieldType::Scalar(Scalar::String | Scalar::Id) => matches!(base, "ID" | "String"),
                FieldType::Scalar(Scalar::Int) => base == "Int",
                _ => false,
            };
            if !fits {
                out.error(
                    field_name.span(),
                    format!(
                        "field `{}` of type `{}` cannot hold key field `{key_field}` of `{}`, of type `{key_type}`",
                        f.name,
                        self.type_text(&f.ty, f.nullable),
                        ty.name
                    ),
                )
                .hint("`ID` and `String` keys come from `String` or `ID` fields, `Int` keys from `Int` fields");
                return None;
            }
            if f.nullable && !nullable {
                out.error(
                    file.ty.span(),
                    format!(
                        "relation `{}` is `{}`, but field `{}` may be missing",
                        name.get_ref(),
                        file.ty.get_ref(),
                        f.name
                    ),
                )
                .hint(format!(
                    "write `type = \"{}\"`: null when the item holds no key",
                    ty.name
                ));
                return None;
            }
            key.push(field);
        }
        Some(Reference {
            name: name.get_ref().clone(),
            description: file.description.clone(),
            target,
            nullable,
            key,
        })
    }
}

/// A relation's type as written: the type's name, and whether it may be null.
fn split_type(written: &str) -> (&str, bool) {
    let written = written.trim();
    match written.strip_suffix('!') {
        Some(rest) => (rest.trim_end(), false),
        None => (written, true),
    }
}
