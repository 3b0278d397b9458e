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

use async_graphql::{
    Positioned, ServerError, Value as ConstValue, Variables,
    parser::types::{DocumentOperations, ExecutableDocument, OperationDefinition, OperationType},
};

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
