//! A GraphQL-over-HTTP request's parameters, from a GET query string or a POST body (and a
//! WebSocket or server-sent events subscription's payload, which has a POST body's shape): the
//! document's text or the id a client names a listed operation by ([`crate::graphql::trusted`]),
//! the operation's name, its variables and extensions.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::graphql::trusted::{Asked, Id};

/// Why a request's parameters are not valid (a 400 `BAD_REQUEST` over HTTP), in a sentence for
/// the client.
#[derive(Debug)]
pub(super) struct BadParams(pub(super) String);

impl BadParams {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// The parameters of a GraphQL-over-HTTP request, from either method.
#[derive(Debug, Default)]
pub(super) struct Params {
    pub(super) query: Option<String>,
    pub(super) operation_name: Option<String>,
    pub(super) variables: Option<Map<String, Value>>,
    pub(super) extensions: Option<Map<String, Value>>,
    /// `documentId`: a listed operation's id (GraphQL over HTTP's persisted documents appendix).
    pub(super) document_id: Option<String>,
    /// `doc_id`: a listed operation's id, as Relay's documented network layer sends it.
    pub(super) doc_id: Option<String>,
}

impl Params {
    /// From a POST body's JSON object.
    pub(super) fn from_object(mut object: Map<String, Value>) -> Result<Self, BadParams> {
        Ok(Self {
            query: string_param(object.remove("query"), "query")?,
            operation_name: string_param(object.remove("operationName"), "operationName")?,
            variables: map_param(object.remove("variables"), "variables")?,
            extensions: map_param(object.remove("extensions"), "extensions")?,
            document_id: string_param(object.remove("documentId"), "documentId")?,
            doc_id: string_param(object.remove("doc_id"), "doc_id")?,
        })
    }

    /// From a GET query string, where `variables` and `extensions` are JSON text.
    pub(super) fn from_query(mut query: HashMap<String, String>) -> Result<Self, BadParams> {
        let json = |value: Option<String>, name: &str| {
            value
                .map(|text| {
                    serde_json::from_str::<Value>(&text)
                        .map_err(|_| BadParams::new(format!("`{name}` is not valid JSON.")))
                })
                .transpose()
                .and_then(|value| map_param(value, name))
        };
        Ok(Self {
            query: query.remove("query"),
            operation_name: query
                .remove("operationName")
                .filter(|name| !name.is_empty()),
            variables: json(query.remove("variables"), "variables")?,
            extensions: json(query.remove("extensions"), "extensions")?,
            document_id: query.remove("documentId"),
            doc_id: query.remove("doc_id"),
        })
    }

    /// The document as the request asks for it: its text, or the id it names a listed
    /// operation by (`documentId`, then `doc_id`, then Apollo's persisted-query hash).
    pub(super) fn asked(&self) -> Asked<'_> {
        let apollo = || {
            self.extensions
                .as_ref()?
                .get("persistedQuery")?
                .get("sha256Hash")?
                .as_str()
        };
        let id = match (&self.document_id, &self.doc_id) {
            (Some(id), _) => Some(Id::Document(id)),
            (None, Some(id)) => Some(Id::Relay(id)),
            (None, None) => apollo().map(Id::Apollo),
        };
        Asked {
            text: self.query.as_deref().filter(|text| !text.is_empty()),
            id,
        }
    }
}

fn string_param(value: Option<Value>, name: &str) -> Result<Option<String>, BadParams> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(BadParams::new(format!("`{name}` must be a string."))),
    }
}

fn map_param(value: Option<Value>, name: &str) -> Result<Option<Map<String, Value>>, BadParams> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(BadParams::new(format!("`{name}` must be a JSON object."))),
    }
}
