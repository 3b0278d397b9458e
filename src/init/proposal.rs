//! What `init` proposes, as data: the tables read ([`TableInput`]) and the model inferred from
//! them ([`Proposal`]: tables, enums, entities with their fields, relations and connections, root
//! lookups and connections), each inference with its evidence, for [`super::render`] to write
//! out. With the constructors that the inference of tables of one type ([`super::infer`]) and of
//! several ([`super::shared_table`]) share: entities, root connections, a sort key's arguments,
//! and which indexes a connection may read.

use crate::dynamo::{
    Item,
    sample::{KeyKind, LiveIndex, LiveProjection, LiveTable},
};

use super::names::{Taken, camel, index_suffix, pascal, plural};

/// A proposed model.
#[derive(Debug, Default)]
pub struct Proposal {
    /// Its tables, in the order they were read.
    pub tables: Vec<TableProposal>,
    /// Its enums.
    pub enums: Vec<EnumProposal>,
    /// Its entities, one per table.
    pub entities: Vec<EntityProposal>,
    /// Root lookups.
    pub lookups: Vec<LookupProposal>,
    /// Root connections.
    pub connections: Vec<ConnectionProposal>,
}

/// A table of the model.
#[derive(Debug)]
pub struct TableProposal {
    /// Its name in the model (without the prefix).
    pub name: String,
    /// What DynamoDB says of it.
    pub live: LiveTable,
    /// Items sampled.
    pub sampled: usize,
    /// Remarks for the file: what was seen and left out.
    pub notes: Vec<String>,
    /// The attribute naming each item's type, in a table of several types that has one.
    pub type_attribute: Option<String>,
    /// Whether it holds several types (then [`EntityProposal::shared`] is set on each).
    pub shared: bool,
}

/// An enum proposed for a string attribute that holds a few repeated values.
#[derive(Debug)]
pub struct EnumProposal {
    /// Its GraphQL name.
    pub name: String,
    /// Its values, each with how often it was seen.
    pub values: Vec<(String, usize)>,
    /// The entity and field it was made for.
    pub field: String,
}

/// An entity: the items of one table.
#[derive(Debug)]
pub struct EntityProposal {
    /// Its GraphQL name.
    pub name: String,
    /// Its table's name in the model.
    pub table: String,
    /// Its global ids' tag.
    pub id_tag: String,
    /// Its fields, keys first.
    pub fields: Vec<FieldProposal>,
    /// Its relations to other entities.
    pub relations: Vec<RelationProposal>,
    /// Its connections to other entities' items.
    pub connections: Vec<ConnectionProposal>,
    /// Its table's position in [`Proposal::tables`].
    pub table_at: usize,
    /// How its items are told apart in a table of several types.
    pub shared: Option<SharedKeys>,
    /// Its items' positions in its table's sample.
    pub sampled: Vec<usize>,
}

/// An entity's keys in a table of several types.
#[derive(Debug, Clone, Default)]
pub struct SharedKeys {
    /// The table's type attribute's value on its items, when not the entity's name.
    pub type_value: Option<String>,
    /// Key attributes and their templates, each with its evidence.
    pub keys: Vec<(String, String, String)>,
    /// Keys written in lower case (ElectroDB).
    pub lower: bool,
    /// Facets are written with escapes, as dynarelay writes them (the keys hold its escapes).
    pub escaped: bool,
    /// Attributes written on every item besides the fields (ElectroDB's `__edb_v__`).
    pub constants: Vec<(String, String)>,
    /// The templates by attribute, for connections.
    pub templates: Vec<(String, super::templates::Template)>,
    /// ElectroDB's declaration, when the templates are the keys it gives.
    pub electrodb: Option<ElectroDbKeys>,
}

/// An ElectroDB entity's declaration (`electrodb = { … }`), composites by field.
#[derive(Debug, Clone, Default)]
pub struct ElectroDbKeys {
    /// `model.service`.
    pub service: String,
    /// `model.entity`.
    pub entity: String,
    /// `model.version`.
    pub version: String,
    /// The table index's partition key composites.
    pub pk: Vec<String>,
    /// The table index's sort key composites.
    pub sk: Vec<String>,
    /// Secondary indexes: name, partition and sort key composites.
    pub indexes: Vec<(String, Vec<String>, Vec<String>)>,
}

/// A field.
#[derive(Debug, Clone)]
pub struct FieldProposal {
    /// Its GraphQL name.
    pub name: String,
    /// The attribute it reads.
    pub attribute: String,
    /// Its GraphQL type, with `!` and `[...]`.
    pub ty: String,
    /// `stored_as`, when not the default for the type.
    pub stored_as: Option<&'static str>,
    /// What the sample showed, for a comment.
    pub evidence: String,
    /// What to check by hand, if anything.
    pub review: Option<String>,
    /// For a key attribute: its role and DynamoDB type.
    pub key: Option<(KeyRole, KeyKind)>,
}

