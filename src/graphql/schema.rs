//! The GraphQL schema built from a [`Model`] with async-graphql's `dynamic` schema: an object
//! type per entity (implementing `Node`), a connection and an edge type per entity that is paged,
//! root lookups and connections, `node`/`nodes`, and the mutations each entity opts into.
//!
//! Dynamic rather than derived: the types exist only once a model file is read. Every name and
//! description comes from the model; the generated types (`…Connection`, `…Edge`, `PageInfo`,
//! `SortOrder`, the scalars) are described here for the frontend developers who read them in
//! GraphiQL.

use std::collections::{BTreeMap, BTreeSet};

use async_graphql::{
    Name, Value,
    dynamic::{
        Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Interface, InterfaceField,
        Object, ResolverContext, Scalar, SchemaBuilder, TypeRef, Union,
    },
};

use super::{
    access::{self, Grant},
    connection::{EdgeValue, PageInfo, PageValue},
    error::ApiError,
    federation,
    limits::FieldCosts,
    lookup, mutation,
    node::{self, parse_node_id},
    nullability, relations,
    resolve::{self, PagesAhead, Site},
    scalars::{self, field_type, scalar_name},
    subscription, values,
};
use crate::{
    dynamo::{Item, Store},
    model::{Connection, EntityId, Model, PartitionFrom, Read, Scalar as ModelScalar},
};

/// The name of the sort-order enum.
const SORT_ORDER: &str = "SortOrder";

/// Registers every type and root field of `model` on a new schema builder, and returns it with
/// the cost of each field, for the query complexity limit. With `[federation]`, the schema
/// answers `_service` and `_entities` (see [`federation`]).
pub fn builder(model: &'static Model) -> (SchemaBuilder, FieldCosts) {
    let entry_points = match model.federation {
        Some(_) => match subgraph_sdl(model) {
            Ok(sdl) => Some(sdl),
            // The same types built again: what fails here fails in the schema built next.
            Err(_) => Some(String::new()),
        },
        None => None,
    };
    build(
        model,
        Federated {
            directives: false,
            entry_points,
        },
    )
}

/// The subgraph schema of a model with `[federation]`: its SDL with the federation directives,
/// for `_service { sdl }` and `dynarelay schema --subgraph`.
pub fn subgraph_sdl(model: &'static Model) -> Result<String, async_graphql::dynamic::SchemaError> {
    let (builder, _) = build(
        model,
        Federated {
            directives: model.federation.is_some(),
            entry_points: None,
        },
    );
    Ok(federation::subgraph_sdl(
        &builder.finish()?.sdl_with_options(
            async_graphql::SDLExportOptions::new()
                .sorted_fields()
                .sorted_arguments()
                .sorted_enum_items(),
        ),
    ))
}

/// What a build adds for Apollo Federation.
struct Federated {
    /// The federation directives (`@key`, `@shareable`): in the subgraph schema only, since
    /// they are not the API's own and clients' tools do not know them.
    directives: bool,
    /// `_service` and `_entities`, with the subgraph schema `_service` gives.
    entry_points: Option<String>,
}

