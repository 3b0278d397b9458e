//! The model file as written: TOML deserialized with serde, every value that a later check may
//! point at kept with its place in the file ([`Spanned`]). The same types derive the file's JSON
//! Schema (`dynarelay.schema.json`), so editors complete and validate what this module reads.
//!
//! Nothing here is checked beyond its TOML shape: [`super::check`] turns a [`ModelFile`] into a
//! [`super::Model`] and reports every problem at once.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// A dynarelay model: the DynamoDB tables to serve and the GraphQL API over them.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ModelFile {
    /// The version of the model format. Only `1` exists.
    #[schemars(with = "Option<u32>")]
    pub version: Option<Spanned<u32>>,
    /// The DynamoDB tables, by name (before `--table-prefix`): their keys and indexes.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, TableFile>")]
    pub tables: BTreeMap<Spanned<String>, TableFile>,
    /// Enumerations: string attributes that hold one of a fixed set of values.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, EnumFile>")]
    pub enums: BTreeMap<Spanned<String>, EnumFile>,
    /// The GraphQL object types, by name, each stored in one table.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, EntityFile>")]
    pub entities: BTreeMap<Spanned<String>, EntityFile>,
    /// Root query fields that read one item by its full key (GetItem): null when absent.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, LookupFile>")]
    pub lookups: BTreeMap<Spanned<String>, LookupFile>,
    /// Root query fields that page through a table, an index, or a Scan.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ConnectionFile>")]
    pub connections: BTreeMap<Spanned<String>, ConnectionFile>,
    /// How callers prove who they are: bearer JWTs verified against a JWKS or a shared secret.
    /// Needed by every `allow` rule other than `"public"`. Without it, every request is
    /// anonymous.
    #[schemars(with = "Option<AuthFile>")]
    pub auth: Option<Spanned<AuthFile>>,
    /// Serve the API as an Apollo Federation 2 subgraph, to be composed into a supergraph
    /// (Apollo Router or Gateway): every entity type gets `@key(fields: "id")` and a `@key` on
    /// each lookup's arguments, the gateway fetches entities through `_entities`, and
    /// `_service { sdl }` gives the subgraph schema to compose. Leave it out for a standalone
    /// API.
    #[schemars(with = "Option<FederationFile>")]
    pub federation: Option<Spanned<FederationFile>>,
}

/// The Apollo Federation 2 subgraph settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FederationFile {
    /// Whether `Query.node` and `Query.nodes` stay in this subgraph (default `true`). A
    /// supergraph composes only when at most one subgraph defines them: write `false` in every
    /// other dynarelay subgraph, and in this one when another subgraph already owns `node`.
    pub node: Option<bool>,
    /// Entity types other subgraphs own, by name, that this model's entities refer to: a
    /// relation whose `type` names one returns a reference the gateway resolves in the owning
    /// subgraph (`type = "Review"`, `key = ["reviewId"]`).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ExternalTypeFile>")]
    pub types: BTreeMap<Spanned<String>, ExternalTypeFile>,
}

/// An entity type of another subgraph, as this subgraph refers to it.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ExternalTypeFile {
    /// Its description, for this subgraph's schema.
    pub description: Option<String>,
    /// The fields of the type's `@key` in the subgraph that owns it, with their GraphQL types
    /// (`ID`, `String` or `Int`, with `!` as the owner declares them): `{ id = "ID!" }`. A
    /// relation to the type lists the fields of its entity that hold them, in the order written
    /// here.
    #[schemars(with = "BTreeMap<String, String>")]
    pub key: Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
}

