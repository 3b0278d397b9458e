//! The model: what a model file declares, checked and typed. Tables with their keys and indexes,
//! entities with their fields, relations, connections and mutations, root lookups and
//! connections.
//!
//! [`file`] reads the TOML as written; [`check`] turns it into a [`Model`], reporting every
//! problem with its place in the file; the schema builder and the store read only [`Model`].
//! Nothing here knows the AWS SDK or GraphQL execution.
//!
//! Names a [`Model`] hands to the cursor codec and to metrics labels are `&'static str`: a model
//! is loaded once per process and lives as long as the schema built from it, so its key
//! attribute names and key shapes are leaked once, at load time, rather than reference-counted
//! on every cursor and key.

pub mod check;
pub mod file;
pub mod notes;
pub mod sortable_id;
pub mod template;

use smallvec::SmallVec;
use std::ops::Range;

use crate::{
    cursor::{KeyAttr, KeyShape, KeyType, KeyValue},
    number::DynamoNumber,
};

pub use check::{Located, ModelErrors, json_schema, load, parse};
pub use template::KeyTemplate;

/// A checked model.
#[derive(Debug, Clone)]
pub struct Model {
    /// The tables, referred to by position ([`TableId`]).
    pub tables: Vec<Table>,
    /// The enums, referred to by position.
    pub enums: Vec<EnumType>,
    /// The entities, referred to by position ([`EntityId`]).
    pub entities: Vec<Entity>,
    /// Root lookup fields.
    pub lookups: Vec<Lookup>,
    /// Root connection fields.
    pub connections: Vec<Connection>,
    /// How tokens are verified, if callers can authenticate at all.
    pub auth: Option<AuthSpec>,
    /// Who may introspect the schema.
    pub introspection: Access,
    /// Who may send documents that no operation manifest lists when the server enforces its
    /// manifests (`--trusted-documents enforce`): nobody unless `[auth] unlisted_documents`
    /// says.
    pub unlisted_documents: Access,
    /// How the API is served as an Apollo Federation 2 subgraph, if it is.
    pub federation: Option<Federation>,
}

/// Serving the API as an Apollo Federation 2 subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Federation {
    /// Whether `Query.node` and `Query.nodes` stay in the subgraph.
    pub node: bool,
    /// The types of other subgraphs that references refer to.
    pub types: Vec<ExternalType>,
}

/// An entity type another subgraph owns, known here by its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalType {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The fields of its `@key`, in order, with their GraphQL types as written (`ID!`).
    pub key: Vec<(String, String)>,
}

/// A field whose value is an entity of another subgraph, named by the key the item holds: the
/// gateway fetches the rest from that subgraph.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The type referred to (position in [`Federation::types`]).
    pub target: usize,
    /// Null when the item holds no key (the fields may be missing).
    pub nullable: bool,
    /// This entity's fields holding the key, in the order of the type's key fields.
    pub key: Vec<FieldId>,
}

/// Who may do something: a caller that any one of the rules admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access(pub Vec<Rule>);

impl Default for Access {
    fn default() -> Self {
        Self(vec![Rule::Public])
    }
}

impl Access {
    /// Whether everyone is admitted, token or not.
    pub fn is_public(&self) -> bool {
        self.0.contains(&Rule::Public)
    }

    /// The owner rules: the field the item holds its owner in, and the claim it must equal.
    pub fn owners(&self) -> impl Iterator<Item = (FieldId, &str)> {
        self.0.iter().filter_map(|rule| match rule {
            Rule::Owner { field, claim } => Some((*field, claim.as_str())),
            _ => None,
        })
    }

    /// Whether two callers may be admitted differently for who they are rather than whether they
    /// hold a token (group and owner rules): what a connection's cursors are then bound to.
    pub fn depends_on_caller(&self) -> bool {
        !self.is_public()
            && self
                .0
                .iter()
                .any(|r| matches!(r, Rule::Groups(_) | Rule::Owner { .. }))
    }
}

/// One rule of an [`Access`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Everyone.
    Public,
    /// Any caller with a valid token.
    Authenticated,
    /// Callers in any of these groups.
    Groups(Vec<String>),
    /// Callers whose claim `claim` equals the item's field `field`.
    Owner {
        /// The entity's field holding the owner.
        field: FieldId,
        /// The claim.
        claim: String,
    },
}

