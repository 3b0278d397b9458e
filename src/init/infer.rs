//! From live tables and their sampled items to a proposed model: one entity per table, its
//! fields typed from what the sample holds, and the lookups, connections and relations the keys
//! and indexes allow. Every inference keeps its evidence, and what the sample cannot settle is
//! marked for review. [`super::render`] writes it out as a model file.

use std::collections::BTreeMap;

use crate::dynamo::{
    Item,
    sample::{KeyKind, LiveKey, LiveProjection, LiveTable},
};

use super::{
    names::{Taken, camel, field_name, is_graphql_name, pascal, plural, singular},
    observe::{MAX_ENUM_VALUES, Observed, observe},
};

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
    /// Facets are written with escapes (only when no type attribute tells the types apart).
    pub escaped: bool,
    /// Attributes written on every item besides the fields (ElectroDB's `__edb_v__`).
    pub constants: Vec<(String, String)>,
    /// The templates by attribute, for connections.
    pub templates: Vec<(String, super::single_table::Template)>,
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
        }
    }
}

impl FieldProposal {
    /// The type's name without `!` or `[...]`.
    pub fn base(&self) -> &str {
        self.ty.trim_matches(|c| matches!(c, '[' | ']' | '!'))
    }

    fn set_base(&mut self, base: &str) {
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
    /// Why it was proposed.
    pub evidence: String,
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
    /// The field the sort key holds.
    pub field: String,
    /// `min`, `max`.
    pub range: Option<(String, String)>,
    /// `begins_with`.
    pub prefix: Option<String>,
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
        }
    }

    /// A root connection over the partitions of `entity` (of the table, or of `index`) whose
    /// key `field` gives, as argument `field`: `{entities}By{Field}` or `{entities}By{Index}`.
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
        ConnectionProposal {
            name: root.claim(&format!("{}By{suffix}", camel(&plural(entity), "items"))),
            entity: entity.to_owned(),
            index: index.map(str::to_owned),
            scan: false,
            partition: Some(PartitionFrom::Argument(field.to_owned())),
            sort,
            description: format!(
                "The {} with one `{field}`{through}{order_text}.",
                plural(entity)
            ),
            collection: None,
        }
    }
}

/// One table read: its live description and sampled items.
#[derive(Debug)]
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

/// Type names GraphQL or dynarelay's schema already define.
const RESERVED_TYPES: &[&str] = &[
    "Query",
    "Mutation",
    "Subscription",
    "Node",
    "PageInfo",
    "String",
    "Int",
    "Float",
    "Boolean",
    "ID",
    "BigInt",
    "Decimal",
    "DateTime",
    "Bytes",
    "JSON",
    "SortOrder",
];

/// The proposal for `tables`.
pub fn propose(tables: Vec<TableInput>) -> Proposal {
    let mut proposal = Proposal::default();
    let mut type_names = Taken::with(RESERVED_TYPES);
    for input in tables {
        let table_at = proposal.tables.len();
        if let Some(shared) =
            super::shared_table::propose(&input, table_at, &mut type_names, &mut proposal.enums)
        {
            proposal.entities.extend(shared.entities);
            proposal.tables.push(TableProposal {
                name: input.name,
                sampled: input.items.len(),
                live: input.live,
                notes: shared.notes,
                type_attribute: shared.type_attribute,
                shared: true,
            });
            continue;
        }
        let entity = type_names.claim(&pascal(&singular(&input.name), "Item"));
        let seen = observe(&input.items);
        let mut notes = Vec::new();
        if input.items.is_empty() {
            notes.push(
                "review: no items were sampled: only the key attributes are known, typed from \
                 the table's definition."
                    .to_owned(),
            );
        }
        let fields = fields(
            &entity,
            &input.live,
            &seen,
            Sampled {
                count: input.items.len(),
                complete: input.complete,
            },
            &mut proposal.enums,
            &mut type_names,
            &[],
        );
        proposal.entities.push(EntityProposal::new(
            entity,
            &input.name,
            table_at,
            fields,
            None,
        ));
        proposal.tables.push(TableProposal {
            name: input.name,
            sampled: input.items.len(),
            live: input.live,
            notes,
            type_attribute: None,
            shared: false,
        });
    }
    let names: Vec<String> = proposal.entities.iter().map(|e| e.name.clone()).collect();
    for (entity, tag) in proposal.entities.iter_mut().zip(id_tags(&names)) {
        entity.id_tag = tag;
    }
    unify_linked_types(&mut proposal);
    let mut root = Taken::with(&["node", "nodes"]);
    link(&mut proposal, &mut root);
    super::shared_table::connect(&mut proposal, &mut root, &mut type_names);
    proposal
}