/// Which key an attribute is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// The table's partition key.
    Partition,
    /// The table's sort key.
    Sort,
    /// A key of a secondary index.
    Index,
}

impl EntityProposal {
    /// An entity of table `table` (at `table_at`) with these fields, before its id tag,
    /// relations and connections are given.
    pub(super) fn new(
        name: String,
        table: &str,
        table_at: usize,
        fields: Vec<FieldProposal>,
        shared: Option<SharedKeys>,
        sampled: Vec<usize>,
    ) -> Self {
        Self {
            name,
            table: table.to_owned(),
            id_tag: String::new(),
            fields,
            relations: Vec::new(),
            connections: Vec::new(),
            table_at,
            shared,
            sampled,
        }
    }
}

impl FieldProposal {
    /// The type's name without `!` or `[...]`.
    pub fn base(&self) -> &str {
        self.ty.trim_matches(|c| matches!(c, '[' | ']' | '!'))
    }

    /// Gives the type a new name, keeping its `!` and `[...]`.
    pub(super) fn set_base(&mut self, base: &str) {
        let old = self.base().to_owned();
        self.ty = self.ty.replacen(&old, base, 1);
    }
}

/// A relation: a field holding another entity's key.
#[derive(Debug)]
pub struct RelationProposal {
    /// The field's name.
    pub name: String,
    /// The target entity.
    pub target: String,
    /// The fields holding the target's key.
    pub key: Vec<String>,
    /// The index of the target's table its key is read in, if not the table's own key.
    pub index: Option<String>,
    /// Why it was proposed.
    pub evidence: String,
    /// What to check by hand, if anything.
    pub review: Option<String>,
}

/// A root lookup.
#[derive(Debug)]
pub struct LookupProposal {
    /// Its name.
    pub name: String,
    /// The entity it reads.
    pub entity: String,
    /// Its description.
    pub description: String,
    /// The index it reads through, if not the table's key.
    pub index: Option<String>,
    /// Why it was proposed, when more than the table's key says so.
    pub evidence: Option<String>,
    /// What to check by hand, if anything.
    pub review: Option<String>,
}

/// Where a connection's partition key comes from.
#[derive(Debug, Clone)]
pub enum PartitionFrom {
    /// A field of the parent entity.
    Field(String),
    /// A root argument of this name.
    Argument(String),
}

/// Conditions on the sort key, by argument name.
#[derive(Debug, Clone)]
pub struct SortArgs {
    /// Fields of the leading facets of the sort key's template, each fixed by a required
    /// argument of its name (`sort.fixed`); the conditions below are on the facet after them.
    pub fixed: Vec<String>,
    /// Whether the `fixed` arguments may be left out (`optional = true`), the connection then
    /// reading the whole partition.
    pub optional: bool,
    /// The field the sort key holds.
    pub field: String,
    /// `min`, `max`.
    pub range: Option<(String, String)>,
    /// `begins_with`.
    pub prefix: Option<String>,
}

impl SortArgs {
    /// The fields of the `fixed` arguments that must be given, in PascalCase: what a
    /// connection's name says it takes (`ordersByOwnerAndStatus`).
    pub(super) fn required(sort: Option<&SortArgs>) -> Vec<String> {
        sort.filter(|s| !s.optional).map_or(Vec::new(), |s| {
            s.fixed.iter().map(|f| pascal(f, "Key")).collect()
        })
    }

    /// How a description says what the `fixed` arguments take: `` and one `status` ``, or
    /// `` (and one `status`, when given) `` for optional ones.
    pub(super) fn one(sort: Option<&SortArgs>) -> String {
        let Some(sort) = sort else {
            return String::new();
        };
        sort.fixed
            .iter()
            .map(|f| match sort.optional {
                true => format!(" (and one `{f}`, when given)"),
                false => format!(" and one `{f}`"),
            })
            .collect()
    }
}

/// A connection.
#[derive(Debug, Clone)]
pub struct ConnectionProposal {
    /// Its name.
    pub name: String,
    /// The entity of its nodes.
    pub entity: String,
    /// The index it reads, if not the table.
    pub index: Option<String>,
    /// A Scan rather than a Query.
    pub scan: bool,
    /// The partition, for a Query.
    pub partition: Option<PartitionFrom>,
    /// Sort key conditions.
    pub sort: Option<SortArgs>,
    /// Its description.
    pub description: String,
    /// An item collection: its member entities and its union's name (then `entity` is unused).
    pub collection: Option<(Vec<String>, String)>,
    /// Equality filters (review-marked), by field: fields holding a few values (enums).
    pub filters: Vec<String>,
}

