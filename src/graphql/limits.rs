//! Limits on what one request may ask for, all checked before execution: document length and
//! token count (before parsing), aliases (after parsing), depth (async-graphql's validation,
//! configured in `build_schema_with`) and complexity (computed here over the document from the
//! model, since the dynamic schema's fields have no complexity hook). A rejected request never
//! reaches a resolver.

use std::collections::HashMap;

use async_graphql::{
    Name, Positioned, Value, Variables,
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
};
use async_graphql_value::Value as ParserValue;

use super::operation::Operation;

/// The limits, each configurable on `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// Deepest nesting of selections, introspection left out (see [`depth`]).
    pub depth: usize,
    /// Largest complexity: each field costs 1, and a connection costs its page size times the
    /// cost of its children, so this bounds the objects one request can return.
    pub complexity: usize,
    /// Most aliased fields in one document.
    pub aliases: usize,
    /// Longest document, in bytes.
    pub query_bytes: usize,
    /// Most lexical tokens in one document.
    pub tokens: usize,
    /// Answer introspection queries (`__schema`, `__type`).
    pub introspection: bool,
    /// Suggest field names in validation errors ("Did you mean ...?").
    pub suggestions: bool,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            depth: 10,
            complexity: 10_000,
            aliases: 15,
            query_bytes: 16 * 1024,
            tokens: 2_000,
            introspection: true,
            suggestions: true,
        }
    }
}

/// A limit a document exceeds, with its `extensions.code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The message for the client.
    pub message: String,
    /// `extensions.code`.
    pub code: &'static str,
}

impl QueryLimits {
    /// Checks the document's text before it is parsed.
    pub fn check_text(&self, query: &str) -> Result<(), LimitExceeded> {
        if query.len() > self.query_bytes {
            return Err(LimitExceeded {
                message: format!(
                    "The query is {} bytes long; the limit is {}.",
                    query.len(),
                    self.query_bytes
                ),
                code: "QUERY_TOO_LONG",
            });
        }
        if count_tokens(query, self.tokens).is_none() {
            return Err(LimitExceeded {
                message: format!("The query has more than {} tokens.", self.tokens),
                code: "TOO_MANY_TOKENS",
            });
        }
        Ok(())
    }

    /// Checks a parsed document for what async-graphql's validation does not limit, and for
    /// introspection when it is off (async-graphql would silently answer null).
    pub fn check_document(&self, document: &ExecutableDocument) -> Result<(), LimitExceeded> {
        if !self.introspection && introspects(document) {
            return Err(LimitExceeded {
                message: "Introspection is disabled on this server.".to_owned(),
                code: "INTROSPECTION_DISABLED",
            });
        }
        let aliases = count_aliases(document);
        if aliases > self.aliases {
            return Err(LimitExceeded {
                message: format!(
                    "The query uses {aliases} aliases; the limit is {}.",
                    self.aliases
                ),
                code: "TOO_MANY_ALIASES",
            });
        }
        Ok(())
    }
}

/// What each field costs, by parent type and field name, for the complexity limit: each field
/// costs 1 plus its children, a connection 1 plus its page size times its children, and a list
/// fetched by ids 1 plus the number of ids times its children.
#[derive(Debug, Clone, Default)]
pub struct FieldCosts {
    /// By parent type, then field name (looked up by `&str`, without allocating).
    fields: HashMap<String, HashMap<String, FieldCost>>,
}

#[derive(Debug, Clone)]
enum FieldCost {
    /// An object-typed field: its children are fields of this type.
    Object(String),
    /// A connection of this type, with its own default page size if it has one.
    Connection(String, Option<u32>),
    /// A list of this type, as long as the list argument named.
    List(String, &'static str),
    /// A field that costs this much once, whatever page it is on (`totalCount`).
    Once(usize),
}

/// What `totalCount` costs: as much as a page of the largest size, since counting reads too.
pub const COUNT_COST: usize = 100;

/// Fragments nest at most this deep in a cost computation (cycles are refused later by
/// validation, which runs after this check).
const MAX_FRAGMENT_NESTING: usize = 32;

impl FieldCosts {
    /// `parent.field` returns an object of type `ty`.
    pub fn object(&mut self, parent: &str, field: &str, ty: &str) {
        self.insert(parent, field, FieldCost::Object(ty.to_owned()));
    }

    /// `parent.field` is a connection of type `ty`, with `default` items per page when the
    /// query names no size (`None`: the server's default).
    pub fn connection(&mut self, parent: &str, field: &str, ty: &str, default: Option<u32>) {
        self.insert(parent, field, FieldCost::Connection(ty.to_owned(), default));
    }

