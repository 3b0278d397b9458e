//! Null propagation for field errors, as the GraphQL spec requires ("Handling Field Errors"): a
//! field that fails is null in the response, and when its type is non-null, that null replaces
//! its parent instead, up to the nearest nullable position, or all of `data`.
//!
//! async-graphql 7.2.1 does not do this: its executors (`resolver_utils::do_resolve_container`
//! for derived schemas, `dynamic::resolve` for dynamic ones) leave a failed field out of its
//! parent object, and turn an object all of whose fields failed into null. [`NullPropagation`]
//! corrects it with the `resolve` hook, which both executors call around every field and every
//! list item, innermost first:
//!
//! * a field or list item that fails becomes `null`, its position is marked null, and its error
//!   is kept aside (the hook never hands an error back to the executor, so nothing is left out);
//! * a field that became null while its type is non-null (its `return_type` ends in `!`) marks
//!   its parent (the object or list item holding it) null too;
//! * a field whose value is complete checks the marks below it: when its own position is marked,
//!   or one of its list items is and every list level down to that item is non-null, it becomes
//!   null, and marks its parent in turn when its type is non-null.
//!
//! List items are judged by their field's declared type, not by their own `return_type`: the
//! derived executor reports every item of a `Vec<T>` as non-null (`<&T>::qualified_type_name`
//! appends `!` even for `Option<T>`), so `[Node]!` items would claim to be `Node!`.
//!
//! When execution ends, the `execute` hook adds the errors kept aside to the response, sorted by
//! path, and writes null at every marked position of `data` (all of it when a root field was
//! non-null). Writing the marks into `data` as well makes the result independent of how
//! async-graphql merges a response key that the query selects more than once.
//!
//! The state lives in the extension, which async-graphql creates anew for each request. Until a
//! field fails, the hook reads one atomic flag per field and allocates nothing; after that, a
//! field compares its path with the marks, still without allocating.

use std::{
    cmp::Ordering as CmpOrdering,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

use async_graphql::{
    PathSegment, QueryPathNode, QueryPathSegment, Response, ServerError, ServerResult, Value,
    async_trait::async_trait,
    extensions::{
        Extension, ExtensionContext, ExtensionFactory, NextExecute, NextResolve, ResolveInfo,
    },
};

/// The extension factory to register on a schema: `.extension(NullPropagation)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullPropagation;

impl ExtensionFactory for NullPropagation {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Propagation::default())
    }
}

/// One request's propagation state.
#[derive(Debug, Default)]
struct Propagation {
    /// Set once anything failed: until then, no field needs to look at its path.
    pending: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The errors the hook took from the executor.
    errors: Vec<ServerError>,
    /// Response positions that must be null; the empty path is `data` itself.
    nulls: Vec<Vec<PathSegment>>,
}

impl Propagation {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks `path` to become null.
    fn mark(&self, state: &mut State, path: Vec<PathSegment>) {
        if !state.nulls.contains(&path) {
            state.nulls.push(path);
        }
        self.pending.store(true, Ordering::Release);
    }

    /// Adds the errors kept aside to `response` and writes the nulls into its `data`.
    fn finish(&self, response: &mut Response) {
        let State { mut errors, nulls } = std::mem::take(&mut *self.state());
        errors.sort_by(|a, b| compare_paths(&a.path, &b.path));
        response.errors.extend(errors);
        for path in &nulls {
            set_null(&mut response.data, path);
        }
    }
}

#[async_trait]
impl Extension for Propagation {
    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        let mut response = next.run(ctx, operation_name).await;
        self.finish(&mut response);
        response
    }

    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        let node = info.path_node;
        let ty = info.return_type;
        let is_item = matches!(node.segment, QueryPathSegment::Index(_));
        match next.run(ctx, info).await {
            // An item's nullability is its field's business: see the module docs.
            Ok(value) if is_item || !self.pending.load(Ordering::Acquire) => Ok(value),
            Ok(value) => {
                let mut state = self.state();
                if !state.must_be_null(node, ty) {
                    return Ok(value);
                }
                // Made null from below: this field's own value is complete.
                if ty.ends_with('!') {
                    self.mark(&mut state, parent_path(node));
                }
                Ok(Some(Value::Null))
            }
            // async-graphql's dynamic executor cannot resolve a null item of a list of an
            // interface type (`nodes: [Node]!` for an id whose object is gone): it fails the
            // item with this internal error instead. Such an item is null, and no error.
            Err(error) if is_item && error.message.starts_with(NULL_INTERFACE_ITEM) => {
                Ok(Some(Value::Null))
            }
            Err(mut error) => {
                // Derived resolvers' errors carry their path; dynamic resolvers' do not.
                if error.path.is_empty() {
                    error.path = path_of(node);
                }
                let mut state = self.state();
                state.errors.push(error);
                // Marked even when nullable: `finish` then nulls it even when its response key
                // was resolved more than once and merged, and its list field sees a failed item.
                self.mark(&mut state, path_of(node));
                if !is_item && ty.ends_with('!') {
                    self.mark(&mut state, parent_path(node));
                }
                Ok(Some(Value::Null))
            }
        }
    }
}

