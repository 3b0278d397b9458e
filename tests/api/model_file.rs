//! The model file: the example loads, every kind of mistake is reported at its place, and the
//! checked-in JSON Schema matches the Rust types. None of these tests needs DynamoDB.

use dynarelay::model::{
    self, Access, AuthSpec, Entity, KeysSpec, Model, ModelErrors, Rule, TypeTest,
};

#[test]
fn dynarelay_schema_json_matches_the_rust_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dynarelay.schema.json");
    let generated = model::json_schema();
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    if on_disk != generated {
        std::fs::write(path, &generated).expect("rewriting dynarelay.schema.json");
        panic!("dynarelay.schema.json is stale: re-run the tests and commit it");
    }
}

#[test]
fn the_shop_example_loads() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml");
    let model = model::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.tables.len(), 3);
    assert_eq!(model.entities.len(), 3);
    assert_eq!(model.lookups.len(), 2);
    assert_eq!(model.connections.len(), 2);
}

#[test]
fn the_ecommerce_example_loads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/ecommerce/dynarelay.toml"
    );
    let model = model::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.tables.len(), 1);
    assert_eq!(model.tables[0].indexes.len(), 2);
    let templates: Vec<(&str, usize)> = model
        .entities
        .iter()
        .map(|e| (e.name.as_str(), e.templates.len()))
        .collect();
    assert_eq!(
        templates,
        [
            ("Customer", 2),
            ("Address", 2),
            ("Order", 6),
            ("OrderItem", 4)
        ]
    );
    assert_eq!(model.lookups.len(), 1);
    assert_eq!(model.connections.len(), 2);
    let unions: Vec<(&str, usize)> = model
        .entities
        .iter()
        .flat_map(|e| &e.connections)
        .filter_map(|c| c.collection.as_ref())
        .map(|c| (c.union.as_str(), c.members.len()))
        .collect();
    assert_eq!(unions, [("CustomerActivity", 3), ("OrderContent", 2)]);
}

/// The entity named `name`.
fn entity<'m>(model: &'m Model, name: &str) -> &'m Entity {
    let e = model
        .entity_named(name)
        .unwrap_or_else(|| panic!("no entity `{name}`"));
    &model.entities[e]
}

/// The owner rule on `entity`'s field `field`, with claim `claim`.
fn owner(entity: &Entity, field: &str, claim: &str) -> Rule {
    let field = entity
        .fields
        .iter()
        .position(|f| f.name == field)
        .unwrap_or_else(|| panic!("no field `{}.{field}`", entity.name));
    Rule::Owner {
        field,
        claim: claim.to_owned(),
    }
}

fn groups(names: &[&str]) -> Rule {
    Rule::Groups(names.iter().map(|g| (*g).to_owned()).collect())
}

/// The rules of `entity`'s field `field`, if it has its own.
fn field_access(entity: &Entity, field: &str) -> Option<Access> {
    let f = entity.fields.iter().find(|f| f.name == field);
    f.unwrap_or_else(|| panic!("no field `{}.{field}`", entity.name))
        .access
        .clone()
}

/// The rules of `entity`'s connection `name`, or of the root connection `name` (no entity).
fn connection_access(model: &Model, on: Option<&str>, name: &str) -> Access {
    let connections = match on {
        Some(e) => &entity(model, e).connections,
        None => &model.connections,
    };
    let c = connections.iter().find(|c| c.name == name);
    c.unwrap_or_else(|| panic!("no connection `{name}`"))
        .access
        .clone()
}

fn lookup_access(model: &Model, name: &str) -> Access {
    let l = model.lookups.iter().find(|l| l.name == name);
    l.unwrap_or_else(|| panic!("no lookup `{name}`"))
        .access
        .clone()
}

#[test]
fn the_secure_shop_example_loads_with_its_rules() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/secure.toml");
    let model = model::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        model.auth,
        Some(AuthSpec {
            keys: KeysSpec::JwksUrl("http://127.0.0.1:4455/.well-known/jwks.json".to_owned()),
            algorithms: vec!["RS256".to_owned()],
            issuer: Some("https://auth.shop.example".to_owned()),
            audience: vec!["shop-web".to_owned()],
            leeway_seconds: 30,
            groups_claim: "cognito:groups".to_owned(),
            jwks_refresh_seconds: 60,
            jwks_timeout_ms: 3000,
        })
    );
    let admin = Access(vec![groups(&["admin"])]);
    assert_eq!(model.introspection, admin);
    let (user, product, purchase) = (
        entity(&model, "User"),
        entity(&model, "Product"),
        entity(&model, "Purchase"),
    );
    assert_eq!(user.read, Access(vec![Rule::Authenticated]));
    assert_eq!(product.read, Access::default());
    let own_purchase = owner(purchase, "userId", "sub");
    assert_eq!(
        purchase.read,
        Access(vec![own_purchase.clone(), groups(&["admin"])])
    );
    assert_eq!(
        field_access(user, "email"),
        Some(Access(vec![
            owner(user, "userId", "sub"),
            groups(&["admin"])
        ]))
    );
    assert_eq!(field_access(user, "name"), None);
    assert_eq!(connection_access(&model, None, "users"), admin);
    assert_eq!(
        connection_access(&model, None, "products"),
        Access::default()
    );
    // `User.purchases` has no rules of its own: its nodes', on the field it is partitioned by.
    assert_eq!(
        connection_access(&model, Some("User"), "purchases"),
        purchase.read
    );
    assert_eq!(
        connection_access(&model, Some("Product"), "purchases"),
        admin
    );
    let create = |e: &Entity| e.mutations.create.as_ref().map(|m| m.access.clone());
    assert_eq!(create(purchase), Some(Access(vec![own_purchase])));
    assert_eq!(
        create(user),
        Some(Access(vec![owner(user, "userId", "sub")]))
    );
    assert_eq!(create(product), Some(admin));
    assert_eq!(
        purchase.mutations.delete.as_ref().map(|m| m.access.clone()),
        Some(purchase.read.clone())
    );
    assert_eq!(
        lookup_access(&model, "user"),
        Access(vec![Rule::Authenticated])
    );
    assert_eq!(lookup_access(&model, "product"), Access::default());
}