    /// `parent.field` costs `cost` once, not once per item of the page it is on.
    pub fn once(&mut self, parent: &str, field: &str, cost: usize) {
        self.insert(parent, field, FieldCost::Once(cost));
    }

    /// `parent.field` returns as many `ty` objects as its list argument `arg` holds.
    pub fn list(&mut self, parent: &str, field: &str, ty: &str, arg: &'static str) {
        self.insert(parent, field, FieldCost::List(ty.to_owned(), arg));
    }

    fn insert(&mut self, parent: &str, field: &str, cost: FieldCost) {
        self.fields
            .entry(parent.to_owned())
            .or_default()
            .insert(field.to_owned(), cost);
    }

    /// The complexity of the operation a request would run, with its variables; connections
    /// that name no page size count `default_page` items.
    pub fn complexity(
        &self,
        document: &ExecutableDocument,
        operation: Operation<'_>,
        variables: &Variables,
        default_page: u32,
    ) -> usize {
        let operation = operation.definition;
        let root = match operation.node.ty {
            OperationType::Query => "Query",
            OperationType::Mutation => "Mutation",
            OperationType::Subscription => "Subscription",
        };
        let walk = Walk {
            costs: self,
            document,
            variables,
            default_page,
        };
        walk.set(&operation.node.selection_set.node, root, 0)
    }
}

struct Walk<'a> {
    costs: &'a FieldCosts,
    document: &'a ExecutableDocument,
    variables: &'a Variables,
    default_page: u32,
}

impl Walk<'_> {
    /// The cost of the fields of `set` (not under fragments) that cost once.
    fn once_fields(&self, set: &SelectionSet, ty: &str) -> usize {
        set.items
            .iter()
            .filter_map(|selection| match &selection.node {
                Selection::Field(field) => match self
                    .costs
                    .fields
                    .get(ty)
                    .and_then(|fields| fields.get(field.node.name.node.as_str()))
                {
                    Some(FieldCost::Once(cost)) => Some(*cost),
                    _ => None,
                },
                _ => None,
            })
            .fold(0, usize::saturating_add)
    }

    fn set(&self, set: &SelectionSet, ty: &str, nesting: usize) -> usize {
        if nesting > MAX_FRAGMENT_NESTING {
            return 0;
        }
        let mut total = 0usize;
        for selection in &set.items {
            let cost = match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let children = &field.selection_set.node;
                    let cost = self
                        .costs
                        .fields
                        .get(ty)
                        .and_then(|fields| fields.get(field.name.node.as_str()));
                    match cost {
                        Some(FieldCost::Object(child)) => {
                            self.set(children, child, nesting).saturating_add(1)
                        }
                        Some(FieldCost::Connection(child, default)) => {
                            let size = ["first", "last"]
                                .into_iter()
                                .find_map(|arg| self.int_argument(&field.arguments, arg))
                                .map_or(default.unwrap_or(self.default_page) as usize, |n| {
                                    usize::try_from(n).unwrap_or(0)
                                });
                            // Fields that cost once (`totalCount`) are not multiplied by the
                            // page size; under a fragment they are, which only overestimates.
                            let once = self.once_fields(children, child);
                            size.max(1)
                                .saturating_mul(
                                    self.set(children, child, nesting).saturating_sub(once),
                                )
                                .saturating_add(once)
                                .saturating_add(1)
                        }
                        Some(FieldCost::Once(cost)) => *cost,
                        Some(FieldCost::List(child, arg)) => {
                            let len = self.list_len(&field.arguments, arg);
                            len.max(1)
                                .saturating_mul(self.set(children, child, nesting))
                                .saturating_add(1)
                        }
                        None => self.set(children, "", nesting).saturating_add(1),
                    }
                }
                Selection::InlineFragment(fragment) => {
                    let ty = fragment
                        .node
                        .type_condition
                        .as_ref()
                        .map_or(ty, |c| c.node.on.node.as_str());
                    self.set(&fragment.node.selection_set.node, ty, nesting + 1)
                }
                Selection::FragmentSpread(spread) => {
                    match self.document.fragments.get(&spread.node.fragment_name.node) {
                        Some(fragment) => self.set(
                            &fragment.node.selection_set.node,
                            fragment.node.type_condition.node.on.node.as_str(),
                            nesting + 1,
                        ),
                        None => 0,
                    }
                }
            };
            total = total.saturating_add(cost);
        }
        total
    }

    /// An argument's value with variables substituted; `None` when absent or unresolved.
    fn argument(
        &self,
        arguments: &[(Positioned<Name>, Positioned<ParserValue>)],
        name: &str,
    ) -> Option<Value> {
        let (_, value) = arguments.iter().find(|(n, _)| n.node.as_str() == name)?;
        value
            .node
            .clone()
            .into_const_with(|var| self.variables.get(&var).cloned().ok_or(()))
            .ok()
    }

    fn int_argument(
        &self,
        arguments: &[(Positioned<Name>, Positioned<ParserValue>)],
        name: &str,
    ) -> Option<i64> {
        match self.argument(arguments, name)? {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    fn list_len(
        &self,
        arguments: &[(Positioned<Name>, Positioned<ParserValue>)],
        name: &str,
    ) -> usize {
        match self.argument(arguments, name) {
            Some(Value::List(items)) => items.len(),
            _ => 1,
        }
    }
}

/// Counts the lexical tokens of a GraphQL document, giving up (`None`) past `max`.
///
/// Hand-written because the parser (pest, inside async-graphql) offers no token budget: it builds
/// the whole tree first, and bounding that work is the point. The rules follow the spec's
/// lexical grammar: whitespace, commas and comments are ignored; punctuators, names, numbers
/// and strings (block strings included) are one token each. Anything else counts as one token
/// and is left for the parser to reject.
pub fn count_tokens(query: &str, max: usize) -> Option<usize> {
    let bytes = query.as_bytes();
    let mut i = 0;
    let mut count = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
                    i += 1;
                }
                continue;
            }
            b'"' if bytes[i..].starts_with(b"\"\"\"") => {
                i += 3;
                while i < bytes.len() && !bytes[i..].starts_with(b"\"\"\"") {
                    i += if bytes[i..].starts_with(b"\\\"\"\"") {
                        4
                    } else {
                        1
                    };
                }
                i += 3;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'.' if bytes[i..].starts_with(b"...") => i += 3,
            b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                while i < bytes.len() && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
            }
            b'-' | b'0'..=b'9' => {
                i += 1;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'.' | b'+' | b'-'))
                {
                    i += 1;
                }
            }
            // A byte order mark is ignored.
            0xEF if bytes[i..].starts_with(&[0xEF, 0xBB, 0xBF]) => {
                i += 3;
                continue;
            }
            _ => {
                // One punctuator, or one character the parser will reject.
                i += query[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
        count += 1;
        if count > max {
            return None;
        }
    }
    Some(count)
}