/// How bearer tokens are verified (`[auth]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSpec {
    /// Where the keys come from.
    pub keys: KeysSpec,
    /// Accepted signature algorithms, by their JOSE names (`RS256`).
    pub algorithms: Vec<String>,
    /// The required `iss`, if any.
    pub issuer: Option<String>,
    /// Accepted audiences; empty: `aud` is not checked.
    pub audience: Vec<String>,
    /// Clock skew allowed for `exp` and `nbf`, in seconds.
    pub leeway_seconds: u32,
    /// The claim holding the caller's groups.
    pub groups_claim: String,
    /// Shortest time between JWKS fetches, in seconds.
    pub jwks_refresh_seconds: u32,
    /// Longest wait for the JWKS, in milliseconds.
    pub jwks_timeout_ms: u32,
}

/// Where token keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysSpec {
    /// A JWKS URL.
    JwksUrl(String),
    /// A JWKS file, as written in the model file (relative to it).
    JwksFile(String),
    /// The environment variable holding an HS256 secret.
    SecretEnv(String),
}

/// A table's position in [`Model::tables`].
pub type TableId = usize;
/// An entity's position in [`Model::entities`].
pub type EntityId = usize;
/// A field's position in [`Entity::fields`].
pub type FieldId = usize;

/// A DynamoDB table.
#[derive(Debug, Clone)]
pub struct Table {
    /// The name before any `--table-prefix`.
    pub name: String,
    /// The primary key: partition key, then sort key if any.
    pub key: KeyShape,
    /// Every key attribute of the table and its indexes, once each (the table's first).
    pub attributes: Vec<KeyAttr>,
    /// Secondary indexes.
    pub indexes: Vec<Index>,
    /// The attribute naming each item's entity, if the table has one.
    pub type_attribute: Option<String>,
    /// The view type of the table's stream, if the model declares one.
    pub stream: Option<StreamView>,
    /// Where the table is declared in the model file.
    pub span: Range<usize>,
}

/// What a table stream's records hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamView {
    /// The item before and after each change.
    NewAndOldImages,
    /// The item after each change.
    NewImage,
    /// The item before each change.
    OldImage,
    /// The key only.
    KeysOnly,
}

impl StreamView {
    /// DynamoDB's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::NewAndOldImages => "NEW_AND_OLD_IMAGES",
            Self::NewImage => "NEW_IMAGE",
            Self::OldImage => "OLD_IMAGE",
            Self::KeysOnly => "KEYS_ONLY",
        }
    }
}

/// A secondary index.
#[derive(Debug, Clone)]
pub struct Index {
    /// The index name.
    pub name: String,
    /// Local (LSI) rather than global (GSI).
    pub local: bool,
    /// The index's own key: partition key, then sort key if any.
    pub key: KeyShape,
    /// The key of an item read through the index, as `ExclusiveStartKey` needs it: the index's
    /// keys, then the table's keys that are not among them.
    pub start_key: KeyShape,
    /// Which attributes the index holds.
    pub projection: Projection,
    /// Where the index is declared in the model file.
    pub span: Range<usize>,
}

/// An index projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    /// Every attribute.
    All,
    /// The table's and the index's key attributes only.
    KeysOnly,
    /// The key attributes and these.
    Include(Vec<String>),
}

/// An enum stored as the value's name.
#[derive(Debug, Clone)]
pub struct EnumType {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The values, with their descriptions.
    pub values: Vec<(String, Option<String>)>,
}

