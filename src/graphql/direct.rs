//! The direct executor: answers the queries clients send again and again (a page of a lookup's
//! connection, a root connection, their edges, nodes and page info) without async-graphql's
//! executor, and gives way to it for everything else.
//!
//! Hand-written because async-graphql's dynamic executor spends, for every field of every edge,
//! a boxed future, a context, an argument map and two formatted type names, and validates every
//! request, and offers no way to resolve a list of objects as ready values: the shop's page took
//! 0.78 and 0.84 of its server CPU without them (`scripts/bench`, docs/src/benchmarks.md). This
//! executor walks a plan compiled once per document and writes the same response's JSON from
//! the same resolution code ([`resolve`], [`values`], [`access`]). One difference on purpose: several
//! root fields come back in the document's order, as the spec asks, where async-graphql puts
//! them in the order their reads end.
//!
//! It is sound by construction rather than by completeness:
//! - a document is planned only after async-graphql has executed it once without request
//!   errors (so it passed every validation rule that does not depend on variable values), and
//!   only when everything in its operation is a field this executor knows (no directives,
//!   relations, `node`, introspection, nested connections, fields with rules of their own, a
//!   response key repeated with selections, mutations);
//! - each request's arguments are checked as validation would check them (the variables
//!   substituted, every value against the argument's type in the schema's registry);
//! - anything it does not answer exactly as async-graphql would, every error included, makes it
//!   give way: the request is executed again by async-graphql, which answers it. Arguments and
//!   cursors are checked before any read; a read that fails is not sent again (the request's
//!   store remembers it, see `dynamo::Failures`), though the reads that succeeded beside it
//!   are, as they are when an item does not fit the model.

use std::{collections::HashMap, sync::Arc};

use async_graphql::futures_util::future::{join, join_all};
use async_graphql::{
    Name, Positioned, Value, Variables,
    parser::types::{
        ExecutableDocument, Field, OperationDefinition, OperationType, Selection, SelectionSet,
    },
    registry::{MetaType, MetaTypeName, Registry, ScalarValidatorFn},
};
use async_graphql_value::ConstValue;

use super::{
    access::{self, Grant},
    connection::{EdgeValue, PageValue},
    operation::Operation,
    resolve::{self, Args, Env, Site},
    schema, values,
};
use crate::{
    dynamo::Item,
    model::{self, Connection, EntityId, Model, PartitionFrom},
};

/// An operation of a document, planned for the direct executor.
pub struct Plan {
    /// The operation name the plan was made for (as the request names it).
    operation_name: Option<String>,
    /// The operation's variables with their defaults (see [`var_value`]).
    variables: Vec<(Name, Option<ConstValue>)>,
    root: Vec<(Name, Root)>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("operation_name", &self.operation_name)
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// Whether the plan answers `operation` (a document with several operations is planned for
    /// the first one asked for).
    pub fn is_for(&self, operation: Operation<'_>) -> bool {
        self.operation_name.as_deref() == operation.name
    }
}

enum Root {
    Typename,
    Lookup {
        lookup: &'static crate::model::Lookup,
        args: Vec<Arg>,
        object: Object,
    },
    Connection(ConnectionPlan),
}

/// The selection of an entity object: its fields in response order.
struct Object {
    entity: EntityId,
    fields: Vec<(Name, Leaf)>,
}

enum Leaf {
    Typename,
    Id,
    Scalar(usize, Ty),
    Connection(ConnectionPlan),
}

struct ConnectionPlan {
    site: Site,
    args: Vec<Arg>,
    /// The schema's defaults of arguments, added when left out.
    defaults: Option<(Name, Value)>,
    projection: Option<Vec<&'static str>>,
    /// `…Connection`'s name, for `__typename`.
    typename: Arc<str>,
    fields: Vec<(Name, ConnectionLeaf)>,
}

enum ConnectionLeaf {
    Typename,
    Edges(Arc<str>, Vec<(Name, EdgeLeaf)>),
    Nodes(Nodes),
    PageInfo(Vec<(Name, PageInfoLeaf)>),
}

enum EdgeLeaf {
    Typename,
    Cursor,
    Node(Nodes),
}