/// Bearer-token verification. Exactly one of `jwks_url`, `jwks_file` and `secret_env` says where
/// the keys come from. A request without a token is anonymous; one with a token that fails any
/// check is refused whole with HTTP 401 and `UNAUTHENTICATED`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AuthFile {
    /// The identity provider's JWKS, fetched at start and again (at most once per
    /// `jwks_refresh_seconds`) when a token names a key it does not hold: Cognito's is
    /// `https://cognito-idp.<region>.amazonaws.com/<user pool id>/.well-known/jwks.json`,
    /// Auth0's `https://<tenant>.auth0.com/.well-known/jwks.json`.
    #[schemars(with = "Option<String>")]
    pub jwks_url: Option<Spanned<String>>,
    /// A JWKS file, relative to the model file.
    #[schemars(with = "Option<String>")]
    pub jwks_file: Option<Spanned<String>>,
    /// The environment variable holding a shared HS256 secret, for local development. The
    /// secret itself never goes in the file.
    #[schemars(with = "Option<String>")]
    pub secret_env: Option<Spanned<String>>,
    /// The signature algorithms accepted, such as `["RS256"]`; a token signed with any other is
    /// refused. Default: `["RS256"]` with a JWKS, `["HS256"]` with a secret.
    #[schemars(with = "Option<Vec<String>>")]
    pub algorithms: Option<Spanned<Vec<Spanned<String>>>>,
    /// The `iss` every token must carry, if set (Cognito: the user pool's URL).
    #[schemars(with = "Option<String>")]
    pub issuer: Option<Spanned<String>>,
    /// The audiences a token's `aud` must name one of, if set (Cognito ID tokens: the app
    /// client id).
    #[schemars(with = "Option<Vec<String>>")]
    pub audience: Option<Spanned<Vec<String>>>,
    /// Clock skew allowed when checking `exp` and `nbf`, in seconds. Default 30, at most 300.
    #[schemars(with = "Option<u32>")]
    pub leeway_seconds: Option<Spanned<u32>>,
    /// The claim listing the caller's groups, for `{ groups = [...] }` rules. Default
    /// `"groups"`; Cognito: `"cognito:groups"`.
    #[schemars(with = "Option<String>")]
    pub groups_claim: Option<Spanned<String>>,
    /// The shortest time between two fetches of `jwks_url`, in seconds. Default 60.
    #[schemars(with = "Option<u32>")]
    pub jwks_refresh_seconds: Option<Spanned<u32>>,
    /// The longest wait for `jwks_url` to answer, in milliseconds. Default 3000.
    #[schemars(with = "Option<u32>")]
    pub jwks_timeout_ms: Option<Spanned<u32>>,
    /// Who may introspect the schema (and so use GraphiQL's documentation and completion) and
    /// get field suggestions ("Did you mean ...?") in validation errors. Default: everyone.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub introspection: Option<Spanned<Vec<Spanned<RuleFile>>>>,
    /// Who may send documents that no operation manifest lists when the server enforces its
    /// manifests (`--trusted-documents enforce`), such as `[{ groups = ["support"] }]` for
    /// GraphiQL and support staff. Default: nobody.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub unlisted_documents: Option<Spanned<Vec<Spanned<RuleFile>>>>,
}

/// One rule of an `allow` list; a caller any rule of the list admits is allowed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RuleFile {
    /// `"public"`: everyone, with or without a token. `"authenticated"`: any caller with a
    /// valid token.
    Keyword(String),
    /// `{ groups = ["admin"] }`: callers in any of these groups.
    Groups(GroupsRuleFile),
    /// `{ owner = "userId" }`: the item's field must equal the caller's claim (`sub` unless
    /// `claim` says otherwise).
    Owner(OwnerRuleFile),
}

/// Callers in any of these groups (read from `[auth] groups_claim`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GroupsRuleFile {
    /// The groups.
    pub groups: Vec<String>,
}

/// Callers who own the item: its field `owner` equals their claim `claim`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OwnerRuleFile {
    /// The entity's field holding the owner (a non-null `String` or `ID`).
    pub owner: String,
    /// The token claim it must equal, or several claims in braces with text between them, as
    /// Amplify stores owners: `"{sub}::{username}"` (Cognito access tokens; `cognito:username`
    /// in ID tokens). Default `"sub"`.
    pub claim: Option<String>,
}

/// A DynamoDB table's key schema and secondary indexes.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TableFile {
    /// The partition (HASH) key attribute.
    #[schemars(with = "String")]
    pub partition_key: Spanned<String>,
    /// The sort (RANGE) key attribute, if the table has one.
    #[schemars(with = "Option<String>")]
    pub sort_key: Option<Spanned<String>>,
    /// The type of every key attribute of the table and its indexes: `S`, `N` or `B`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, KeyTypeFile>")]
    pub attributes: BTreeMap<Spanned<String>, Spanned<KeyTypeFile>>,
    /// Secondary indexes, by name.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, IndexFile>")]
    pub indexes: BTreeMap<Spanned<String>, IndexFile>,
    /// A string attribute naming each item's entity (for example `"_type"`), for tables that
    /// hold several entities. Written on create, checked on every read, and used to select one
    /// entity's items in Scans. Without it, the entities of a shared table are told apart by
    /// their key templates alone.
    #[schemars(with = "Option<String>")]
    pub type_attribute: Option<Spanned<String>>,
    /// The table's DynamoDB stream, which feeds the subscriptions of its connections: what its
    /// records hold. `NEW_AND_OLD_IMAGES` is the only view subscriptions can use: the old image
    /// tells which connections an item leaves (a removal, a new partition, a filter it no longer
    /// passes), the new one where it enters. `dynarelay tables create` creates the table with
    /// this stream; on an existing table, enable it (`aws dynamodb update-table
    /// --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES`).
    #[schemars(with = "Option<StreamViewFile>")]
    pub stream: Option<Spanned<StreamViewFile>>,
}