/// A GraphQL object type over the items of one table.
#[derive(Debug, Clone)]
pub struct Entity {
    /// The GraphQL type name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The table holding its items.
    pub table: TableId,
    /// The bytes global ids of this type start with. No entity's tag begins another's.
    pub id_tag: String,
    /// The fields read from attributes.
    pub fields: Vec<Field>,
    /// The fields on the table's key attributes, in key order.
    pub key_fields: Vec<FieldId>,
    /// Fields resolving to another entity.
    pub relations: Vec<Relation>,
    /// Fields that refer to entities of other subgraphs (with `[federation]`).
    pub references: Vec<Reference>,
    /// Paginated fields.
    pub connections: Vec<Connection>,
    /// Generated mutations.
    pub mutations: Mutations,
    /// The optimistic-concurrency version field (`Int!` or `BigInt!`), if any.
    pub version_field: Option<FieldId>,
    /// Key attributes written from templates of this entity's fields: the table's keys first.
    pub templates: Vec<TemplateKey>,
    /// The value of the table's type attribute on this entity's items (when it has one).
    pub type_value: Option<String>,
    /// String attributes every item of the entity holds besides fields, keys and the type
    /// (ElectroDB's `__edb_v__`): `create` writes them, and every read requires them (see
    /// [`Entity::required_values`]).
    pub constants: Vec<(String, String)>,
    /// Who may see the entity's items, however they are reached.
    pub read: Access,
}

/// A key attribute built from a template of an entity's fields.
#[derive(Debug, Clone)]
pub struct TemplateKey {
    /// The attribute (always a string).
    pub attribute: &'static str,
    /// The template.
    pub template: KeyTemplate,
    /// The fields of the facets, in the template's order.
    pub facets: Vec<FieldId>,
    /// A key attribute of the table (rather than only of an index).
    pub primary: bool,
}

/// A field read from one attribute.
#[derive(Debug, Clone)]
pub struct Field {
    /// The GraphQL name.
    pub name: String,
    /// The attribute name in items.
    pub attribute: String,
    /// Its description.
    pub description: Option<String>,
    /// Its description in mutation inputs.
    pub input_description: Option<String>,
    /// The value's type and storage.
    pub ty: FieldType,
    /// Whether the GraphQL type is nullable (the attribute may be absent).
    pub nullable: bool,
    /// The value create inputs fall back to, making the input field optional.
    pub default: Option<DefaultValue>,
    /// Set by the server on create, and absent from inputs.
    pub generated: Option<Generated>,
    /// Checks on input values.
    pub checks: InputChecks,
    /// Who may read the field besides seeing its item, if it has rules of its own (only
    /// nullable fields do).
    pub access: Option<Access>,
}

/// A scalar, or a list of scalars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// One value.
    Scalar(Scalar),
    /// A list (L) or set (SS, NS, BS).
    List {
        /// The items' type.
        item: Scalar,
        /// Whether items may be null (lists only; never for sets).
        item_nullable: bool,
        /// Stored as a set rather than a list.
        set: bool,
    },
}

/// A scalar type with its stored representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `String`: S.
    String,
    /// `ID`: S.
    Id,
    /// `Int`: N, a 32-bit integer.
    Int,
    /// `BigInt`: N, a 64-bit integer (sent as a string).
    BigInt,
    /// `Float`: N, a double.
    Float,
    /// `Decimal`: N, exact, up to 38 digits (sent as a string).
    Decimal,
    /// `Boolean`: BOOL.
    Boolean,
    /// `DateTime`, stored as given.
    DateTime(TimeFormat),
    /// `Bytes`: B, sent as base64.
    Bytes,
    /// `JSON`: any attribute value.
    Json,
    /// An enum (position in [`Model::enums`]): S holding the value's name.
    Enum(usize),
}

impl Scalar {
    /// The DynamoDB key type values of this scalar take, if it can be a key.
    pub fn key_type(self) -> Option<KeyType> {
        match self {
            Scalar::String | Scalar::Id | Scalar::Enum(_) => Some(KeyType::S),
            Scalar::DateTime(
                TimeFormat::Iso8601 | TimeFormat::Iso8601Seconds | TimeFormat::Date,
            ) => Some(KeyType::S),
            Scalar::Int
            | Scalar::BigInt
            | Scalar::Float
            | Scalar::Decimal
            | Scalar::DateTime(TimeFormat::EpochMillis | TimeFormat::EpochSeconds) => {
                Some(KeyType::N)
            }
            Scalar::Bytes => Some(KeyType::B),
            Scalar::Boolean | Scalar::Json => None,
        }
    }
}