#[derive(Clone, Copy)]
enum PageInfoLeaf {
    Typename,
    HasNextPage,
    HasPreviousPage,
    StartCursor,
    EndCursor,
}

/// The selection on a connection's nodes: one entity's, or one per member of a collection.
enum Nodes {
    One(Object),
    Members(Vec<Object>),
}

/// An argument as written, with how validation checks its value.
struct Arg {
    name: Name,
    value: async_graphql_value::Value,
    check: Ty,
}

/// A type as values are checked against it: an argument's as validation checks it, or a
/// field's as async-graphql's executor checks what its resolver gave.
enum Ty {
    NonNull(Box<Ty>),
    List(Box<Ty>),
    /// A scalar with its validator, if it has one.
    Scalar(Option<ScalarValidatorFn>),
    Enum(Vec<String>),
}

/// What a request runs on.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// The model.
    pub model: &'static Model,
    /// The request's store, codec, limits and caller.
    pub env: Env<'a>,
    /// The request's variables.
    pub variables: &'a Variables,
}

/// Plans `operation` of `document` (validated before), or `None` when the direct executor does
/// not answer it.
pub fn plan(
    model: &'static Model,
    registry: &Registry,
    document: &ExecutableDocument,
    operation: Operation<'_>,
) -> Option<Plan> {
    let OperationDefinition {
        ty,
        variable_definitions,
        directives,
        selection_set,
    } = &operation.definition.node;
    if *ty != OperationType::Query || !directives.is_empty() {
        return None;
    }
    let mut variables = Vec::new();
    for definition in variable_definitions {
        if !definition.node.directives.is_empty() {
            return None;
        }
        variables.push((
            definition.node.name.node.clone(),
            definition.node.default_value().cloned(),
        ));
    }
    let planner = Planner {
        model,
        registry,
        document,
    };
    let mut root = Vec::new();
    for field in planner.fields(selection_set, "Query", false)? {
        let node = &field.node;
        let leaf = match node.name.node.as_str() {
            "__typename" => Root::Typename,
            name => {
                if let Some(lookup) = model.lookups.iter().find(|l| l.name == name) {
                    // Lookups through an index are answered by the schema's resolvers.
                    if lookup.index.is_some() {
                        return None;
                    }
                    Root::Lookup {
                        lookup,
                        args: planner.args("Query", field)?,
                        object: planner.object(lookup.entity, &node.selection_set, true)?,
                    }
                } else if let Some(connection) = model.connections.iter().find(|c| c.name == name) {
                    let site = Site {
                        model,
                        parent: None,
                        connection,
                    };
                    Root::Connection(planner.connection(site, "Query", field)?)
                } else {
                    return None;
                }
            }
        };
        root.push((node.response_key().node.clone(), leaf));
    }
    Some(Plan {
        operation_name: operation.name.map(str::to_owned),
        variables,
        root,
    })
}

struct Planner<'d> {
    model: &'static Model,
    registry: &'d Registry,
    document: &'d ExecutableDocument,
}