/// How async-graphql's dynamic executor fails a null item of a list of an interface type.
const NULL_INTERFACE_ITEM: &str = "internal: invalid value for interface";

impl State {
    /// Whether the field at `node`, of declared type `ty`, must be null: it is marked, or an item
    /// of it is marked and every list level down to that item is non-null.
    fn must_be_null(&self, node: &QueryPathNode<'_>, ty: &str) -> bool {
        let depth = non_null_item_depth(ty);
        let len = path_len(node);
        self.nulls.iter().any(|path| {
            (len..=len + depth).contains(&path.len()) && {
                let (own, items) = path.split_at(len);
                items
                    .iter()
                    .all(|segment| matches!(segment, PathSegment::Index(_)))
                    && same_path(node, own)
            }
        })
    }
}

/// How many list levels of `ty`, from the outside in, have non-null items: 1 for
/// `[OrderEdge!]!`, 0 for `[Node]!`, 2 for `[[Int!]!]`, 1 for `[[Int]!]`.
fn non_null_item_depth(ty: &str) -> usize {
    let mut depth = 0;
    let mut ty = ty.strip_suffix('!').unwrap_or(ty);
    while let Some(item) = ty.strip_prefix('[').and_then(|ty| ty.strip_suffix(']')) {
        let Some(item) = item.strip_suffix('!') else {
            break;
        };
        depth += 1;
        ty = item;
    }
    depth
}

fn path_len(node: &QueryPathNode<'_>) -> usize {
    std::iter::successors(Some(node), |node| node.parent).count()
}

/// The path of the object or list holding `node`; empty (all of `data`) for a root field.
fn parent_path(node: &QueryPathNode<'_>) -> Vec<PathSegment> {
    node.parent.map(path_of).unwrap_or_default()
}

/// The response path of `node`, from the root.
fn path_of(node: &QueryPathNode<'_>) -> Vec<PathSegment> {
    let mut path = Vec::new();
    let mut current = Some(node);
    while let Some(node) = current {
        path.push(match node.segment {
            QueryPathSegment::Name(name) => PathSegment::Field(name.to_owned()),
            QueryPathSegment::Index(index) => PathSegment::Index(index),
        });
        current = node.parent;
    }
    path.reverse();
    path
}

/// Whether `node` is at `path`, compared without allocating.
fn same_path(node: &QueryPathNode<'_>, path: &[PathSegment]) -> bool {
    let mut current = Some(node);
    let mut rest = path;
    while let Some(node) = current {
        let Some((last, init)) = rest.split_last() else {
            return false;
        };
        let same = match (&node.segment, last) {
            (QueryPathSegment::Name(name), PathSegment::Field(field)) => *name == field,
            (QueryPathSegment::Index(index), PathSegment::Index(other)) => index == other,
            _ => false,
        };
        if !same {
            return false;
        }
        current = node.parent;
        rest = init;
    }
    rest.is_empty()
}

/// A total order on paths, for a deterministic order of errors: segment by segment, field names
/// before indices, a prefix first.
fn compare_paths(a: &[PathSegment], b: &[PathSegment]) -> CmpOrdering {
    let rank = |segment: &PathSegment| match segment {
        PathSegment::Field(_) => 0,
        PathSegment::Index(_) => 1,
    };
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (PathSegment::Field(x), PathSegment::Field(y)) => x.cmp(y),
            (PathSegment::Index(x), PathSegment::Index(y)) => x.cmp(y),
            _ => rank(x).cmp(&rank(y)),
        };
        if order != CmpOrdering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// Writes null at `path` in `data`, if something is there.