fn build(model: &'static Model, federated: Federated) -> (SchemaBuilder, FieldCosts) {
    let has_mutations = model.entities.iter().any(|e| {
        e.mutations.create.is_some() || e.mutations.update.is_some() || e.mutations.delete.is_some()
    });
    let mut costs = FieldCosts::default();
    let mut schema = async_graphql::dynamic::Schema::build(
        "Query",
        has_mutations.then_some("Mutation"),
        subscription::any(model).then_some("Subscription"),
    );
    for scalar in used_scalars(model) {
        schema = schema.register(scalar);
    }
    for e in &model.enums {
        let mut en = Enum::new(&e.name);
        if let Some(d) = &e.description {
            en = en.description(d);
        }
        for (value, description) in &e.values {
            let mut item = EnumItem::new(value);
            if let Some(d) = description {
                item = item.description(d);
            }
            en = en.item(item);
        }
        schema = schema.register(en);
    }
    let page_info = match federated.directives {
        true => federation::shareable(page_info()),
        false => page_info(),
    };
    schema = schema.register(sort_order()).register(page_info).register(
        Interface::new("Node")
            .description("An object with a global id, refetchable with `node(id:)`.")
            .field(
                InterfaceField::new("id", TypeRef::named_nn(TypeRef::ID))
                    .description("A global id: opaque, stable, and unique across all types."),
            ),
    );
    let connections = model
        .connections
        .iter()
        .chain(model.entities.iter().flat_map(|e| &e.connections));
    // Each node type's connection and edge types, once: an entity's, or a collection's union;
    // and the connection type with `totalCount` of those that some connection counts.
    let mut paged: BTreeMap<&str, Option<&'static [EntityId]>> = BTreeMap::new();
    let mut counted: BTreeSet<&str> = BTreeSet::new();
    for c in connections {
        let name = match &c.collection {
            Some(collection) => {
                paged.insert(&collection.union, Some(&collection.members));
                collection.union.as_str()
            }
            None => {
                paged.insert(&model.entities[c.entity].name, None);
                model.entities[c.entity].name.as_str()
            }
        };
        if c.total_count {
            counted.insert(name);
        }
    }
    for e in &model.entities {
        if e.mutations
            .create
            .as_ref()
            .is_some_and(|c| c.edge.is_some())
        {
            paged.insert(&e.name, None);
        }
    }
    for (name, members) in paged {
        if let Some(members) = members {
            let mut union = Union::new(name).description(format!(
                "One of the kinds of item a collection holds: {}. Select fields with `... on` each.",
                members
                    .iter()
                    .map(|&m| format!("`{}`", model.entities[m].name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            for &m in members {
                union = union.possible_type(&model.entities[m].name);
            }
            schema = schema.register(union);
        }
        let (connection, edge) = connection_types(model, name, members, false, &mut costs);
        schema = schema.register(connection).register(edge);
        if counted.contains(name) {
            let (connection, _) = connection_types(model, name, members, true, &mut costs);
            schema = schema.register(connection);
        }
    }
    for entity in 0..model.entities.len() {
        let object = entity_object(model, entity, &mut costs);
        schema = schema.register(match federated.directives {
            true => federation::entity_keys(model, entity, object),
            false => object,
        });
    }
    for ty in model.federation.iter().flat_map(|f| &f.types) {
        schema = schema.register(federation::external_type(ty, federated.directives));
    }
    let mut query = query_root(model, &mut costs);
    if let Some(sdl) = federated.entry_points {
        (schema, query) = federation::entry_points(model, schema, query, &mut costs, sdl);
    }
    schema = schema.register(query);
    schema = subscription::register(model, schema, |connection| {
        connection_arguments(model, connection, Arguments::Subscription)
    });
    if has_mutations {
        let (root, types) = mutation::types(model, &mut costs);
        schema = schema.register(root);
        for ty in types {
            schema = schema.register(ty);
        }
    }
    (schema, costs)
}

/// The custom scalars the model's fields use.
fn used_scalars(model: &Model) -> Vec<Scalar> {
    let mut used = BTreeSet::new();
    for field in model.entities.iter().flat_map(|e| &e.fields) {
        let name = match resolve::scalar_of(&field.ty) {
            ModelScalar::BigInt => "BigInt",
            ModelScalar::Decimal => "Decimal",
            ModelScalar::DateTime(_) => "DateTime",
            ModelScalar::Bytes => "Bytes",
            ModelScalar::Json => "JSON",
            _ => continue,
        };
        used.insert(name);
    }
    used.into_iter().filter_map(scalars::scalar).collect()
}

fn sort_order() -> Enum {
    Enum::new(SORT_ORDER)
        .description("The order of a connection's items by their sort key.")
        .item(EnumItem::new("ASC").description("Ascending: oldest or lowest first."))
        .item(EnumItem::new("DESC").description("Descending: newest or highest first."))
}

fn page_info() -> Object {
    let flag = |name: &'static str, desc: &'static str, get: fn(&PageInfo) -> bool| {
        nullability::field(name, TypeRef::named_nn(TypeRef::BOOLEAN), move |ctx| {
            FieldFuture::Value(
                ctx.parent_value
                    .downcast_ref::<PageInfo>()
                    .map(|info| FieldValue::value(get(info))),
            )
        })
        .description(desc)
    };
    let cursor = |name: &'static str, desc: &'static str, get: fn(&PageInfo) -> &Option<String>| {
        nullability::field(name, TypeRef::named(TypeRef::STRING), move |ctx| {
            FieldFuture::Value(
                ctx.parent_value
                    .downcast_ref::<PageInfo>()
                    .and_then(|info| get(info).clone())
                    .map(FieldValue::value),
            )
        })
        .description(desc)
    };
    Object::new("PageInfo")
        .description("Where a page sits in its connection, and the cursors to continue from.")
        .field(flag(
            "hasNextPage",
            "True when more items follow this page: pass `endCursor` as `after` to get them. Exact\nwhen paging with `first` (the server reads one item past the page). With `last` it is\nfalse: the server does not spend a read to find out.",
            |i| i.has_next_page,
        ))
        .field(flag(
            "hasPreviousPage",
            "True when items precede this page: pass `startCursor` as `before` to get them. Exact when\npaging with `last`; with `first` it is false.",
            |i| i.has_previous_page,
        ))
        .field(cursor(
            "startCursor",
            "The cursor to pass as `before` for the previous page: the first edge's cursor, or, when a\nbackward page ran out of its read budget, the position before everything examined.",
            |i| &i.start_cursor,
        ))
        .field(cursor(
            "endCursor",
            "The cursor to pass as `after` for the next page: the last edge's cursor, or, when a\nforward page ran out of its read budget (its edges may then be few or none), the position\nafter everything examined.",
            |i| &i.end_cursor,
        ))
}

/// `{Type}Connection` and `{Type}Edge`, for an entity or (with its `members`) a collection's
/// union.
/// The connection and edge types of node type `name`; `counted`: the connection type with
/// `totalCount` (`{name}CountedConnection`), of connections that offer it.
fn connection_types(
    model: &'static Model,
    name: &str,
    members: Option<&'static [EntityId]>,
    counted: bool,
    costs: &mut FieldCosts,
) -> (Object, Object) {
    let connection = match counted {
        true => format!("{name}CountedConnection"),
        false => format!("{name}Connection"),
    };
    let edge = format!("{name}Edge");
    costs.object(&connection, "edges", &edge);
    costs.object(&connection, "nodes", name);
    costs.object(&connection, "pageInfo", "PageInfo");
    costs.object(&edge, "node", name);
    let mut connection_type = Object::new(&connection).description(match counted {
        true => format!(
            "A page of `{name}` items: the edges with their cursors, the items alone, where the\npage sits in its connection, and how many items the connection holds."
        ),
        false => format!(
            "A page of `{name}` items: the edges with their cursors, the items alone, and where the\npage sits in its connection."
        ),
    });
    if counted {
        costs.once(&connection, "totalCount", super::limits::COUNT_COST);
        connection_type = connection_type.field(
            nullability::field("totalCount", TypeRef::named(TypeRef::INT), |ctx| {
                FieldFuture::new(async move { Ok(Some(FieldValue::value(total_count(&ctx).await?))) })
            })
            .description(
                "How many items the connection holds with these arguments (its filters and\nranges; not `first`, `after`, `last` or `before`), exact. Counted by DynamoDB only when\nselected, which reads (and bills) every item counted: null with\n`COUNT_BUDGET_EXCEEDED` when that would be more than the server allows.",
            ),
        );
    }
    let connection_type = connection_type
        .field(
            nullability::field("edges", TypeRef::named_nn_list_nn(&edge), |ctx| {
                FieldFuture::Value(ctx.parent_value.downcast_ref::<PageValue>().map(|page| {
                    FieldValue::list(page.edges.iter().map(|e| FieldValue::borrowed_any(e)))
                }))
            })
            .description("The items of this page with their cursors, in connection order."),
        )
        .field(
            nullability::field("nodes", TypeRef::named_nn_list_nn(name), move |ctx| {
                FieldFuture::Value(ctx.parent_value.downcast_ref::<PageValue>().map(|page| {
                    FieldValue::list(
                        page.edges
                            .iter()
                            .filter_map(|e| node_value(model, members, e)),
                    )
                }))
            })
            .description(
                "The items of this page without cursors: a shortcut for `edges { node }`.",
            ),
        )
        .field(
            nullability::field("pageInfo", TypeRef::named_nn("PageInfo"), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<PageValue>()
                        .map(|page| FieldValue::borrowed_any(&page.page_info)),
                )
            })
            .description("Paging state and the cursors to continue from."),
        );
    let edge_type = Object::new(&edge)
        .description("An edge in a connection.")
        .field(
            nullability::field("cursor", TypeRef::named_nn(TypeRef::STRING), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<EdgeValue>()
                        .map(|e| FieldValue::value(e.cursor.clone())),
                )
            })
            .description("A cursor for use in pagination"),
        )
        .field(
            nullability::field("node", TypeRef::named_nn(name), move |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<EdgeValue>()
                        .and_then(|e| node_value(model, members, e)),
                )
            })
            .description("The item at the end of the edge"),
        );
    (connection_type, edge_type)
}