/// What a table stream's records hold, as DynamoDB names the view types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types)]
pub enum StreamViewFile {
    /// The item before and after each change.
    NEW_AND_OLD_IMAGES,
    /// The item after each change only.
    NEW_IMAGE,
    /// The item before each change only.
    OLD_IMAGE,
    /// The changed item's key only.
    KEYS_ONLY,
}

/// A key attribute's DynamoDB type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum KeyTypeFile {
    /// String.
    S,
    /// Number.
    N,
    /// Binary.
    B,
}

/// A global or local secondary index.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IndexFile {
    /// `global` (the default) or `local` (same partition key as the table).
    #[serde(default)]
    #[schemars(with = "Option<IndexKindFile>")]
    pub kind: Option<Spanned<IndexKindFile>>,
    /// The index's partition key attribute. Required for a global index; a local index uses
    /// the table's.
    #[schemars(with = "Option<String>")]
    pub partition_key: Option<Spanned<String>>,
    /// The index's sort key attribute. Required for a local index.
    #[schemars(with = "Option<String>")]
    pub sort_key: Option<Spanned<String>>,
    /// Which attributes the index holds: `ALL` (the default), `KEYS_ONLY`, or a list of the
    /// non-key attributes it includes (the table's keys and the index's own are held anyway,
    /// listed or not). A connection over an index serves an entity only when the index holds
    /// every attribute it reads, or the key a field's value is read back from (a facet of a key
    /// template written in its values' case).
    #[serde(default)]
    #[schemars(with = "Option<ProjectionFile>")]
    pub projection: Option<Spanned<ProjectionFile>>,
}

/// Global or local.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexKindFile {
    /// A global secondary index (GSI).
    Global,
    /// A local secondary index (LSI).
    Local,
}

/// An index projection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProjectionFile {
    /// `ALL` or `KEYS_ONLY`.
    Kind(ProjectionKindFile),
    /// `INCLUDE`: the key attributes and these.
    Include(Vec<String>),
}

/// `ALL` or `KEYS_ONLY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum ProjectionKindFile {
    /// Every attribute.
    #[serde(rename = "ALL")]
    All,
    /// Only the table's and the index's keys.
    #[serde(rename = "KEYS_ONLY")]
    KeysOnly,
}

/// A GraphQL enum stored as a string attribute holding the value's name.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnumFile {
    /// The enum's description in the schema.
    pub description: Option<String>,
    /// The values: a list of names, or a table of names to descriptions.
    #[schemars(with = "EnumValuesFile")]
    pub values: Spanned<EnumValuesFile>,
}

/// Enum values, with or without descriptions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EnumValuesFile {
    /// Names only.
    Names(Vec<String>),
    /// Names and their descriptions.
    Described(BTreeMap<String, String>),
}