impl<'d> Planner<'d> {
    /// The fields of `set` as async-graphql collects them for an object named `type_name`
    /// (`node`: it implements `Node`), through fragments whose type condition it meets. A
    /// response key given again for a leaf keeps its first place and value, as async-graphql
    /// merges them; `None` for a directive anywhere, a missing fragment, or a response key
    /// given twice with selections (whose merging this does not do).
    fn fields(
        &self,
        set: &'d Positioned<SelectionSet>,
        type_name: &str,
        node: bool,
    ) -> Option<Vec<&'d Positioned<Field>>> {
        let mut all = Vec::new();
        self.collect(set, type_name, node, &mut all)?;
        let mut out: Vec<&'d Positioned<Field>> = Vec::with_capacity(all.len());
        for field in all {
            let key = field.node.response_key().node.as_str();
            match out.iter().find(|f| f.node.response_key().node == key) {
                None => out.push(field),
                Some(first)
                    if first.node.selection_set.node.items.is_empty()
                        && field.node.selection_set.node.items.is_empty() => {}
                Some(_) => return None,
            }
        }
        Some(out)
    }

    fn collect(
        &self,
        set: &'d Positioned<SelectionSet>,
        type_name: &str,
        node: bool,
        out: &mut Vec<&'d Positioned<Field>>,
    ) -> Option<()> {
        for selection in &set.node.items {
            let (condition, inner) = match &selection.node {
                Selection::Field(field) => {
                    if !field.node.directives.is_empty() {
                        return None;
                    }
                    out.push(field);
                    continue;
                }
                Selection::FragmentSpread(spread) => {
                    if !spread.node.directives.is_empty() {
                        return None;
                    }
                    let fragment = self
                        .document
                        .fragments
                        .get(&spread.node.fragment_name.node)?;
                    if !fragment.node.directives.is_empty() {
                        return None;
                    }
                    (
                        Some(fragment.node.type_condition.node.on.node.as_str()),
                        &fragment.node.selection_set,
                    )
                }
                Selection::InlineFragment(fragment) => {
                    if !fragment.node.directives.is_empty() {
                        return None;
                    }
                    (
                        fragment
                            .node
                            .type_condition
                            .as_ref()
                            .map(|c| c.node.on.node.as_str()),
                        &fragment.node.selection_set,
                    )
                }
            };
            // async-graphql's rule: no condition, the object's own name, or an interface it
            // implements (entities implement `Node`).
            let met = match condition {
                None => true,
                Some(condition) => condition == type_name || (node && condition == "Node"),
            };
            if met {
                self.collect(inner, type_name, node, out)?;
            }
        }
        Some(())
    }

    /// The arguments of `field` on `parent_type`, with their types from the registry.
    fn args(&self, parent_type: &str, field: &Positioned<Field>) -> Option<Vec<Arg>> {
        let meta = self
            .registry
            .types
            .get(parent_type)?
            .field_by_name(&field.node.name.node)?;
        field
            .node
            .arguments
            .iter()
            .map(|(name, value)| {
                let ty = &meta.args.get(name.node.as_str())?.ty;
                Some(Arg {
                    name: name.node.clone(),
                    value: value.node.clone(),
                    check: self.ty(ty, false)?,
                })
            })
            .collect()
    }

    /// `ty` from the registry; `output`: as the executor checks output, where the built-in
    /// scalars have no validator (async-graphql's dynamic schema makes them with none), while
    /// validation uses the registry's.
    fn ty(&self, ty: &str, output: bool) -> Option<Ty> {
        Some(match MetaTypeName::create(ty) {
            MetaTypeName::NonNull(inner) => Ty::NonNull(Box::new(self.ty(inner, output)?)),
            MetaTypeName::List(inner) => Ty::List(Box::new(self.ty(inner, output)?)),
            MetaTypeName::Named(name) => match self.registry.types.get(name)? {
                MetaType::Scalar { .. }
                    if output && matches!(name, "Int" | "Float" | "Boolean" | "String" | "ID") =>
                {
                    Ty::Scalar(None)
                }
                MetaType::Scalar { is_valid, .. } => Ty::Scalar(is_valid.clone()),
                MetaType::Enum { enum_values, .. } => {
                    Ty::Enum(enum_values.keys().cloned().collect())
                }
                _ => return None,
            },
        })
    }

    /// The selection on an object of `entity`; `connections`: its connections may be selected
    /// (only on a lookup's object).
    fn object(
        &self,
        entity: EntityId,
        set: &'d Positioned<SelectionSet>,
        connections: bool,
    ) -> Option<Object> {
        let model = self.model;
        let e = &model.entities[entity];
        let mut fields = Vec::new();
        for field in self.fields(set, &e.name, true)? {
            let node = &field.node;
            let name = node.name.node.as_str();
            let leaf = if name == "__typename" {
                Leaf::Typename
            } else if let Some(connection) = e.connections.iter().find(|c| c.name == name) {
                if !connections {
                    return None;
                }
                let site = Site {
                    model,
                    parent: Some(entity),
                    connection,
                };
                Leaf::Connection(self.connection(site, &e.name, field)?)
            } else {
                if !node.arguments.is_empty() || !node.selection_set.node.items.is_empty() {
                    return None;
                }
                if name == "id" {
                    Leaf::Id
                } else {
                    let f = e.fields.iter().position(|f| f.name == name)?;
                    // A field with rules of its own is judged on the item, after the read: a
                    // refusal then would make async-graphql read again.
                    if e.fields[f].access.is_some() {
                        return None;
                    }
                    let ty = &self.registry.types.get(&e.name)?.field_by_name(name)?.ty;
                    Leaf::Scalar(f, self.ty(ty, true)?)
                }
            };
            fields.push((node.response_key().node.clone(), leaf));
        }
        Some(Object { entity, fields })
    }

    fn connection(
        &self,
        site: Site,
        parent_type: &str,
        field: &'d Positioned<Field>,
    ) -> Option<ConnectionPlan> {
        let model = self.model;
        let connection = site.connection;
        let node_type: &str = match &connection.collection {
            Some(collection) => &collection.union,
            None => &model.entities[connection.entity].name,
        };
        // (`totalCount` is not planned: a document that selects it is executed by async-graphql.)
        let typename: Arc<str> = match connection.total_count {
            true => format!("{node_type}CountedConnection"),
            false => format!("{node_type}Connection"),
        }
        .into();
        let edge_type: Arc<str> = format!("{node_type}Edge").into();
        let mut fields = Vec::new();
        for child in self.fields(&field.node.selection_set, &typename, false)? {
            let node = &child.node;
            if !node.arguments.is_empty() {
                return None;
            }
            let leaf = match node.name.node.as_str() {
                "__typename" => ConnectionLeaf::Typename,
                "edges" => {
                    let mut edge = Vec::new();
                    for f in self.fields(&node.selection_set, &edge_type, false)? {
                        if !f.node.arguments.is_empty() {
                            return None;
                        }
                        let leaf = match f.node.name.node.as_str() {
                            "__typename" => EdgeLeaf::Typename,
                            "cursor" => EdgeLeaf::Cursor,
                            "node" => {
                                EdgeLeaf::Node(self.nodes(connection, &f.node.selection_set)?)
                            }
                            _ => return None,
                        };
                        edge.push((f.node.response_key().node.clone(), leaf));
                    }
                    ConnectionLeaf::Edges(Arc::clone(&edge_type), edge)
                }
                "nodes" => ConnectionLeaf::Nodes(self.nodes(connection, &node.selection_set)?),
                "pageInfo" => {
                    let mut info = Vec::new();
                    for f in self.fields(&node.selection_set, "PageInfo", false)? {
                        if !f.node.arguments.is_empty() {
                            return None;
                        }
                        let leaf = match f.node.name.node.as_str() {
                            "__typename" => PageInfoLeaf::Typename,
                            "hasNextPage" => PageInfoLeaf::HasNextPage,
                            "hasPreviousPage" => PageInfoLeaf::HasPreviousPage,
                            "startCursor" => PageInfoLeaf::StartCursor,
                            "endCursor" => PageInfoLeaf::EndCursor,
                            _ => return None,
                        };
                        info.push((f.node.response_key().node.clone(), leaf));
                    }
                    ConnectionLeaf::PageInfo(info)
                }
                _ => return None,
            };
            fields.push((node.response_key().node.clone(), leaf));
        }
        // The attributes read: from every field under the nodes, in every fragment, as
        // `resolve::projection` reads them from async-graphql's selection.
        let mut node_fields = Vec::new();
        for child in all_fields(self.document, &field.node.selection_set) {
            match child.name.node.as_str() {
                "edges" => {
                    for edge in all_fields(self.document, &child.selection_set) {
                        if edge.name.node == "node" {
                            node_fields.extend(all_fields(self.document, &edge.selection_set));
                        }
                    }
                }
                "nodes" => node_fields.extend(all_fields(self.document, &child.selection_set)),
                _ => {}
            }
        }
        let projection =
            resolve::projection_of(site, node_fields.iter().map(|f| f.name.node.as_str()));
        Some(ConnectionPlan {
            site,
            args: self.args(parent_type, field)?,
            defaults: schema::order_default(connection),
            projection,
            typename,
            fields,
        })
    }

    fn nodes(
        &self,
        connection: &'static Connection,
        set: &'d Positioned<SelectionSet>,
    ) -> Option<Nodes> {
        Some(match &connection.collection {
            None => Nodes::One(self.object(connection.entity, set, false)?),
            Some(collection) => Nodes::Members(
                collection
                    .members
                    .iter()
                    .map(|&m| self.object(m, set, false))
                    .collect::<Option<_>>()?,
            ),
        })
    }
}