/// `totalCount` of the page's connection: DynamoDB's count, never a partial one.
async fn total_count(ctx: &ResolverContext<'_>) -> Result<i64, ApiError> {
    let page = ctx
        .parent_value
        .try_downcast_ref::<PageValue>()
        .map_err(|_| ApiError::Internal)?;
    let count = page.count.as_ref().ok_or(ApiError::Internal)?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    match store.count(&count.spec, count.budget).await? {
        Some(n) => i64::try_from(n).map_err(|_| ApiError::Internal),
        None => Err(ApiError::CountBudgetExceeded(count.budget)),
    }
}

/// A node of a connection: the edge's item, typed by the member entity it is for a collection
/// (as the read told, or told here).
fn node_value<'a>(
    model: &'static Model,
    members: Option<&'static [EntityId]>,
    edge: &'a EdgeValue,
) -> Option<FieldValue<'a>> {
    let value = FieldValue::borrowed_any(&edge.item);
    match members {
        None => Some(value),
        Some(members) => {
            let entity = node_entity(model, members, edge)?;
            Some(value.with_type(model.entities[entity].name.as_str()))
        }
    }
}

/// The member entity of a collection's node: as the read told, or told here; `None` for an
/// item of none of them.
pub fn node_entity(model: &Model, members: &[EntityId], edge: &EdgeValue) -> Option<EntityId> {
    edge.entity
        .filter(|e| members.contains(e))
        .or_else(|| values::entity_of(model, members, &edge.item))
}

