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