/// A GraphQL object type stored in one table. It implements `Node`, with a global `id`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EntityFile {
    /// The table that holds it (a name under `[tables]`).
    #[schemars(with = "String")]
    pub table: Spanned<String>,
    /// The type's description in the schema.
    pub description: Option<String>,
    /// Key attributes built from the entity's fields, for tables that hold several entities:
    /// the attribute (of the table or one of its indexes) and its template, such as
    /// `SK = "ORDER#{placedAt}#{orderId}"`. Each `{facet}` is a field of the entity; the text
    /// between facets tells the entity's items apart and separates the facets. Facet values
    /// have `\\` and the separators escaped with `\\`; integers are written as 20 fixed-width
    /// digits so that they sort. With `escape_keys = false`, values are written as they are and
    /// numbers as plain decimal text. `{seq:08}`, escaped or not, zero-pads a number to at least
    /// 8 digits (a wider one is written as it is, and sorts by its first digits). A key
    /// attribute with no template is a field's attribute, as in a table of one entity.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub keys: BTreeMap<Spanned<String>, Spanned<String>>,
    /// Whether the facet values in `keys` escape `\\` and the separators with `\\`, as dynarelay
    /// writes its own keys. Default `true`. Set `false` for keys written by other tools
    /// (ElectroDB, dynamodb-toolbox, OneTable, Amplify, your own code), which never escape: a
    /// facet followed by literal text then ends where that text first occurs, and the last facet
    /// takes the rest of the key (`CUSTOMER#{email}` reads `CUSTOMER#a#b@example.com` as the
    /// email `a#b@example.com`). In a table that holds several entities, such an entity is told
    /// apart from the others by the table's `type_attribute`, or, without one, by the literal
    /// text its keys start with (`#METADATA#{name}` beside `TITLE#{number}`: neither start
    /// begins the other).
    #[schemars(with = "Option<bool>")]
    pub escape_keys: Option<Spanned<bool>>,
    /// The case `keys` are written in: `lower` (ElectroDB's default), `upper`, or `as_stored`
    /// (the default): the literal text and every facet value. Lookups and conditions then find
    /// an item whatever the casing of the values they are given, and fields keep the case their
    /// own attributes store.
    #[schemars(with = "Option<KeyCaseFile>")]
    pub key_case: Option<Spanned<KeyCaseFile>>,
    /// The entity as ElectroDB declares it: its service, entity name, version and composite
    /// attributes. Its `keys` are then ElectroDB's, lowercased (`pk = "$lending#memberid_{memberId}"`,
    /// `sk = "$loan_1#loanedat_{loanedAt}#loanid_{loanId}"`), written without escapes; its
    /// `type_value` is the entity name, and `__edb_v__` must hold the version (a constant):
    /// every read takes only items of this entity and version, and `create` writes both. The
    /// table's `type_attribute` must be `__edb_e__`. Two versions of one entity (a table in the
    /// middle of a migration) are two entities, in one model or in two. Leave `keys`,
    /// `escape_keys`, `key_case`, `type_value` and `constants` out.
    #[schemars(with = "Option<ElectroDbFile>")]
    pub electrodb: Option<Spanned<ElectroDbFile>>,
    /// The value of the table's `type_attribute` for this entity. Default: the entity's name.
    /// Two entities of a table may share one only when a constant tells them apart.
    #[schemars(with = "Option<String>")]
    pub type_value: Option<Spanned<String>>,
    /// String attributes every item of the entity holds besides its fields, keys and type
    /// attribute, such as ElectroDB's `__edb_v__ = "1"`: part of the entity's rule with the type
    /// value. Every read (connections, Scans, lookups, relations, `node`) takes only items that
    /// hold each of them with its value, `create` writes them, and updates and deletes touch
    /// only items that hold them. Two entities with the same `type_value` and different values
    /// of a constant (ElectroDB's version 1 and 2 of an entity) are told apart by it.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub constants: BTreeMap<Spanned<String>, Spanned<String>>,
    /// The type tag global ids start with. Default: the type name and `:`. Set a short one
    /// (such as `"U"`) to keep ids compact, or to keep ids stable across a rename. No tag may
    /// begin another.
    #[schemars(with = "Option<String>")]
    pub id_tag: Option<Spanned<String>>,
    /// The fields read from the item's attributes. The key attributes must each have one.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, FieldEntry>")]
    pub fields: BTreeMap<Spanned<String>, FieldEntry>,
    /// Fields that hold another entity's key and resolve to that entity.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RelationFile>")]
    pub relations: BTreeMap<Spanned<String>, RelationFile>,
    /// Fields that page through items related to this one.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ConnectionFile>")]
    pub connections: BTreeMap<Spanned<String>, ConnectionFile>,
    /// Which mutations to generate (none by default).
    #[serde(default)]
    pub mutations: MutationsFile,
    /// A field of type `Int!` or `BigInt!` used for optimistic concurrency: set to 1 on create,
    /// incremented by each update, and `update` succeeds only when the input's `version` equals
    /// the stored one.
    #[schemars(with = "Option<String>")]
    pub version_field: Option<Spanned<String>>,
    /// Who may see this entity's items, wherever they are reached: lookups, `node`, `nodes`,
    /// relations, connections and mutation payloads. An item a caller may not see is null, as
    /// if it did not exist. Default: `["public"]`.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub allow: Option<Spanned<Vec<Spanned<RuleFile>>>>,
}

/// An ElectroDB entity's model, as its `new Entity({ model, attributes, indexes })` says.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ElectroDbFile {
    /// `model.service`.
    pub service: String,
    /// `model.entity`.
    pub entity: String,
    /// `model.version`. Default `"1"`.
    pub version: Option<String>,
    /// The table index's `pk.composite`: fields, in order.
    pub pk: Vec<String>,
    /// The table index's `sk.composite`: fields, in order. Default: none.
    #[serde(default)]
    pub sk: Vec<String>,
    /// The table index's `collection`, if it has one.
    pub collection: Option<String>,
    /// The key casing: `lower` (ElectroDB's default), `upper`, or `as_stored` (its `"none"`).
    pub casing: Option<KeyCaseFile>,
    /// The entity's secondary indexes, by DynamoDB index name (their `index`).
    #[serde(default)]
    pub indexes: BTreeMap<String, ElectroDbIndexFile>,
}

