//! Relations: a field of one entity that reads another entity's item by key.

use super::*;

impl Ctx<'_, '_> {
    pub(super) fn relations(&self, e: EntityId, out: &mut Problems) -> Vec<Relation> {
        let file = self.entities[e].file;
        in_file_order(&file.relations)
            .into_iter()
            .filter(|(_, relation)| !self.is_reference(relation))
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
        let through = match &file.index {
            Some(index) => Some(self.lookup_index(target, index, out)?),
            None => None,
        };
        if let (Some(index), true) = (&file.index, file.check_on_create) {
            out.error(
                index.span(),
                format!(
                    "relation `{}` finds its target through an index, which `check_on_create` \
                     cannot read in the create's conditional write",
                    name.get_ref()
                ),
            )
            .hint("leave `check_on_create` out, or relate through the target's table key");
            return None;
        }
        // Through an index, the fields give the index lookup's arguments: facets or fields.
        let templated = through.is_some() || !target_entity.templates.is_empty();
        let target_keys: &[FieldId] = match &through {
            Some(index) => &index.arguments,
            None => &target_entity.key_fields,
        };
        // What each relation field gives: a key attribute, or a facet of the target's key.
        let wanted: Vec<(String, KeyType)> = if templated {
            target_keys
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
                    target_keys
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
            index: through,
        })
    }
}
