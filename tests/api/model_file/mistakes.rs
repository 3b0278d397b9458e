//! How mistakes are reported: each at its place, as plain text, all of a file's at once, with
//! suggestions of the close name, a missing file as one problem, and odd inputs never a panic.

use dynarelay::model::{self, ModelErrors};

use super::{ONE_TABLE, cases::cases};

fn errors(text: &str) -> ModelErrors {
    match model::parse("test.toml", text) {
        Ok(_) => panic!("the model was accepted:\n{text}"),
        Err(errors) => errors,
    }
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
        // No Rust type the file is read into: `struct FieldFile`, `u32`.
        let internal = errors
            .report
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(|word| {
                (word.len() > 4 && word.ends_with("File") && word.starts_with(char::is_uppercase))
                    || ["u8", "u16", "u32", "u64", "usize", "i32", "i64", "struct"].contains(word)
            });
        assert_eq!(internal, None, "{}: {}", case.name, errors.report);
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

/// Values of the wrong shape are checked against the file's JSON Schema like unknown keys: all
/// of them at once, each once, named by its key and said in the model file's terms (what the
/// setting takes, the values allowed), with how to write a list when a value belongs in one.
#[test]
fn values_of_the_wrong_shape_are_all_reported_at_once_in_the_models_terms() {
    let text = r#"version = 1

[tables.Orders]
partition_key = "userId"
sort_key = "at"
attributes = { userId = "S", at = "N" }

[entities.Order]
table = "Orders"
escape_keys = "no"
allow = "public"
fields.userId = { type = "String!" }
fields.at = { type = "DateTime!", stored_as = 3 }
fields.total = ["Float"]
fields.note = 5
fields.tags = { type = "[String!]", max_length = -1 }

[entities.Order.connections.recent]
entity = "Order"
partition = { field = "userId" }
sort.fixed = "userId"
"#;
    let errors = errors(text);
    let found: Vec<(usize, &str, Option<&str>)> = errors
        .diagnostics
        .iter()
        .map(|d| (d.line, d.message.as_str(), d.hint.as_deref()))
        .collect();
    let expected: [(usize, &str, Option<&str>); 7] = [
        (
            10,
            "`entities.Order.escape_keys` is `true` or `false`, not the text \"no\"",
            None,
        ),
        (
            11,
            "`entities.Order.allow` is a list of rules",
            Some("a list is written in brackets: `allow = [\"public\"]`"),
        ),
        (
            13,
            "`entities.Order.fields.at.stored_as` is one of `epoch_millis`, `epoch_seconds`, \
             `iso8601`, `iso8601_seconds`, `date`, `list`, `set`, not the number 3",
            None,
        ),
        (
            14,
            "`entities.Order.fields.total` is a field: its type, such as",
            None,
        ),
        (
            15,
            "`entities.Order.fields.note` is a field: its type, such as",
            None,
        ),
        (
            16,
            "`entities.Order.fields.tags.max_length` is a whole number from 0 to 4294967295, not -1",
            None,
        ),
        (
            21,
            "`entities.Order.connections.recent.sort.fixed` is a list of arguments",
            Some("a list is written in brackets: `fixed = [\"userId\"]`"),
        ),
    ];
    assert_eq!(found.len(), expected.len(), "{}", errors.report);
    for ((line, message, hint), (want_line, want, want_hint)) in found.iter().zip(&expected) {
        assert_eq!(line, want_line, "{}", errors.report);
        assert!(message.starts_with(want), "{message}\n{}", errors.report);
        assert_eq!(hint, want_hint, "{}", errors.report);
    }
    assert!(errors.report.ends_with("7 problems in test.toml\n"));
}

/// One mistake inside a value is one problem: a misspelt key of an argument is reported as the
/// unknown key (with the close name), not again as the value's shape or a missing key; a key
/// left out is named.
#[test]
fn one_mistake_in_a_value_is_one_problem() {
    let connection = |fixed: &str| {
        format!(
            "{ONE_TABLE}\n[entities.Customer.connections.orders]\nentity = \"Order\"\n\
             partition = {{ field = \"username\" }}\nsort.fixed = {fixed}\n"
        )
    };
    let misspelt = errors(&connection(r#"[{ nam = "placedAt" }]"#));
    assert_eq!(misspelt.count, 1, "{}", misspelt.report);
    let problem = &misspelt.diagnostics[0];
    assert!(
        problem.message.starts_with("unknown key `nam`")
            && problem
                .hint
                .as_deref()
                .is_some_and(|hint| hint.starts_with("did you mean `name`?")),
        "{}",
        misspelt.report
    );
    let left_out = errors(&connection(r#"[{ description = "When" }]"#));
    assert_eq!(left_out.count, 1, "{}", left_out.report);
    assert!(
        left_out.diagnostics[0]
            .message
            .ends_with("sort.fixed` needs `name`"),
        "{}",
        left_out.report
    );
}

/// A key template that starts with a value, not literal text, and so could read another
/// entity's items, is said so: never as an empty key prefix.
#[test]
fn a_template_without_a_literal_start_is_named_as_such() {
    let text = format!(
        "{ONE_TABLE}{}",
        r#"
[entities.Note]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "{noteId}" }
fields.username = { type = "String!" }
fields.noteId = { type = "String!" }
"#
    );
    let errors = errors(&text);
    assert!(
        errors.diagnostics.iter().any(|d| d.message.contains(
            "`Note`'s `SK` template `{noteId}` begins with a value, not with literal text"
        )),
        "{}",
        errors.report
    );
    assert!(!errors.report.contains("``"), "{}", errors.report);
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