/// Aliased fields in every operation and fragment of `document`.
pub fn count_aliases(document: &ExecutableDocument) -> usize {
    selections(document)
        .filter(
            |selection| matches!(selection, Selection::Field(field) if field.node.alias.is_some()),
        )
        .count()
}

/// The depth of `operation`: the most fields nested in one another, fragments counted inline
/// (as async-graphql counts it), leaving out the introspection fields `__schema` and `__type` and
/// what they select. Introspection's depth is the schema's shape, not the caller's choice:
/// graphql-js's introspection query, which GraphiQL, Apollo's and Relay's tools send, is 14 deep,
/// and it is bounded by the document limits anyway (graphql-armor leaves it out likewise).
pub fn depth(document: &ExecutableDocument, operation: Operation<'_>) -> usize {
    set_depth(document, &operation.definition.node.selection_set.node, 0)
}

fn set_depth(document: &ExecutableDocument, set: &SelectionSet, nesting: usize) -> usize {
    if nesting > MAX_FRAGMENT_NESTING {
        return 0;
    }
    set.items
        .iter()
        .map(|selection| match &selection.node {
            Selection::Field(field) => {
                if is_introspection(&selection.node) {
                    0
                } else {
                    1 + set_depth(document, &field.node.selection_set.node, nesting)
                }
            }
            Selection::InlineFragment(fragment) => {
                set_depth(document, &fragment.node.selection_set.node, nesting + 1)
            }
            Selection::FragmentSpread(spread) => document
                .fragments
                .get(&spread.node.fragment_name.node)
                .map_or(0, |fragment| {
                    set_depth(document, &fragment.node.selection_set.node, nesting + 1)
                }),
        })
        .max()
        .unwrap_or(0)
}

/// Whether `document` asks for `__schema` or `__type` anywhere (`__typename` is not
/// introspection).
pub fn introspects(document: &ExecutableDocument) -> bool {
    selections(document).any(is_introspection)
}