/// How a `DateTime` is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    /// N: milliseconds since the Unix epoch.
    EpochMillis,
    /// N: seconds since the Unix epoch.
    EpochSeconds,
    /// S: RFC 3339 with milliseconds, in UTC (`2026-05-01T12:00:00.123Z`).
    Iso8601,
    /// S: RFC 3339 in whole seconds, in UTC (`2026-05-01T12:00:00Z`).
    Iso8601Seconds,
    /// S: a calendar date (`2026-05-01`), midnight UTC.
    Date,
}

impl TimeFormat {
    /// Whether times are stored as numbers (N) rather than text (S).
    pub fn is_number(self) -> bool {
        matches!(self, TimeFormat::EpochMillis | TimeFormat::EpochSeconds)
    }
}

/// A create input's fallback value.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// The server's clock, to the millisecond. For a key field, the next free millisecond is
    /// used when this one is taken.
    Now,
    /// A constant, as a GraphQL input value of the field's type.
    Value(serde_json::Value),
}

/// A value the server sets on create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generated {
    /// The server's clock when the item is created, to the millisecond.
    Now,
    /// The server's clock when the item is created and at every update (a last-changed time,
    /// such as dynamodb-toolbox's `_md` or OneTable's `updated`).
    NowOnWrite,
}

/// Checks applied to input values before any write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputChecks {
    /// Smallest number, inclusive.
    pub min: Option<DynamoNumber>,
    /// Largest number, inclusive.
    pub max: Option<DynamoNumber>,
    /// Fewest characters.
    pub min_length: Option<u32>,
    /// Most characters.
    pub max_length: Option<u32>,
    /// A text format the value must have.
    pub format: Option<TextFormat>,
}

/// A format of text values: checked on input, and for ids that sort by time, what lets a key
/// holding them take a range of times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// Something, `@`, something.
    Email,
    /// A ULID or a KSUID.
    Id(sortable_id::SortableId),
}

impl Field {
    /// The id format of a field whose values sort by time, if it has one.
    pub fn sortable_id(&self) -> Option<sortable_id::SortableId> {
        match self.checks.format {
            Some(TextFormat::Id(format)) => Some(format),
            _ => None,
        }
    }
}

/// A field resolving to another entity by the key its fields hold.
#[derive(Debug, Clone)]
pub struct Relation {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The target entity.
    pub target: EntityId,
    /// Null (rather than an error) when the target does not exist.
    pub nullable: bool,
    /// This entity's fields holding the target's key, in the target table's key order (or, with
    /// `index`, its index lookup's arguments' order).
    pub key: Vec<FieldId>,
    /// Create mutations refuse an input whose target does not exist.
    pub check_on_create: bool,
    /// The target's index the target is found through, instead of its table key.
    pub index: Option<LookupIndex>,
}

/// A root lookup: one item by its full key.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The entity read; its key fields are the arguments.
    pub entity: EntityId,
    /// Who may use the lookup.
    pub access: Access,
    /// The index read instead of the table's key, if any.
    pub index: Option<LookupIndex>,
}

/// A lookup through an index: one Query of the index key its arguments make.
#[derive(Debug, Clone)]
pub struct LookupIndex {
    /// The index's position in its table's indexes.
    pub index: usize,
    /// The fields the index's keys are made of, in key order: the arguments.
    pub arguments: Vec<FieldId>,
}

impl Lookup {
    /// The fields given as arguments: the index's fields, or the entity's key fields.
    pub fn arguments<'m>(&'m self, model: &'m Model) -> &'m [FieldId] {
        match &self.index {
            Some(index) => &index.arguments,
            None => &model.entities[self.entity].key_fields,
        }
    }
}