/// Global id tags, one per entity name: the first letter where no other entity starts with
/// it, else the shortest prefix of equal length that tells apart the entities starting with the
/// same letter (`Product`, `Purchase`: `PR`, `PU`), so that no tag begins another. Where one name
/// begins another (`Order`, `OrderItem`) those keep the default tag, the name and `:`.
fn id_tags(entities: &[String]) -> Vec<String> {
    let upper: Vec<String> = entities.iter().map(|e| e.to_ascii_uppercase()).collect();
    upper
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let group: Vec<&String> = upper.iter().filter(|u| u[..1] == name[..1]).collect();
            let longest = group.iter().map(|u| u.len()).max().unwrap_or(1);
            (1..=longest)
                .find(|&n| {
                    let tags: Vec<&str> = group.iter().map(|u| &u[..n.min(u.len())]).collect();
                    group.iter().all(|u| u.len() >= n)
                        && tags
                            .iter()
                            .enumerate()
                            .all(|(a, t)| tags[..a].iter().all(|o| o != t))
                })
                .map_or_else(|| format!("{}:", entities[i]), |n| name[..n].to_owned())
        })
        .collect()
}

/// The key role and type of `attribute` in `table`.
fn key_of(table: &LiveTable, attribute: &str) -> Option<(KeyRole, KeyKind)> {
    if table.partition.name == attribute {
        return Some((KeyRole::Partition, table.partition.kind));
    }
    if let Some(sort) = table.sort.as_ref().filter(|s| s.name == attribute) {
        return Some((KeyRole::Sort, sort.kind));
    }
    table
        .indexes
        .iter()
        .flat_map(|i| std::iter::once(&i.partition).chain(i.sort.as_ref()))
        .find(|k| k.name == attribute)
        .map(|k| (KeyRole::Index, k.kind))
}

/// How many items of an entity were sampled, and whether they are all its table held.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sampled {
    /// The entity's items in the sample.
    pub count: usize,
    /// The sample is every item of the table.
    pub complete: bool,
}

pub(super) fn fields(
    entity: &str,
    table: &LiveTable,
    seen: &BTreeMap<String, Observed>,
    sample: Sampled,
    enums: &mut Vec<EnumProposal>,
    type_names: &mut Taken,
    skip: &[String],
) -> Vec<FieldProposal> {
    let sampled = sample.count;
    // Keys first (partition, sort, then the indexes'), then the rest by name.
    let mut attributes: Vec<&str> = vec![table.partition.name.as_str()];
    attributes.extend(table.sort.as_ref().map(|s| s.name.as_str()));
    for index in &table.indexes {
        for key in std::iter::once(&index.partition).chain(index.sort.as_ref()) {
            if !attributes.contains(&key.name.as_str()) {
                attributes.push(&key.name);
            }
        }
    }
    for name in seen.keys() {
        if !attributes.contains(&name.as_str()) {
            attributes.push(name);
        }
    }
    attributes.retain(|a| !skip.iter().any(|s| s == a));
    let mut names = Taken::with(&["id", "__typename"]);
    let empty = Observed::default();
    attributes
        .into_iter()
        .map(|attribute| {
            let observed = seen.get(attribute).unwrap_or(&empty);
            let key = key_of(table, attribute);
            let name = names.claim(&field_name(attribute, entity));
            let ttl = table.ttl_attribute.as_deref() == Some(attribute);
            let mut field = infer_field(&name, attribute, observed, sample, key, ttl);
            if let Some(values) = enum_candidate(observed, key) {
                let enum_name = type_names.claim(&format!("{entity}{}", pascal(&name, "Value")));
                let required = field.ty.ends_with('!');
                field.ty = format!("{enum_name}{}", if required { "!" } else { "" });
                field.evidence = format!(
                    "{}; {} distinct values seen, each more than once",
                    presence(observed, sampled),
                    values.len()
                );
                field.review = Some(format!(
                    "an enum from the values seen: a stored value not in `{enum_name}` makes this \
                     field an error on that item; add values as they appear, or make it a \
                     `String`"
                ));
                enums.push(EnumProposal {
                    name: enum_name,
                    values,
                    field: format!("{entity}.{name}"),
                });
            }
            field
        })
        .collect()
}