/// The object type of an entity.
fn entity_object(model: &'static Model, entity: EntityId, costs: &mut FieldCosts) -> Object {
    let e = &model.entities[entity];
    let mut object = Object::new(&e.name).implement("Node");
    if let Some(d) = &e.description {
        object = object.description(d);
    }
    object = object.field(
        nullability::field("id", TypeRef::named_nn(TypeRef::ID), move |ctx| {
            let id = item(&ctx).and_then(|item| resolve::item_id(model, entity, item));
            match id {
                Ok(id) => FieldFuture::Value(Some(FieldValue::value(id))),
                Err(err) => error(err),
            }
        })
        .description(
            "A global id: opaque, stable, and unique across all types; refetch with `node(id:)`.",
        ),
    );
    for (f, field) in e.fields.iter().enumerate() {
        let mut out = nullability::field(
            &field.name,
            field_type(model, &field.ty, field.nullable),
            move |ctx| {
                let field = &model.entities[entity].fields[f];
                let value = item(&ctx).and_then(|item| {
                    if let Some(rules) = &field.access {
                        let grant = access::grant(rules, &access::caller(&ctx));
                        if access::owns(model, entity, item, &grant) != Some(true) {
                            return Err(ApiError::Forbidden(format!(
                                "You may not see `{}.{}`.",
                                model.entities[entity].name, field.name
                            )));
                        }
                    }
                    let stored = values::field_value(model, entity, f, item);
                    values::output(model, field, stored.as_deref())
                        .map_err(|_| resolve::misfit(model, entity, field))
                });
                match value {
                    Ok(value) => FieldFuture::Value(value.map(FieldValue::value)),
                    Err(err) => error(err),
                }
            },
        );
        if let Some(d) = &field.description {
            out = out.description(d);
        }
        object = object.field(out);
    }
    for relation in &e.relations {
        let target = &model.entities[relation.target].name;
        costs.object(&e.name, &relation.name, target);
        let ty = if relation.nullable {
            TypeRef::named(target)
        } else {
            TypeRef::named_nn(target)
        };
        let mut out = nullability::field(&relation.name, ty, move |ctx| {
            FieldFuture::new(async move {
                let item = item(&ctx)?;
                let found = relations::follow(&ctx, model, entity, relation, item).await?;
                Ok(found.map(FieldValue::owned_any))
            })
        });
        if let Some(d) = &relation.description {
            out = out.description(d);
        }
        object = object.field(out);
    }
    for reference in &e.references {
        object = object.field(federation::reference_field(model, entity, reference, costs));
    }
    for connection in &e.connections {
        let site = Site {
            model,
            parent: Some(entity),
            connection,
        };
        object = object.field(connection_field(site, costs, &e.name));
    }
    object
}

