//! Relations: a field of one entity that reads another entity's item by key.

use super::*;

impl Ctx<'_, '_> {
    pub(super) fn relations(&self, e: EntityId, out: &mut Problems) -> Vec<Relation> {
        let file = self.entities[e].file;
        in_file_order(&file.relations)
            .into_iter()
            .filter_map(|(name, relation)| self.relation(e, name, relation, out))
            .collect()
    }

    pub(super) fn relation(
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