/// `in 498 of 500 sampled items`.
fn presence(observed: &Observed, sampled: usize) -> String {
    format!("in {} of {sampled} sampled items", observed.present)
}

/// Values for an enum when a string attribute holds a few values that repeat, each a valid
/// GraphQL enum value: at least two, at most [`MAX_ENUM_VALUES`], each seen at least twice.
fn enum_candidate(
    observed: &Observed,
    key: Option<(KeyRole, KeyKind)>,
) -> Option<Vec<(String, usize)>> {
    if key.is_some() || observed.only_kind() != Some("S") {
        return None;
    }
    let st = &observed.strings;
    if st.iso_millis + st.iso_seconds + st.iso_other + st.dates > 0 {
        return None;
    }
    let distinct = st.distinct.as_ref()?;
    let valid = |v: &str| is_graphql_name(v) && !matches!(v, "true" | "false" | "null");
    (distinct.len() >= 2
        && distinct.len() <= MAX_ENUM_VALUES
        && distinct.iter().all(|(v, n)| *n >= 2 && valid(v)))
    .then(|| distinct.iter().map(|(v, n)| (v.clone(), *n)).collect())
}

/// Whether an attribute's name says it holds a time: its last word (split at `_`, `-` and
/// lower-to-upper case changes) is one such as `at`, `time` or `updated` (`createdAt`,
/// `expires_at`, `ttl`), or it is dynamodb-toolbox's `_ct` or `_md`.
fn time_like(name: &str) -> bool {
    let mut last = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !last.is_empty() {
                last.clear();
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower {
            last.clear();
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        last.push(c.to_ascii_lowercase());
    }
    matches!(
        last.as_str(),
        "at" | "time"
            | "timestamp"
            | "date"
            | "ts"
            | "created"
            | "updated"
            | "modified"
            | "expires"
            | "expiry"
            | "ttl"
    ) || matches!(name, "_ct" | "_md")
}

/// Whether a string attribute's name says it holds an id: `id`, or a last word `Id`/`ID`
/// (`customerId`, `order_id`).
fn id_like(name: &str) -> bool {
    name == "id"
        || name.ends_with("Id")
        || name.ends_with("ID")
        || name.to_ascii_lowercase().ends_with("_id")
}

/// Epoch milliseconds and seconds from 2000 to 2100: what a number naming a time holds.
const MILLIS: (i64, i64) = (946_684_800_000, 4_102_444_800_000);
const SECONDS: (i64, i64) = (946_684_800, 4_102_444_800);

fn within((lo, hi): (i64, i64), bounds: (i64, i64)) -> bool {
    lo >= bounds.0 && hi <= bounds.1
}

fn infer_field(
    name: &str,
    attribute: &str,
    observed: &Observed,
    sample: Sampled,
    key: Option<(KeyRole, KeyKind)>,
    ttl: bool,
) -> FieldProposal {
    // Non-null only where no item can lack it: a key of the table, or an attribute every item
    // holds when every item was read. A sample of part of a table leaves it nullable, since one
    // unread item without it would make every page holding that item an error.
    let Sampled {
        count: sampled,
        complete,
    } = sample;
    let primary = key.is_some_and(|(role, _)| role != KeyRole::Index);
    let everywhere = sampled > 0 && observed.present == sampled;
    let required = primary || (complete && everywhere);
    let mut field = FieldProposal {
        name: name.to_owned(),
        attribute: attribute.to_owned(),
        ty: String::new(),
        stored_as: None,
        evidence: presence(observed, sampled),
        review: None,
        key,
    };
    let key_text = key.map(|(role, kind)| {
        let role = match role {
            KeyRole::Partition => "the table's partition key",
            KeyRole::Sort => "the table's sort key",
            KeyRole::Index => "an index key",
        };
        format!("{role} ({})", kind.as_str())
    });
    let mut detail: Option<String> = None;
    let base: String = match observed.only_kind() {
        None => match key {
            Some((_, kind)) => {
                field.review = Some("no item holds it: typed from the key definition".to_owned());
                match kind {
                    KeyKind::S => "String",
                    KeyKind::N => "BigInt",
                    KeyKind::B => "Bytes",
                }
                .to_owned()
            }
            None => {
                field.review = Some("only NULL was seen: typed JSON".to_owned());
                "JSON".to_owned()
            }
        },
        Some("S") => {
            let st = &observed.strings;
            let times = st.iso_millis + st.iso_seconds + st.iso_other;
            if st.count > 0 && st.iso_millis == st.count {
                field.stored_as = Some("iso8601");
                detail = Some("all RFC 3339 in UTC with milliseconds".to_owned());
                "DateTime".to_owned()
            } else if st.count > 0 && st.iso_seconds == st.count {
                field.stored_as = Some("iso8601_seconds");
                detail = Some("all RFC 3339 in UTC in whole seconds".to_owned());
                "DateTime".to_owned()
            } else if st.count > 0 && times == st.count {
                field.stored_as = Some("iso8601");
                detail = Some("all RFC 3339, in several forms".to_owned());
                field.review = Some(
                    "times are stored in several forms (fractions or offsets differ): they read \
                     correctly, but their text does not sort as the times do"
                        .to_owned(),
                );
                "DateTime".to_owned()
            } else if st.count > 0 && st.dates == st.count {
                field.stored_as = Some("date");
                detail = Some("all calendar dates (YYYY-MM-DD)".to_owned());
                "DateTime".to_owned()
            } else if id_like(attribute) {
                "ID".to_owned()
            } else {
                "String".to_owned()
            }
        }
        Some("N") => {
            let nu = &observed.numbers;
            if nu.integers < nu.count {
                detail = Some("numbers with fractions".to_owned());
                "Decimal".to_owned()
            } else if nu.int64 < nu.count {
                detail = Some("whole numbers beyond 64 bits".to_owned());
                "Decimal".to_owned()
            } else {
                let range = nu.range.unwrap_or((0, 0));
                let span = format!("whole numbers from {} to {}", range.0, range.1);
                // A number named like a time may hold any time up to 2100 (0 included): it is
                // milliseconds once one value is past 1973 counted in them. Any other number
                // is a time only as a suggestion, when all of it falls in 2000 to 2100.
                let named = ttl || time_like(attribute);
                let epoch = if named
                    && range.1 >= 100_000_000_000
                    && within(range, (-MILLIS.1, MILLIS.1))
                {
                    Some(("epoch_millis", "milliseconds"))
                } else if named && within(range, (-SECONDS.1, SECONDS.1)) {
                    Some(("epoch_seconds", "seconds"))
                } else if within(range, MILLIS) {
                    Some(("epoch_millis", "milliseconds"))
                } else if within(range, SECONDS) {
                    Some(("epoch_seconds", "seconds"))
                } else {
                    None
                };
                match epoch {
                    Some((form, unit)) if named => {
                        field.stored_as = Some(form);
                        detail = Some(format!(
                            "{span}: epoch {unit}, by its name{}",
                            if ttl {
                                " (the table's time-to-live attribute)"
                            } else {
                                ""
                            }
                        ));
                        "DateTime".to_owned()
                    }
                    _ => {
                        if let Some((form, unit)) = epoch {
                            field.review = Some(format!(
                                "the values look like epoch {unit}: for a time, use `type = \
                                 \"DateTime\"` with `stored_as = \"{form}\"`"
                            ));
                        }
                        detail = Some(span);
                        if nu.int32 == nu.count {
                            "Int"
                        } else {
                            "BigInt"
                        }
                        .to_owned()
                    }
                }
            }
        }
        Some("B") => "Bytes".to_owned(),
        Some("BOOL") => "Boolean".to_owned(),
        Some("L" | "M") => "JSON".to_owned(),
        Some("SS") => {
            field.stored_as = Some("set");
            "[String!]".to_owned()
        }
        Some("NS") => {
            field.stored_as = Some("set");
            let nu = &observed.numbers;
            if nu.integers < nu.count || nu.int64 < nu.count {
                "[Decimal!]"
            } else if nu.int32 == nu.count {
                "[Int!]"
            } else {
                "[BigInt!]"
            }
            .to_owned()
        }
        Some("BS") => {
            field.stored_as = Some("set");
            "[Bytes!]".to_owned()
        }
        Some(_) => {
            field.review = Some("a type this version does not read: typed JSON".to_owned());
            "JSON".to_owned()
        }
    };
    let base = if observed.kinds.keys().filter(|k| **k != "NULL").count() > 1 {
        field.review = Some(format!(
            "stored as different types ({}): typed JSON",
            observed.kinds_text()
        ));
        "JSON".to_owned()
    } else {
        base
    };
    field.ty = format!("{base}{}", if required { "!" } else { "" });
    if everywhere && !required && field.review.is_none() {
        field.review = Some(format!(
            "every sampled item holds it, but not every item was read: make it `{}!` once you \
             know every item does",
            field.ty
        ));
    }
    if let Some(key_text) = key_text {
        field.evidence = format!("{key_text}, {}", field.evidence);
    }
    if let Some(detail) = detail {
        field.evidence = format!("{}; {detail}", field.evidence);
    }
    field
}

/// One entity's field holding the key of another entity's table, by attribute name and type.
struct Link {
    /// The entity holding the key, and its field.
    from: (usize, usize),
    /// The entity whose table's partition key it is, and that key's field.
    to: (usize, usize),
}

/// Every attribute that carries another table's partition key: the same attribute name and
/// DynamoDB type as a table whose only key it is.
fn links(proposal: &Proposal) -> Vec<Link> {
    let mut out = Vec::new();
    for (t, target) in proposal.entities.iter().enumerate() {
        let table = &proposal.tables[target.table_at];
        if table.live.sort.is_some() || target.shared.is_some() {
            continue;
        }
        let pk = &table.live.partition;
        let Some(to_field) = target.fields.iter().position(|f| f.attribute == pk.name) else {
            continue;
        };
        for (e, entity) in proposal.entities.iter().enumerate() {
            if e == t || entity.shared.is_some() {
                continue;
            }
            if let Some(f) = entity
                .fields
                .iter()
                .position(|f| f.attribute == pk.name && stored_kind(f) == Some(pk.kind))
            {
                out.push(Link {
                    from: (e, f),
                    to: (t, to_field),
                });
            }
        }
    }
    out
}

/// The DynamoDB type a field's values are stored as, when it is a key type.
fn stored_kind(field: &FieldProposal) -> Option<KeyKind> {
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

/// Gives both ends of each link the same type: the wider of two number types, or, when they
/// differ otherwise (a time against a number), the key's own.
fn unify_linked_types(proposal: &mut Proposal) {
    for link in links(proposal) {
        let to = proposal.entities[link.to.0].fields[link.to.1].clone();
        let target = proposal.entities[link.to.0].name.clone();
        let from = &mut proposal.entities[link.from.0].fields[link.from.1];
        if from.base() == to.base() && from.stored_as == to.stored_as {
            continue;
        }
        let rank = |t: &str| ["Int", "BigInt", "Decimal"].iter().position(|r| *r == t);
        match (rank(from.base()), rank(to.base())) {
            (Some(a), Some(b)) if a > b => {
                let wider = from.base().to_owned();
                proposal.entities[link.to.0].fields[link.to.1].set_base(&wider);
            }
            _ => {
                from.set_base(to.base());
                from.stored_as = to.stored_as;
                if from.review.is_none() {
                    from.review = Some(format!(
                        "typed as `{target}.{}`, whose key it holds",
                        to.name
                    ));
                }
            }
        }
    }
}

/// Lookups, connections and relations from the keys, indexes and links.
fn link(proposal: &mut Proposal, root: &mut Taken) {
    let mut entity_names: Vec<Taken> = proposal
        .entities
        .iter()
        .map(|e| {
            let mut taken = Taken::with(&["id", "__typename"]);
            for f in &e.fields {
                taken.claim(&f.name);
            }
            taken
        })
        .collect();
    let links = links(proposal);
    // Connections under the entity whose table's key their partition is, added at the end.
    let mut nested: Vec<(usize, ConnectionProposal)> = Vec::new();
    for (t, entity) in proposal.entities.iter().enumerate() {
        if entity.shared.is_some() {
            continue;
        }
        let table = &proposal.tables[entity.table_at];
        let plural_name = camel(&plural(&entity.name), "items");
        let field_on = |attribute: &str| {
            entity
                .fields
                .iter()
                .find(|f| f.attribute == attribute)
                .map(|f| f.name.clone())
                .unwrap_or_default()
        };
        let key_text = match &table.live.sort {
            Some(sort) => format!(
                "`{}` and `{}`",
                field_on(&table.live.partition.name),
                field_on(&sort.name)
            ),
            None => format!("`{}`", field_on(&table.live.partition.name)),
        };
        proposal.lookups.push(LookupProposal {
            name: root.claim(&camel(&entity.name, "item")),
            entity: entity.name.clone(),
            description: format!(
                "Looks up one {} by {key_text}. Null when there is no such item.",
                entity.name
            ),
        });
        proposal.connections.push(ConnectionProposal::root_scan(
            root,
            &entity.name,
            format!("a Scan of table {}", table.name),
        ));
        // Queries: the table's partitions when it has a sort key, and each index's.
        let mut reads: Vec<(Option<&str>, &LiveKey, Option<&LiveKey>)> = Vec::new();
        if table.live.sort.is_some() {
            reads.push((None, &table.live.partition, table.live.sort.as_ref()));
        }
        for index in &table.live.indexes {
            if !holds_every_attribute(&index.projection, entity) {
                continue;
            }
            reads.push((Some(&index.name), &index.partition, index.sort.as_ref()));
        }
        for (index, partition, sort) in reads {
            let partition_field = field_on(&partition.name);
            let sort_args = sort.and_then(|s| {
                let field = entity.fields.iter().find(|f| f.attribute == s.name)?;
                Some(sort_args(field))
            });
            let order_text = sort.map_or(String::new(), |s| {
                format!(
                    ", in `{}` order (`order: DESC` for the reverse)",
                    field_on(&s.name)
                )
            });
            let through = index.map_or(String::new(), |i| format!(" (index {i})"));
            proposal.connections.push(ConnectionProposal::root_query(
                root,
                &entity.name,
                index,
                &partition_field,
                sort_args.clone(),
                &order_text,
            ));
            // The same partitions under the entity whose table's key they are.
            for l in links
                .iter()
                .filter(|l| l.from.0 == t && entity.fields[l.from.1].attribute == partition.name)
            {
                let parent = l.to.0;
                let parent_field = proposal.entities[parent].fields[l.to.1].name.clone();
                let taken = &mut entity_names[parent];
                let name = match index {
                    Some(i) if !taken.is_free(&plural_name) => {
                        taken.claim(&format!("{plural_name}By{}", index_suffix(i)))
                    }
                    _ => taken.claim(&plural_name),
                };
                let connection = ConnectionProposal {
                    name,
                    entity: entity.name.clone(),
                    index: index.map(str::to_owned),
                    scan: false,
                    partition: Some(PartitionFrom::Field(parent_field)),
                    sort: sort_args.clone(),
                    description: format!(
                        "This {}'s {}{through}{order_text}.",
                        proposal.entities[parent].name,
                        plural(&entity.name)
                    ),
                    collection: None,
                };
                nested.push((parent, connection));
            }
        }
    }
    for (parent, connection) in nested {
        proposal.entities[parent].connections.push(connection);
    }
    for l in &links {
        let target = proposal.entities[l.to.0].name.clone();
        let field = proposal.entities[l.from.0].fields[l.from.1].clone();
        let target_table = &proposal.tables[proposal.entities[l.to.0].table_at].name;
        let name = entity_names[l.from.0].claim(&camel(&target, "item"));
        proposal.entities[l.from.0]
            .relations
            .push(RelationProposal {
                name,
                target: target.clone(),
                key: vec![field.name.clone()],
                evidence: format!(
                    "`{}` has the name and type of table {target_table}'s key",
                    field.attribute
                ),
            });
    }
}

/// An index's name after `By` in a connection's name: `ByCategory` gives `Category`, as
/// `productsByCategory` reads better than `productsByByCategory`.
pub(super) fn index_suffix(index: &str) -> String {
    let name = pascal(index, "Index");
    match name.strip_prefix("By") {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_uppercase()) => rest.to_owned(),
        _ => name,
    }
}

/// Whether an index holds every attribute the entity's fields read (connections over it return
/// whole items).
pub(super) fn holds_every_attribute(projection: &LiveProjection, entity: &EntityProposal) -> bool {
    match projection {
        LiveProjection::All => true,
        LiveProjection::KeysOnly => entity.fields.iter().all(|f| f.key.is_some()),
        LiveProjection::Include(included) => entity
            .fields
            .iter()
            .all(|f| f.key.is_some() || included.contains(&f.attribute)),
    }
}

/// `min`/`max` on a sort key of a type that sorts, and `begins_with` on text.
pub(super) fn sort_args(field: &FieldProposal) -> SortArgs {
    let base = field.base();
    let ranged = matches!(
        base,
        "String" | "ID" | "Int" | "BigInt" | "Decimal" | "DateTime"
    );
    SortArgs {
        field: field.name.clone(),
        range: ranged.then(|| (format!("{}Min", field.name), format!("{}Max", field.name))),
        prefix: matches!(base, "String" | "ID").then(|| format!("{}Prefix", field.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_times_are_told_by_their_last_word() {
        for name in [
            "createdAt",
            "expires_at",
            "ttl",
            "updated",
            "_ct",
            "releasedAt",
            "ts",
        ] {
            assert!(time_like(name), "{name}");
        }
        for name in [
            "seats",
            "format",
            "status",
            "stats",
            "dateCount",
            "created_by",
        ] {
            assert!(!time_like(name), "{name}");
        }
    }

    #[test]
    fn id_tags_never_begin_one_another() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            id_tags(&names(&["User", "Product", "Purchase", "Trip"])),
            ["U", "PR", "PU", "T"].map(str::to_owned)
        );
        assert_eq!(
            id_tags(&names(&["Order", "OrderItem", "Vehicle"])),
            ["Order:", "OrderItem:", "V"].map(str::to_owned)
        );
    }
}