#[test]
fn a_model_with_rules_of_every_kind_in_every_place_loads() {
    let text = format!(
        "{}{PURCHASES}{}",
        BASE.replace(
            "fields.userId = { type = \"String!\" }\n",
            "fields.userId = { type = \"String!\" }\nfields.email = { type = \"String\", allow = [{ owner = \"userId\", claim = \"username\" }, { groups = [\"support\"] }] }\nallow = [\"authenticated\"]\nmutations.create = { allow = [\"public\"] }\n"
        ),
        r#"fields.note = { type = "String", allow = [{ groups = ["support", "admin"] }] }
fields.total = { type = "Int", allow = ["authenticated"] }
fields.label = { type = "String!", allow = ["public"] }
allow = [{ owner = "userId" }, { groups = ["admin", "support"] }]
mutations.create = { allow = [{ owner = "userId" }] }
mutations.update = { allow = [{ groups = ["admin"] }] }
mutations.delete = { allow = [{ owner = "userId" }, "authenticated"] }

[entities.User.connections.purchases]
entity = "Purchase"
partition = { field = "userId" }
allow = [{ owner = "userId" }]

[lookups.user]
entity = "User"
allow = ["authenticated", { groups = ["support"] }]

[lookups.purchase]
entity = "Purchase"
allow = ["public"]

[connections.purchasesOf]
entity = "Purchase"
partition = { argument = "userId" }
allow = [{ owner = "userId" }, { groups = ["support"] }]

[connections.allPurchases]
entity = "Purchase"
scan = true
allow = [{ groups = ["admin"] }]

[connections.users]
entity = "User"
scan = true

[auth]
secret_env = "DYNARELAY_TEST_SECRET"
algorithms = ["HS256", "HS512"]
issuer = "https://id.example"
audience = ["web", "mobile"]
leeway_seconds = 300
groups_claim = "roles"
jwks_refresh_seconds = 120
jwks_timeout_ms = 30000
introspection = ["authenticated", { groups = ["developers"] }]
"#
    );
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        model.auth,
        Some(AuthSpec {
            keys: KeysSpec::SecretEnv("DYNARELAY_TEST_SECRET".to_owned()),
            algorithms: vec!["HS256".to_owned(), "HS512".to_owned()],
            issuer: Some("https://id.example".to_owned()),
            audience: vec!["web".to_owned(), "mobile".to_owned()],
            leeway_seconds: 300,
            groups_claim: "roles".to_owned(),
            jwks_refresh_seconds: 120,
            jwks_timeout_ms: 30000,
        })
    );
    assert_eq!(
        model.introspection,
        Access(vec![Rule::Authenticated, groups(&["developers"])])
    );
    let (user, purchase) = (entity(&model, "User"), entity(&model, "Purchase"));
    assert_eq!(user.read, Access(vec![Rule::Authenticated]));
    let own_purchase = owner(purchase, "userId", "sub");
    assert_eq!(
        purchase.read,
        Access(vec![own_purchase.clone(), groups(&["admin", "support"])])
    );
    assert_eq!(
        field_access(user, "email"),
        Some(Access(vec![
            owner(user, "userId", "username"),
            groups(&["support"])
        ]))
    );
    assert_eq!(field_access(user, "userId"), None);
    assert_eq!(
        field_access(purchase, "note"),
        Some(Access(vec![groups(&["support", "admin"])]))
    );
    assert_eq!(
        field_access(purchase, "total"),
        Some(Access(vec![Rule::Authenticated]))
    );
    assert_eq!(field_access(purchase, "label"), Some(Access::default()));
    let mutation = |e: &Entity, which: &str| {
        let m = &e.mutations;
        match which {
            "create" => m.create.as_ref().map(|m| m.access.clone()),
            "update" => m.update.as_ref().map(|m| m.access.clone()),
            _ => m.delete.as_ref().map(|m| m.access.clone()),
        }
    };
    assert_eq!(mutation(user, "create"), Some(Access::default()));
    assert_eq!(
        mutation(purchase, "create"),
        Some(Access(vec![own_purchase.clone()]))
    );
    assert_eq!(
        mutation(purchase, "update"),
        Some(Access(vec![groups(&["admin"])]))
    );
    assert_eq!(
        mutation(purchase, "delete"),
        Some(Access(vec![own_purchase.clone(), Rule::Authenticated]))
    );
    assert_eq!(
        connection_access(&model, Some("User"), "purchases"),
        Access(vec![own_purchase.clone()])
    );
    assert_eq!(
        lookup_access(&model, "user"),
        Access(vec![Rule::Authenticated, groups(&["support"])])
    );
    assert_eq!(lookup_access(&model, "purchase"), Access::default());
    assert_eq!(
        connection_access(&model, None, "purchasesOf"),
        Access(vec![own_purchase, groups(&["support"])])
    );
    assert_eq!(
        connection_access(&model, None, "allPurchases"),
        Access(vec![groups(&["admin"])])
    );
    // Without rules of its own, a connection takes its nodes'.
    assert_eq!(connection_access(&model, None, "users"), user.read);
}

#[test]
fn public_rules_everywhere_need_no_auth_section() {
    let text = format!(
        "{}{PURCHASES}{}",
        BASE.replace(
            "fields.userId = { type = \"String!\" }\n",
            "fields.userId = { type = \"String!\", allow = [\"public\"] }\nallow = [\"public\"]\nmutations.create = { allow = [\"public\"] }\n"
        ),
        r#"allow = ["public"]
mutations.delete = { allow = ["public"] }

[entities.User.connections.purchases]
entity = "Purchase"
partition = { field = "userId" }
allow = ["public"]

[lookups.user]
entity = "User"
allow = ["public"]

[connections.allPurchases]
entity = "Purchase"
scan = true
allow = ["public"]
"#
    );
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(model.auth, None);
    assert_eq!(model.introspection, Access::default());
    let (user, purchase) = (entity(&model, "User"), entity(&model, "Purchase"));
    assert_eq!(user.read, Access::default());
    assert_eq!(purchase.read, Access::default());
    assert_eq!(field_access(user, "userId"), Some(Access::default()));
    let create = user.mutations.create.as_ref().map(|m| m.access.clone());
    assert_eq!(create, Some(Access::default()));
    let delete = purchase.mutations.delete.as_ref().map(|m| m.access.clone());
    assert_eq!(delete, Some(Access::default()));
    assert_eq!(
        connection_access(&model, Some("User"), "purchases"),
        Access::default()
    );
    assert_eq!(
        connection_access(&model, None, "allPurchases"),
        Access::default()
    );
    assert_eq!(lookup_access(&model, "user"), Access::default());
}

#[test]
fn a_jwks_file_is_named_relative_to_the_model_file() {
    let text = |file: &str| format!("{BASE}\n[auth]\njwks_file = \"{file}\"\n");
    let keys = |model: Model| model.auth.map(|auth| auth.keys);
    // As written, until the model is loaded from a file.
    let parsed = model::parse("test.toml", &text("keys/jwks.json"));
    let parsed = parsed.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        keys(parsed),
        Some(KeysSpec::JwksFile("keys/jwks.json".to_owned()))
    );
    let dir = std::env::temp_dir().join(format!("dynarelay-model-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dynarelay.toml");
    std::fs::write(&path, text("keys/jwks.json")).unwrap();
    let relative = model::load(&path);
    std::fs::write(&path, text("/etc/dynarelay/jwks.json")).unwrap();
    let absolute = model::load(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    let expected = dir.join("keys/jwks.json").display().to_string();
    let relative = relative.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(keys(relative), Some(KeysSpec::JwksFile(expected)));
    let absolute = absolute.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        keys(absolute),
        Some(KeysSpec::JwksFile("/etc/dynarelay/jwks.json".to_owned()))
    );
}