/// Every field of a selection set, through all its fragments whatever their type condition, as
/// async-graphql's `SelectionField::selection_set` gives them.
fn all_fields<'d>(
    document: &'d ExecutableDocument,
    set: &'d Positioned<SelectionSet>,
) -> Vec<&'d Field> {
    let mut out = Vec::new();
    let mut stack = vec![set.node.items.iter()];
    while let Some(it) = stack.last_mut() {
        match it.next() {
            Some(selection) => match &selection.node {
                Selection::Field(field) => out.push(&field.node),
                Selection::FragmentSpread(spread) => {
                    if let Some(fragment) = document.fragments.get(&spread.node.fragment_name.node)
                    {
                        stack.push(fragment.node.selection_set.node.items.iter());
                    }
                }
                Selection::InlineFragment(fragment) => {
                    stack.push(fragment.node.selection_set.node.items.iter());
                }
            },
            None => {
                stack.pop();
            }
        }
    }
    out
}

/// Executes `plan`: appends the response's `data`, as JSON, to `out`, or returns `None` (what
/// it appended then means nothing) when async-graphql must answer instead.
///
/// The reads come first, all at once; then the JSON is written straight from the plan and what
/// was read, with the bytes serde_json writes for async-graphql's response (no value tree in
/// between: no maps, no copied keys or cursors).
pub async fn execute(plan: &Plan, inputs: &Inputs<'_>, out: &mut Vec<u8>) -> Option<()> {
    let read = join_all(
        plan.root
            .iter()
            .map(|(_, root)| read_root(plan, inputs, root)),
    )
    .await;
    let mut json = Json(out);
    json.0.push(b'{');
    for (at, ((key, root), read)) in plan.root.iter().zip(read).enumerate() {
        json.key(at, key);
        match (root, read?) {
            (Root::Typename, _) => json.str("Query"),
            (Root::Lookup { object, .. }, Read::Item(item, pages)) => {
                object_json(&mut json, inputs, object, &item, Some(&pages))?;
            }
            (Root::Connection(connection), Read::Page(page)) => {
                connection_json(&mut json, inputs, connection, &page)?;
            }
            (_, Read::Null) => json.0.extend_from_slice(b"null"),
            _ => return None,
        }
    }
    json.0.push(b'}');
    Some(())
}