/// A paginated field.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The GraphQL name.
    pub name: String,
    /// `Type.field` (`Query.field` at the root): what cursors are bound to and metrics name.
    pub label: &'static str,
    /// Its description.
    pub description: Option<String>,
    /// The nodes' entity.
    pub entity: EntityId,
    /// The index read, if not the table itself (position in the table's indexes).
    pub index: Option<usize>,
    /// A Query on one partition, or a Scan.
    pub read: Read,
    /// Filter arguments.
    pub filters: Vec<Filter>,
    /// The `order` argument; `None` for Scans, which page forward only.
    pub order: Option<Order>,
    /// Default and largest page size, if set for this connection.
    pub page_size: Option<(u32, u32)>,
    /// The key shape of items read (the table key, or the index's start key): what cursors hold.
    pub start_key: KeyShape,
    /// An item collection: the union of member entities its nodes are. `entity` is then the
    /// first member.
    pub collection: Option<Collection>,
    /// Tests DynamoDB applies, beside the key condition, to tell the node entity's items from
    /// others, within the read budget. On a connection of one entity they hold every required
    /// value of its rule (the type attribute's, the constants: [`Entity::required_values`]), so
    /// that those attributes are neither read back nor tested again in memory, where only the
    /// keys are ([`Entity::keys_read_back`]); in Scans, and in Queries of partitions whose types
    /// share a prefix, they also select the entity's items where key conditions cannot.
    pub type_filters: Vec<(&'static str, TypeTest)>,
    /// Every item the key condition selects is expected to pass `type_filters` (they only state
    /// the required values of an entity whose keys' start the condition already selects): reads
    /// then ask DynamoDB for no more items on their account until one fails them.
    pub type_filters_expected: bool,
    /// The table holds other entities too: every item read is checked against the node
    /// entity (or the collection's members) and skipped when it is not one of them.
    pub shared: bool,
    /// Who may page through it: its own rules, or its nodes' entity's. Every owner rule here is
    /// on the field the connection is partitioned by.
    pub access: Access,
    /// The subscription field that delivers its changes, if it has one.
    pub subscription: Option<Argument>,
    /// It offers `totalCount` (only where no item is told apart in memory: not `shared`).
    pub total_count: bool,
}

/// An item collection's union.
#[derive(Debug, Clone)]
pub struct Collection {
    /// The union's GraphQL name.
    pub union: String,
    /// The member entities.
    pub members: Vec<EntityId>,
}

/// A test on a key or type attribute that selects one entity's items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeTest {
    /// The attribute equals this string.
    Equals(String),
    /// The attribute starts with this string.
    BeginsWith(String),
}

/// How a connection reads.
// A model is built once per process and holds a handful of these: size does not matter, and
// unboxed variants keep them easy to match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Read {
    /// A Query on one partition, with optional sort-key conditions.
    Query {
        /// The partition key attribute and where its value comes from.
        partition: Partition,
        /// Sort-key conditions, if the table or index has a sort key and any are declared.
        sort: Option<SortCondition>,
        /// The literal start of the node entity's sort-key template: a `begins_with` key
        /// condition when no sort argument is given (arguments' values start with it).
        prefix: Option<(&'static str, String)>,
    },
    /// A Scan.
    Scan,
}

/// The partition of a Query.
#[derive(Debug, Clone)]
pub struct Partition {
    /// The partition key attribute of the table or index read.
    pub attribute: KeyAttr,
    /// Where its value comes from: the attribute's value, or the facet of `template`.
    pub from: PartitionFrom,
    /// The node entity's template on the attribute, with one facet that `from` gives.
    pub template: Option<KeyTemplate>,
}

/// Where a partition key value comes from.
#[derive(Debug, Clone)]
pub enum PartitionFrom {
    /// A required argument, typed as the node entity's field on the attribute.
    Argument {
        /// The argument.
        argument: Argument,
        /// The node entity's field on the partition attribute (the argument's type).
        field: FieldId,
    },
    /// A field of the parent entity.
    Parent(FieldId),
    /// A constant.
    Constant(KeyValue),
}

/// Sort-key condition arguments, typed as the node entity's field on the sort key.
#[derive(Debug, Clone)]
pub struct SortCondition {
    /// The sort key attribute of the table or index read.
    pub attribute: KeyAttr,
    /// The node entity's field on it, or the facet of `template` after the `fixed` ones.
    pub field: FieldId,
    /// The node entity's template on the sort key: the arguments then bound the facet after the
    /// `fixed` ones (`begins_with` takes a string: the facet's first characters).
    pub template: Option<KeyTemplate>,
    /// Arguments fixing the template's leading facets exactly, in template order.
    pub fixed: Vec<(FieldId, Argument)>,
    /// How many of `fixed` are required; those after may be left out, each only with every
    /// `fixed` argument after it and the range or prefix (the whole partition is then read).
    pub required_fixed: usize,
    /// Lowest value, inclusive.
    pub min: Option<Argument>,
    /// Highest value, inclusive.
    pub max: Option<Argument>,
    /// A prefix (string sort keys only).
    pub begins_with: Option<Argument>,
}

