//! Models that load: the checked-in JSON Schema matches the Rust types, the examples load with
//! the tables, entities, connections and unions they declare, every example model builds a
//! schema, and a shared table with a type attribute may repeat key prefixes.

use dynarelay::model::{self, TypeTest};

use super::{ACTIVITY, BASE, ONE_TABLE, ORDERS, RETURNS};

#[test]
fn dynarelay_schema_json_matches_the_rust_types() {
    crate::helpers::check_generated("dynarelay.schema.json", &model::json_schema());
}

#[test]
fn a_field_may_be_written_as_its_type_alone() {
    let text = BASE.replace(
        "fields.userId = { type = \"String!\" }",
        "fields.userId = \"String!\"\nfields.tags = \"[String!]\"\nfields.name = { type = \"String\", attribute = \"n\" }",
    );
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let fields: Vec<(&str, &str, bool)> = model.entities[0]
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.attribute.as_str(), f.nullable))
        .collect();
    assert_eq!(
        fields,
        [
            ("userId", "userId", false),
            ("tags", "tags", true),
            ("name", "n", true)
        ]
    );
    // A mistake in the short form is reported at the type, as in the long one.
    let errors = model::parse(
        "test.toml",
        &BASE.replace("{ type = \"String!\" }", "\"Strin!\""),
    )
    .expect_err("an unknown type");
    assert_eq!(
        (errors.diagnostics[0].line, errors.diagnostics[0].column),
        (9, 17),
        "{}",
        errors.report
    );
    assert!(
        errors.report.contains("unknown type `Strin`"),
        "{}",
        errors.report
    );
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