/// One of an ElectroDB entity's secondary indexes.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ElectroDbIndexFile {
    /// `pk.composite`: fields, in order.
    pub pk: Vec<String>,
    /// `sk.composite`: fields, in order. Default: none.
    #[serde(default)]
    pub sk: Vec<String>,
    /// The index's `collection`, if it has one.
    pub collection: Option<String>,
}

/// The case keys are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyCaseFile {
    /// As the values are.
    AsStored,
    /// All lowercase.
    Lower,
    /// All uppercase.
    Upper,
}

/// A field: its settings, or its GraphQL type alone (`orderId = "ID!"` for
/// `orderId = { type = "ID!" }`), as Cargo takes `serde = "1"` beside a table.
#[derive(Debug)]
pub struct FieldEntry(pub FieldFile);

impl std::ops::Deref for FieldEntry {
    type Target = FieldFile;

    fn deref(&self) -> &FieldFile {
        &self.0
    }
}

impl<'de> Deserialize<'de> for FieldEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The type alone is a string with no place of its own in serde's data model: the whole
        // value's place (toml's `Spanned`) is the type's.
        let spanned = Spanned::<Shorthand>::deserialize(deserializer)?;
        let span = spanned.span();
        Ok(FieldEntry(match spanned.into_inner() {
            Shorthand::Type(ty) => FieldFile::of_type(Spanned::new(span, ty)),
            Shorthand::Table(file) => *file,
        }))
    }
}

impl JsonSchema for FieldEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FieldEntry".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let table = generator.subschema_for::<FieldFile>();
        schemars::json_schema!({
            "description": "A field: a table of its settings, or its GraphQL type alone (`orderId = \"ID!\"` is `orderId = { type = \"ID!\" }`).",
            "anyOf": [
                {
                    "type": "string",
                    "description": "The GraphQL type, as `type` in the table form: `String!`, `[ID!]`, an enum name."
                },
                table
            ]
        })
    }
}

/// A field as written: its type alone, or a table.
enum Shorthand {
    Type(String),
    Table(Box<FieldFile>),
}

impl<'de> Deserialize<'de> for Shorthand {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Hand-written rather than `#[serde(untagged)]`: an untagged enum buffers the value and
        // loses the places (`Spanned`) inside the table, which every later message points at.
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Shorthand;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a field: its type, such as \"String!\", or a table such as \
                     `{ type = \"String!\", description = \"...\" }`",
                )
            }

            fn visit_str<E: serde::de::Error>(self, ty: &str) -> Result<Shorthand, E> {
                Ok(Shorthand::Type(ty.to_owned()))
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<Shorthand, M::Error> {
                FieldFile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|file| Shorthand::Table(Box::new(file)))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

impl FieldFile {
    /// A field of type `ty`, with every other setting left out.
    fn of_type(ty: Spanned<String>) -> Self {
        Self {
            ty,
            attribute: None,
            description: None,
            stored_as: None,
            default: None,
            generated: None,
            input_description: None,
            min: None,
            max: None,
            min_length: None,
            max_length: None,
            format: None,
            allow: None,
        }
    }
}

/// A field read from one attribute.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FieldFile {
    /// The GraphQL type, with `!` for non-null and `[...]` for lists: `String`, `ID`, `Int`,
    /// `BigInt`, `Float`, `Decimal`, `Boolean`, `DateTime`, `Bytes`, `JSON`, or an enum name.
    #[schemars(with = "String")]
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    /// The attribute's name in the item. Default: the field's name.
    #[schemars(with = "Option<String>")]
    pub attribute: Option<Spanned<String>>,
    /// The field's description in the schema.
    pub description: Option<String>,
    /// How the value is stored. `DateTime`: `epoch_millis` (N, the default), `epoch_seconds`
    /// (N), `iso8601` (S, with milliseconds), `iso8601_seconds` (S, whole seconds) or `date` (S,
    /// `2026-05-01`). Lists: `list` (L, the default) or `set` (SS, NS or BS).
    #[schemars(with = "Option<StoredAsFile>")]
    pub stored_as: Option<Spanned<StoredAsFile>>,
    /// In create inputs: the value used when the input omits the field, which makes it
    /// optional. `"now"` for a `DateTime`; otherwise a literal of the field's type. When the
    /// field is part of the key and `"now"` is taken, the next free millisecond is used.
    #[schemars(with = "Option<serde_json::Value>")]
    pub default: Option<Spanned<toml::Value>>,
    /// Set by the server and absent from inputs: `"now"`, the time the item is created, or
    /// `"now_on_write"`, the time it is created and, again, at every update (a last-changed
    /// time such as dynamodb-toolbox's `_md`, OneTable's `updated` or Amplify's `updatedAt`).
    #[schemars(with = "Option<String>")]
    pub generated: Option<Spanned<String>>,
    /// The description of the field in mutation inputs. Default: `description`.
    pub input_description: Option<String>,
    /// Inputs: the smallest allowed number (inclusive).
    #[schemars(with = "Option<serde_json::Value>")]
    pub min: Option<Spanned<toml::Value>>,
    /// Inputs: the largest allowed number (inclusive).
    #[schemars(with = "Option<serde_json::Value>")]
    pub max: Option<Spanned<toml::Value>>,
    /// Inputs: the fewest characters a string may have.
    #[schemars(with = "Option<u32>")]
    pub min_length: Option<Spanned<u32>>,
    /// Inputs: the most characters a string may have.
    #[schemars(with = "Option<u32>")]
    pub max_length: Option<Spanned<u32>>,
    /// A string format: `email` (inputs must look like an email address), or `ulid` or `ksuid`
    /// (inputs must be such an id; ids of these formats sort by the time they were made, so a
    /// sort key holding them takes `min` and `max` as times).
    #[schemars(with = "Option<String>")]
    pub format: Option<Spanned<String>>,
    /// Who may read this field, besides seeing its item; for others it is null with a
    /// `FORBIDDEN` error. Only a nullable field can have rules. Default: whoever sees the item.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub allow: Option<Spanned<Vec<Spanned<RuleFile>>>>,
}