/// A named argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    /// The GraphQL name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
}

/// A filter argument.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The argument.
    pub argument: Argument,
    /// The node entity's field tested.
    pub field: FieldId,
    /// The comparison.
    pub op: FilterOp,
}

/// A filter comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `begins_with(attribute, value)`
    BeginsWith,
    /// `contains(attribute, value)`
    Contains,
    /// `attribute IN (values...)`: the argument is a list.
    In,
    /// `attribute_exists` (true) or `attribute_not_exists` (false): the argument is a Boolean.
    Exists,
}

/// The `order` argument of a Query connection.
#[derive(Debug, Clone)]
pub struct Order {
    /// Descending by default.
    pub default_desc: bool,
    /// Its description.
    pub description: Option<String>,
}

/// The mutations generated for an entity.
#[derive(Debug, Clone, Default)]
pub struct Mutations {
    /// `create{Type}`.
    pub create: Option<CreateMutation>,
    /// `update{Type}`.
    pub update: Option<Mutation>,
    /// `delete{Type}`.
    pub delete: Option<Mutation>,
}

/// A generated mutation.
#[derive(Debug, Clone, Default)]
pub struct Mutation {
    /// Its description.
    pub description: Option<String>,
    /// Who may call it.
    pub access: Access,
}

/// `create{Type}`.
#[derive(Debug, Clone, Default)]
pub struct CreateMutation {
    /// Its description.
    pub description: Option<String>,
    /// The connection (`entity`, position in its connections) the payload's edge is valid in.
    pub edge: Option<(EntityId, usize)>,
    /// Who may call it.
    pub access: Access,
}

impl Model {
    /// The tables with a `stream`: those a change relay (`dynarelay relay`, or the Lambda
    /// function given stream events) publishes the changes of.
    pub fn streamed_tables(&self) -> impl Iterator<Item = TableId> + '_ {
        (0..self.tables.len()).filter(|&t| self.tables[t].stream.is_some())
    }

    /// The table of an entity.
    pub fn table_of(&self, entity: EntityId) -> &Table {
        &self.tables[self.entities[entity].table]
    }

    /// The first of `candidates` an item read by `keys` is one of (the model makes sure at most
    /// one is); see [`Entity::matches`].
    pub fn entity_of<'i>(
        &self,
        candidates: &[EntityId],
        keys: &[KeyAttr],
        get: impl Fn(&str) -> Option<&'i str> + Copy,
    ) -> Option<EntityId> {
        candidates
            .iter()
            .copied()
            .find(|&e| self.entities[e].matches(self, keys, get))
    }

    /// The entity named `name`.
    pub fn entity_named(&self, name: &str) -> Option<EntityId> {
        self.entities.iter().position(|e| e.name == name)
    }
}

impl Entity {
    /// The field on attribute `attribute`, if any.
    pub fn field_on(&self, attribute: &str) -> Option<FieldId> {
        self.fields.iter().position(|f| f.attribute == attribute)
    }

    /// The template on key attribute `attribute`, if the entity builds it from its fields.
    pub fn template_on(&self, attribute: &str) -> Option<&TemplateKey> {
        self.templates.iter().find(|t| t.attribute == attribute)
    }

    /// Where a facet field's value can be read back from a key when the item does not hold it
    /// separately: the first template with the field as a facet (the table's keys first).
    pub fn facet_source(&self, field: FieldId) -> Option<&TemplateKey> {
        self.templates.iter().find(|t| t.facets.contains(&field))
    }