/// The parent item of an entity's field.
fn item<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Item, ApiError> {
    ctx.parent_value
        .try_downcast_ref::<Item>()
        .map_err(|_| ApiError::Internal)
}

fn error<'a>(err: ApiError) -> FieldFuture<'a> {
    FieldFuture::new(async move { Err::<Option<FieldValue>, _>(err.into()) })
}

/// A connection field, on an entity or the query root.
fn connection_field(site: Site, costs: &mut FieldCosts, parent_type: &str) -> Field {
    let model = site.model;
    let connection = site.connection;
    let node = match &connection.collection {
        Some(collection) => &collection.union,
        None => &model.entities[connection.entity].name,
    };
    let ty = match connection.total_count {
        true => format!("{node}CountedConnection"),
        false => format!("{node}Connection"),
    };
    costs.connection(
        parent_type,
        &connection.name,
        &ty,
        connection.page_size.map(|(default, _)| default),
    );
    let mut field = nullability::field(&connection.name, TypeRef::named_nn(ty), move |ctx| {
        FieldFuture::new(async move {
            let parent = match site.parent {
                Some(_) => Some(item(&ctx)?),
                None => None,
            };
            let page = page_of(&ctx, site, parent).await?;
            if site.connection.collection.is_none() {
                relations::prefetch_relations(&ctx, model, site.connection.entity, &page).await?;
            }
            Ok(Some(FieldValue::owned_any(page)))
        })
    });
    if let Some(d) = &connection.description {
        field = field.description(d);
    }
    for argument in connection_arguments(model, connection, Arguments::Page) {
        field = field.argument(argument);
    }
    field
}

/// A page of a connection field: taken from what the parent lookup read ahead, or read now.
async fn page_of(
    ctx: &ResolverContext<'_>,
    site: Site,
    parent: Option<&Item>,
) -> Result<PageValue, ApiError> {
    let projection = resolve::projection(site, &ctx.field());
    if let (Some(parent_entity), Some(parent), Some(ahead)) =
        (site.parent, parent, ctx.data_opt::<PagesAhead>())
        && !ahead.is_empty()
        && let Ok(arguments) = ctx.field().arguments()
        && let Some(key) = resolve::parent_text(site.model, parent_entity, parent)
        && let Some(page) = ahead.take(site.label(), &key, &arguments, &projection)
    {
        return page;
    }
    resolve::connection_page(ctx, site, parent, ctx.args.as_index_map(), projection).await
}

fn argument(name: &str, ty: TypeRef, description: Option<&str>) -> InputValue {
    let input = InputValue::new(name, ty);
    match description {
        Some(d) => input.description(d),
        None => input,
    }
}