/// What a root field read: `None` (of the `Option` around it) to give way.
enum Read {
    /// Nothing to read (`__typename`).
    Nothing,
    /// A lookup that found nothing the caller may see.
    Null,
    /// A lookup's item and the pages of its connections, by field position.
    Item(Item, HashMap<usize, PageValue>),
    /// A root connection's page.
    Page(PageValue),
}

async fn read_root(plan: &Plan, inputs: &Inputs<'_>, root: &Root) -> Option<Read> {
    match root {
        Root::Typename => Some(Read::Nothing),
        Root::Lookup {
            lookup,
            args,
            object,
        } => read_lookup(plan, inputs, lookup, args, object).await,
        Root::Connection(connection) => {
            let prepared = prepare(plan, inputs, connection, None)?;
            let page = resolve::read_prepared(inputs.env, prepared).await.ok()?;
            Some(Read::Page(page))
        }
    }
}

/// A page of `connection` planned for this request, its cursor opened; `None` when refused.
fn prepare<'a>(
    plan: &Plan,
    inputs: &Inputs<'a>,
    connection: &ConnectionPlan,
    parent: Option<&Item>,
) -> Option<resolve::PreparedPage<'a>> {
    let args = bind(plan, inputs, &connection.args, &connection.defaults)?;
    resolve::prepare_page(
        inputs.env,
        connection.site,
        parent,
        &args,
        connection.projection.clone(),
    )
    .ok()
}

