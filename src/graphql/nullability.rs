//! Null propagation for field errors, as the GraphQL spec requires ("Handling Field Errors"): a
//! field that fails is null in the response, and when its type is non-null, that null replaces
//! its parent instead, up to the nearest nullable position, or all of `data`.
//!
//! async-graphql 7.2.1 does not do this: its dynamic executor leaves a failed field out of its
//! parent object, turns an object all of whose fields failed into null, and gives a resolver's
//! error no path. [`propagate`] corrects the response once execution is over, from the errors
//! alone, so that a request in which nothing fails pays nothing for it (an async-graphql
//! extension could do it on the way, but its hook wraps every field of every request in boxed
//! futures, which cost about a tenth of a page's CPU):
//!
//! * every error gets its path: a resolver's from the field it was raised in (each resolver is
//!   made with [`field`], which records it), the executor's own errors have theirs;
//! * the null goes to the nearest nullable position at or above the error, judged by the types
//!   the document selects along its path, from the operation's root type through selection sets
//!   and fragments (validation makes every selection of one response key the same shape, so any
//!   of them tells its type);
//! * one error per response position: when the nulls of several errors come up to the same
//!   position (the items of a list failing alike), only the first error, in path order, stays;
//! * an object async-graphql made null because all its fields failed is an object again when
//!   only nullable fields of it failed; a list that lost its items (an item's error fails the
//!   whole list in async-graphql) is null as if the list itself had failed.
//!
//! One more gap: async-graphql cannot resolve a null item in a list of an interface type (it
//! fails the whole list). `nodes(ids:)`, whose missing ids are null items, therefore hands
//! async-graphql only the items it found and records where the others go ([`NullItems`]);
//! [`propagate`] puts them back, and renumbers the paths of errors inside that list.

use std::{
    cmp::Ordering,
    sync::{Arc, Mutex, PoisonError},
};

use async_graphql::{
    Context, Name, PathSegment, QueryPathNode, QueryPathSegment, Response, Value,
    dynamic::{Field, FieldFuture, ResolverContext, TypeRef},
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
    registry::Registry,
};

use super::operation::Operation;

/// A field whose resolver's errors carry the response path of the field (see the module docs).
/// Every field of the schema is made with this rather than `Field::new`.
pub fn field<F>(name: impl Into<String>, ty: impl Into<TypeRef>, resolve: F) -> Field
where
    F: for<'a> Fn(ResolverContext<'a>) -> FieldFuture<'a> + Send + Sync + 'static,
{
    Field::new(name, ty, move |ctx| {
        let context = ctx.ctx;
        match resolve(ctx) {
            FieldFuture::Future(future) => FieldFuture::Future(Box::pin(async move {
                future.await.map_err(|error| raised_at(context, error))
            })),
            value => value,
        }
    })
}

/// Where a resolver's error was raised: its field's response path.
#[derive(Debug)]
struct RaisedAt(Vec<PathSegment>);

/// `error`, carrying the response path of the field `ctx` resolves.
fn raised_at(ctx: &Context<'_>, mut error: async_graphql::Error) -> async_graphql::Error {
    if error.source.is_none()
        && let Some(node) = &ctx.path_node
    {
        error.source = Some(Arc::new(RaisedAt(path_of(node))));
    }
    error
}

/// A list of an abstract type (an interface or a union) whose items may be null, resolved in
/// order: async-graphql cannot resolve a null item of such a list, so with [`NullItems`] in the
/// request the missing items are left out here and put back after execution.
pub fn list_with_nulls<'a>(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
    found: Vec<Option<async_graphql::dynamic::FieldValue<'a>>>,
) -> async_graphql::dynamic::FieldValue<'a> {
    use async_graphql::dynamic::FieldValue;
    if let Some(null_items) = ctx.data_opt::<std::sync::Arc<NullItems>>() {
        let present: Vec<bool> = found.iter().map(Option::is_some).collect();
        null_items.record(ctx.ctx, &present);
        return FieldValue::list(found.into_iter().flatten());
    }
    FieldValue::list(found.into_iter().map(|n| n.unwrap_or(FieldValue::NULL)))
}