/// The arguments of a connection field.
/// Without `paging`, only those that choose the items (for a subscription), not `first`,
/// `after`, `last`, `before` and `order`.
/// Which field a connection's arguments are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arguments {
    /// The connection itself: every argument.
    Page,
    /// Its subscription: those that choose its items, `after` to resume from, and `order`.
    Subscription,
}

fn connection_arguments(
    model: &Model,
    connection: &Connection,
    mode: Arguments,
) -> Vec<InputValue> {
    let node = &model.entities[connection.entity];
    let paging = mode == Arguments::Page;
    let mut args = Vec::new();
    args.extend(paging.then(|| {
        argument(
            "first",
            TypeRef::named(TypeRef::INT),
            Some("How many items to return after `after`, from 0 to the maximum."),
        )
    }));
    args.push(argument(
        "after",
        TypeRef::named(TypeRef::STRING),
        Some(match mode {
            Arguments::Page => "Return items after this cursor from this same connection.",
            Arguments::Subscription => {
                "Resume from this cursor of the connection (the last edge you hold): the items \
                 after it, in `order`, come first as `ADDED`, then every change, none missed \
                 and none twice. Without it, changes from now on."
            }
        }),
    ));
    if let Read::Query {
        partition, sort, ..
    } = &connection.read
    {
        args.extend(paging.then(|| {
            argument(
                "last",
                TypeRef::named(TypeRef::INT),
                Some("How many items to return before `before`, from 0 to the maximum."),
            )
        }));
        args.extend(paging.then(|| {
            argument(
                "before",
                TypeRef::named(TypeRef::STRING),
                Some("Return items before this cursor from this same connection."),
            )
        }));
        if let PartitionFrom::Argument { argument: a, field } = &partition.from {
            let scalar = resolve::scalar_of(&node.fields[*field].ty);
            args.push(argument(
                &a.name,
                TypeRef::named_nn(scalar_name(model, scalar)),
                a.description.as_deref(),
            ));
        }
        if let Some(sort) = sort {
            for (at, (field, a)) in sort.fixed.iter().enumerate() {
                let scalar = scalar_name(model, resolve::scalar_of(&node.fields[*field].ty));
                let ty = if at < sort.required_fixed {
                    TypeRef::named_nn(scalar)
                } else {
                    TypeRef::named(scalar)
                };
                args.push(argument(&a.name, ty, a.description.as_deref()));
            }
            let scalar = resolve::scalar_of(&node.fields[sort.field].ty);
            let prefix = match sort.template {
                // The first characters of a facet's text.
                Some(_) => TypeRef::STRING,
                None => scalar_name(model, scalar),
            };
            // An id that sorts by time takes a range of times.
            let bound = match node.fields[sort.field].sortable_id() {
                Some(_) => "DateTime",
                None => scalar_name(model, scalar),
            };
            for (a, ty) in [
                (&sort.min, bound),
                (&sort.max, bound),
                (&sort.begins_with, prefix),
            ] {
                if let Some(a) = a {
                    args.push(argument(
                        &a.name,
                        TypeRef::named(ty),
                        a.description.as_deref(),
                    ));
                }
            }
        }
    }
    for filter in &connection.filters {
        let scalar = resolve::scalar_of(&node.fields[filter.field].ty);
        let ty = match filter.op {
            crate::model::FilterOp::In => TypeRef::named_nn_list(scalar_name(model, scalar)),
            crate::model::FilterOp::Exists => TypeRef::named(TypeRef::BOOLEAN),
            _ => TypeRef::named(scalar_name(model, scalar)),
        };
        args.push(argument(
            &filter.argument.name,
            ty,
            filter.argument.description.as_deref(),
        ));
    }
    if let (Some(order), Some((_, default))) = (&connection.order, order_default(connection)) {
        let description = match mode {
            Arguments::Page => order.description.clone().unwrap_or_else(|| {
                format!("`ASC` or `DESC` by the sort key; `{default}` when omitted or null.")
            }),
            Arguments::Subscription => format!(
                "Which way `after` resumes: the items after it `ASC` or `DESC` by the sort key; \
                 `{default}` when omitted or null."
            ),
        };
        args.push(
            argument(
                SORT_ORDER_ARG,
                TypeRef::named(SORT_ORDER),
                Some(&description),
            )
            .default_value(default),
        );
    }
    args
}