/// How a value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoredAsFile {
    /// N: milliseconds since 1970-01-01T00:00:00Z.
    EpochMillis,
    /// N: seconds since 1970-01-01T00:00:00Z.
    EpochSeconds,
    /// S: an ISO 8601 (RFC 3339) date-time with milliseconds, as JavaScript's `toISOString()`
    /// writes it (`2026-05-01T12:00:00.123Z`).
    Iso8601,
    /// S: an RFC 3339 date-time in whole seconds (`2026-05-01T12:00:00Z`).
    Iso8601Seconds,
    /// S: a calendar date (`2026-05-01`), read as midnight UTC.
    Date,
    /// L: a list.
    List,
    /// SS, NS or BS: a set (no duplicates, no order).
    Set,
}

/// A field holding another entity's key, resolved to that entity (batched per request).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RelationFile {
    /// The target entity, with `!` when it must exist (a missing one is then an error; without
    /// `!` it is null).
    #[schemars(with = "String")]
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    /// This entity's fields holding the target's key: its partition key, then its sort key.
    #[schemars(with = "Vec<String>")]
    pub key: Spanned<Vec<Spanned<String>>>,
    /// The field's description in the schema.
    pub description: Option<String>,
    /// Create mutations refuse an input whose target does not exist.
    #[serde(default)]
    pub check_on_create: bool,
    /// Find the target through this index of its table rather than by its table key: `key`
    /// then lists the fields giving the index key's facets (or fields), as the target's lookup
    /// through that index takes them. As for such lookups, two targets under one index key are
    /// an error, never an arbitrary pick.
    #[schemars(with = "Option<String>")]
    pub index: Option<Spanned<String>>,
}

/// A root field reading one item by its full key.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LookupFile {
    /// The entity to read. Its key fields become the arguments.
    #[schemars(with = "String")]
    pub entity: Spanned<String>,
    /// Read through this index of the entity's table rather than by the table's key: the
    /// fields the index's keys are made of (their facets, or the fields on them) become the
    /// arguments, such as an event by its id through `GSI1PK = "EVENT#{eventId}"`. At most two
    /// items are read; an index key that more than one item of the entity holds is an error
    /// (`INTERNAL_SERVER_ERROR`, logged), never an arbitrary pick.
    #[schemars(with = "Option<String>")]
    pub index: Option<Spanned<String>>,
    /// The field's description in the schema.
    pub description: Option<String>,
    /// Who may use the lookup (`FORBIDDEN` for others); the entity's own `allow` still decides
    /// which items they see. Default: everyone.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub allow: Option<Spanned<Vec<Spanned<RuleFile>>>>,
}

