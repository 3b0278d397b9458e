//! Operation manifests, as the tools that build a team's apps write them: the operations those
//! apps were compiled with, each under the id its client sends. Three shapes are read:
//!
//! | written by | shape | id |
//! |---|---|---|
//! | `@apollo/generate-persisted-query-manifest` | `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id", "name", "type", "body"}]}` | as the manifest says (by default the SHA-256 of `body`, in hex) |
//! | `relay-compiler` with `persistConfig` (a local file) | `{"<id>": "<text>", …}` | as the file says (the MD5, SHA-1 or SHA-256 of the text, in hex, per `algorithm`) |
//! | anyone: a plain map | `{"<id>": "<text>", …}` | as the file says |
//!
//! Ids are taken as written, never recomputed: a tool may be configured to make them its own
//! way, and its clients send what it wrote. This module knows files and their shapes; what the
//! documents mean is [`super::trusted`]'s.

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
};

use serde::Deserialize;
use serde_json::Value;

/// The `format` of an Apollo persisted query manifest.
pub const APOLLO_FORMAT: &str = "apollo-persisted-query-manifest";

/// One operation a manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The id its clients send.
    pub id: String,
    /// Its operation's name, when the manifest says (Apollo's does).
    pub name: Option<String>,
    /// The document, exactly as the clients send it in full.
    pub text: String,
}

/// What is wrong with a manifest or one of its operations, located as precisely as it can be:
/// the file, then the operation's id and name, then a line and column (of the file for JSON
/// errors, of the operation's text for GraphQL ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The manifest.
    pub file: PathBuf,
    /// The operation, if the problem is one operation's: its id and name.
    pub operation: Option<(String, Option<String>)>,
    /// Line and column, from 1.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem of the whole file.
    pub fn of_file(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            operation: None,
            at: None,
            message: message.into(),
        }
    }

    /// A problem of `listed`, a manifest's operation.
    pub fn of_operation(
        file: &Path,
        listed: &Listed,
        at: Option<(usize, usize)>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_owned(),
            operation: Some((listed.id.clone(), listed.name.clone())),
            at,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        match (&self.operation, self.at) {
            (None, Some((line, column))) => write!(f, ":{line}:{column}")?,
            (Some((id, name)), at) => {
                write!(f, ": operation {id:?}")?;
                if let Some(name) = name {
                    write!(f, " ({name})")?;
                }
                if let Some((line, column)) = at {
                    write!(f, " at {line}:{column} of its text")?;
                }
            }
            (None, None) => {}
        }
        write!(f, ": {}", self.message)
    }
}

/// The operations of the manifest at `path`, or everything wrong with it.
pub fn read(path: &Path) -> Result<Vec<Listed>, Vec<Problem>> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| vec![Problem::of_file(path, format!("cannot be read: {err}"))])?;
    parse(path, &text)
}

/// The operations of a manifest's text (`path` names it in problems).
pub fn parse(path: &Path, text: &str) -> Result<Vec<Listed>, Vec<Problem>> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        // The problem carries the place; serde_json's message repeats it at its end.
        let message = err.to_string();
        let place = format!(" at line {} column {}", err.line(), err.column());
        let message = message.strip_suffix(&place).unwrap_or(&message);
        vec![Problem {
            at: Some((err.line(), err.column())),
            ..Problem::of_file(path, format!("is not valid JSON: {message}"))
        }]
    })?;
    let Value::Object(object) = value else {
        return Err(vec![Problem::of_file(
            path,
            "must be a JSON object: Apollo's persisted query manifest, or a map of operation id \
             to document text (Relay's persisted operations file)",
        )]);
    };
    if object.get("format").and_then(Value::as_str) == Some(APOLLO_FORMAT) {
        apollo(path, Value::Object(object))
    } else {
        map(path, object)
    }
}

/// Apollo's manifest: `@apollo/generate-persisted-query-manifest`'s output.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApolloManifest {
    version: u32,
    operations: Vec<ApolloOperation>,
}

#[derive(Deserialize)]
struct ApolloOperation {
    id: String,
    name: Option<String>,
    body: String,
}