/// The default of a connection's `order` argument, with its name: the only argument with one.
pub fn order_default(connection: &Connection) -> Option<(Name, Value)> {
    let order = connection.order.as_ref()?;
    let default = if order.default_desc { "DESC" } else { "ASC" };
    Some((Name::new(SORT_ORDER_ARG), Value::Enum(Name::new(default))))
}

const SORT_ORDER_ARG: &str = "order";

/// `Query`: lookups, root connections, `node` and `nodes`.
fn query_root(model: &'static Model, costs: &mut FieldCosts) -> Object {
    let mut query = Object::new("Query").description("The entry points for reading data.");
    for lookup in &model.lookups {
        let entity = lookup.entity;
        let e = &model.entities[entity];
        costs.object("Query", &lookup.name, &e.name);
        let mut field = nullability::field(&lookup.name, TypeRef::named(&e.name), move |ctx| {
            FieldFuture::new(async move {
                if access::grant(&lookup.access, &access::caller(&ctx)) == Grant::Nothing {
                    return Err(access::forbidden(&format!("`Query.{}`", lookup.name)).into());
                }
                let found = match &lookup.index {
                    None => lookup::by_key(&ctx, model, entity).await?,
                    Some(index) => lookup::through_index(&ctx, model, lookup, index).await?,
                };
                Ok(found.map(FieldValue::owned_any))
            })
        });
        if let Some(d) = &lookup.description {
            field = field.description(d);
        }
        for &f in lookup.arguments(model) {
            let key = &e.fields[f];
            let scalar = resolve::scalar_of(&key.ty);
            field = field.argument(argument(
                &key.name,
                TypeRef::named_nn(scalar_name(model, scalar)),
                key.description.as_deref(),
            ));
        }
        query = query.field(field);
    }
    for connection in &model.connections {
        let site = Site {
            model,
            parent: None,
            connection,
        };
        query = query.field(connection_field(site, costs, "Query"));
    }
    if model.federation.as_ref().is_some_and(|f| !f.node) {
        return query;
    }
    costs.object("Query", "node", "Node");
    costs.list("Query", "nodes", "Node", "ids");
    query
        .field(
            nullability::field("node", TypeRef::named("Node"), move |ctx| {
                FieldFuture::new(async move {
                    let id = ctx.args.try_get("id")?.string()?.to_owned();
                    let mut found = load_nodes(&ctx, model, std::slice::from_ref(&id)).await?;
                    Ok(found.pop().flatten())
                })
            })
            .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
            .description("Refetches any object by its global `id`. Null when the object no longer exists; a\nmalformed id is an error (`BAD_USER_INPUT`)."),
        )
        .field(
            nullability::field("nodes", TypeRef::named_list_nn("Node"), move |ctx| {
                FieldFuture::new(async move {
                    let ids = ctx
                        .args
                        .try_get("ids")?
                        .list()?
                        .iter()
                        .map(|id| id.string().map(str::to_owned))
                        .collect::<Result<Vec<_>, _>>()?;
                    if ids.len() > 100 {
                        return Err(ApiError::BadUserInput(
                            "`ids` may hold at most 100 ids.".into(),
                        )
                        .into());
                    }
                    let found = load_nodes(&ctx, model, &ids).await?;
                    Ok(Some(nullability::list_with_nulls(&ctx, found)))
                })
            })
            .argument(InputValue::new("ids", TypeRef::named_nn_list_nn(TypeRef::ID)))
            .description("Refetches several objects by global id, in the order given, with null for those that no\nlonger exist. At most 100 ids; all are read together."),
        )
}

/// Loads the objects global ids name, in order, with `None` for those that do not exist.
async fn load_nodes<'a>(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    ids: &[String],
) -> Result<Vec<Option<FieldValue<'a>>>, ApiError> {
    let keys = ids
        .iter()
        .map(|id| {
            parse_node_id(model, id)
                .map(Some)
                .ok_or_else(|| ApiError::BadUserInput("The id is not valid.".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    node::load(ctx, model, keys).await
}
