//! The modules of `src/` import each other without a cycle: a module that needs another's item
//! and is needed by it back means that one of them holds something of the other's job.
//!
//! The edges are the paths in the code that start with `crate::`, `super::` or `self::` (in `use`
//! trees and inline), each resolved to the deepest module file it names. A module and its own
//! ancestors or descendants (`graphql` and `graphql::lookup`) are one unit: paths between them are
//! not edges. The crate root (`lib.rs`, `main.rs`) is left out.
//!
//! The parser is a small one of our own: syn would add a parser to the build for one test.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    fmt::Write as _,
    path::Path,
};

/// The edges between modules: from, to, and where one reference that makes the edge stands.
type Graph = BTreeMap<String, BTreeMap<String, (String, usize)>>;

/// The tokens of `text` (words, `::` and other punctuation one character a token), each with
/// its line. Comments (doc comments too, block comments not nested), strings and character
/// literals are left out, so that prose naming a path is not an edge.
fn tokens(text: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let is_word = |i: usize| at(i).is_alphanumeric() || at(i) == '_';
    // The line of each character.
    let lines: Vec<usize> = (c.iter())
        .scan(1, |line, &ch| {
            Some(std::mem::replace(line, *line + usize::from(ch == '\n')))
        })
        .collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < c.len() {
        let start = i;
        // A comment or literal here: how far in its body starts, the mark that ends it, and
        // whether `\` escapes in it (`'a'` ends where its body starts; a quote alone is a
        // lifetime's).
        let mut skip = match (at(i), at(i + 1), at(i + 2)) {
            ('/', '/', _) => Some((2, "\n".to_string(), false)),
            ('/', '*', _) => Some((2, "*/".to_string(), false)),
            ('"', _, _) => Some((1, "\"".to_string(), true)),
            ('\'', '\\', _) => Some((3, "'".to_string(), false)),
            ('\'', _, '\'') => Some((3, String::new(), false)),
            _ => None,
        };
        if is_word(i) {
            while is_word(i) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // A raw string (`r#"…"#`) ends with a quote and as many `#` as it starts with; the
            // prefix of a byte or C string or character is dropped, its literal skipped next.
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                skip = Some((hashes + 1, format!("\"{}", "#".repeat(hashes)), false));
            } else if !(matches!(word.as_str(), "b" | "c") && matches!(at(i), '"' | '\'')) {
                out.push((word, lines[start]));
            }
        } else if skip.is_none() {
            let len = 1 + usize::from(at(i) == ':' && at(i + 1) == ':');
            if !at(i).is_whitespace() {
                out.push((c[i..i + len].iter().collect(), lines[i]));
            }
            i += len;
        }
        if let Some((body, end, escapes)) = skip {
            let end: Vec<char> = end.chars().collect();
            i += body;
            while i < c.len() && !c[i..].starts_with(&end) {
                i += if escapes && c[i] == '\\' { 2 } else { 1 };
            }
            i += end.len();
        }
    }
    out
}

/// Reads the path or `use` tree that starts at `t[i]`, under `prefix`, pushing each path it
/// names (with the line of its last segment) to `out`; returns where it ends.
fn tree(
    t: &[(String, usize)],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize)>,
) -> usize {
    let tok = |k: usize| t.get(k).map_or("", |(s, _)| s.as_str());
    let mut path = prefix.to_vec();
    let mut line = t.get(i).map_or(0, |(_, l)| *l);
    while tok(i).starts_with(|ch: char| ch.is_alphanumeric() || ch == '_') {
        (line, i) = (t[i].1, i + 1);
        path.push(t[i - 1].0.clone());
        if tok(i) != "::" {
            break;
        }
        i += 1;
    }
    // A group (`a::{b, c::{d}}`), not a struct literal's braces (`a::B { .. }`).
    if tok(i) == "{" && i > 0 && tok(i - 1) == "::" {
        i += 1;
        while !matches!(tok(i), "}" | "") {
            if tok(i) != "," {
                i = tree(t, i, &path, out);
            }
            // Past an `as name`, and the comma.
            while !matches!(tok(i), "," | "}" | "") {
                i += 1;
            }
            i += usize::from(tok(i) == ",");
        }
        return i + 1;
    }
    i += usize::from(tok(i) == "*");
    out.push((path, line));
    i
}

/// The module of a file under `src/` (`graphql/lookup.rs`: `graphql::lookup`; `graphql/mod.rs`:
/// `graphql`); the crate root's is empty.
fn module_of(file: &str) -> Vec<String> {
    let module = (file.strip_suffix("/mod.rs").or(file.strip_suffix(".rs"))).unwrap_or(file);
    match module {
        "lib" | "main" => Vec::new(),
        _ => module.split('/').map(String::from).collect(),
    }
}

