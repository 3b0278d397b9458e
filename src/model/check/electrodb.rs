//! ElectroDB's key grammar: an entity declared with `electrodb = { service, entity, version,
//! pk, sk, indexes }` gets the `keys`, casing, escaping, type value and constants that ElectroDB
//! itself writes, before the other passes check it as any entity with templates. ElectroDB
//! builds a partition key as `$<service>` then `#<attribute>_<value>` per composite, and a sort
//! key as `$<entity>_<version>` (after `$<collection>#` in a collection, where the entity part
//! is `#<entity>_<version>`) then the same per composite; an index with no sort key carries the
//! entity part at the end of its partition key; the whole key is lowercased by default
//! (electrodb 3's `_makeIndexPrefixes` and `_makeKey`).

use super::*;
use crate::model::file::KeyCaseFile;

/// The attribute ElectroDB names each item's entity in.
const ENTITY_ATTRIBUTE: &str = "__edb_e__";
/// The attribute ElectroDB names each item's entity version in.
const VERSION_ATTRIBUTE: &str = "__edb_v__";

/// Writes the keys and settings of every entity declared with `electrodb` into its file entry.
pub(super) fn expand(file: &mut ModelFile, out: &mut Problems) {
    let ModelFile {
        tables, entities, ..
    } = file;
    for (name, entity) in entities.iter_mut() {
        let Some(edb) = entity.electrodb.take() else {
            continue;
        };
        let span = edb.span();
        let at = |value: String| Spanned::new(span.clone(), value);
        for (set, what) in [
            (!entity.keys.is_empty(), "keys"),
            (entity.escape_keys.is_some(), "escape_keys"),
            (entity.key_case.is_some(), "key_case"),
            (entity.type_value.is_some(), "type_value"),
            (!entity.constants.is_empty(), "constants"),
        ] {
            if set {
                out.error(
                    span.clone(),
                    format!(
                        "entity `{}` is declared with `electrodb`, which gives its `{what}`",
                        name.get_ref()
                    ),
                )
                .hint(format!("leave `{what}` out"));
            }
        }
        let Some(table) = tables
            .iter()
            .find(|(t, _)| t.get_ref() == entity.table.get_ref())
            .map(|(_, t)| t)
        else {
            // The table pass reports an unknown table.
            continue;
        };
        if table.type_attribute.as_ref().map(|a| a.get_ref().as_str()) != Some(ENTITY_ATTRIBUTE) {
            out.error(
                span.clone(),
                format!(
                    "ElectroDB names each item's entity in `{ENTITY_ATTRIBUTE}`, and table `{}` has \
                     another `type_attribute`, or none",
                    entity.table.get_ref()
                ),
            )
            .hint(format!("set `type_attribute = \"{ENTITY_ATTRIBUTE}\"` on the table"));
        }
        let edb = edb.into_inner();
        // ElectroDB labels each composite with its attribute's name.
        let label = |field: &str| -> String {
            entity
                .fields
                .iter()
                .find(|(f, _)| f.get_ref() == field)
                .and_then(|(_, f)| f.attribute.as_ref().map(|a| a.get_ref().clone()))
                .unwrap_or_else(|| field.to_owned())
        };
        let composites = |fields: &[String]| -> String {
            fields
                .iter()
                .map(|f| format!("#{}_{{{f}}}", label(f)))
                .collect()
        };
        let version = edb.version.clone().unwrap_or_else(|| "1".to_owned());
        let entity_part = |collection: &Option<String>| match collection {
            Some(collection) => format!("${collection}#{}_{version}", edb.entity),
            None => format!("${}_{version}", edb.entity),
        };
        let mut keys: Vec<(String, String)> = Vec::new();
        let index_keys = |keys: &mut Vec<(String, String)>,
                          out: &mut Problems,
                          (pk_attr, sk_attr): (Option<String>, Option<String>),
                          (pk, sk): (&[String], &[String]),
                          collection: &Option<String>,
                          what: &str| {
            let mut partition = format!("${}{}", edb.service, composites(pk));
            let sort = format!("{}{}", entity_part(collection), composites(sk));
            match sk_attr {
                Some(sk_attr) => keys.push((sk_attr, sort)),
                None if !sk.is_empty() => {
                    out.error(
                        span.clone(),
                        format!("{what} has no sort key for the `sk` composites to go in"),
                    );
                }
                None => partition.push_str(&sort),
            }
            if let Some(pk_attr) = pk_attr {
                keys.push((pk_attr, partition));
            }
        };
        index_keys(
            &mut keys,
            out,
            (
                Some(table.partition_key.get_ref().clone()),
                table.sort_key.as_ref().map(|s| s.get_ref().clone()),
            ),
            (&edb.pk, &edb.sk),
            &edb.collection,
            &format!("table `{}`", entity.table.get_ref()),
        );
        for (index, keyed) in &edb.indexes {
            let Some((_, declared)) = table.indexes.iter().find(|(i, _)| i.get_ref() == index)
            else {
                out.error(
                    span.clone(),
                    format!(
                        "`electrodb.indexes.{index}`: table `{}` has no index `{index}`",
                        entity.table.get_ref()
                    ),
                );
                continue;
            };
            // A local index shares the table's partition key, which the table index gives.
            let pk_attr = declared.partition_key.as_ref().map(|a| a.get_ref().clone());
            index_keys(
                &mut keys,
                out,
                (
                    pk_attr,
                    declared.sort_key.as_ref().map(|a| a.get_ref().clone()),
                ),
                (&keyed.pk, &keyed.sk),
                &keyed.collection,
                &format!("index `{index}`"),
            );
        }
        entity.keys = keys
            .into_iter()
            .map(|(attribute, template)| (at(attribute), at(template)))
            .collect();
        entity.escape_keys = Some(Spanned::new(span.clone(), false));
        entity.key_case = Some(Spanned::new(
            span.clone(),
            edb.casing.unwrap_or(KeyCaseFile::Lower),
        ));
        entity.type_value = Some(at(edb.entity.clone()));
        entity.constants = [(at(VERSION_ATTRIBUTE.to_owned()), at(version))]
            .into_iter()
            .collect();
    }
}