#[test]
fn a_shared_table_with_a_type_attribute_may_repeat_key_prefixes() {
    // Without the type attribute, `Return` could match `Order`'s keys (a case in `cases.rs`);
    // with it, each item names its entity, and reads of the shared prefix keep one entity's items.
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

/// An entity declared as ElectroDB declares it gets ElectroDB's own keys (electrodb 3's
/// `_makeIndexPrefixes` and `_makeKey`): `$service#attribute_value…` partition keys, sort keys
/// starting `$entity_version` (or `$collection#entity_version` in a collection), an index with
/// no sort key carrying the entity part at the end of its partition key, labels from attribute
/// names, all lowercased; its type value and `__edb_v__`. The table's own example keys are
/// checked against ElectroDB itself by `tools::electrodb`.
#[test]
fn an_electrodb_entity_gets_electrodbs_keys() {
    let text = r#"version = 1
[tables.Lending]
partition_key = "pk"
sort_key = "sk"
attributes = { pk = "S", sk = "S", gsi1pk = "S", gsi1sk = "S", gsi2pk = "S" }
type_attribute = "__edb_e__"
indexes.gsi1 = { partition_key = "gsi1pk", sort_key = "gsi1sk" }
indexes.gsi2 = { partition_key = "gsi2pk" }

[entities.Loan]
table = "Lending"
electrodb = { service = "Lending", entity = "loan", version = "2", pk = ["member"], sk = ["loanedAt", "loanId"], indexes = { gsi1 = { pk = ["member"], sk = ["loanedAt"], collection = "history" }, gsi2 = { pk = ["loanId"] } } }
fields.member = { type = "String!", attribute = "memberId" }
fields.loanId = { type = "String!" }
fields.loanedAt = { type = "DateTime!", stored_as = "iso8601" }
"#;
    let model = model::parse("test.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let loan = &model.entities[0];
    let templates: Vec<(&str, String)> = loan
        .templates
        .iter()
        .map(|t| (t.attribute, t.template.to_string()))
        .collect();
    let want = [
        ("pk", "$lending#memberid_{member}"),
        ("sk", "$loan_2#loanedat_{loanedAt}#loanid_{loanId}"),
        ("gsi1pk", "$lending#memberid_{member}"),
        ("gsi1sk", "$history#loan_2#loanedat_{loanedAt}"),
        ("gsi2pk", "$lending#loanid_{loanId}$loan_2"),
    ];
    for (attribute, template) in want {
        assert!(
            templates.contains(&(attribute, template.to_owned())),
            "{attribute} = {template} in {templates:?}"
        );
    }
    assert_eq!(templates.len(), want.len(), "{templates:?}");
    assert!(loan.templates.iter().all(|t| !t.template.is_escaped()));
    assert_eq!(loan.type_value.as_deref(), Some("loan"));
    assert_eq!(loan.constants, [("__edb_v__".to_owned(), "2".to_owned())]);
}

/// Two versions of one ElectroDB entity may share a table and even its key templates (ElectroDB's
/// custom keys carry no version): their rules differ in `__edb_v__`, so `check` takes them, an
/// item is the version its `__edb_v__` names (or none, without it), and a Scan of either filters
/// on both attributes. Declared with `electrodb`, the versions' keys differ as well.
#[test]
fn two_versions_of_an_electrodb_entity_are_told_apart_by_their_rules() {
    let version = |entity: &str, v: &str| {
        format!(
            "[entities.{entity}]\ntable = \"Lending\"\nkeys = {{ pk = \"member#{{memberId}}\", sk = \"loan#{{loanId}}\" }}\n\
             escape_keys = false\ntype_value = \"loan\"\nconstants = {{ __edb_v__ = \"{v}\" }}\n\
             fields.memberId = \"ID!\"\nfields.loanId = \"ID!\"\n\
             [connections.all{entity}]\nentity = \"{entity}\"\nscan = true\n"
        )
    };
    let table = "version = 1\n[tables.Lending]\npartition_key = \"pk\"\nsort_key = \"sk\"\n\
                 attributes = { pk = \"S\", sk = \"S\" }\ntype_attribute = \"__edb_e__\"\n";
    let text = format!(
        "{table}{}{}",
        version("LoanV1", "1"),
        version("LoanV2", "2")
    );
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let (v1, v2) = (
        model.entity_named("LoanV1").unwrap(),
        model.entity_named("LoanV2").unwrap(),
    );
    let keys = model.tables[0].key;
    let item = |label: Option<&'static str>| {
        move |attribute: &str| match attribute {
            "pk" => Some("member#m-1"),
            "sk" => Some("loan#l-1"),
            "__edb_e__" => Some("loan"),
            "__edb_v__" => label,
            _ => None,
        }
    };
    assert_eq!(model.entity_of(&[v1, v2], keys, item(Some("1"))), Some(v1));
    assert_eq!(model.entity_of(&[v1, v2], keys, item(Some("2"))), Some(v2));
    assert_eq!(model.entity_of(&[v1, v2], keys, item(Some("3"))), None);
    assert_eq!(model.entity_of(&[v1, v2], keys, item(None)), None);
    let scan = model
        .connections
        .iter()
        .find(|c| c.name == "allLoanV2")
        .unwrap();
    assert_eq!(
        scan.type_filters,
        [
            ("__edb_e__", TypeTest::Equals("loan".to_owned())),
            ("__edb_v__", TypeTest::Equals("2".to_owned())),
        ]
    );

    // The same rules with one constant alike: nothing tells the entities apart.
    let same = text.replace("__edb_v__ = \"2\"", "__edb_v__ = \"1\"");
    let err = model::parse("test.toml", &same).unwrap_err().to_string();
    assert!(
        err.contains("entities `LoanV1` and `LoanV2` have the same type value `loan`"),
        "{err}"
    );

    // Declared with `electrodb`, version 1 and 2 of `loan` in one model.
    let edb = |entity: &str, v: &str| {
        format!(
            "[entities.{entity}]\ntable = \"Lending\"\nid_tag = \"{v}\"\n\
             electrodb = {{ service = \"lending\", entity = \"loan\", version = \"{v}\", pk = [\"memberId\"], sk = [\"loanId\"] }}\n\
             fields.memberId = \"ID!\"\nfields.loanId = \"ID!\"\n"
        )
    };
    let text = format!("{table}{}{}", edb("LoanV1", "1"), edb("LoanV2", "2"));
    let model = model::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rules: Vec<Vec<(&str, &str)>> = model
        .entities
        .iter()
        .map(|e| e.required_values(&model.tables[0]).collect())
        .collect();
    assert_eq!(
        rules,
        [
            [("__edb_e__", "loan"), ("__edb_v__", "1")],
            [("__edb_e__", "loan"), ("__edb_v__", "2")],
        ]
    );
}