/// A lookup and the pages of its connections, read at the same time when they do not depend on
/// the item (as `schema::lookup_item` reads them).
async fn read_lookup(
    plan: &Plan,
    inputs: &Inputs<'_>,
    lookup: &'static crate::model::Lookup,
    args: &[Arg],
    object: &Object,
) -> Option<Read> {
    let env = inputs.env;
    let model = inputs.model;
    let entity = lookup.entity;
    if access::grant(&lookup.access, env.caller) == Grant::Nothing {
        return None;
    }
    let args = bind(plan, inputs, args, &None)?;
    let key = resolve::key_from_args(model, entity, &args).ok()?;
    let partial: Item = key.to_attribute_map();
    if access::may_see_key(model, entity, &partial, env.caller) == Some(false) {
        return Some(Read::Null);
    }
    let e = &model.entities[entity];
    let ahead = |c: &Connection| match &c.read {
        model::Read::Query { partition, .. } => {
            matches!(partition.from, PartitionFrom::Parent(f) if e.key_fields.contains(&f))
        }
        model::Read::Scan => false,
    };
    let mut early = Vec::new();
    for (at, (_, leaf)) in object.fields.iter().enumerate() {
        if let Leaf::Connection(connection) = leaf
            && ahead(connection.site.connection)
        {
            early.push((at, prepare(plan, inputs, connection, Some(&partial))?));
        }
    }
    let (found, read) = join(
        env.store.get(e.table, &key),
        join_all(
            early
                .into_iter()
                .map(|(at, page)| async move { (at, resolve::read_prepared(env, page).await) }),
        ),
    )
    .await;
    let found = found.ok()?.filter(|item| {
        values::entity_of(model, &[entity], item).is_some()
            && access::may_see(model, entity, item, env.caller)
    });
    let Some(item) = found else {
        return Some(Read::Null);
    };
    let mut pages: HashMap<usize, PageValue> = HashMap::with_capacity(read.len());
    for (at, page) in read {
        pages.insert(at, page.ok()?);
    }
    for (at, (_, leaf)) in object.fields.iter().enumerate() {
        if let Leaf::Connection(connection) = leaf
            && !pages.contains_key(&at)
        {
            let prepared = prepare(plan, inputs, connection, Some(&item))?;
            pages.insert(at, resolve::read_prepared(env, prepared).await.ok()?);
        }
    }
    Some(Read::Item(item, pages))
}

/// A response's JSON being written, compact, as serde_json writes async-graphql's values
/// (strings escaped by serde_json itself).
///
/// Hand-written rather than serialized from a value tree: building the tree (maps of copied
/// keys, copied cursors) and dropping it cost more than writing the bytes (`scripts/profile`).
struct Json<'o>(&'o mut Vec<u8>);

impl Json<'_> {
    /// A JSON string.
    fn str(&mut self, s: &str) {
        // Writing a string into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *self.0, s);
    }

    fn bool(&mut self, b: bool) {
        self.0.extend_from_slice(if b { b"true" } else { b"false" });
    }

    /// The key of the `at`th entry of an object (`{` written before the first).
    fn key(&mut self, at: usize, key: &Name) {
        if at > 0 {
            self.0.push(b',');
        }
        self.str(key.as_str());
        self.0.push(b':');
    }

    /// A value as async-graphql's response writes it; `None` if serde_json refuses it.
    fn value(&mut self, value: &Value) -> Option<()> {
        serde_json::to_writer(&mut *self.0, value).ok()
    }

    /// An object of `len` entries written by `entry(self, at)`, or `null` when nothing was
    /// selected on it (its fragments were all for other types), as async-graphql answers.
    fn object(
        &mut self,
        len: usize,
        mut entry: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        if len == 0 {
            self.0.extend_from_slice(b"null");
            return Some(());
        }
        self.0.push(b'{');
        for at in 0..len {
            entry(self, at)?;
        }
        self.0.push(b'}');
        Some(())
    }
}