/// A paginated field: a Query on a table or index partition, or a Scan.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ConnectionFile {
    /// The entity the connection's nodes are (or `members`, for an item collection).
    #[schemars(with = "Option<String>")]
    pub entity: Option<Spanned<String>>,
    /// An item collection: every item of the partition whose entity is one of these, in key
    /// order, as a union named `union`. The members share the table and the partition's key
    /// template, and each must be told apart from the others by its key templates or the
    /// table's `type_attribute`. Items of other entities are skipped. A collection takes no
    /// `filters`, and `sort` only when every member writes the sort key alike.
    #[schemars(with = "Option<Vec<String>>")]
    pub members: Option<Spanned<Vec<Spanned<String>>>>,
    /// The union type of an item collection's nodes.
    #[schemars(with = "Option<String>")]
    pub union: Option<Spanned<String>>,
    /// The field's description in the schema.
    pub description: Option<String>,
    /// Read this index of the entity's table instead of the table itself.
    #[schemars(with = "Option<String>")]
    pub index: Option<Spanned<String>>,
    /// Read with a Scan (of the table, or of `index`): no partition, forward paging only.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub scan: Option<Spanned<bool>>,
    /// Where the partition key value comes from (required unless `scan`).
    pub partition: Option<PartitionFile>,
    /// Conditions on the sort key, as named arguments (key conditions, never filters).
    #[serde(default)]
    pub sort: Option<SortFile>,
    /// Filter arguments, by argument name.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, FilterFile>")]
    pub filters: BTreeMap<Spanned<String>, FilterFile>,
    /// The `order` argument: its default and description. Absent on Scans.
    #[serde(default)]
    pub order: Option<OrderFile>,
    /// Page sizes for this connection. Default: the server's `--default-page-size` and
    /// `--max-page-size`.
    pub page_size: Option<PageSizeFile>,
    /// Who may page through it (`FORBIDDEN` for others). Default: the nodes' entity's `allow`.
    /// It may only narrow that rule. An `owner` rule needs the connection partitioned by the
    /// owner field, so that only the caller's items are ever read: the caller's claim must be
    /// the partition. A Scan or index over everyone's items can be given to groups instead.
    #[schemars(with = "Option<Vec<RuleFile>>")]
    pub allow: Option<Spanned<Vec<Spanned<RuleFile>>>>,
    /// A subscription field that delivers this connection's changes as they happen, whoever
    /// writes the table (this server, other code, the console), read from the table's `stream`:
    /// its name, or `{ name, description }`. It takes the arguments that choose the
    /// connection's items (its partition, sort conditions and filters; for a connection of an
    /// entity, also the parent's global id), and sends `ADDED` and `UPDATED` with an edge whose
    /// cursor is valid in the connection, and `REMOVED` with the node's id.
    #[schemars(with = "Option<ArgumentFile>")]
    pub subscription: Option<Spanned<ArgumentFile>>,
    /// Offer `totalCount` on this connection: the exact number of items its arguments select
    /// (its partition, sort condition and filters; not `first`, `after`, `last` or `before`),
    /// counted by DynamoDB with `Select: COUNT` reads only when a query selects it. Counting
    /// reads, and is billed for, every item counted; past the server's `--count-budget` items
    /// the answer is `null` with `COUNT_BUDGET_EXCEEDED`, never a partial number. Not on
    /// connections of a table whose items are told apart in memory (a table several entities
    /// share).
    #[schemars(with = "Option<bool>")]
    pub total_count: Option<Spanned<bool>>,
}

/// Where a Query's partition key value comes from: exactly one of the three.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PartitionFile {
    /// A required argument of this name (root connections). Its type is the entity field on
    /// the partition key attribute.
    #[schemars(with = "Option<String>")]
    pub argument: Option<Spanned<String>>,
    /// The argument's description.
    pub description: Option<String>,
    /// A field of the parent entity (connections on an entity).
    #[schemars(with = "Option<String>")]
    pub field: Option<Spanned<String>>,
    /// A constant (a string, or a number for an N key).
    #[schemars(with = "Option<serde_json::Value>")]
    pub value: Option<Spanned<toml::Value>>,
}

