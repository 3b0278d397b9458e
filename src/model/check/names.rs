//! Names: GraphQL and DynamoDB name rules, the names the schema reserves or generates, clashes
//! between names, and "did you mean" suggestions.

use super::*;

pub(super) const BUILTIN_TYPES: [&str; 17] = [
    "Query",
    "Mutation",
    "Node",
    "PageInfo",
    "SortOrder",
    "Subscription",
    "ChangeKind",
    "String",
    "ID",
    "Int",
    "BigInt",
    "Float",
    "Decimal",
    "Boolean",
    "DateTime",
    "Bytes",
    "JSON",
];

/// The types an Apollo Federation subgraph's schema adds (see `[federation]`).
pub(super) const FEDERATION_TYPES: [&str; 3] = ["_Any", "_Entity", "_Service"];

pub(super) const SCALAR_NAMES: [&str; 10] = [
    "String", "ID", "Int", "BigInt", "Float", "Decimal", "Boolean", "DateTime", "Bytes", "JSON",
];

/// Pagination arguments every connection has.
pub(super) const RESERVED_ARGUMENTS: [&str; 5] = ["first", "after", "last", "before", "order"];

/// The names of the types generated for entity `name`.
pub(super) fn generated_type_names(name: &str) -> [String; 10] {
    [
        format!("{name}Connection"),
        format!("{name}CountedConnection"),
        format!("{name}Edge"),
        format!("{name}Change"),
        format!("Create{name}Input"),
        format!("Create{name}Payload"),
        format!("Update{name}Input"),
        format!("Update{name}Payload"),
        format!("Delete{name}Input"),
        format!("Delete{name}Payload"),
    ]
}

/// Whether `s` matches `[_A-Za-z][_0-9A-Za-z]*`.
pub(super) fn is_graphql_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Reports `name` unless it is a GraphQL name not starting with `__`; `what` says what it
/// names. Returns whether it is fine.
pub(super) fn check_name(span: Range<usize>, name: &str, what: &str, out: &mut Problems) -> bool {
    if !is_graphql_name(name) {
        out.error(span, format!("{what} `{name}` is not a valid GraphQL name"))
            .hint("GraphQL names are letters, digits and `_`, and do not start with a digit");
        false
    } else if name.starts_with("__") {
        out.error(span, format!("{what} `{name}` starts with `__`"))
            .hint("names starting with `__` are reserved for GraphQL introspection");
        false
    } else {
        true
    }
}

/// Whether `s` is a valid DynamoDB table or index name.
pub(super) fn is_dynamodb_name(s: &str) -> bool {
    (3..=255).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The edit distance between `a` and `b`, ignoring case.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The candidate closest to `word`, if one is close enough to be a likely typo.
pub(super) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let length = word.chars().count();
    let limit = if length < 3 { 0 } else { (length / 3).max(1) };
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// A hint for an unknown `word`: the close candidate if any, and the candidates (`what`).
pub(super) fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    let list = if candidates.is_empty() {
        format!("there are no {what}")
    } else {
        let quoted: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
        format!("the {what} are {}", quoted.join(", "))
    };
    match did_you_mean(word, candidates) {
        Some(close) => format!("did you mean `{close}`? ({list})"),
        None => list,
    }
}

/// The entries of a map keyed by spanned names, in the order the file declares them.
pub(super) fn in_file_order<V>(map: &BTreeMap<Spanned<String>, V>) -> Vec<(&Spanned<String>, &V)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// Reports names declared twice in `names` (name, span, what), at the later one.
pub(super) fn check_unique(names: &[(String, Range<usize>, &str)], out: &mut Problems) {
    let mut seen: HashMap<&str, (&Range<usize>, &str)> = HashMap::new();
    let mut sorted: Vec<_> = names.iter().collect();
    sorted.sort_by_key(|(_, span, _)| span.start);
    for (name, span, what) in sorted {
        if let Some((first, first_what)) = seen.get(name.as_str()) {
            out.error(span.clone(), format!("`{name}` is declared twice"))
                .also(
                    (*first).clone(),
                    format!("also declared here, as a {first_what}"),
                )
                .hint(format!("rename this {what} or the other one"));
        } else {
            seen.insert(name, (span, what));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_finds_close_names_only() {
        let keys = ["partition_key", "sort_key", "attributes", "indexes"];
        assert_eq!(did_you_mean("partiton_key", &keys), Some("partition_key"));
        assert_eq!(did_you_mean("Sort_Key", &keys), Some("sort_key"));
        assert_eq!(did_you_mean("colour", &keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn graphql_names_follow_the_spec() {
        assert!(is_graphql_name("_a1"));
        assert!(is_graphql_name("Customer"));
        assert!(!is_graphql_name("1a"));
        assert!(!is_graphql_name("a-b"));
        assert!(!is_graphql_name(""));
    }
}