/// A valid model the cases below add to (lines 1 to 9).
const BASE: &str = r#"version = 1

[tables.Users]
partition_key = "userId"
attributes = { userId = "S" }

[entities.User]
table = "Users"
fields.userId = { type = "String!" }
"#;

/// Purchases with a sort key and an index, on lines 10 to 22 after `BASE`.
const PURCHASES: &str = r#"
[tables.Purchases]
partition_key = "userId"
sort_key = "at"
attributes = { userId = "S", at = "N", sku = "S" }
indexes.BySku = { partition_key = "sku", sort_key = "at", projection = "KEYS_ONLY" }

[entities.Purchase]
table = "Purchases"
fields.userId = { type = "String!" }
fields.at = { type = "DateTime!" }
fields.sku = { type = "String!" }
fields.amount = { type = "Decimal" }
"#;

/// A single-table design the cases below change or add to (lines 1 to 21): customers and their
/// orders share the table and a customer's partition, told apart by their sort-key prefixes;
/// `GSI1` finds an order by its id.
const ONE_TABLE: &str = r#"version = 1

[tables.Shop]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }
indexes.GSI1 = { partition_key = "GSI1PK", sort_key = "GSI1SK" }

[entities.Customer]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "PROFILE" }
fields.username = { type = "String!" }
fields.name = { type = "String!" }

[entities.Order]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "ORDER#{placedAt}#{orderId}", GSI1PK = "ORDER#{orderId}", GSI1SK = "ORDER" }
fields.username = { type = "String!" }
fields.orderId = { type = "String!" }
fields.placedAt = { type = "DateTime!", stored_as = "iso8601" }
fields.count = { type = "Int!" }
"#;

/// An item collection over a customer's partition, on lines 23 to 26 after `ONE_TABLE`.
const ACTIVITY: &str = r#"
[entities.Customer.connections.activity]
members = ["Customer", "Order"]
union = "Activity"
partition = { field = "username" }
"#;

/// A customer's orders, on lines 23 to 25 after `ONE_TABLE`; cases add sort conditions.
const ORDERS: &str = r#"
[entities.Customer.connections.orders]
entity = "Order"
partition = { field = "username" }
"#;

/// A root connection finding orders by id through `GSI1`, on lines 23 to 26 after `ONE_TABLE`.
const ORDER_BY_ID: &str = r#"
[connections.orderById]
entity = "Order"
index = "GSI1"
partition = { argument = "orderId" }
"#;

/// Returns keyed like orders, on lines 23 to 27 after `ONE_TABLE`: nothing in their keys tells
/// them apart from orders.
const RETURNS: &str = r#"
[entities.Return]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "ORDER#{returnId}" }
fields.username = { type = "String!" }
fields.returnId = { type = "String!" }
"#;

/// Token verification with a shared secret, on lines 10 to 12 after `BASE` (11 and 12: `[auth]`
/// and `secret_env`); cases add its other keys on line 13, or put it after the rules they test.
const AUTH: &str = r#"
[auth]
secret_env = "DYNARELAY_TEST_SECRET"
"#;

/// Token verification with an identity provider's JWKS, on lines 10 to 12 after `BASE`.
const JWKS_AUTH: &str = r#"
[auth]
jwks_url = "https://id.example/.well-known/jwks.json"
"#;

fn errors(text: &str) -> ModelErrors {
    match model::parse("test.toml", text) {
        Ok(_) => panic!("the model was accepted:\n{text}"),
        Err(errors) => errors,
    }
}

/// One kind of mistake: the model text, and the message part, line and column expected.
struct Case {
    name: &'static str,
    text: String,
    message: &'static str,
    line: usize,
    column: usize,
}

fn case(name: &'static str, text: &str, message: &'static str, line: usize, column: usize) -> Case {
    Case {
        name,
        text: text.to_owned(),
        message,
        line,
        column,
    }
}

fn with_base(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(name, &format!("{BASE}{extra}"), message, line, column)
}

fn with_purchases(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(
        name,
        &format!("{BASE}{PURCHASES}{extra}"),
        message,
        line,
        column,
    )
}

fn with_one_table(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(name, &format!("{ONE_TABLE}{extra}"), message, line, column)
}

