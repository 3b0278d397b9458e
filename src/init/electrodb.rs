//! An ElectroDB entity's keys read back as ElectroDB declares them: the service, entity,
//! version and composites of `electrodb = { … }`, when the templates read from the items are
//! exactly the keys that declaration gives (as `dynarelay check` expands it: a partition key
//! `$<service>#<attribute>_<value>…`, a sort key `$<entity>_<version>#<attribute>_<value>…`,
//! lowercased; an index with no sort key carries the entity part at the end of its partition
//! key). Anything else (collections, other casings, padded numbers, values only the keys hold)
//! stays as plain templates.

use crate::dynamo::sample::{LiveKey, LiveTable};

use super::{
    proposal::{ElectroDbKeys, FieldProposal, SharedKeys},
    templates::{Piece, Template},
};

/// The declaration for an entity of type value `entity` whose keys are `keys`, if its templates
/// are ElectroDB's.
pub fn declaration(
    keys: &SharedKeys,
    live: &LiveTable,
    fields: &[FieldProposal],
    entity: &str,
) -> Option<ElectroDbKeys> {
    let version = keys
        .constants
        .iter()
        .find(|(n, _)| n == "__edb_v__")
        .map(|(_, v)| v.clone())?;
    let template = |attribute: &str| {
        keys.templates
            .iter()
            .find(|(a, _)| a == attribute)
            .map(|(_, t)| t)
    };
    // A template's composites, or `None` if it holds a key-only value or a padded number.
    let composites = |t: &Template| -> Option<Vec<String>> {
        t.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Facet {
                    attribute,
                    width: None,
                } => Some(Some(attribute.clone())),
                Piece::Facet { .. } | Piece::KeyOnly(..) => Some(None),
                Piece::Literal(_) => None,
            })
            .collect()
    };
    let partition = template(&live.partition.name)?;
    // Lowercased keys: read as such, or with no capital in their text (`$member_1`).
    let lowercase = |t: &Template| {
        t.lower
            || t.pieces.iter().all(|p| match p {
                Piece::Literal(text) => !text.chars().any(char::is_uppercase),
                _ => true,
            })
    };
    if !keys.lower || !keys.templates.iter().all(|(_, t)| lowercase(t)) {
        return None;
    }
    let service = match partition.pieces.first()? {
        Piece::Literal(text) => text.strip_prefix('$')?.split('#').next()?.to_owned(),
        _ => return None,
    };
    let mut declared = ElectroDbKeys {
        service,
        entity: entity.to_owned(),
        version,
        pk: Vec::new(),
        sk: Vec::new(),
        indexes: Vec::new(),
    };
    // The composites of each key pair: the sort key's, and the partition key's once the entity
    // part an index without a sort key carries is taken off.
    let split = |pk: &Template, sk: Option<&LiveKey>| -> Option<(Vec<String>, Vec<String>)> {
        match sk {
            Some(sk) => Some((composites(pk)?, composites(template(&sk.name)?)?)),
            None => Some((composites(pk)?, Vec::new())),
        }
    };
    (declared.pk, declared.sk) = split(partition, live.sort.as_ref())?;
    for index in &live.indexes {
        let pk = template(&index.partition.name);
        let sk = index.sort.as_ref().and_then(|s| template(&s.name));
        match (pk, sk, &index.sort) {
            (None, None, _) => continue,
            (Some(pk), _, sort) if !index.local => {
                let (pk, sk) = split(pk, sort.as_ref())?;
                declared.indexes.push((index.name.clone(), pk, sk));
            }
            _ => return None,
        }
    }
    // The keys the declaration gives, held to the templates read, whole (a key without a sort
    // key, whose composites after the entity part are taken as the partition's, fails here).
    let label = |field: &str| {
        fields
            .iter()
            .find(|f| f.name == field)
            .map_or(field, |f| f.attribute.as_str())
            .to_lowercase()
    };
    let text = |composites: &[String]| -> String {
        composites
            .iter()
            .map(|f| format!("#{}_{{{f}}}", label(f)))
            .collect()
    };
    let entity_part = format!("${}_{}", declared.entity, declared.version).to_lowercase();
    let mut expected: Vec<(String, String)> = Vec::new();
    let mut pair = |pk_attr: &str, sk_attr: Option<&str>, pk: &[String], sk: &[String]| {
        let mut partition = format!("${}{}", declared.service, text(pk));
        let sort = format!("{entity_part}{}", text(sk));
        match sk_attr {
            Some(sk_attr) => expected.push((sk_attr.to_owned(), sort)),
            None => partition.push_str(&sort),
        }
        expected.push((pk_attr.to_owned(), partition));
    };
    pair(
        &live.partition.name,
        live.sort.as_ref().map(|s| s.name.as_str()),
        &declared.pk,
        &declared.sk,
    );
    for (name, pk, sk) in &declared.indexes {
        let index = live.indexes.iter().find(|i| i.name == *name)?;
        pair(
            &index.partition.name,
            index.sort.as_ref().map(|s| s.name.as_str()),
            pk,
            sk,
        );
    }
    let read = |attribute: &str| {
        template(attribute).map(|t| {
            t.text(|p| match p {
                Piece::Facet { attribute, .. } | Piece::KeyOnly(attribute, _) => attribute.clone(),
                Piece::Literal(_) => String::new(),
            })
        })
    };
    let lowered = |text: &str| {
        // Literal text lowercased, facet names as they are.
        let mut out = String::new();
        let mut inside = false;
        for c in text.chars() {
            match c {
                '{' => inside = true,
                '}' => inside = false,
                _ => {}
            }
            if inside {
                out.push(c);
            } else {
                out.extend(c.to_lowercase());
            }
        }
        out
    };
    let same = expected.len() == keys.templates.len()
        && expected.iter().all(|(attribute, want)| {
            read(attribute).is_some_and(|got| lowered(&got) == lowered(want))
        });
    same.then_some(declared)
}
