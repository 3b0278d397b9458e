# Builds benches/compare.rs (and the dynarelay binary it starts) once, and prints the bench's
# executable, so that the run measures exactly what was built: `cargo bench` run again later
# would rebuild from whatever the sources have become meanwhile.
# Usage: exe=$(build_compare)
build_compare() {
  local exe
  exe=$(cargo bench --bench compare --no-run --message-format=json-render-diagnostics |
    grep -F '"kind":["bench"]' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [ -n "$exe" ] && [ -x "$exe" ] || { echo "building benches/compare.rs gave no executable" >&2; return 1; }
  printf '%s\n' "$exe"
}