/// `ONE_TABLE` with `from` replaced by `to` (its first occurrence), then `extra`.
fn one_table_with(
    name: &'static str,
    (from, to): (&str, &str),
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    assert!(
        ONE_TABLE.contains(from),
        "{name}: `{from}` is not in ONE_TABLE"
    );
    let text = format!("{}{extra}", ONE_TABLE.replacen(from, to, 1));
    case(name, &text, message, line, column)
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "unknown key",
            "version = 1\n[tables.Users]\npartiton_key = \"userId\"\n",
            "unknown key `partiton_key` in `tables.Users`",
            3,
            1,
        ),
        case(
            "bad TOML",
            "version = 1\n[tables.Users\n",
            "unclosed table",
            2,
            14,
        ),
        case(
            "wrong value type",
            "version = \"one\"\n",
            "invalid type: string \"one\"",
            1,
            11,
        ),
        case(
            "unsupported version",
            "version = 2\n",
            "model format version 2 does not exist",
            1,
            11,
        ),
        case(
            "unknown table",
            &BASE.replace("table = \"Users\"", "table = \"Userz\""),
            "unknown table `Userz`",
            8,
            9,
        ),
        case(
            "key attribute without a type",
            &BASE.replace("{ userId = \"S\" }", "{}"),
            "key attribute `userId` of table `Users` is not declared in `attributes`",
            4,
            17,
        ),
        case(
            "attribute that is no key",
            &BASE.replace("{ userId = \"S\" }", "{ userId = \"S\", name = \"S\" }"),
            "attribute `name` is no key of table `Users`",
            5,
            30,
        ),
        with_base(
            "local index on a table without sort key",
            "[tables.Users.indexes.ByName]\nkind = \"local\"\nsort_key = \"userId\"\n",
            "local index `ByName` on table `Users`, which has no sort key",
            11,
            8,
        ),
        with_base(
            "global index without partition key",
            "[tables.Users.indexes.ByName]\nsort_key = \"userId\"\n",
            "global index `ByName` has no `partition_key`",
            10,
            23,
        ),
        case(
            "field type that cannot hold its key's type",
            &BASE.replace("type = \"String!\"", "type = \"Int!\""),
            "field `userId` of type `Int!` cannot hold key attribute `userId`, of type S",
            9,
            26,
        ),
        case(
            "nullable key field",
            &BASE.replace("type = \"String!\"", "type = \"String\""),
            "key field `userId` is nullable",
            9,
            26,
        ),
        case(
            "missing key field",
            &BASE.replace("fields.userId", "fields.name"),
            "entity `User` has no field on key attribute `userId` of table `Users`",
            7,
            11,
        ),
        with_base(
            "invalid GraphQL name",
            "fields.user-name = { type = \"String\" }\n",
            "field `user-name` is not a valid GraphQL name",
            10,
            8,
        ),
        with_base(
            "name starting with two underscores",
            "fields.__name = { type = \"String\" }\n",
            "field `__name` starts with `__`",
            10,
            8,
        ),
        with_base(
            "field named id",
            "fields.id = { type = \"String\" }\n",
            "field `id` of entity `User`",
            10,
            8,
        ),
        with_base(
            "duplicate name",
            "[enums.User]\nvalues = [\"A\"]\n",
            "`User` is declared twice",
            10,
            8,
        ),
        with_base(
            "built-in type name",
            "[enums.PageInfo]\nvalues = [\"A\"]\n",
            "enum `PageInfo` has the name of a built-in type",
            10,
            8,
        ),
        with_base(
            "generated type name",
            "[enums.UserEdge]\nvalues = [\"A\"]\n",
            "enum `UserEdge` has the name of a type generated for entity `User`",
            10,
            8,
        ),
        with_base(
            "enum value that GraphQL reserves",
            "[enums.Flag]\nvalues = [\"ON\", \"true\"]\n",
            "`true` cannot be an enum value",
            11,
            17,
        ),
        with_base(
            "unknown field type",
            "fields.name = { type = \"Strin\" }\n",
            "unknown type `Strin`",
            10,
            24,
        ),
        with_base(
            "nested list type",
            "fields.tags = { type = \"[[String]]\" }\n",
            "lists of lists are not supported",
            10,
            24,
        ),
        with_base(
            "bad stored_as",
            "fields.name = { type = \"String\", stored_as = \"set\" }\n",
            "`list` and `set` storage is for list fields",
            10,
            46,
        ),
        with_base(
            "set of nullable items",
            "fields.tags = { type = \"[String]\", stored_as = \"set\" }\n",
            "set items cannot be null",
            10,
            48,
        ),
        with_base(
            "bad default",
            "fields.count = { type = \"Int\", default = \"x\" }\n",
            "bad default: the string \"x\" is not a Int",
            10,
            42,
        ),
        with_base(
            "default that is not a value of its enum",
            "fields.flag = { type = \"Flag\", default = \"MAYBE\" }\n[enums.Flag]\nvalues = [\"ON\"]\n",
            "`MAYBE` is not a value of enum `Flag`",
            10,
            42,
        ),
        with_base(
            "generated on a String",
            "fields.name = { type = \"String\", generated = \"now\" }\n",
            "`generated = \"now\"` is for DateTime fields only",
            10,
            46,
        ),
        with_base(
            "min on a String",
            "fields.name = { type = \"String\", min = 1 }\n",
            "`min` and `max` are for Int, BigInt, Float and Decimal fields",
            10,
            40,
        ),
        with_base(
            "max below min",
            "fields.n = { type = \"Int\", min = 5, max = 1 }\n",
            "`max` 1 is below `min` 5",
            10,
            43,
        ),
        with_base(
            "unknown format",
            "fields.email = { type = \"String\", format = \"phone\" }\n",
            "unknown format `phone`",
            10,
            44,
        ),
        with_base(
            "version field of the wrong type",
            "version_field = \"userId\"\n",
            "version field `userId` has type `String!`, not `Int!` or `BigInt!`",
            10,
            17,
        ),
        with_base(
            "two fields on one attribute",
            "fields.name = { type = \"String\", attribute = \"userId\" }\n",
            "fields `userId` and `name` both read attribute `userId`",
            10,
            46,
        ),
        with_base(
            "overlapping id_tag",
            "id_tag = \"U\"\n\n[entities.Account]\ntable = \"Users\"\nid_tag = \"Us\"\nfields.userId = { type = \"String!\" }\n",
            "the id tag `Us` of entity `Account` begins with the id tag `U` of entity `User`",
            14,
            10,
        ),
        with_base(
            "relation to an unknown entity",
            "relations.friend = { type = \"Frend!\", key = [\"userId\"] }\n",
            "unknown entity `Frend`",
            10,
            29,
        ),
        with_purchases(
            "relation key of the wrong length",
            "relations.user = { type = \"User\", key = [\"userId\", \"sku\"] }\n",
            "relation `user` gives 2 key field(s)",
            23,
            41,
        ),
        with_purchases(
            "relation key field that cannot hold the target key",
            "relations.user = { type = \"User\", key = [\"at\"] }\n",
            "field `at` of type `DateTime!` cannot hold key attribute `userId` of `User`",
            23,
            42,
        ),
        with_purchases(
            "index the table lacks",
            "[connections.bySku]\nentity = \"Purchase\"\nindex = \"BySkew\"\nscan = true\n",
            "table `Purchases` has no index `BySkew`",
            25,
            9,
        ),
        with_base(
            "connection to an unknown entity",
            "[connections.all]\nentity = \"Usr\"\nscan = true\n",
            "unknown entity `Usr`",
            11,
            10,
        ),
        with_base(
            "connection without partition or scan",
            "[connections.all]\nentity = \"User\"\n",
            "connection `all` has neither a `partition` nor `scan = true`",
            10,
            14,
        ),
        with_base(
            "partition field on a root connection",
            "[connections.one]\nentity = \"User\"\npartition = { field = \"userId\" }\n",
            "`field` partitions are for connections on entities",
            12,
            23,
        ),
        with_purchases(
            "partition argument on an entity connection",
            "[entities.User.connections.purchases]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\n",
            "`argument` partitions are for root connections",
            25,
            26,
        ),
        with_purchases(
            "partition with two sources",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\", value = \"u1\" }\n",
            "a partition has exactly one of `argument`, `field` and `value`",
            25,
            1,
        ),
        with_purchases(
            "partition value that does not fit the key",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { value = 7 }\n",
            "the integer 7 does not fit partition key attribute `userId`",
            25,
            23,
        ),
        with_purchases(
            "partition field that cannot hold the partition key",
            "[entities.User.fields.age]\ntype = \"Int\"\n[entities.User.connections.purchases]\nentity = \"Purchase\"\npartition = { field = \"age\" }\n",
            "field `age` of type `Int` cannot hold partition key attribute `userId` of table `Purchases`",
            27,
            23,
        ),
        with_base(
            "sort on a table without sort key",
            "[connections.one]\nentity = \"User\"\npartition = { argument = \"id\" }\nsort.min = \"from\"\n",
            "table `Users` has no sort key to give conditions on",
            13,
            1,
        ),
        with_purchases(
            "begins_with on a number sort key",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\nsort.begins_with = \"prefix\"\n",
            "`begins_with` needs a String or ID sort key field; `at` is `DateTime!`",
            26,
            20,
        ),
        with_purchases(
            "sort on a scan",
            "[connections.all]\nentity = \"Purchase\"\nscan = true\nsort.min = \"from\"\n",
            "a Scan has no sort-key conditions",
            26,
            1,
        ),
        with_purchases(
            "order on a scan",
            "[connections.all]\nentity = \"Purchase\"\nscan = true\norder = { default = \"DESC\" }\n",
            "a Scan has no `order`",
            26,
            1,
        ),
        with_purchases(
            "reserved argument name",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"first\" }\n",
            "argument `first` is a pagination argument",
            25,
            26,
        ),
        with_purchases(
            "duplicate argument name",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\nsort.min = \"user\"\n",
            "`user` is declared twice",
            26,
            12,
        ),
        with_purchases(
            "filter on a key attribute",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\nfilters.when = { field = \"at\", op = \">\" }\n",
            "field `at` is on key attribute `at` of table `Purchases`, which a Query cannot filter on",
            26,
            26,
        ),
        with_purchases(
            "filter operator that does not fit the field",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\nfilters.prefix = { field = \"amount\", op = \"begins_with\" }\n",
            "operator `begins_with` does not apply to field `amount` of type `Decimal`",
            26,
            43,
        ),
        with_purchases(
            "unknown filter operator",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\nfilters.big = { field = \"amount\", op = \"=>\" }\n",
            "unknown filter operator `=>`",
            26,
            40,
        ),
        with_purchases(
            "bad order",
            "[connections.mine]\nentity = \"Purchase\"\npartition = { argument = \"user\" }\norder = { default = \"UP\" }\n",
            "unknown order `UP`",
            26,
            21,
        ),
        with_base(
            "bad page size",
            "[connections.all]\nentity = \"User\"\nscan = true\npage_size = { default = 50, max = 5000 }\n",
            "largest page size 5000 is above 1000",
            13,
            35,
        ),
        with_base(
            "default page size above 100",
            "[connections.all]\nentity = \"User\"\nscan = true\npage_size = { default = 500, max = 1000 }\n",
            "default page size 500 is not between 1 and 100",
            13,
            25,
        ),
        with_purchases(
            "index projection that lacks a field's attribute",
            "[connections.bySku]\nentity = \"Purchase\"\nindex = \"BySku\"\npartition = { argument = \"sku\" }\n",
            "index `BySku` does not hold attribute(s) `amount` that entity `Purchase` reads",
            25,
            9,
        ),
        with_base(
            "lookup named node",
            "[lookups.node]\nentity = \"User\"\n",
            "root field `node` is built in",
            10,
            10,
        ),
        with_base(
            "root fields with one name",
            "[lookups.users]\nentity = \"User\"\n[connections.users]\nentity = \"User\"\nscan = true\n",
            "`users` is declared twice",
            12,
            14,
        ),
        with_purchases(
            "bad edge",
            "[entities.Purchase.mutations]\ncreate = { edge = \"User.purchase\" }\n",
            "entity `User` has no connection `purchase`",
            24,
            19,
        ),
        with_purchases(
            "edge on a delete mutation",
            "[entities.Purchase.mutations]\ndelete = { edge = \"User.purchases\" }\n",
            "`edge` is for create mutations, not delete",
            24,
            19,
        ),
        with_base(
            "unknown key in mutation settings",
            "mutations.create = { descripton = \"Creates a user.\" }\n",
            "unknown key `descripton` in `entities.User.mutations.create`",
            10,
            22,
        ),
        with_base(
            "value of the wrong shape",
            "mutations.create = 3\n",
            "this value has the wrong shape",
            10,
            20,
        ),
        // Single-table designs: key templates, shared tables, item collections.
        with_one_table(
            "a template that two entities could both match",
            RETURNS,
            "entities `Order` and `Return` could both match the same keys of table `Shop`",
            25,
            43,
        ),
        with_one_table(
            "a prefix that shadows another type's prefix",
            &RETURNS.replace("ORDER#{", "ORDER#RETURN#{"),
            "the key prefix `ORDER#` of `Order` shadows `ORDER#RETURN#` of `Return` on `SK` in table `Shop`",
            25,
            43,
        ),
        one_table_with(
            "two entities of a table with the same type value",
            (
                "attributes = {",
                "type_attribute = \"_type\"\nattributes = {",
            ),
            &format!("{RETURNS}type_value = \"Order\"\n"),
            "entities `Order` and `Return` have the same type value `Order`",
            29,
            14,
        ),
        with_one_table(
            "a union declared again with other members",
            &format!(
                "{ACTIVITY}\n[entities.Order.connections.more]\nmembers = [\"Order\"]\nunion = \"Activity\"\nindex = \"GSI1\"\npartition = {{ field = \"orderId\" }}\n"
            ),
            "union `Activity` is declared again with other members",
            30,
            9,
        ),
        with_one_table(
            "a collection member type with no way to tell it apart",
            &format!(
                "{RETURNS}{}",
                ACTIVITY.replace("\"Customer\"", "\"Return\"")
            ),
            "members `Return` and `Order` cannot be told apart in table `Shop`: their keys start alike",
            30,
            1,
        ),
        with_base(
            "entities sharing a table with nothing to tell them apart",
            "\n[entities.Account]\ntable = \"Users\"\nfields.userId = { type = \"String!\" }\n",
            "entities `User` and `Account` share table `Users`, and nothing tells their items apart",
            11,
            11,
        ),
        one_table_with(
            "key template on an attribute that is no key",
            (
                "GSI1SK = \"ORDER\" }",
                "GSI1SK = \"ORDER\", GSI2PK = \"ORDER\" }",
            ),
            "",
            "`GSI2PK` is no key attribute of table `Shop` or of its indexes",
            17,
            119,
        ),
        with_purchases(
            "key template on an N attribute",
            "keys = { at = \"AT#{sku}\" }\n",
            "key attribute `at` has type N (number), but a template writes a string",
            23,
            15,
        ),
        with_one_table(
            "field reading a templated attribute",
            "fields.SK = { type = \"String!\" }\n",
            "field `SK` reads attribute `SK`, which `keys` builds from a template",
            22,
            8,
        ),
        one_table_with(
            "key template with an unclosed facet",
            ("SK = \"PROFILE\"", "SK = \"PROFILE#{username\""),
            "",
            "is not closed by `}`",
            11,
            52,
        ),
        one_table_with(
            "key template with adjacent facets",
            ("ORDER#{placedAt}#{orderId}", "ORDER#{placedAt}{orderId}"),
            "",
            "follows another with no text between them",
            17,
            60,
        ),
        one_table_with(
            "key template with a backslash in its text",
            ("SK = \"PROFILE\"", "SK = 'PRO\\FILE'"),
            "",
            "in the literal text would read as an escape",
            11,
            47,
        ),
        one_table_with(
            "facet that is no field",
            ("ORDER#{placedAt}#{orderId}", "ORDER#{placedAt}#{ordrId}"),
            "",
            "facet `ordrId` of key template `ORDER#{placedAt}#{ordrId}` is no field of entity `Order`",
            17,
            43,
        ),
        case(
            "Float facet",
            &ONE_TABLE
                .replace("GSI1SK = \"ORDER\"", "GSI1SK = \"{count}\"")
                .replace("type = \"Int!\"", "type = \"Float!\""),
            "field `count` of type `Float!` cannot be a facet of key `GSI1SK`",
            21,
            25,
        ),
        one_table_with(
            "nullable facet",
            (
                "fields.orderId = { type = \"String!\" }",
                "fields.orderId = { type = \"String\" }",
            ),
            "",
            "field `orderId` of type `String` cannot be a facet of key `SK`",
            19,
            27,
        ),
        one_table_with(
            "type_value without a type attribute",
            (
                "SK = \"PROFILE\" }",
                "SK = \"PROFILE\" }\ntype_value = \"CUSTOMER\"",
            ),
            "",
            "table `Shop` has no `type_attribute` to hold `type_value`",
            12,
            14,
        ),
        one_table_with(
            "type attribute that is a key attribute",
            ("indexes.GSI1", "type_attribute = \"GSI1PK\"\nindexes.GSI1"),
            "",
            "type attribute `GSI1PK` is a key attribute of table `Shop`",
            7,
            18,
        ),
        with_one_table(
            "members without a union",
            &ACTIVITY.replace("union = \"Activity\"\n", ""),
            "an item collection needs a `union`",
            24,
            11,
        ),
        with_one_table(
            "union without members",
            &ACTIVITY.replace("members = [\"Customer\", \"Order\"]", "entity = \"Order\""),
            "`union` names the type of an item collection's `members`",
            25,
            9,
        ),
        with_one_table(
            "entity and members together",
            &ACTIVITY.replace("union", "entity = \"Order\"\nunion"),
            "a connection has an `entity`, or `members` and a `union`, not both",
            25,
            10,
        ),
        with_one_table(
            "members in different tables",
            &format!(
                "{}\n[tables.Other]\npartition_key = \"id\"\nattributes = {{ id = \"S\" }}\n\n[entities.Thing]\ntable = \"Other\"\nfields.thingId = {{ type = \"String!\", attribute = \"id\" }}\n",
                ACTIVITY.replace("\"Order\"]", "\"Thing\"]")
            ),
            "member `Thing` is stored in table `Other`, not in `Shop` like `Customer`",
            24,
            24,
        ),
        one_table_with(
            "members with different partition templates",
            ("CUSTOMER#{username}", "USER#{username}"),
            ACTIVITY,
            "members `Customer` and `Order` do not write partition key `PK` of table `Shop` alike",
            24,
            1,
        ),
        with_one_table(
            "filter on an item collection",
            &format!("{ACTIVITY}filters.named = {{ field = \"name\", op = \"=\" }}\n"),
            "an item collection has no filters",
            27,
            9,
        ),
        with_one_table(
            "sort condition on an item collection",
            &format!("{ACTIVITY}sort.min = \"from\"\n"),
            "an item collection has no sort conditions",
            27,
            1,
        ),
        one_table_with(
            "partition template with two facets",
            ("ORDER#{orderId}\"", "ORDER#{orderId}#{username}\""),
            ORDER_BY_ID,
            "partition key `GSI1PK` of `Order` is built from 2 facets",
            26,
            1,
        ),
        one_table_with(
            "partition given for a constant template",
            ("ORDER#{orderId}\"", "ORDERS\""),
            ORDER_BY_ID,
            "partition key `GSI1PK` of `Order` is always `ORDERS`: leave `partition` out",
            26,
            26,
        ),
        one_table_with(
            "range on a String facet",
            ("ORDER#{placedAt}#{orderId}", "ORDER#{orderId}#{placedAt}"),
            &format!("{ORDERS}sort.min = \"from\"\n"),
            "`min` and `max` need a facet that sorts as its values: `orderId` is `String!`",
            26,
            12,
        ),
        one_table_with(
            "range with a separator that sorts above the values",
            ("ORDER#{placedAt}#{orderId}", "ORDER|{placedAt}|{orderId}"),
            &format!("{ORDERS}sort.max = \"until\"\n"),
            "`|` after facet `placedAt` in key template `ORDER|{placedAt}|{orderId}` does not sort at least two places below `+`",
            26,
            12,
        ),
        one_table_with(
            "range with a separator found in the values",
            ("ORDER#{placedAt}#{orderId}", "ORDER:{placedAt}:{orderId}"),
            &format!("{ORDERS}sort.min = \"from\"\n"),
            "separator `:` of key template `ORDER:{placedAt}:{orderId}` appears in `placedAt` values",
            26,
            12,
        ),
        one_table_with(
            "begins_with on an Int facet",
            ("ORDER#{placedAt}#{orderId}", "ORDER#{count}#{orderId}"),
            &format!("{ORDERS}sort.begins_with = \"prefix\"\n"),
            "`begins_with` needs a text or DateTime facet; `count` is `Int!`",
            26,
            20,
        ),
        with_one_table(
            "relation giving the wrong number of facets",
            "relations.customer = { type = \"Customer!\", key = [\"username\", \"orderId\"] }\n",
            "relation `customer` gives 2 key field(s), but entity `Customer` is keyed by 1 key facet(s)",
            22,
            50,
        ),
        with_one_table(
            "union named like an entity",
            &ACTIVITY.replace("\"Activity\"", "\"Order\""),
            "`Order` is declared twice",
            25,
            9,
        ),
        // Access rules: `[auth]`, and the `allow` lists.
        with_base(
            "[auth] without keys",
            "\n[auth]\nissuer = \"https://id.example\"\n",
            "`[auth]` needs keys to verify tokens with",
            11,
            1,
        ),
        with_base(
            "[auth] with two key sources",
            &format!("{JWKS_AUTH}secret_env = \"DYNARELAY_TEST_SECRET\"\n"),
            "`[auth]` takes one of `jwks_url`, `jwks_file` and `secret_env`",
            12,
            12,
        ),
        with_base(
            "jwks_url that is not http(s)",
            "\n[auth]\njwks_url = \"ftp://id.example/jwks.json\"\n",
            "`ftp://id.example/jwks.json` is not an http(s) URL",
            12,
            12,
        ),
        with_base(
            "secret_env that is no variable name",
            "\n[auth]\nsecret_env = \"SECRET=hunter2\"\n",
            "not an environment variable's name",
            12,
            14,
        ),
        with_base(
            "empty jwks_file",
            "\n[auth]\njwks_file = \"\"\n",
            "empty",
            12,
            13,
        ),
        with_base(
            "unknown algorithm",
            &format!("{JWKS_AUTH}algorithms = [\"rs256\"]\n"),
            "unknown algorithm `rs256`",
            13,
            15,
        ),
        with_base(
            "HS256 with a JWKS",
            &format!("{JWKS_AUTH}algorithms = [\"RS256\", \"HS256\"]\n"),
            "`HS256` needs a shared secret; keys from a JWKS are public keys",
            13,
            24,
        ),
        with_base(
            "RS256 with secret_env",
            &format!("{AUTH}algorithms = [\"RS256\"]\n"),
            "`RS256` needs a public key; `secret_env` gives a shared secret",
            13,
            15,
        ),
        with_base(
            "empty algorithm list",
            &format!("{AUTH}algorithms = []\n"),
            "no algorithm is accepted, so no token would be",
            13,
            14,
        ),
        with_base(
            "leeway over 300 seconds",
            &format!("{AUTH}leeway_seconds = 301\n"),
            "at most 300 seconds",
            13,
            18,
        ),
        with_base(
            "jwks_timeout_ms out of range",
            &format!("{JWKS_AUTH}jwks_timeout_ms = 60000\n"),
            "from 1 to 30000 milliseconds",
            13,
            19,
        ),
        with_base(
            "empty issuer",
            &format!("{AUTH}issuer = \"\"\n"),
            "empty",
            13,
            10,
        ),
        with_base(
            "unknown rule keyword",
            &format!("allow = [\"authenticate\"]\n{AUTH}"),
            "unknown rule `\"authenticate\"`",
            10,
            10,
        ),
        with_base(
            "group rule without groups",
            &format!("allow = [{{ groups = [] }}]\n{AUTH}"),
            "a group rule needs group names",
            10,
            10,
        ),
        with_base(
            "owner rule naming a missing field",
            &format!("allow = [{{ owner = \"userID\" }}]\n{AUTH}"),
            "`User` has no field `userID`",
            10,
            10,
        ),
        with_base(
            "owner rule on a nullable field",
            &format!(
                "fields.name = {{ type = \"String\" }}\nallow = [{{ owner = \"name\" }}]\n{AUTH}"
            ),
            "the owner field `User.name` must be a `String!` or `ID!`",
            11,
            10,
        ),
        with_base(
            "owner rule on an Int field",
            &format!("fields.age = {{ type = \"Int!\" }}\nallow = [{{ owner = \"age\" }}]\n{AUTH}"),
            "the owner field `User.age` must be a `String!` or `ID!`",
            11,
            10,
        ),
        with_base(
            "owner rule on introspection",
            &format!("{AUTH}introspection = [{{ owner = \"userId\" }}]\n"),
            "introspection has no item for an owner rule to look at",
            13,
            18,
        ),
        with_base(
            "owner rule on a lookup",
            &format!(
                "{AUTH}[lookups.user]\nentity = \"User\"\nallow = [{{ owner = \"userId\" }}]\n"
            ),
            "a lookup has no item for an owner rule to look at",
            15,
            10,
        ),
        with_base(
            "rule that needs tokens without [auth]",
            "allow = [\"authenticated\"]\n",
            "this rule needs callers with tokens, and the model has no `[auth]`",
            10,
            10,
        ),
        with_base(
            "empty allow",
            "mutations.create = { allow = [] }\n",
            "an empty `allow` admits no one",
            10,
            30,
        ),
        with_base(
            "rule on a non-null field",
            &format!("fields.name = {{ type = \"String!\", allow = [\"authenticated\"] }}\n{AUTH}"),
            "`User.name` is non-null, so it cannot be hidden from anyone",
            10,
            43,
        ),
        with_purchases(
            "connection rules wider than its entity's",
            &format!(
                "allow = [{{ owner = \"userId\" }}]\n[entities.User.connections.purchases]\nentity = \"Purchase\"\npartition = {{ field = \"userId\" }}\nallow = [\"authenticated\"]\n{AUTH}"
            ),
            "`User.purchases` would show `Purchase` items to callers that `Purchase`'s own `allow` hides from",
            27,
            9,
        ),
        with_purchases(
            "Scan over an entity with an owner rule",
            &format!(
                "allow = [{{ owner = \"userId\" }}]\n[connections.all]\nentity = \"Purchase\"\nscan = true\n{AUTH}"
            ),
            "`Query.all` cannot keep to the caller's own items by its key: the owner rule on `userId` needs it partitioned by `userId`, but it scans the whole table",
            24,
            14,
        ),
        with_purchases(
            "owner rule of a Scan's own",
            &format!(
                "[connections.all]\nentity = \"Purchase\"\nscan = true\nallow = [{{ owner = \"userId\" }}]\n{AUTH}"
            ),
            "`Query.all` cannot keep to the caller's own items by its key: the owner rule on `userId` needs it partitioned by `userId`, but it scans the whole table",
            26,
            9,
        ),
        case(
            "index connection partitioned by another field than the owner",
            &format!(
                "{BASE}{}allow = [{{ owner = \"userId\" }}]\n[tables.Products]\npartition_key = \"sku\"\nattributes = {{ sku = \"S\" }}\n[entities.Product]\ntable = \"Products\"\nfields.sku = {{ type = \"String!\" }}\n[entities.Product.connections.purchases]\nentity = \"Purchase\"\nindex = \"BySku\"\npartition = {{ field = \"sku\" }}\n{AUTH}",
                PURCHASES.replace(", projection = \"KEYS_ONLY\"", "")
            ),
            "`Product.purchases` cannot keep to the caller's own items by its key: the owner rule on `userId` needs it partitioned by `userId`, but it is partitioned by `sku`",
            30,
            31,
        ),
        with_purchases(
            "connection with a fixed partition over an entity with an owner rule",
            &format!(
                "allow = [{{ owner = \"userId\" }}]\n[connections.mine]\nentity = \"Purchase\"\npartition = {{ value = \"u1\" }}\n{AUTH}"
            ),
            "`Query.mine` cannot keep to the caller's own items by its key: the owner rule on `userId` needs it partitioned by `userId`, but its partition is fixed",
            24,
            14,
        ),
        with_one_table(
            "item collection of members with different rules",
            &format!("allow = [\"authenticated\"]\n{ACTIVITY}{AUTH}"),
            "the members of `Customer.activity` have different `allow` rules (`Customer` and `Order`)",
            24,
            32,
        ),
        with_base(
            "unknown key in [auth]",
            &format!("{AUTH}leeway = 10\n"),
            "unknown key `leeway` in `auth`",
            13,
            1,
        ),
        with_base(
            "unknown key in a rule",
            &format!("allow = [{{ owner = \"userId\", clam = \"sub\" }}]\n{AUTH}"),
            "unknown key `clam` in `entities.User.allow`",
            10,
            30,
        ),
    ]
}

#[test]
fn each_kind_of_mistake_is_reported_at_its_place() {
    let mut failures = Vec::new();
    for case in cases() {
        let errors = errors(&case.text);
        let found = errors.diagnostics.iter().any(|d| {
            d.message.contains(case.message) && d.line == case.line && d.column == case.column
        });
        if !found {
            failures.push(format!(
                "{}: expected `{}` at {}:{}, got:\n{}",
                case.name, case.message, case.line, case.column, errors.report
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_report_is_plain_text_without_debug_output() {
    for case in cases() {
        let errors = errors(&case.text);
        assert!(
            errors.count >= 1 && errors.count == errors.diagnostics.len(),
            "{}",
            case.name
        );
        let last = format!("{} problem", errors.count);
        assert!(errors.report.contains(&last), "{}", case.name);
        assert!(
            errors.report.starts_with("error: "),
            "{}: {}",
            case.name,
            errors.report
        );
        assert!(
            errors.report.contains("┌─ test.toml:"),
            "{}: {}",
            case.name,
            errors.report
        );
        for bad in ["\u{1b}[", "panicked", "backtrace", "Spanned {", "Some("] {
            assert!(
                !errors.report.contains(bad),
                "{}: {}",
                case.name,
                errors.report
            );
        }
    }
}

#[test]
fn a_file_with_several_problems_reports_them_all_at_once() {
    let text = r#"version = 1

[tables.Users]
partition_key = "userId"
attributes = { userId = "S", email = "S" }

[enums.Role]
values = []

[entities.User]
table = "Users"
id_tag = "U"
fields.userId = { type = "Int!" }
fields.role = { type = "Rol" }
relations.boss = { type = "Boss", key = ["userId"] }

[entities.Admin]
table = "Users"
id_tag = "UA"
fields.userId = { type = "String!" }

[lookups.nodes]
entity = "User"
"#;
    let errors = errors(text);
    let lines: Vec<usize> = errors.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(lines, [5, 8, 13, 14, 15, 17, 19, 22], "{}", errors.report);
    assert_eq!(errors.count, 8);
    assert!(
        errors.report.ends_with("8 problems in test.toml\n"),
        "{}",
        errors.report
    );
}

#[test]
fn an_unknown_key_suggests_the_close_one() {
    let errors = errors("version = 1\n[tables.Users]\npartiton_key = \"userId\"\n");
    let unknown = errors
        .diagnostics
        .iter()
        .find(|d| d.message.contains("unknown key"));
    let hint = unknown.and_then(|d| d.hint.clone()).unwrap_or_default();
    assert!(hint.contains("did you mean `partition_key`?"), "{hint}");
    assert!(
        errors
            .report
            .contains("= hint: did you mean `partition_key`?"),
        "{}",
        errors.report
    );
}

#[test]
fn a_facet_that_is_no_field_suggests_the_close_one() {
    let text = ONE_TABLE.replace("{placedAt}#{orderId}", "{placedAt}#{ordrId}");
    let errors = errors(&text);
    let facet = errors
        .diagnostics
        .iter()
        .find(|d| d.message.contains("facet `ordrId`"));
    let hint = facet.and_then(|d| d.hint.clone()).unwrap_or_default();
    assert!(
        hint.starts_with("did you mean `orderId`?"),
        "{}",
        errors.report
    );
}

#[test]
fn a_misspelt_algorithm_rule_or_owner_field_suggests_the_close_one() {
    let expected = [
        ("unknown algorithm", "did you mean `RS256`?"),
        ("unknown rule keyword", "did you mean `authenticated`?"),
        (
            "owner rule naming a missing field",
            "did you mean `userId`?",
        ),
    ];
    let cases = cases();
    for (name, suggestion) in expected {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case `{name}`"));
        let errors = errors(&case.text);
        let hint = errors
            .diagnostics
            .iter()
            .find(|d| d.message.contains(case.message))
            .and_then(|d| d.hint.clone())
            .unwrap_or_default();
        assert!(hint.starts_with(suggestion), "{name}: {}", errors.report);
    }
}

#[test]
fn a_shared_table_with_a_type_attribute_may_repeat_key_prefixes() {
    // Without the type attribute, `Return` could match `Order`'s keys (a case above); with it,
    // each item names its entity, and reads of the shared prefix keep one entity's items.
    let text = format!(
        "{}{}{ORDERS}{}",
        ONE_TABLE.replace("indexes.GSI1", "type_attribute = \"_type\"\nindexes.GSI1"),
        RETURNS.replace(
            "table = \"Shop\"\n",
            "table = \"Shop\"\ntype_value = \"RETURN\"\n"
        ),
        ACTIVITY.replace("\"Order\"]", "\"Order\", \"Return\"]"),
    );
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(model.tables[0].type_attribute.as_deref(), Some("_type"));
    let value = |name: &str| {
        let e = model.entity_named(name).unwrap();
        model.entities[e].type_value.clone()
    };
    assert_eq!(value("Order").as_deref(), Some("Order"));
    assert_eq!(value("Return").as_deref(), Some("RETURN"));
    let customer = &model.entities[model.entity_named("Customer").unwrap()];
    let orders = &customer.connections[0];
    assert_eq!(
        orders.type_filters,
        [("_type", TypeTest::Equals("Order".to_owned()))]
    );
    let activity = &customer.connections[1];
    assert_eq!(
        activity.collection.as_ref().map(|c| c.members.len()),
        Some(3)
    );
}

#[test]
fn a_missing_file_is_one_problem_without_a_place() {
    let errors = model::load(std::path::Path::new("/nonexistent/dynarelay.toml"))
        .expect_err("a missing file is an error");
    assert_eq!(errors.count, 1);
    assert_eq!(
        (errors.diagnostics[0].line, errors.diagnostics[0].column),
        (0, 0)
    );
    assert!(
        errors
            .report
            .starts_with("error: cannot read the model file")
    );
}

#[test]
fn odd_inputs_are_reported_or_accepted_never_a_panic() {
    let inputs = [
        "",
        "[[tables]]\nname = 1\n",
        "tables = 3\n",
        "version = -1\n",
        "version = 99999999999999999999\n",
        "[tables.\"é\"]\npartition_key = \"é\"\nattributes = { \"é\" = \"S\" }\n",
        "[entities.X]\ntable = \"\"\nfields.\"\" = { type = \"\" }\n",
        "[entities.X]\ntable = \"T\"\nfields.a = { type = \"[String!\" }\n",
        "[entities.X]\ntable = \"T\"\nid_tag = \"\"\n[entities.Y]\ntable = \"T\"\nid_tag = \"\"\n",
        "[entities.X]\ntable = \"T\"\nmutations.create = { edge = \"..\" }\n",
        "[connections.c]\nentity = \"X\"\npage_size = { default = 0, max = 0 }\n",
        "x = \"\\u00e9\n",
    ];
    for input in inputs {
        if let Err(errors) = model::parse("odd.toml", input) {
            assert_eq!(errors.count, errors.diagnostics.len(), "{input}");
            assert!(errors.count > 0, "{input}");
        }
    }
}

#[test]
fn every_example_model_checks_and_builds_a_schema() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut checked = Vec::new();
    // Every model of every example: `dynarelay.toml`, and others such as `shop/secure.toml`.
    for entry in std::fs::read_dir(&examples).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let file = entry.unwrap().path();
            if file.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let model = dynarelay::model::load(&file).unwrap_or_else(|e| panic!("{e}"));
            let model: &'static dynarelay::model::Model = Box::leak(Box::new(model));
            let sdl = dynarelay::graphql::sdl(model).unwrap();
            assert!(sdl.contains("type Query"), "{}", file.display());
            checked.push(file);
        }
    }
    assert!(checked.len() >= 3, "{checked:?}");
    assert!(
        checked.iter().any(|f| f.ends_with("shop/secure.toml")),
        "{checked:?}"
    );
}