/// Sort-key condition arguments. Ranges are inclusive at both ends. On a sort key built from a
/// template, they apply to its first facet (after the `fixed` ones), in the byte order of the
/// keys' text: `min` and `max` to an `Int`, `BigInt` or `DateTime` facet, and to a `String`,
/// `ID` or enum facet that ends the key or is followed by a separator sorting below every
/// character its values may hold; `begins_with` to the start of a text, enum or `DateTime`
/// facet (`"2026-11"`).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SortFile {
    /// The argument for the lowest sort key value (inclusive).
    #[schemars(with = "Option<ArgumentFile>")]
    pub min: Option<Spanned<ArgumentFile>>,
    /// The argument for the highest sort key value (inclusive).
    #[schemars(with = "Option<ArgumentFile>")]
    pub max: Option<Spanned<ArgumentFile>>,
    /// The argument for a prefix of the sort key (strings only).
    #[schemars(with = "Option<ArgumentFile>")]
    pub begins_with: Option<Spanned<ArgumentFile>>,
    /// Arguments that fix the leading facets of the sort key's template exactly, one per facet
    /// in template order, required unless marked `optional = true`; `min`, `max` and
    /// `begins_with` then apply to the facet after them (ElectroDB's partial sort keys). With `SK = "SEAT#{section}#{row}#{seat}"`,
    /// `fixed = ["section"]` and `begins_with = "rowStart"` list the seats of section `A` in rows
    /// starting with `1`, and never a seat of section `AB`.
    #[schemars(with = "Option<Vec<ArgumentFile>>")]
    pub fixed: Option<Spanned<Vec<Spanned<ArgumentFile>>>>,
}

/// A named argument: its name, or its name and description.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(deny_unknown_fields)]
pub enum ArgumentFile {
    /// Just the name.
    Name(String),
    /// The name and a description.
    Described {
        /// The argument's name.
        name: String,
        /// The argument's description.
        description: Option<String>,
        /// In `fixed` only: the argument may be left out, and the connection then reads the
        /// whole partition (Amplify's optional `status` on a `{status}#{createdAt}` sort key:
        /// `begins_with("ACTIVE#")` when given). The `fixed` arguments after it must be optional
        /// too, and none of them, nor `min`, `max` or `begins_with`, may be given without it.
        optional: Option<bool>,
    },
}

/// A filter argument on one field.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FilterFile {
    /// The entity field (not the attribute) the filter tests; the argument has its type.
    #[schemars(with = "String")]
    pub field: Spanned<String>,
    /// The comparison: `=`, `<>`, `<`, `<=`, `>`, `>=`, `begins_with`, `contains`, `IN` (the
    /// argument is a list) or `attribute_exists` (the argument is a Boolean: true for present,
    /// false for absent).
    #[schemars(with = "String")]
    pub op: Spanned<String>,
    /// The argument's description.
    pub description: Option<String>,
}

/// The `order` argument.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OrderFile {
    /// `ASC` (the default) or `DESC`.
    #[schemars(with = "Option<String>")]
    pub default: Option<Spanned<String>>,
    /// The argument's description.
    pub description: Option<String>,
}

/// Page sizes.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PageSizeFile {
    /// The page size when a client gives neither `first` nor `last`.
    #[schemars(with = "Option<u32>")]
    pub default: Option<Spanned<u32>>,
    /// The largest `first` or `last` a client may ask for.
    #[schemars(with = "Option<u32>")]
    pub max: Option<Spanned<u32>>,
}

/// The mutations of an entity.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MutationsFile {
    /// `create{Type}`: writes a new item, never overwriting one.
    #[schemars(with = "Option<MutationFile>")]
    pub create: Option<Spanned<MutationFile>>,
    /// `update{Type}`: changes some fields of an existing item by its global id.
    #[schemars(with = "Option<MutationFile>")]
    pub update: Option<Spanned<MutationFile>>,
    /// `delete{Type}`: deletes an existing item by its global id.
    #[schemars(with = "Option<MutationFile>")]
    pub delete: Option<Spanned<MutationFile>>,
}

/// One mutation: `true`, or a table with its settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MutationFile {
    /// On (`true`) or off (`false`).
    Enabled(bool),
    /// On, with settings.
    Settings(MutationSettingsFile),
}

/// A mutation's settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MutationSettingsFile {
    /// The field's description in the schema.
    pub description: Option<String>,
    /// Create only: also return `{type}Edge`, whose cursor is valid in this connection
    /// (`Entity.field`, unfiltered) for Relay's `@appendEdge` or an Apollo cache update.
    pub edge: Option<String>,
    /// Who may call it (`FORBIDDEN` for others). With an `owner` rule, create writes the owner
    /// field from the caller's claim (it is not in the input), and update and delete change
    /// only the caller's own items, checked in the same conditional write. Default: everyone.
    // Not `Spanned`: inside an untagged enum it could not be read (the check finds the places
    // in the document instead).
    pub allow: Option<Vec<RuleFile>>,
}