/// Whether a selection is the introspection field `__schema` or `__type`, or a federated
/// subgraph's `_service`, which spells out the same schema (no model may name a field so).
fn is_introspection(selection: &Selection) -> bool {
    matches!(selection, Selection::Field(field)
        if matches!(field.node.name.node.as_str(), "__schema" | "__type" | "_service"))
}

/// Every selection, at any depth, of every operation and fragment of `document`.
fn selections(document: &ExecutableDocument) -> impl Iterator<Item = &Selection> {
    let roots = document
        .operations
        .iter()
        .map(|(_, operation)| &operation.node.selection_set.node)
        .chain(
            document
                .fragments
                .values()
                .map(|fragment| &fragment.node.selection_set.node),
        );
    let mut stack: Vec<&SelectionSet> = roots.collect();
    let mut pending: Vec<&Selection> = Vec::new();
    std::iter::from_fn(move || {
        loop {
            if let Some(selection) = pending.pop() {
                match selection {
                    Selection::Field(field) => stack.push(&field.node.selection_set.node),
                    Selection::InlineFragment(fragment) => {
                        stack.push(&fragment.node.selection_set.node);
                    }
                    Selection::FragmentSpread(_) => {}
                }
                return Some(selection);
            }
            let set = stack.pop()?;
            pending.extend(set.items.iter().map(|item| &item.node));
        }
    })
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;

    use super::*;

    #[test]
    fn tokens_follow_the_lexical_grammar() {
        let count = |query: &str| count_tokens(query, usize::MAX).unwrap();
        assert_eq!(count(""), 0);
        assert_eq!(count("{ a }"), 3);
        assert_eq!(count("{ a, b, c }"), 5);
        assert_eq!(count("# a comment { } \n{ a }"), 3);
        assert_eq!(count(r#"{ a(s: "x \" { } y") }"#), 8);
        assert_eq!(count("{ a(s: \"\"\"block \\\"\"\" { } \"\"\") }"), 8);
        assert_eq!(count("query Q($n: Int = -1.5e3) { ...F }"), 14);
        assert_eq!(count("\u{feff}{ é }"), 3);
        assert_eq!(count_tokens("{ a b c }", 4), None);
        assert_eq!(count_tokens("{ a b c }", 5), Some(5));
    }

    #[test]
    fn aliases_are_counted_in_operations_fragments_and_inline_fragments() {
        let document = parse_query(
            "query { a: customer(customerId: \"1\") { b: name ... on Customer { c: email } ...F } }
             fragment F on Customer { d: name e: email }",
        )
        .unwrap();
        assert_eq!(count_aliases(&document), 5);
    }

    #[test]
    fn introspection_is_refused_anywhere_in_the_document_when_off() {
        let off = QueryLimits {
            introspection: false,
            ..QueryLimits::default()
        };
        for query in [
            "{ __schema { types { name } } }",
            "{ ... on Query { __type(name: \"Customer\") { name } } }",
            "query { ...F } fragment F on Query { __schema { queryType { name } } }",
        ] {
            let document = parse_query(query).unwrap();
            let err = off.check_document(&document).unwrap_err();
            assert_eq!(err.code, "INTROSPECTION_DISABLED", "{query}");
            assert!(QueryLimits::default().check_document(&document).is_ok());
        }
        let plain = parse_query("{ __typename customer(customerId: \"a\") { name } }").unwrap();
        assert!(off.check_document(&plain).is_ok());
    }

    #[test]
    fn a_count_costs_once_per_connection_not_per_item() {
        let mut costs = FieldCosts::default();
        costs.connection("Query", "things", "ThingCountedConnection", None);
        costs.object("ThingCountedConnection", "edges", "ThingEdge");
        costs.object("ThingEdge", "node", "Thing");
        costs.once("ThingCountedConnection", "totalCount", COUNT_COST);
        let complexity = |query: &str| {
            let document = parse_query(query).unwrap();
            let operation = crate::graphql::operation::choose(&document, None).unwrap();
            costs.complexity(&document, operation, &Variables::default(), 20)
        };
        // 1 + 10 x (edges 1 + node 1 + name 1)
        let page = complexity("{ things(first: 10) { edges { node { name } } } }");
        assert_eq!(page, 31);
        assert_eq!(
            complexity("{ things(first: 10) { totalCount edges { node { name } } } }"),
            page + COUNT_COST
        );
        assert_eq!(
            complexity("{ things(first: 10) { totalCount } }"),
            1 + COUNT_COST
        );
    }
}
