//! Which operation of a document a request runs, chosen once per request by the GraphQL spec's
//! `GetOperation` (<https://spec.graphql.org/October2021/#GetOperation()>):
//!
//! - no operation name: the document's only operation, or a request error when it has several;
//! - an operation name: the operation of that name, or a request error when there is none (an
//!   anonymous operation has no name, so naming one never selects it).
//!
//! The HTTP rules (GET only for queries), the complexity limit, the direct executor, null
//! propagation and async-graphql's executor all take this one choice. async-graphql's parser keeps
//! an anonymous operation as `DocumentOperations::Single` and every named one, even a lone one,
//! in `DocumentOperations::Multiple`; only this module looks at that difference.

use std::collections::HashSet;

use async_graphql::{
    Pos, Positioned, ServerError, Value as ConstValue, Variables,
    parser::types::{
        Directive, DocumentOperations, ExecutableDocument, OperationDefinition, OperationType,
        Selection, SelectionSet,
    },
};
use async_graphql_value::Value;

/// The operation a request runs.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'d> {
    /// Its name; `None` for an anonymous operation.
    pub name: Option<&'d str>,
    /// Its definition.
    pub definition: &'d Positioned<OperationDefinition>,
}

impl Operation<'_> {
    /// Query, mutation or subscription.
    pub fn ty(&self) -> OperationType {
        self.definition.node.ty
    }

    /// Whether it is a mutation: the kind a GET may never run.
    pub fn is_mutation(&self) -> bool {
        self.ty() == OperationType::Mutation
    }

    /// Whether it is a subscription: the kind only a stream of events can answer.
    pub fn is_subscription(&self) -> bool {
        self.ty() == OperationType::Subscription
    }

    /// The spec's `CoerceVariableValues` for what async-graphql leaves to execution: a variable
    /// of a non-null type with no default must be given, and not as null. async-graphql reports
    /// such a variable as an error of the field that uses it and runs the rest of the operation;
    /// the spec makes it a request error, before anything runs. (Values of the wrong type are
    /// request errors in async-graphql's validation already.) The message is graphql-js's.
    pub fn check_variables(&self, variables: &Variables) -> Result<(), String> {
        for definition in &self.definition.node.variable_definitions {
            let definition = &definition.node;
            let ty = &definition.var_type.node;
            if ty.nullable || definition.default_value.is_some() {
                continue;
            }
            let name = &definition.name.node;
            match variables.get(name) {
                None => {
                    return Err(format!(
                        "Variable \"${name}\" of required type \"{ty}\" was not provided."
                    ));
                }
                Some(ConstValue::Null) => {
                    return Err(format!(
                        "Variable \"${name}\" of non-null type \"{ty}\" must not be null."
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

impl Operation<'_> {
    /// The spec's "Single Root Field" rule for a subscription, which async-graphql does not
    /// check: its fields (through fragments, leaving out those a literal `@skip` or `@include`
    /// leaves out) have one response key, and not an introspection field. The messages and
    /// locations are graphql-js's (`SingleFieldSubscriptionsRule`); other operations pass.
    pub fn check_single_root_field(
        &self,
        document: &ExecutableDocument,
    ) -> Result<(), (String, Vec<Pos>)> {
        if !self.is_subscription() {
            return Ok(());
        }
        let mut fields: Vec<(&str, &str, Pos)> = Vec::new();
        let mut spread = HashSet::new();
        collect_root(
            document,
            &self.definition.node.selection_set.node,
            &mut spread,
            &mut fields,
        );
        let named = match self.name {
            Some(name) => format!("Subscription \"{name}\""),
            None => "Anonymous Subscription".to_owned(),
        };
        let first = fields.first().map(|(key, _, _)| *key);
        let extra: Vec<Pos> = fields
            .iter()
            .filter(|(key, _, _)| Some(*key) != first)
            .map(|(_, _, pos)| *pos)
            .collect();
        if !extra.is_empty() {
            return Err((
                format!("{named} must select only one top level field."),
                extra,
            ));
        }
        if let Some((_, _, pos)) = fields.iter().find(|(_, name, _)| name.starts_with("__")) {
            return Err((
                format!("{named} must not select an introspection top level field."),
                vec![*pos],
            ));
        }
        Ok(())
    }
}

/// The fields of a root selection set, with their response keys, names and places, through
/// fragments (each spread once, as graphql-js's `collectFields` does).
fn collect_root<'d>(
    document: &'d ExecutableDocument,
    selection_set: &'d SelectionSet,
    spread: &mut HashSet<&'d str>,
    fields: &mut Vec<(&'d str, &'d str, Pos)>,
) {
    for selection in &selection_set.items {
        if !included(selection.node.directives()) {
            continue;
        }
        match &selection.node {
            Selection::Field(field) => fields.push((
                field.node.response_key().node.as_str(),
                field.node.name.node.as_str(),
                field.pos,
            )),
            Selection::FragmentSpread(fragment) => {
                let name = fragment.node.fragment_name.node.as_str();
                if spread.insert(name)
                    && let Some(definition) = document.fragments.get(name)
                {
                    collect_root(
                        document,
                        &definition.node.selection_set.node,
                        spread,
                        fields,
                    );
                }
            }
            Selection::InlineFragment(fragment) => {
                collect_root(document, &fragment.node.selection_set.node, spread, fields);
            }
        }
    }
}

/// Whether a selection is kept by its literal `@skip(if:)` and `@include(if:)` (one whose
/// condition is a variable counts as kept: the rule is checked without variables).
fn included(directives: &[Positioned<Directive>]) -> bool {
    directives.iter().all(|directive| {
        let condition = directive.node.get_argument("if").map(|value| &value.node);
        !matches!(
            (directive.node.name.node.as_str(), condition),
            ("skip", Some(Value::Boolean(true))) | ("include", Some(Value::Boolean(false)))
        )
    })
}

/// Why no operation could be chosen: a request error (no `data`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoOperation {
    /// The document has several operations and the request names none.
    NameRequired,
    /// The request names an operation the document does not have.
    Unknown(String),
}

impl NoOperation {
    /// The message for the client, in graphql-js's words.
    pub fn message(&self) -> String {
        match self {
            NoOperation::NameRequired => {
                "Must provide operation name if query contains multiple operations.".to_owned()
            }
            NoOperation::Unknown(name) => format!("Unknown operation named \"{name}\"."),
        }
    }

    /// The request error, with its `extensions.code`.
    pub fn into_error(self) -> (ServerError, &'static str) {
        (ServerError::new(self.message(), None), "BAD_USER_INPUT")
    }
}

/// Every operation of `document`, in its order: each one a request could run.
pub fn all(document: &ExecutableDocument) -> Vec<Operation<'_>> {
    match &document.operations {
        DocumentOperations::Single(definition) => vec![Operation {
            name: None,
            definition,
        }],
        DocumentOperations::Multiple(operations) => operations
            .iter()
            .map(|(name, definition)| Operation {
                name: Some(name.as_str()),
                definition,
            })
            .collect(),
    }
}

/// The operation of `document` that a request naming `name` runs.
pub fn choose<'d>(
    document: &'d ExecutableDocument,
    name: Option<&str>,
) -> Result<Operation<'d>, NoOperation> {
    match (&document.operations, name) {
        (DocumentOperations::Single(definition), None) => Ok(Operation {
            name: None,
            definition,
        }),
        (DocumentOperations::Single(_), Some(name)) => Err(NoOperation::Unknown(name.to_owned())),
        (DocumentOperations::Multiple(operations), None) => {
            let mut all = operations.iter();
            match (all.next(), all.next()) {
                (Some((name, definition)), None) => Ok(Operation {
                    name: Some(name.as_str()),
                    definition,
                }),
                _ => Err(NoOperation::NameRequired),
            }
        }
        (DocumentOperations::Multiple(operations), Some(name)) => operations
            .get_key_value(name)
            .map(|(name, definition)| Operation {
                name: Some(name.as_str()),
                definition,
            })
            .ok_or_else(|| NoOperation::Unknown(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;

    use super::*;

    type Chosen = Result<(Option<String>, OperationType), NoOperation>;

    fn chosen(query: &str, name: Option<&str>) -> Chosen {
        let document = parse_query(query).expect("the test's documents parse");
        choose(&document, name).map(|op| (op.name.map(str::to_owned), op.ty()))
    }

    #[test]
    fn operations_are_chosen_as_the_spec_s_get_operation_chooses_them() {
        use OperationType::{Mutation, Query};
        let cases: &[(&str, &str, Option<&str>, Chosen)] = &[
            ("anonymous, no name", "{ a }", None, Ok((None, Query))),
            (
                "anonymous, a name",
                "{ a }",
                Some("Q"),
                Err(NoOperation::Unknown("Q".into())),
            ),
            (
                "one named mutation, no name: that one",
                "mutation M { a }",
                None,
                Ok((Some("M".into()), Mutation)),
            ),
            (
                "one named query, its name",
                "query Q { a }",
                Some("Q"),
                Ok((Some("Q".into()), Query)),
            ),
            (
                "one named query, another name",
                "query Q { a }",
                Some("R"),
                Err(NoOperation::Unknown("R".into())),
            ),
            (
                "several, no name",
                "query Q { a } mutation M { a }",
                None,
                Err(NoOperation::NameRequired),
            ),
            (
                "several, one's name",
                "query Q { a } mutation M { a }",
                Some("M"),
                Ok((Some("M".into()), Mutation)),
            ),
            (
                "several, an unknown name",
                "query Q { a } mutation M { a }",
                Some("X"),
                Err(NoOperation::Unknown("X".into())),
            ),
        ];
        for (case, query, name, expected) in cases {
            assert_eq!(&chosen(query, *name), expected, "{case}");
        }
    }

    #[test]
    fn a_subscription_selects_one_root_field_as_graphql_js_requires() {
        let checked = |query: &str| {
            let document = parse_query(query).expect("parses");
            let operation = choose(&document, None).expect("one operation");
            operation
                .check_single_root_field(&document)
                .map_err(|(message, at)| {
                    let at: Vec<_> = at.iter().map(|pos| (pos.line, pos.column)).collect();
                    (message, at)
                })
        };
        let one = |message: &str, at: &[(usize, usize)]| Err((message.to_owned(), at.to_vec()));
        let cases = [
            ("subscription { a(x: 1) { b } }", Ok(())),
            (
                "subscription S { a b }",
                one(
                    "Subscription \"S\" must select only one top level field.",
                    &[(1, 20)],
                ),
            ),
            (
                "subscription { a x: b c }",
                one(
                    "Anonymous Subscription must select only one top level field.",
                    &[(1, 18), (1, 23)],
                ),
            ),
            // One response key, twice: one field.
            ("subscription { a a }", Ok(())),
            (
                "subscription { a ...F } fragment F on Subscription { b }",
                one(
                    "Anonymous Subscription must select only one top level field.",
                    &[(1, 54)],
                ),
            ),
            (
                "subscription { ... on Subscription { a } b }",
                one(
                    "Anonymous Subscription must select only one top level field.",
                    &[(1, 42)],
                ),
            ),
            ("subscription { a b @skip(if: true) }", Ok(())),
            ("subscription { a b @include(if: false) }", Ok(())),
            (
                "subscription($x: Boolean!) { a b @skip(if: $x) }",
                one(
                    "Anonymous Subscription must select only one top level field.",
                    &[(1, 32)],
                ),
            ),
            (
                "subscription { __typename }",
                one(
                    "Anonymous Subscription must not select an introspection top level field.",
                    &[(1, 16)],
                ),
            ),
            (
                "subscription S { t: __typename }",
                one(
                    "Subscription \"S\" must not select an introspection top level field.",
                    &[(1, 18)],
                ),
            ),
            // A fragment spread twice, or spreading itself, is collected once.
            (
                "subscription { ...F ...F } fragment F on Subscription { a }",
                Ok(()),
            ),
            ("query { a b }", Ok(())),
        ];
        for (query, expected) in cases {
            assert_eq!(checked(query), expected, "{query}");
        }
    }

    #[test]
    fn a_required_variable_must_be_given_and_not_null() {
        let document =
            parse_query("query($id: ID!, $n: Int, $d: ID! = \"x\") { a }").expect("parses");
        let operation = choose(&document, None).expect("one operation");
        let vars = |json: serde_json::Value| Variables::from_json(json);
        assert_eq!(
            operation.check_variables(&vars(serde_json::json!({}))),
            Err("Variable \"$id\" of required type \"ID!\" was not provided.".to_owned())
        );
        assert_eq!(
            operation.check_variables(&vars(serde_json::json!({ "id": null }))),
            Err("Variable \"$id\" of non-null type \"ID!\" must not be null.".to_owned())
        );
        // Control: given; the nullable and the defaulted ones may be left out.
        assert_eq!(
            operation.check_variables(&vars(serde_json::json!({ "id": "u" }))),
            Ok(())
        );
    }

    #[test]
    fn messages_are_graphql_js_s() {
        assert_eq!(
            NoOperation::NameRequired.message(),
            "Must provide operation name if query contains multiple operations."
        );
        assert_eq!(
            NoOperation::Unknown("Q".into()).message(),
            "Unknown operation named \"Q\"."
        );
    }
}