fn set_null(data: &mut Value, path: &[PathSegment]) {
    let mut target = data;
    for segment in path {
        let next = match (target, segment) {
            (Value::Object(object), PathSegment::Field(name)) => object.get_mut(name.as_str()),
            (Value::List(list), PathSegment::Index(index)) => list.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        target = next;
    }
    *target = Value::Null;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str) -> PathSegment {
        PathSegment::Field(name.to_owned())
    }

    #[test]
    fn paths_compare_with_query_path_nodes_without_building_them() {
        let root = QueryPathNode {
            parent: None,
            segment: QueryPathSegment::Name("users"),
        };
        let edges = QueryPathNode {
            parent: Some(&root),
            segment: QueryPathSegment::Name("edges"),
        };
        let item = QueryPathNode {
            parent: Some(&edges),
            segment: QueryPathSegment::Index(3),
        };
        let path = vec![field("users"), field("edges"), PathSegment::Index(3)];
        assert_eq!(path_of(&item), path);
        assert!(same_path(&item, &path));
        assert!(!same_path(&edges, &path));
        assert!(!same_path(&item, &path[..2]));
        assert!(!same_path(
            &item,
            &[field("users"), field("edges"), field("3")]
        ));
        assert!(same_path(&root, &[field("users")]));
    }

    #[test]
    fn list_levels_with_non_null_items_are_counted_from_the_outside_in() {
        for (ty, depth) in [
            ("OrderConnection!", 0),
            ("Customer", 0),
            ("[Node]!", 0),
            ("[OrderEdge!]!", 1),
            ("[OrderEdge!]", 1),
            ("[[Int!]!]", 2),
            ("[[Int]!]!", 1),
            ("[[Int!]]!", 0),
        ] {
            assert_eq!(non_null_item_depth(ty), depth, "{ty}");
        }
    }

    #[test]
    fn a_field_must_be_null_when_it_or_a_non_null_item_chain_below_it_is_marked() {
        let root = QueryPathNode {
            parent: None,
            segment: QueryPathSegment::Name("edges"),
        };
        let marked = |paths: &[Vec<PathSegment>]| State {
            errors: Vec::new(),
            nulls: paths.to_vec(),
        };
        let own = vec![field("edges")];
        let item = vec![field("edges"), PathSegment::Index(0)];
        let nested = vec![field("edges"), PathSegment::Index(0), PathSegment::Index(1)];
        let below = vec![field("edges"), PathSegment::Index(0), field("node")];
        assert!(marked(&[own]).must_be_null(&root, "[Node]!"));
        assert!(marked(std::slice::from_ref(&item)).must_be_null(&root, "[OrderEdge!]!"));
        assert!(!marked(std::slice::from_ref(&item)).must_be_null(&root, "[Node]!"));
        assert!(marked(std::slice::from_ref(&nested)).must_be_null(&root, "[[Int!]!]"));
        assert!(!marked(std::slice::from_ref(&nested)).must_be_null(&root, "[[Int]!]"));
        assert!(!marked(&[below]).must_be_null(&root, "[OrderEdge!]!"));
        assert!(!marked(&[]).must_be_null(&root, "[OrderEdge!]!"));
    }

    #[test]
    fn errors_sort_by_path_with_indices_in_numeric_order() {
        let mut paths = [
            vec![field("b")],
            vec![field("a"), PathSegment::Index(10)],
            vec![field("a"), PathSegment::Index(2)],
            vec![field("a")],
        ];
        paths.sort_by(|a, b| compare_paths(a, b));
        assert_eq!(
            paths,
            [
                vec![field("a")],
                vec![field("a"), PathSegment::Index(2)],
                vec![field("a"), PathSegment::Index(10)],
                vec![field("b")],
            ]
        );
    }

    #[test]
    fn nulls_are_written_where_something_is_and_nowhere_else() {
        let mut data = Value::from_json(serde_json::json!({
            "users": { "edges": [{ "node": { "name": "a" } }, { "node": { "name": "b" } }] }
        }))
        .unwrap();
        set_null(
            &mut data,
            &[field("users"), field("edges"), PathSegment::Index(1)],
        );
        set_null(&mut data, &[field("missing"), field("deeper")]);
        assert_eq!(
            data.into_json().unwrap(),
            serde_json::json!({ "users": { "edges": [{ "node": { "name": "a" } }, null] } })
        );
        let mut data = Value::from_json(serde_json::json!({ "user": {} })).unwrap();
        set_null(&mut data, &[]);
        assert_eq!(data, Value::Null);
    }
}