/// The graph of `files` (paths under `src/`, with their text).
fn graph(files: &[(String, String)]) -> Graph {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(f, _)| module_of(f)).collect();
    let mut graph = Graph::new();
    for (file, text) in files {
        let from = module_of(file);
        let t = tokens(text);
        let tok = |k: usize| t.get(k).map_or("", |(s, _)| s.as_str());
        // One entry a brace the scan is in: the name of an inline module (`mod tests { … }`).
        let mut scopes: Vec<Option<&str>> = Vec::new();
        let mut i = 0;
        while i < t.len() {
            if tok(i) == "{" {
                scopes.push((i >= 2 && tok(i - 2) == "mod").then(|| tok(i - 1)));
            } else if tok(i) == "}" {
                scopes.pop();
            }
            if !matches!(tok(i), "crate" | "super" | "self") || tok(i + 1) != "::" {
                i += 1;
                continue;
            }
            let mut paths = Vec::new();
            i = tree(&t, i, &[], &mut paths);
            for (path, line) in paths {
                let mut target: Vec<String> = match path[0].as_str() {
                    "crate" => Vec::new(),
                    _ => from
                        .iter()
                        .map(|m| m.as_str())
                        .chain(scopes.iter().flatten().copied())
                        .map(String::from)
                        .collect(),
                };
                for segment in &path {
                    match segment.as_str() {
                        "crate" | "self" => {}
                        "super" => drop(target.pop()),
                        _ => target.push(segment.clone()),
                    }
                }
                // The deepest module file the path names.
                while !target.is_empty() && !modules.contains(&target) {
                    target.pop();
                }
                // A module and its own ancestors and descendants are one unit.
                if target.is_empty() || target.starts_with(&from) || from.starts_with(&target) {
                    continue;
                }
                graph
                    .entry(from.join("::"))
                    .or_default()
                    .entry(target.join("::"))
                    .or_insert_with(|| (format!("src/{file}"), line));
            }
        }
    }
    graph
}

/// The cycles: for each module on one, the shortest through it, each cycle once, from its least
/// module (`["a", "b", "a"]`).
fn cycles(graph: &Graph) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        // Breadth first from `start`: the module each was first reached from, `start` too.
        let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for next in graph.get(at).into_iter().flat_map(BTreeMap::keys) {
                if !came_from.contains_key(next) {
                    came_from.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        let Some(mut at) = came_from.get(start).copied() else {
            continue;
        };
        let mut cycle = vec![start.clone()];
        while at != start {
            cycle.push(at.clone());
            at = came_from[at];
        }
        cycle.reverse();
        let least = (0..cycle.len()).min_by_key(|&k| &cycle[k]).unwrap_or(0);
        cycle.rotate_left(least);
        cycle.push(cycle[0].clone());
        found.insert(cycle);
    }
    found
}

/// Each cycle as `a -> b -> a`, with where each of its edges' references stands.
fn report(graph: &Graph, cycles: &BTreeSet<Vec<String>>) -> String {
    let mut out = String::new();
    for cycle in cycles {
        writeln!(out, "{}", cycle.join(" -> ")).unwrap();
        for pair in cycle.windows(2) {
            let (file, line) = &graph[&pair[0]][&pair[1]];
            writeln!(out, "  {} -> {}: {file}:{line}", pair[0], pair[1]).unwrap();
        }
    }
    out
}

/// The `.rs` files under `dir`, by path from `src/` (`under`), with their text.
fn sources(dir: &Path, under: &str, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("{under}{}", path.file_name().unwrap().to_str().unwrap());
        if path.is_dir() {
            sources(&path, &format!("{name}/"), out);
        } else if name.ends_with(".rs") {
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn no_two_modules_of_src_import_each_other_in_a_cycle() {
    let (src, mut files) = (
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        Vec::new(),
    );
    sources(&src, "", &mut files);
    let graph = graph(&files);
    // The scan read something: the schema is seen importing the model.
    assert!(graph["graphql::schema"].contains_key("model"), "{graph:#?}");
    let found = cycles(&graph);
    let report = report(&graph, &found);
    assert!(
        found.is_empty(),
        "modules import each other in a cycle:\n{report}"
    );
}

/// The control: the check finds two modules that import each other (and only their edges: not
/// prose, strings, or a module's own parent), and no cycle where there is none.
#[test]
fn the_module_check_finds_two_modules_that_import_each_other() {
    let a = "//! crate::c::x\nuse super::{b::{self, B}, c as _};\nfn f() { \"crate::c\"; }";
    let inner = "fn g() { super::super::c::C::new(); super::f() }";
    let c = "/* crate::a::A */ #[cfg(test)]\nmod tests { use super::*; }";
    let d = r##"fn h<'x>(_: &'x u8) { '"'; r#""crate::a"#; b"\"crate::a" }"##;
    let files = |b: &str| {
        [
            ("a.rs", a),
            ("b/mod.rs", b),
            ("b/inner.rs", inner),
            ("c.rs", c),
            ("d.rs", d),
        ]
        .map(|(name, text)| (name.to_string(), text.to_string()))
    };
    let graph = graph(&files("pub mod inner;\nuse crate::a::A;"));
    let expected = "a -> b -> a\n  a -> b: src/a.rs:2\n  b -> a: src/b/mod.rs:2\n";
    assert_eq!(report(&graph, &cycles(&graph)), expected);
    assert_eq!(graph["a"].keys().collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(graph["b::inner"].keys().collect::<Vec<_>>(), ["c"]);
    assert!(!graph.contains_key("c") && !graph.contains_key("d"));

    let graph = self::graph(&files("pub mod inner;\nuse crate::c::C;"));
    assert!(cycles(&graph).is_empty(), "{graph:#?}");
}
