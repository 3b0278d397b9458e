//! Response objects in the order their document selects their fields: the spec's
//! `CollectFields` order, which a response's JSON follows, as graphql-js's does.
//!
//! async-graphql 7.2.1's executor puts each object's fields in as their futures complete (it
//! polls them in a `FuturesUnordered`), so the keys of an object come in the order its reads
//! happened to finish; the differential protocol suite caught `{"b": …, "a": …}` for `{ a b }`.
//! [`in_document_order`] puts every object of an async-graphql answer back in document order
//! once execution is over. (The direct executor writes objects in document order itself.)

use async_graphql::{
    Name, Value,
    indexmap::IndexMap,
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
    registry::Registry,
};

use super::operation::Operation;

/// Reorders every object in `data`, the answer to `operation` of `document`, into the order the
/// document selects its fields.
pub fn in_document_order(
    data: &mut Value,
    registry: &Registry,
    document: &ExecutableDocument,
    operation: Operation<'_>,
) {
    let root = match operation.ty() {
        OperationType::Query => Some(registry.query_type.as_str()),
        OperationType::Mutation => registry.mutation_type.as_deref(),
        OperationType::Subscription => registry.subscription_type.as_deref(),
    };
    let Some(root) = root else {
        return;
    };
    let walk = Walk { registry, document };
    walk.value(data, &[&operation.definition.node.selection_set.node], root);
}

struct Walk<'d> {
    registry: &'d Registry,
    document: &'d ExecutableDocument,
}

/// One response key of an object: the named type of its field (none for `__typename`), and
/// the selection sets of every field selected under that key.
struct Key<'d> {
    key: &'d Name,
    ty: Option<&'d str>,
    sets: Vec<&'d SelectionSet>,
}

impl<'d> Walk<'d> {
    /// Orders `value`, selected by `sets` at a position of named type `ty`.
    fn value(&self, value: &mut Value, sets: &[&'d SelectionSet], ty: &'d str) {
        match value {
            Value::List(items) => {
                for item in items {
                    self.value(item, sets, ty);
                }
            }
            Value::Object(object) => self.object(object, sets, ty),
            _ => {}
        }
    }

    fn object(&self, object: &mut IndexMap<Name, Value>, sets: &[&'d SelectionSet], ty: &'d str) {
        let Some(meta) = self.registry.types.get(ty) else {
            return;
        };
        // An object of an abstract type is of the possible type whose fields it holds.
        let keys = match meta.possible_types() {
            Some(possible) if meta.is_abstract() => possible.iter().find_map(|concrete| {
                let keys = self.collect(sets, concrete);
                let holds = keys.iter().filter(|k| object.contains_key(k.key)).count();
                (holds == object.len()).then_some(keys)
            }),
            _ => Some(self.collect(sets, ty)),
        };
        let Some(keys) = keys else {
            return;
        };
        let mut ordered = IndexMap::with_capacity(object.len());
        for key in keys {
            if let Some(mut value) = object.shift_remove(key.key) {
                if let Some(ty) = key.ty {
                    self.value(&mut value, &key.sets, ty);
                }
                ordered.insert(key.key.clone(), value);
            }
        }
        // Nothing should be left; whatever is stays, after the rest.
        ordered.extend(object.drain(..));
        *object = ordered;
    }

    /// The response keys `sets` select on an object of type `ty`, in `CollectFields` order.
    fn collect(&self, sets: &[&'d SelectionSet], ty: &str) -> Vec<Key<'d>> {
        let mut keys = Vec::new();
        for set in sets {
            self.collect_into(set, ty, &mut keys);
        }
        keys
    }

    fn collect_into(&self, set: &'d SelectionSet, ty: &str, keys: &mut Vec<Key<'d>>) {
        for selection in &set.items {
            match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let key = &field.response_key().node;
                    let field_ty = self
                        .registry
                        .types
                        .get(ty)
                        .and_then(|t| t.field_by_name(field.name.node.as_str()))
                        .map(|f| named_type(&f.ty));
                    let set = &field.selection_set.node;
                    match keys.iter_mut().find(|k| k.key == key) {
                        Some(known) => known.sets.push(set),
                        None => keys.push(Key {
                            key,
                            ty: field_ty,
                            sets: vec![set],
                        }),
                    }
                }
                Selection::InlineFragment(fragment) => {
                    let applies = fragment
                        .node
                        .type_condition
                        .as_ref()
                        .is_none_or(|c| self.applies(c.node.on.node.as_str(), ty));
                    if applies {
                        self.collect_into(&fragment.node.selection_set.node, ty, keys);
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if let Some(fragment) =
                        self.document.fragments.get(&spread.node.fragment_name.node)
                        && self.applies(fragment.node.type_condition.node.on.node.as_str(), ty)
                    {
                        self.collect_into(&fragment.node.selection_set.node, ty, keys);
                    }
                }
            }
        }
    }

    /// Whether a fragment on `condition` applies to an object of type `ty`.
    fn applies(&self, condition: &str, ty: &str) -> bool {
        condition == ty
            || self
                .registry
                .types
                .get(condition)
                .is_some_and(|c| c.is_possible_type(ty))
    }
}

/// The named type inside list and non-null markers: `OrderEdge` for `[OrderEdge!]!`.
fn named_type(ty: &str) -> &str {
    ty.trim_start_matches('[').trim_end_matches(['!', ']'])
}