/// An entity object; `pages`: the pages of its connections, by field position.
fn object_json(
    json: &mut Json<'_>,
    inputs: &Inputs<'_>,
    object: &Object,
    item: &Item,
    pages: Option<&HashMap<usize, PageValue>>,
) -> Option<()> {
    let model = inputs.model;
    let entity = object.entity;
    let e = &model.entities[entity];
    json.object(object.fields.len(), |json, at| {
        let (key, leaf) = &object.fields[at];
        json.key(at, key);
        match leaf {
            Leaf::Typename => json.str(&e.name),
            Leaf::Id => json.str(&resolve::item_id(model, entity, item).ok()?),
            Leaf::Scalar(f, ty) => {
                let field = &e.fields[*f];
                if let Some(rules) = &field.access {
                    let grant = access::grant(rules, inputs.env.caller);
                    if access::owns(model, entity, item, &grant) != Some(true) {
                        return None;
                    }
                }
                let stored = values::field_value(model, entity, *f, item);
                let value = values::output(model, field, stored.as_deref()).ok()?;
                if !fits(ty, value.as_ref()) {
                    return None;
                }
                match &value {
                    Some(value) => json.value(value)?,
                    None => json.0.extend_from_slice(b"null"),
                }
            }
            Leaf::Connection(connection) => {
                connection_json(json, inputs, connection, pages?.get(&at)?)?;
            }
        }
        Some(())
    })
}

fn connection_json(
    json: &mut Json<'_>,
    inputs: &Inputs<'_>,
    connection: &ConnectionPlan,
    page: &PageValue,
) -> Option<()> {
    json.object(connection.fields.len(), |json, at| {
        let (key, leaf) = &connection.fields[at];
        json.key(at, key);
        match leaf {
            ConnectionLeaf::Typename => json.str(&connection.typename),
            ConnectionLeaf::Edges(typename, fields) => {
                json.0.push(b'[');
                for (n, edge) in page.edges.iter().enumerate() {
                    if n > 0 {
                        json.0.push(b',');
                    }
                    json.object(fields.len(), |json, at| {
                        let (key, leaf) = &fields[at];
                        json.key(at, key);
                        match leaf {
                            EdgeLeaf::Typename => json.str(typename),
                            EdgeLeaf::Cursor => json.str(&edge.cursor),
                            // An edge whose item is of no member entity: its node is null,
                            // which the schema does not allow, so async-graphql answers.
                            EdgeLeaf::Node(nodes) => {
                                if !node_json(json, inputs, connection.site, nodes, edge)? {
                                    return None;
                                }
                            }
                        }
                        Some(())
                    })?;
                }
                json.0.push(b']');
            }
            ConnectionLeaf::Nodes(nodes) => {
                json.0.push(b'[');
                let mut first = true;
                for edge in &page.edges {
                    let mark = json.0.len();
                    if !first {
                        json.0.push(b',');
                    }
                    // An item of no member entity is left out, as `schema::node_value` does.
                    if node_json(json, inputs, connection.site, nodes, edge)? {
                        first = false;
                    } else {
                        json.0.truncate(mark);
                    }
                }
                json.0.push(b']');
            }
            ConnectionLeaf::PageInfo(fields) => {
                let info = &page.page_info;
                json.object(fields.len(), |json, at| {
                    let (key, leaf) = &fields[at];
                    json.key(at, key);
                    let cursor = |json: &mut Json<'_>, c: &Option<String>| match c {
                        Some(c) => json.str(c),
                        None => json.0.extend_from_slice(b"null"),
                    };
                    match leaf {
                        PageInfoLeaf::Typename => json.str("PageInfo"),
                        PageInfoLeaf::HasNextPage => json.bool(info.has_next_page),
                        PageInfoLeaf::HasPreviousPage => json.bool(info.has_previous_page),
                        PageInfoLeaf::StartCursor => cursor(json, &info.start_cursor),
                        PageInfoLeaf::EndCursor => cursor(json, &info.end_cursor),
                    }
                    Some(())
                })?;
            }
        }
        Some(())
    })
}

