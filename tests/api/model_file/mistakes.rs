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