    /// The string attributes an item must hold, with these values, to be one of this entity's:
    /// the table's type attribute with the entity's type value (when the table has one), then
    /// each constant. `create` writes them all, updates and deletes expect them all, and every
    /// read requires them all ([`Entity::matches`]): ElectroDB's `loan` of version 1 and of
    /// version 2 are two rules, `__edb_e__ = "loan"` with `__edb_v__ = "1"` or `"2"`.
    pub fn required_values<'m>(
        &'m self,
        table: &'m Table,
    ) -> impl Iterator<Item = (&'m str, &'m str)> {
        let typed = table
            .type_attribute
            .as_deref()
            .zip(self.type_value.as_deref());
        typed
            .into_iter()
            .chain(self.constants.iter().map(|(a, v)| (a.as_str(), v.as_str())))
    }

    /// Whether an item is one of this entity's, given its string attributes: it holds every
    /// [required value](Entity::required_values), and each of the `keys` (the table's: every read
    /// passes those, so that an item is the same entity however it was found) that the entity
    /// builds from a template reads back under it, with each facet a value of its field's type
    /// and the same in every such key that holds it. Index keys are not looked at. The
    /// attributes an item stores its facets in are not looked at either: the keys are what
    /// DynamoDB files the item under, and what its id and cursors are made of, so they decide
    /// (and a facet of the table's key is read from the key; see `values::field_value`).
    pub fn matches<'i>(
        &self,
        model: &Model,
        keys: &[KeyAttr],
        get: impl Fn(&str) -> Option<&'i str>,
    ) -> bool {
        let table = &model.tables[self.table];
        self.required_values(table)
            .all(|(attribute, value)| get(attribute) == Some(value))
            && self.keys_read_back(model, keys, get)
    }

    /// The half of [`Entity::matches`] that looks at the keys alone: each of the `keys` that the
    /// entity builds from a template reads back under it, with each facet a value of its field's
    /// type and the same in every such key that holds it. A read whose filters test the
    /// required values in DynamoDB (a connection's `type_filters`) tests only this in memory.
    pub fn keys_read_back<'i>(
        &self,
        model: &Model,
        keys: &[KeyAttr],
        get: impl Fn(&str) -> Option<&'i str>,
    ) -> bool {
        // Facets seen in earlier keys, to compare with later ones; entities have few.
        let mut seen: SmallVec<[(FieldId, std::borrow::Cow<'i, str>); 6]> = SmallVec::new();
        for t in &self.templates {
            if !keys.iter().any(|k| k.name == t.attribute) {
                continue;
            }
            let Some(key) = get(t.attribute) else {
                return false;
            };
            let read = t.template.read_each(key, |at, _, text| {
                let field = t.facets[at];
                if let Some((_, earlier)) = seen.iter().find(|(f, _)| *f == field) {
                    return *earlier == text;
                }
                if !model.facet_fits(&t.template, &self.fields[field], &text) {
                    return false;
                }
                seen.push((field, text));
                true
            });
            if !read {
                return false;
            }
        }
        true
    }
}

impl Model {
    /// Whether a facet's text in a key of `template` is a value of its field's type, as such a
    /// key writes it (see `values::facet_text`).
    fn facet_fits(&self, template: &KeyTemplate, field: &Field, text: &str) -> bool {
        let integer = |text: &str| template.read_integer(&field.name, text);
        match field.ty {
            FieldType::Scalar(Scalar::Int) => {
                integer(text).is_some_and(|n| i32::try_from(n).is_ok())
            }
            FieldType::Scalar(Scalar::BigInt) => integer(text).is_some(),
            FieldType::Scalar(Scalar::DateTime(format)) if format.is_number() => {
                integer(text).is_some()
            }
            FieldType::Scalar(Scalar::DateTime(TimeFormat::Date)) => {
                chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
            }
            // chrono reads RFC 3339's `T` and `Z` in either case, as a lowercased key has them.
            FieldType::Scalar(Scalar::DateTime(_)) => {
                chrono::DateTime::parse_from_rfc3339(text).is_ok()
            }
            FieldType::Scalar(Scalar::Enum(e))
                if template.case() == template::KeyCase::AsStored =>
            {
                self.enums[e].values.iter().any(|(value, _)| value == text)
            }
            FieldType::Scalar(Scalar::Enum(e)) => {
                let case = template.case();
                self.enums[e]
                    .values
                    .iter()
                    .any(|(value, _)| case.apply(value) == text)
            }
            _ => true,
        }
    }
}

/// Leaks a string for the life of the process (see the module docs).
pub(crate) fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// Leaks a key shape for the life of the process (see the module docs).
pub(crate) fn leak_shape(attrs: Vec<KeyAttr>) -> KeyShape {
    Box::leak(attrs.into_boxed_slice())
}