/// Writes a node: `Some(false)` (nothing written) for an item of no member entity, `None` to
/// give way.
fn node_json(
    json: &mut Json<'_>,
    inputs: &Inputs<'_>,
    site: Site,
    nodes: &Nodes,
    edge: &EdgeValue,
) -> Option<bool> {
    let object = match nodes {
        Nodes::One(object) => object,
        Nodes::Members(objects) => {
            let members = &site.connection.collection.as_ref()?.members;
            let Some(entity) = schema::node_entity(site.model, members, edge) else {
                return Some(false);
            };
            objects.iter().find(|o| o.entity == entity)?
        }
    };
    object_json(json, inputs, object, &edge.item, None)?;
    Some(true)
}

/// Whether async-graphql's executor passes on a resolved value for an output type (where it
/// does not, it fails the field).
fn fits(ty: &Ty, value: Option<&Value>) -> bool {
    match (ty, value) {
        (Ty::NonNull(_), None) => false,
        (Ty::NonNull(inner), value) => fits(inner, value),
        (_, None) => true,
        (Ty::List(inner), Some(Value::List(items))) => {
            items.iter().all(|item| fits(inner, Some(item)))
        }
        (Ty::List(_), Some(_)) => false,
        (Ty::Scalar(validator), Some(value)) => validator.as_ref().is_none_or(|valid| valid(value)),
        (Ty::Enum(names), Some(Value::Enum(name))) => names.iter().any(|n| n == name.as_str()),
        (Ty::Enum(names), Some(Value::String(name))) => names.iter().any(|n| n == name),
        (Ty::Enum(_), Some(_)) => false,
    }
}

/// The arguments of a field for this request: checked as validation checks them (each value
/// with the variables given substituted, against its type), then with every variable's value
/// or default substituted as execution does, and the schema's defaults for arguments left out.
fn bind(
    plan: &Plan,
    inputs: &Inputs<'_>,
    args: &[Arg],
    defaults: &Option<(Name, Value)>,
) -> Option<Args> {
    let mut bound = Args::with_capacity(args.len() + 1);
    for arg in args {
        // With every variable it names given, the value is the one validation checks and the
        // one execution uses (a validated document declares every variable it uses); with one
        // left out, validation skips it and execution takes the default.
        let value = match arg
            .value
            .clone()
            .into_const_with(|name| inputs.variables.get(&name).cloned().ok_or(()))
        {
            Ok(given) if valid(&arg.check, &given) => given,
            Ok(_) => return None,
            Err(()) => arg
                .value
                .clone()
                .into_const_with(|name| var_value(plan, inputs, &name).ok_or(()))
                .ok()?,
        };
        bound.insert(arg.name.clone(), value);
    }
    if let Some((name, value)) = defaults
        && !bound.contains_key(name)
    {
        bound.insert(name.clone(), value.clone());
    }
    Some(bound)
}

/// A variable's value as async-graphql's execution takes it: given, else its default, else
/// null when its type is nullable.
fn var_value(plan: &Plan, inputs: &Inputs<'_>, name: &Name) -> Option<ConstValue> {
    let (_, default) = plan.variables.iter().find(|(n, _)| n == name)?;
    inputs.variables.get(name).or(default.as_ref()).cloned()
}

/// async-graphql's `is_valid_input_value`, without the message.
fn valid(check: &Ty, value: &ConstValue) -> bool {
    match (check, value) {
        (Ty::NonNull(_), ConstValue::Null) => false,
        (Ty::NonNull(inner), value) => valid(inner, value),
        (Ty::List(inner), ConstValue::List(items)) => items.iter().all(|i| valid(inner, i)),
        (Ty::List(_), ConstValue::Null) => true,
        (Ty::List(inner), value) => valid(inner, value),
        (_, ConstValue::Null) => true,
        (Ty::Scalar(validator), value) => validator.as_ref().is_none_or(|v| v(value)),
        (Ty::Enum(names), ConstValue::Enum(name)) => names.iter().any(|n| n == name.as_str()),
        (Ty::Enum(names), ConstValue::String(name)) => names.iter().any(|n| n == name),
        (Ty::Enum(_), _) => false,
    }
}