/// Lists of an interface type from which a resolver left out null items, with where they go:
/// one per request, as request data.
#[derive(Debug, Default)]
pub struct NullItems(Mutex<Vec<Compacted>>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Compacted {
    /// The list's response path.
    path: Vec<PathSegment>,
    /// Its length with the null items.
    len: usize,
    /// The indices of the null items, ascending.
    nulls: Vec<usize>,
}

impl NullItems {
    /// Records that the list resolved at `ctx` holds only its present items: `present[i]` says
    /// whether item `i` of the full list is there.
    pub fn record(&self, ctx: &Context<'_>, present: &[bool]) {
        let Some(node) = &ctx.path_node else {
            return;
        };
        let nulls: Vec<usize> = (0..present.len()).filter(|&i| !present[i]).collect();
        if nulls.is_empty() {
            return;
        }
        let compacted = Compacted {
            path: path_of(node),
            len: present.len(),
            nulls,
        };
        let mut lists = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // A response key selected twice resolves twice, into one merged list.
        if !lists.contains(&compacted) {
            lists.push(compacted);
        }
    }

    fn take(&self) -> Vec<Compacted> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Corrects `response`, executed from `operation` of `document` against the schema of
/// `registry`, as the spec's error handling requires; see the module docs. Does nothing to a
/// response without errors or null items left out.
pub fn propagate(
    response: &mut Response,
    registry: &Registry,
    document: &ExecutableDocument,
    operation: Operation<'_>,
    null_items: &NullItems,
) {
    for error in &mut response.errors {
        if error.path.is_empty()
            && let Some(at) = error
                .source
                .as_ref()
                .and_then(|source| source.downcast_ref::<RaisedAt>())
        {
            error.path.clone_from(&at.0);
        }
    }
    for list in null_items.take() {
        list.restore(response);
    }
    if response.errors.is_empty() {
        return;
    }
    response
        .errors
        .sort_by(|a, b| compare_paths(&a.path, &b.path));
    // Request errors (no path) leave no data to correct.
    if response.errors.iter().all(|error| error.path.is_empty()) {
        return;
    }
    let Some(types) = Types::of(registry, document, operation) else {
        return;
    };
    let mut nulled: Vec<Vec<PathSegment>> = Vec::new();
    // The positions that an error's null came up to from beneath: one error each.
    let mut came_up_to: Vec<Vec<PathSegment>> = Vec::new();
    let mut keep = Vec::with_capacity(response.errors.len());
    for index in 0..response.errors.len() {
        let path = response.errors[index].path.clone();
        if path.is_empty() {
            keep.push(true);
            continue;
        }
        let mut failed = path.clone();
        let target = loop {
            let target = types.null_target(&failed);
            if nulled.iter().any(|done| target.starts_with(done)) {
                break target;
            }
            match write_null(&mut response.data, &target) {
                Ok(()) => {
                    nulled.push(target.clone());
                    break target;
                }
                // A list on the way lost its items: that list failed.
                Err(lost) if lost < target.len() => failed.truncate(lost),
                Err(_) => break target,
            }
        };
        // Only one error per response position (the spec's "Handling Execution Errors", and
        // graphql-js): of the errors whose nulls came up to the same position, the first in
        // path order stays.
        if target == path {
            keep.push(true);
        } else if came_up_to.contains(&target) {
            keep.push(false);
        } else {
            came_up_to.push(target);
            keep.push(true);
        }
    }
    let mut keep = keep.into_iter();
    response.errors.retain(|_| keep.next().unwrap_or(true));
}

impl Compacted {
    /// Puts the null items back into the list and renumbers the paths of errors inside it.
    fn restore(&self, response: &mut Response) {
        let present: Vec<usize> = (0..self.len).filter(|i| !self.nulls.contains(i)).collect();
        let depth = self.path.len();
        for error in &mut response.errors {
            if error.path.len() > depth
                && error.path[..depth] == self.path[..]
                && let PathSegment::Index(i) = &mut error.path[depth]
                && let Some(&full) = present.get(*i)
            {
                *i = full;
            }
        }
        let Some(Value::List(items)) = value_at(&mut response.data, &self.path) else {
            return;
        };
        if items.len() != present.len() {
            return;
        }
        for &i in &self.nulls {
            items.insert(i, Value::Null);
        }
    }
}

/// The value at `path` in `data`, if there is one.
fn value_at<'v>(data: &'v mut Value, path: &[PathSegment]) -> Option<&'v mut Value> {
    let mut at = data;
    for segment in path {
        at = match (at, segment) {
            (Value::Object(object), PathSegment::Field(name)) => object.get_mut(name.as_str())?,
            (Value::List(list), PathSegment::Index(index)) => list.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Writes null at `path` in `data`. Each object on the way must be there, or have been made
/// null by async-graphql (all its fields failed: it becomes an object again), and each list must
/// hold the item on the way; otherwise `Err` with the length of the first prefix of `path` that is
/// missing: a list async-graphql dropped when one of its items failed.
fn write_null(data: &mut Value, path: &[PathSegment]) -> Result<(), usize> {
    let mut at = data;
    for (i, segment) in path.iter().enumerate() {
        if matches!((&*at, segment), (Value::Null, PathSegment::Field(_))) {
            *at = Value::Object(Default::default());
        }
        at = match (at, segment) {
            (Value::Object(object), PathSegment::Field(name)) => {
                if i + 1 == path.len() {
                    object.insert(Name::new(name), Value::Null);
                    return Ok(());
                }
                object.get_mut(name.as_str()).ok_or(i + 1)?
            }
            (Value::List(list), PathSegment::Index(index)) => list.get_mut(*index).ok_or(i + 1)?,
            _ => return Err(i + 1),
        };
    }
    *at = Value::Null;
    Ok(())
}

/// The types of the positions a document's operation selects.
struct Types<'d> {
    registry: &'d Registry,
    document: &'d ExecutableDocument,
    root: &'d SelectionSet,
    root_type: &'d str,
}

impl<'d> Types<'d> {
    fn of(
        registry: &'d Registry,
        document: &'d ExecutableDocument,
        operation: Operation<'d>,
    ) -> Option<Self> {
        let operation = operation.definition;
        let root_type = match operation.node.ty {
            OperationType::Query => registry.query_type.as_str(),
            OperationType::Mutation => registry.mutation_type.as_deref()?,
            OperationType::Subscription => registry.subscription_type.as_deref()?,
        };
        Some(Self {
            registry,
            document,
            root: &operation.node.selection_set.node,
            root_type,
        })
    }

    /// Where the null of a failure at `failed` goes: the nearest nullable position at or above
    /// it, or the root (all of `data`).
    fn null_target(&self, failed: &[PathSegment]) -> Vec<PathSegment> {
        let nullable = self.nullable_along(failed);
        let at = (0..nullable.len()).rev().find(|&i| nullable[i]);
        at.map_or_else(Vec::new, |i| failed[..=i].to_vec())
    }

    /// For each position along `path` (`path[..=i]`), whether it is nullable. Positions the
    /// document does not explain (which validation rules out) count as nullable, so that a null
    /// never spreads further than it must.
    fn nullable_along(&self, path: &[PathSegment]) -> Vec<bool> {
        let mut nullable = Vec::with_capacity(path.len());
        let mut sets: Vec<(&'d SelectionSet, &'d str)> = vec![(self.root, self.root_type)];
        // The type of the current position, outer non-null marker removed.
        let mut ty: &'d str = "";
        for segment in path {
            let next = match segment {
                PathSegment::Field(key) => {
                    let mut found: Option<&'d str> = None;
                    let mut below = Vec::new();
                    for &(set, parent) in &sets {
                        self.select(set, parent, key, &mut found, &mut below);
                    }
                    if let Some(field_ty) = found {
                        let named = named_type(field_ty);
                        sets = below.into_iter().map(|set| (set, named)).collect();
                    }
                    found
                }
                PathSegment::Index(_) => {
                    ty.strip_prefix('[').and_then(|item| item.strip_suffix(']'))
                }
            };
            let Some(next) = next else {
                nullable.resize(path.len(), true);
                return nullable;
            };
            nullable.push(!next.ends_with('!'));
            ty = next.strip_suffix('!').unwrap_or(next);
        }
        nullable
    }

    /// Looks for the fields of response key `key` in `set` (on `parent`), fragments included:
    /// sets `found` to the type of the first, and adds the selection set of each to `below`.
    fn select(
        &self,
        set: &'d SelectionSet,
        parent: &'d str,
        key: &str,
        found: &mut Option<&'d str>,
        below: &mut Vec<&'d SelectionSet>,
    ) {
        for selection in &set.items {
            match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    if field.response_key().node.as_str() != key {
                        continue;
                    }
                    let name = field.name.node.as_str();
                    let ty = if name == "__typename" {
                        Some("String!")
                    } else {
                        self.registry
                            .types
                            .get(parent)
                            .and_then(|t| t.field_by_name(name))
                            .map(|f| f.ty.as_str())
                    };
                    if let Some(ty) = ty {
                        found.get_or_insert(ty);
                        below.push(&field.selection_set.node);
                    }
                }
                Selection::InlineFragment(fragment) => {
                    let on = fragment
                        .node
                        .type_condition
                        .as_ref()
                        .map_or(parent, |c| c.node.on.node.as_str());
                    self.select(&fragment.node.selection_set.node, on, key, found, below);
                }
                Selection::FragmentSpread(spread) => {
                    if let Some(fragment) =
                        self.document.fragments.get(&spread.node.fragment_name.node)
                    {
                        let on = fragment.node.type_condition.node.on.node.as_str();
                        self.select(&fragment.node.selection_set.node, on, key, found, below);
                    }
                }
            }
        }
    }
}