fn apollo(path: &Path, value: Value) -> Result<Vec<Listed>, Vec<Problem>> {
    let manifest: ApolloManifest = serde_json::from_value(value).map_err(|err| {
        vec![Problem::of_file(
            path,
            format!("is not an Apollo persisted query manifest: {err}"),
        )]
    })?;
    if manifest.version != 1 {
        return Err(vec![Problem::of_file(
            path,
            format!(
                "is an Apollo persisted query manifest of version {}; only version 1 is read",
                manifest.version
            ),
        )]);
    }
    let listed = manifest
        .operations
        .into_iter()
        .map(|operation| Listed {
            id: operation.id,
            name: operation.name,
            text: operation.body,
        })
        .collect();
    checked(path, listed)
}

/// Relay's persisted operations file, or a plain map: id to text.
fn map(path: &Path, object: serde_json::Map<String, Value>) -> Result<Vec<Listed>, Vec<Problem>> {
    let mut listed = Vec::with_capacity(object.len());
    let mut problems = Vec::new();
    for (id, value) in object {
        match value {
            Value::String(text) => listed.push(Listed {
                id,
                name: None,
                text,
            }),
            _ => problems.push(Problem {
                operation: Some((id, None)),
                ..Problem::of_file(
                    path,
                    "maps its id to something other than a document's text (a string)",
                )
            }),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    checked(path, listed)
}

/// `listed`, unless an id is empty or names two texts.
fn checked(path: &Path, listed: Vec<Listed>) -> Result<Vec<Listed>, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for operation in &listed {
        if operation.id.is_empty() {
            problems.push(Problem::of_operation(
                path,
                operation,
                None,
                "has an empty id",
            ));
        } else if let Some(text) = seen.insert(&operation.id, &operation.text)
            && text != operation.text
        {
            problems.push(Problem::of_operation(
                path,
                operation,
                None,
                "is listed twice, with two different documents",
            ));
        }
    }
    if problems.is_empty() {
        Ok(listed)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathBuf {
        PathBuf::from("ops.json")
    }

    #[test]
    fn an_apollo_manifest_lists_ids_names_and_bodies() {
        let text = r#"{"format":"apollo-persisted-query-manifest","version":1,
            "operations":[{"id":"abc","name":"Q","type":"query","body":"query Q { a }"}]}"#;
        assert_eq!(
            parse(&path(), text).unwrap(),
            vec![Listed {
                id: "abc".into(),
                name: Some("Q".into()),
                text: "query Q { a }".into()
            }]
        );
    }

    #[test]
    fn a_relay_file_or_plain_map_lists_ids_and_texts() {
        let listed = parse(&path(), r#"{"1":"query A { a }","2":"query B { b }"}"#).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].id, "2");
        assert_eq!(listed[1].text, "query B { b }");
        assert_eq!(listed[1].name, None);
    }

    #[test]
    fn every_problem_is_located() {
        let bad_json = parse(&path(), "{\n  \"a\": }").unwrap_err();
        assert_eq!(bad_json[0].at, Some((2, 8)));
        assert!(
            bad_json[0]
                .to_string()
                .starts_with("ops.json:2:8: is not valid JSON")
        );

        let not_text = parse(&path(), r#"{"a":"{ a }","b":3,"c":null}"#).unwrap_err();
        let ids: Vec<_> = not_text
            .iter()
            .map(|p| p.operation.clone().unwrap().0)
            .collect();
        assert_eq!(ids, ["b", "c"]);

        let version = parse(
            &path(),
            r#"{"format":"apollo-persisted-query-manifest","version":2,"operations":[]}"#,
        )
        .unwrap_err();
        assert!(version[0].message.contains("version 2"), "{version:?}");

        let twice = parse(
            &path(),
            r#"{"format":"apollo-persisted-query-manifest","version":1,"operations":[
                {"id":"x","name":"A","type":"query","body":"query A { a }"},
                {"id":"x","name":"B","type":"query","body":"query B { b }"},
                {"id":"","name":"C","type":"query","body":"query C { c }"}]}"#,
        )
        .unwrap_err();
        assert_eq!(twice.len(), 2, "{twice:?}");
        assert_eq!(
            twice[0].to_string(),
            "ops.json: operation \"x\" (B): is listed twice, with two different documents"
        );
        assert!(parse(&path(), "[]").is_err());
    }
}
