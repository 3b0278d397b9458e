//! schema.graphql is generated from the Rust schema; this test keeps the checked-in file in sync.

#[test]
fn schema_graphql_matches_the_rust_schema() {
    let generated = dynarelay::graphql::sdl(crate::helpers::shop()).unwrap();
    crate::helpers::check_generated("schema.graphql", &generated);
}