/// The named type inside list and non-null markers: `OrderEdge` for `[OrderEdge!]!`.
fn named_type(ty: &str) -> &str {
    ty.trim_start_matches('[').trim_end_matches(['!', ']'])
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

/// A total order on paths, for a deterministic order of errors: segment by segment, field names
/// before indices, a prefix first.
fn compare_paths(a: &[PathSegment], b: &[PathSegment]) -> Ordering {
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
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str) -> PathSegment {
        PathSegment::Field(name.to_owned())
    }

    fn value(json: serde_json::Value) -> Value {
        Value::from_json(json).unwrap()
    }

    #[test]
    fn paths_come_from_query_path_nodes() {
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
        assert_eq!(
            path_of(&item),
            vec![field("users"), field("edges"), PathSegment::Index(3)]
        );
    }

    #[test]
    fn named_types_lose_their_list_and_non_null_markers() {
        for (ty, named) in [
            ("OrderConnection!", "OrderConnection"),
            ("Customer", "Customer"),
            ("[Node]!", "Node"),
            ("[OrderEdge!]!", "OrderEdge"),
            ("[[Int!]]", "Int"),
        ] {
            assert_eq!(named_type(ty), named, "{ty}");
        }
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
    fn nulls_are_written_in_place_or_as_missing_keys() {
        let mut data = value(serde_json::json!({
            "users": { "edges": [{ "node": { "name": "a" } }, { "node": { "name": "b" } }] }
        }));
        let item = [field("users"), field("edges"), PathSegment::Index(1)];
        assert_eq!(write_null(&mut data, &item), Ok(()));
        // A field async-graphql left out is written as a null key.
        let left_out = [field("users"), field("total")];
        assert_eq!(write_null(&mut data, &left_out), Ok(()));
        assert_eq!(
            data.clone().into_json().unwrap(),
            serde_json::json!({ "users": {
                "edges": [{ "node": { "name": "a" } }, null],
                "total": null,
            } })
        );
        // An object made null because all its fields failed is an object again.
        let mut data = value(serde_json::json!({ "user": null }));
        assert_eq!(
            write_null(&mut data, &[field("user"), field("name")]),
            Ok(())
        );
        assert_eq!(
            data.into_json().unwrap(),
            serde_json::json!({ "user": { "name": null } })
        );
        // A list that is not there (an item of it failed) is the missing prefix.
        let mut data = value(serde_json::json!({ "user": { "name": "a" } }));
        let in_lost_list = [field("user"), field("tags"), PathSegment::Index(2)];
        assert_eq!(write_null(&mut data, &in_lost_list), Err(2));
        let mut data = value(serde_json::json!({ "user": {} }));
        assert_eq!(write_null(&mut data, &[]), Ok(()));
        assert_eq!(data, Value::Null);
    }
}
