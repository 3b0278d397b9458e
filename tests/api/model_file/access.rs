//! Access rules in the model file: the secure shop's rules, rules of every kind in every place,
//! public rules without an `[auth]` section, and a JWKS file named relative to the model file.

use dynarelay::model::{self, Access, AuthSpec, Entity, KeysSpec, Model, Rule};

use super::{BASE, PURCHASES};

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
