//! Validating a document against the schema without executing it, for documents checked ahead
//! of any request (operation manifests, [`super::trusted`]). async-graphql validates only on
//! the way to executing, and keeps its rules private: a schema of its own carries
//! [`ValidateOnly`], which runs every validation rule and then stops the request with a marker,
//! so nothing is resolved and no data is needed.

use std::sync::Arc;

use async_graphql::{
    Request, ServerError, ValidationResult,
    dynamic::Schema,
    extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation},
    futures_util::FutureExt,
    parser::types::ExecutableDocument,
};

/// The message [`ValidateOnly`] stops a valid document with; no real error has it.
const VALID: &str = "\u{0}dynarelay: valid, not executed";

/// Stops every request once it is validated (see the module's documentation).
#[derive(Debug)]
pub struct ValidateOnly;

impl ExtensionFactory for ValidateOnly {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(ValidateOnly)
    }
}

#[async_trait::async_trait]
impl Extension for ValidateOnly {
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx).await?;
        Err(vec![ServerError::new(VALID, None)])
    }
}

/// The validation errors of `document` against `schema`, a schema with [`ValidateOnly`].
///
/// Synchronous: validation waits on nothing (no resolver runs, no data is read), so the
/// execution's future completes when first polled; one that did not would be reported as an
/// error rather than waited for.
pub fn validate(schema: &Schema, document: &ExecutableDocument) -> Result<(), Vec<ServerError>> {
    let mut request = Request::new(String::new());
    request.set_parsed_query(document.clone());
    let Some(response) = schema.execute(request).now_or_never() else {
        return Err(vec![ServerError::new(
            "The document could not be validated without waiting.",
            None,
        )]);
    };
    match response.errors.as_slice() {
        [only] if only.message == VALID => Ok(()),
        _ => {
            // One problem once: async-graphql reports some (a subscription on a schema without
            // them) from two places.
            let mut errors: Vec<ServerError> = Vec::new();
            for error in response.errors {
                let seen = errors
                    .iter()
                    .any(|e| e.message == error.message && e.locations == error.locations);
                if error.message != VALID && !seen {
                    errors.push(error);
                }
            }
            Err(errors)
        }
    }
}
