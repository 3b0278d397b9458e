//! `dynarelay check --sample N`: a model held against its tables' items. A table written with
//! an index the model does not declare, values a field cannot read (a string where the model
//! says `Int`, a value outside an enum, a non-null field absent) and an item of a type the model
//! does not know are each reported with their counts, and the check still passes.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;

use crate::helpers::{dynarelay_command, endpoint, model_app_from};

/// The model of the table, with `extra` (its key attributes, and any further index) added.
fn model(extra: &str) -> String {
    format!(
        r#"
version = 1
[enums.Status]
values = ["A", "B"]
[tables.Things]
partition_key = "pk"
type_attribute = "_type"
indexes.ByKind = {{ partition_key = "kind" }}
{extra}
[entities.Thing]
table = "Things"
fields.pk = {{ type = "String!" }}
fields.kind = {{ type = "String" }}
fields.count = {{ type = "Int!" }}
fields.status = {{ type = "Status!" }}
fields.label = {{ type = "String!" }}
"#
    )
}

#[tokio::test]
async fn check_with_a_sample_reports_what_no_longer_fits() {
    let app = model_app_from(&model(
        "indexes.ByColor = { partition_key = \"color\" }\n\
         attributes = { pk = \"S\", kind = \"S\", color = \"S\" }",
    ))
    .await;
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let thing = |pk: &str, count: AttributeValue, status: &str, label: Option<&str>| {
        let mut item = Item::from([
            ("pk".to_owned(), s(pk)),
            ("_type".to_owned(), s("Thing")),
            ("count".to_owned(), count),
            ("status".to_owned(), s(status)),
        ]);
        if let Some(label) = label {
            item.insert("label".to_owned(), s(label));
        }
        item
    };
    let n = |v: &str| AttributeValue::N(v.to_owned());
    let mut items = vec![
        thing("a", n("1"), "A", Some("fine")),
        thing("b", n("2"), "B", Some("fine")),
        thing("c", s("three"), "A", Some("a string count")),
        thing("d", n("4"), "C", Some("an unknown status")),
        thing("e", n("5"), "A", None),
    ];
    items.push(Item::from([
        ("pk".to_owned(), s("g")),
        ("_type".to_owned(), s("Gadget")),
    ]));
    app.store
        .put_items(&app.table("Things"), items)
        .await
        .unwrap();
    // Checked against the model without the second index.
    let dir = std::env::temp_dir().join(format!("dynarelay-drift-{}", app.prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("model.toml");
    std::fs::write(&file, model("attributes = { pk = \"S\", kind = \"S\" }")).unwrap();
    let run = dynarelay_command(&endpoint())
        .args([
            "check",
            "--sample",
            "100",
            "--table-prefix",
            &app.prefix,
            "--model",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = app.table("Things");
    for line in [
        format!(
            "warning: table {table} has the index `ByColor`, which the model does not declare: \
             add it under [tables.Things.indexes] to page through it\n"
        ),
        format!(
            "warning: table {table}: `Thing.count` (attribute `count`) cannot be read from 1 of 6 \
             sampled items, where it is S: its type no longer fits what is stored\n"
        ),
        format!(
            "warning: table {table}: `Thing.status` (attribute `status`) cannot be read from 1 of \
             6 sampled items, where it is S: its type no longer fits what is stored\n"
        ),
        format!(
            "warning: table {table}: `Thing.label` (attribute `label`) cannot be read from 1 of 6 \
             sampled items, where it is absent: the field is non-null\n"
        ),
        format!(
            "warning: table {table}: 1 of 6 sampled items are of no entity of the model (`_type` \
             = `Gadget`): no connection or lookup returns them\n"
        ),
        "sampled 6 items: 5 warnings\n".to_owned(),
    ] {
        assert!(stdout.contains(&line), "missing `{line}` in:\n{stdout}");
    }
    // Without --sample, no item is read and nothing is said about them.
    let plain = dynarelay_command(&endpoint())
        .args(["check", "--table-prefix", &app.prefix, "--model"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.status.success());
    assert!(!stdout.contains("warning"), "{stdout}");
}
