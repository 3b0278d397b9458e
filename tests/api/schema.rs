//! schema.graphql is generated from the Rust schema; this test keeps the checked-in file in sync.

#[test]
fn schema_graphql_matches_the_rust_schema() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql");
    let generated = dynarelay::graphql::sdl(crate::helpers::shop()).unwrap();
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    if on_disk != generated {
        std::fs::write(path, &generated).expect("rewriting schema.graphql");
        panic!("schema.graphql was stale and has been rewritten: re-run the tests and commit it");
    }
}
