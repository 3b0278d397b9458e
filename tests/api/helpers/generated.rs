//! Generated files checked into the repository (`schema.graphql`, `dynarelay.schema.json`, the
//! book's generated references): a test rewrites a stale one and fails, so that drift cannot land.

/// Writes `text` to `path` (relative to the crate root) when the file differs, and fails then:
/// run the tests again and commit the file.
pub fn check_generated(path: &str, text: &str) {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let on_disk = std::fs::read_to_string(&full).unwrap_or_default();
    if on_disk != text {
        std::fs::write(&full, text).unwrap_or_else(|err| panic!("rewriting {path}: {err}"));
        panic!("{path} was stale and has been rewritten: re-run the tests and commit it");
    }
}

/// A seed file as the examples check theirs in (`dynarelay seed --items`): one item a line,
/// attributes in name order.
pub fn items_file(tables: &[(&str, Vec<&dynarelay::dynamo::Item>)]) -> String {
    let tables: Vec<String> = tables
        .iter()
        .map(|(table, items)| {
            let items: Vec<String> = items
                .iter()
                .map(|item| format!("    {}", dynarelay::dynamo::typed_json::item_to_json(item)))
                .collect();
            format!("  \"{table}\": [\n{}\n  ]", items.join(",\n"))
        })
        .collect();
    format!("{{\n{}\n}}\n", tables.join(",\n"))
}

/// Fails unless the book's page `page` (relative to the crate root) states `sentence`, however
/// its lines are wrapped: the test that calls it holds the behaviour the sentence states, and
/// names the sentence, so that neither can change without the other.
pub fn book_says(page: &str, sentence: &str) {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|err| panic!("reading {page}: {err}"));
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&text).contains(&words(sentence)),
        "{page} no longer says \"{sentence}\": the test holding it must change with it"
    );
}