impl ConnectionProposal {
    /// A root connection over every item of `entity`, with a Scan (`how` says of what).
    pub(super) fn root_scan(root: &mut Taken, entity: &str, how: String) -> Self {
        ConnectionProposal {
            name: root.claim(&camel(&plural(entity), "items")),
            entity: entity.to_owned(),
            index: None,
            scan: true,
            partition: None,
            sort: None,
            description: format!(
                "Every {entity} ({how}), in no particular but stable order. Pages forward only: \
                 pass the previous page's `pageInfo.endCursor` as `after`."
            ),
            collection: None,
            filters: Vec::new(),
        }
    }

    /// A root connection over the partitions of `entity` (of the table, or of `index`) whose
    /// key `field` gives, as argument `field`: `{entities}By{Field}` or `{entities}By{Index}`,
    /// then `And{Fixed}` for each of the sort key's fixed facets that must be given.
    /// `order_text` ends its description.
    pub(super) fn root_query(
        root: &mut Taken,
        entity: &str,
        index: Option<&str>,
        field: &str,
        sort: Option<SortArgs>,
        order_text: &str,
    ) -> Self {
        let suffix = match index {
            Some(i) => index_suffix(i),
            None => pascal(field, "Key"),
        };
        let through = index.map_or(String::new(), |i| format!(" (index {i})"));
        let and: String = SortArgs::required(sort.as_ref())
            .iter()
            .map(|f| format!("And{f}"))
            .collect();
        let one = SortArgs::one(sort.as_ref());
        ConnectionProposal {
            name: root.claim(&format!(
                "{}By{suffix}{and}",
                camel(&plural(entity), "items")
            )),
            entity: entity.to_owned(),
            index: index.map(str::to_owned),
            scan: false,
            partition: Some(PartitionFrom::Argument(field.to_owned())),
            sort,
            description: format!(
                "The {} with one `{field}`{one}{through}{order_text}.",
                plural(entity)
            ),
            collection: None,
            filters: Vec::new(),
        }
    }
}

/// One table read: its live description and sampled items.
#[derive(Debug, Clone)]
pub struct TableInput {
    /// Its name in the model (without the prefix).
    pub name: String,
    /// What DynamoDB says of it.
    pub live: LiveTable,
    /// Its sampled items.
    pub items: Vec<Item>,
    /// Whether they are all its items (the Scans reached the end of the table).
    pub complete: bool,
}

/// Whether `index` of `live` holds every attribute `entity`'s fields read (connections over it
/// return whole items): those it projects, the keys every index holds (the table's and its
/// own), and fields read back from a key template on one of those keys (facets, and values only
/// the keys hold), unless the keys are written in lower case (their text is not the value's).
pub(super) fn holds_every_attribute(
    live: &LiveTable,
    index: &LiveIndex,
    entity: &EntityProposal,
) -> bool {
    let keys: Vec<&str> = [
        Some(&live.partition),
        live.sort.as_ref(),
        Some(&index.partition),
        index.sort.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|k| k.name.as_str())
    .collect();
    let projected = |attribute: &str| match &index.projection {
        LiveProjection::All => true,
        LiveProjection::KeysOnly => keys.contains(&attribute),
        LiveProjection::Include(included) => {
            keys.contains(&attribute) || included.iter().any(|a| a == attribute)
        }
    };
    let read_back = |field: &str| {
        entity.shared.as_ref().is_some_and(|shared| {
            !shared.lower
                && shared.templates.iter().any(|(attribute, t)| {
                    projected(attribute)
                        && t.pieces.iter().any(|p| match p {
                            super::templates::Piece::Facet { attribute: f, .. }
                            | super::templates::Piece::KeyOnly(f, _) => f == field,
                            super::templates::Piece::Literal(_) => false,
                        })
                })
        })
    };
    entity
        .fields
        .iter()
        .all(|f| f.key.is_some() || projected(&f.attribute) || read_back(&f.name))
}

/// `min`/`max` on a sort key of a type that sorts, and `begins_with` on text.
pub(super) fn sort_args(field: &FieldProposal) -> SortArgs {
    let base = field.base();
    let ranged = matches!(
        base,
        "String" | "ID" | "Int" | "BigInt" | "Decimal" | "DateTime"
    );
    SortArgs {
        fixed: Vec::new(),
        optional: false,
        field: field.name.clone(),
        range: ranged.then(|| (format!("{}Min", field.name), format!("{}Max", field.name))),
        prefix: matches!(base, "String" | "ID").then(|| format!("{}Prefix", field.name)),
    }
}

/// The DynamoDB type a field's values are stored as, when it is a key type.
pub(super) fn stored_kind(field: &FieldProposal) -> Option<KeyKind> {
    if let Some((_, kind)) = field.key {
        return Some(kind);
    }
    match field.base() {
        "String" | "ID" => Some(KeyKind::S),
        "Int" | "BigInt" | "Decimal" => Some(KeyKind::N),
        "Bytes" if field.stored_as.is_none() => Some(KeyKind::B),
        "DateTime" => match field.stored_as {
            Some("epoch_millis" | "epoch_seconds") | None => Some(KeyKind::N),
            _ => Some(KeyKind::S),
        },
        _ => None,
    }
}
