//! Subscriptions: one field for each connection that declares one, delivering the connection's
//! changes as the table's stream records them, whoever wrote them.
//!
//! A subscription takes the arguments that choose the connection's items (for a connection of an
//! entity, also the parent's global id) and plans the same read a page would make. Each change
//! is then judged twice, in memory: does the connection hold the item before the change, and
//! after it ([`ReadSpec::holds`], with the entity's read rules for the caller)? After it: `ADDED`
//! or `UPDATED`, with an edge whose cursor is sealed for the connection, as a page's would be;
//! before it only: `REMOVED`, with the node's id. Changes the connection never holds are skipped.
//! When records were lost (trimmed, or the reader fell behind) the subscription ends with a
//! coded error: the client pages again.

use std::{collections::HashMap, sync::Arc};

use async_graphql::{
    Name, Value,
    dynamic::{
        FieldFuture, FieldValue, InputValue, Object, ResolverContext, SchemaBuilder, Subscription,
        SubscriptionField, SubscriptionFieldFuture, TypeRef,
    },
    futures_util::{StreamExt, stream, stream::BoxStream},
};

use super::{
    access,
    change::{self, Kind},
    connection::EdgeValue,
    error::{ApiError, ApiResult},
    live,
    node::parse_node_id,
    node_subscription, nullability,
    resolve::{self, Args, Env, Site},
    resume::{Place, Seam},
    values,
};
use crate::{
    auth::Caller,
    cursor::{Binding, CursorCodec, Key},
    dynamo::{Item, ReadSpec, Store, Tables},
    model::{Connection, EntityId, Model, Read},
    pagination::PageLimits,
    stream::{Change, Position, Recognise, Route, Streams, Subscription as Changes},
};

/// One change as a `…Change` object resolves it.
struct ChangeValue {
    kind: Kind,
    id: String,
    edge: Option<EdgeValue>,
    /// Where the change stands in the table's changes, sealed for the connection.
    position: Option<String>,
}

/// A change as a subscriber's judge makes it between executions; the execution that sends it
/// seals its cursor (it holds the codec).
struct Judged {
    kind: Kind,
    id: String,
    /// The item as it is now, its entity and its key in the connection, unless removed.
    edge: Option<(Item, EntityId, Key)>,
    binding: Arc<Binding>,
    /// The subscription's place in the table's changes after it.
    position: Option<Arc<Position>>,
}

impl Judged {
    fn seal(self, codec: &CursorCodec) -> ChangeValue {
        let binding = &self.binding;
        ChangeValue {
            kind: self.kind,
            position: self
                .position
                .map(|place| codec.seal_bytes(&place.to_bytes(), binding)),
            id: self.id,
            edge: self.edge.map(|(item, entity, key)| EdgeValue {
                cursor: codec.encode(&key, binding),
                item,
                entity: Some(entity),
            }),
        }
    }
}

/// Every connection of the model with a subscription, with where it hangs.
fn subscribed(model: &'static Model) -> impl Iterator<Item = Site> {
    let root = model.connections.iter().map(move |connection| Site {
        model,
        parent: None,
        connection,
    });
    let nested = model
        .entities
        .iter()
        .enumerate()
        .flat_map(move |(e, entity)| {
            entity.connections.iter().map(move |connection| Site {
                model,
                parent: Some(e),
                connection,
            })
        });
    root.chain(nested)
        .filter(|site| site.connection.subscription.is_some())
}

/// Whether the model offers any subscription (the schema then has a `Subscription` root): a
/// connection that declares one, or a table whose stream `nodeChanged` can follow.
pub fn any(model: &'static Model) -> bool {
    subscribed(model).next().is_some() || node_subscription::any_followed(model)
}

/// Which items of each table (by full name) are an entity of the model, by the one entity rule
/// every read applies: what a table's stream reader passes on to subscribers.
pub fn recogniser(model: &'static Model, tables: &Tables) -> Recognise {
    let mut by_table: HashMap<String, Vec<EntityId>> = HashMap::new();
    for (e, entity) in model.entities.iter().enumerate() {
        by_table
            .entry(tables.name(entity.table).to_owned())
            .or_default()
            .push(e);
    }
    Arc::new(move |table: &str, item: &Item| {
        by_table
            .get(table)
            .is_some_and(|entities| values::entity_of(model, entities, item).is_some())
    })
}

/// The type name of a connection's nodes: its entity's, or its collection's union.
fn node_type(site: Site) -> &'static str {
    match &site.connection.collection {
        Some(collection) => &collection.union,
        None => &site.model.entities[site.connection.entity].name,
    }
}

/// Registers the `Subscription` root, `ChangeKind` and each `…Change` type; `choosing` gives a
/// connection's arguments that choose its items (not the paging ones).
pub fn register(
    model: &'static Model,
    mut schema: SchemaBuilder,
    choosing: impl Fn(&Connection) -> Vec<InputValue>,
) -> SchemaBuilder {
    if !any(model) {
        return schema;
    }
    schema = schema
        .register(change::kind_enum())
        .register(node_subscription::change_type(model));
    let mut root = Subscription::new("Subscription")
        .description(
            "Changes as they happen, whoever writes the tables (this API, other code, the \
             console), in the order each item changed.",
        )
        .field(node_subscription::field(model));
    let mut typed = std::collections::BTreeSet::new();
    for site in subscribed(model) {
        let node = node_type(site);
        if typed.insert(node) {
            schema = schema.register(change_type(node));
        }
        root = root.field(field(site, node, choosing(site.connection)));
    }
    schema.register(root)
}

/// `{Node}Change`: a change to a connection of `node` items.
fn change_type(node: &str) -> Object {
    let edge = format!("{node}Edge");
    Object::new(format!("{node}Change"))
        .description(format!(
            "A change to a connection of `{node}` items: what happened, the node's id, and (unless\nit was removed) its edge, with a cursor valid in that connection."
        ))
        .field(change::kind_field::<ChangeValue>(|c| c.kind))
        .field(change::position_field::<ChangeValue>(|c| c.position.as_deref()))
        .field(change::id_field::<ChangeValue>(
            |c| &c.id,
            "The node's global id: for `REMOVED`, the node to take out of the connection.",
        ))
        .field(
            nullability::field("removedId", TypeRef::named(TypeRef::ID), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<ChangeValue>()
                        .filter(|c| c.kind == Kind::Removed)
                        .map(|c| FieldValue::value(c.id.clone())),
                )
            })
            .description(
                "The node's global id when it was `REMOVED`; null otherwise. For Relay's\n`@deleteEdge`, beside `edge @appendEdge`: each takes effect only when it is not null.",
            ),
        )
        .field(
            nullability::field("edge", TypeRef::named(edge), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<ChangeValue>()
                        .and_then(|c| c.edge.as_ref())
                        .map(|edge: &EdgeValue| FieldValue::borrowed_any(edge)),
                )
            })
            .description(
                "The node and its cursor in the connection, for `ADDED` and `UPDATED`; null for\n`REMOVED`. Pass the cursor as `after` to page on from this node.",
            ),
        )
}

/// The name of the argument that names a nested connection's parent.
fn parent_argument(model: &Model, parent: EntityId) -> String {
    let name = &model.entities[parent].name;
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The subscription field of a connection.
fn field(site: Site, node: &str, arguments: Vec<InputValue>) -> SubscriptionField {
    let model = site.model;
    let connection = site.connection;
    let declared = connection
        .subscription
        .as_ref()
        .expect("only subscribed connections");
    let mut field = SubscriptionField::new(
        &declared.name,
        TypeRef::named_nn(format!("{node}Change")),
        move |ctx| {
            SubscriptionFieldFuture::new(async move {
                if let Some(judged) = live::preset::<Judged>(&ctx) {
                    let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
                    let value = judged.map(|judged| FieldValue::owned_any(judged.seal(codec)));
                    return Ok(stream::once(std::future::ready(value)).boxed());
                }
                changes(&ctx, site).await
            })
        },
    );
    let description = declared.description.clone().unwrap_or_else(|| {
        format!(
            "The changes of `{}` as they happen: each item that enters, changes in or leaves it.",
            connection.label
        )
    });
    field = field.description(description);
    if let Some(parent) = site.parent {
        field = field.argument(
            InputValue::new(
                parent_argument(model, parent),
                TypeRef::named_nn(TypeRef::ID),
            )
            .description(format!(
                "The global id (`id`) of the `{}` whose `{}` to follow.",
                model.entities[parent].name, connection.name
            )),
        );
    }
    for argument in arguments {
        field = field.argument(argument);
    }
    field.argument(
        InputValue::new(change::RESUME_FROM, TypeRef::named(TypeRef::STRING)).description(
            "The `position` of the last change received before this subscription's predecessor\n\
             ended: every change after it is sent first (to items anywhere in the connection, none\n\
             twice), then the live ones. Without it, changes come from now on (and, with\n\
             `after`, the items after that cursor first).",
        ),
    )
}

/// What one subscriber holds: the read its connection would make, and how to judge changes.
struct Follower {
    site: Site,
    spec: ReadSpec<'static>,
    binding: Arc<Binding>,
    caller: Caller,
    /// For a subscription resumed from a cursor, until the stream is past its catch-up read.
    seam: Option<Box<Seam>>,
}

/// Starts following a connection: checks the arguments (and the parent) and opens `after` as a
/// page would, and joins the table's stream reader, whose next round's end is the
/// subscription's place (every change after it is delivered); for `after`, waits for that place,
/// then reads the items that follow the cursor, which are sent first (see [`Seam`]).
async fn changes<'a>(
    ctx: &ResolverContext<'a>,
    site: Site,
) -> async_graphql::Result<BoxStream<'a, async_graphql::Result<FieldValue<'a>>>> {
    let store: &'a Store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let codec: &'a CursorCodec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let limits: &PageLimits = ctx.data::<PageLimits>().map_err(|_| ApiError::Internal)?;
    let streams: &'a Streams = ctx.data::<Streams>().map_err(|_| {
        ApiError::BadUserInput(
            "Subscriptions are served by `dynarelay serve` over server-sent events \
             (`Accept: text/event-stream`); this request cannot hold one open."
                .to_owned(),
        )
    })?;
    let caller = access::caller(ctx).into_owned();
    let seat = change::seat(streams, &caller)?;
    let mut args: Args = ctx.args.as_index_map().clone();
    let parent = match site.parent {
        Some(parent) => Some(parent_item(store, site.model, parent, &args, &caller).await?),
        None => None,
    };
    let (spec, binding) = resolve::read_spec(site, parent.as_ref(), &args, store, &caller)?;
    // A position of this connection's changes, opened before anything is read.
    let since = match args.get(change::RESUME_FROM) {
        Some(Value::String(sealed)) => Some(change::open_position(codec, sealed, &binding)?),
        _ => None,
    };
    let env = Env {
        store,
        codec,
        limits,
        caller: &caller,
    };
    // The catch-up is one page of the largest size: its cursor is opened before anything is
    // read, and a client further behind pages on first.
    let catch_up = match args.get("after") {
        // Resumed from a position, the client holds what it was sent: the changes since are
        // all it misses.
        Some(Value::String(_)) if since.is_none() => {
            let max = site
                .connection
                .page_size
                .map_or(limits.max_size(), |(_, max)| max);
            args.insert(Name::new("first"), Value::from(max));
            // Read with strong consistency where the table has it (the table and its local
            // indexes): a write whose stream record the reader passed over before this
            // subscription's place is then in the read. A global index's reads are eventually
            // consistent: a write moments before the subscription may be in neither.
            let table = &site.model.tables[site.model.entities[site.connection.entity].table];
            let consistent = site
                .connection
                .index
                .is_none_or(|index| table.indexes[index].local);
            let page = resolve::prepare_page(env, site, parent.as_ref(), &args, None)
                .map_err(|refused| refused.into_error(store.metrics(), site.label()))?
                .consistent(consistent);
            Some((page, max))
        }
        _ => None,
    };
    let entity = &site.model.entities[site.connection.entity];
    let table = store.tables().name(entity.table);
    // Only changes of the connection's partition (or, for a Scan, every change) reach it.
    let route = Route::of_read(&spec);
    let mut subscription = match since {
        Some(since) => streams.resume_from(table, &route, since),
        None => streams.subscribe_to(table, &route),
    };
    // Only a catch-up waits here for the subscription's place (the end of the reader's next
    // round), which its read must follow; any other subscription takes it while it waits for
    // its first change (`Subscription::next`), the same place. No client can tell the two
    // apart, but memory can: a wait here would hold this execution's state (the request, its
    // copy of the document, the resolvers' futures) for a reader's round, for every
    // subscription that arrives meanwhile, and after a storm of them (every client of a
    // restarted instance back at once) the allocator keeps the high-water mark.
    if catch_up.is_some() {
        subscription.ready().await;
    }
    let mut follower = Follower {
        site,
        spec,
        binding: Arc::new(binding),
        caller: caller.clone(),
        seam: None,
    };
    let mut caught_up = Vec::new();
    if let Some((page, max)) = catch_up {
        let place = place(site, &page);
        let page = resolve::read_prepared(env, page).await?;
        if page.page_info.has_next_page {
            return Err(ApiError::BadUserInput(format!(
                "More than {max} items follow `after`: page on with `after` first, then \
                 subscribe with the last cursor."
            ))
            .into());
        }
        let key = site.model.tables[entity.table].key;
        let items = page.edges.iter().map(|edge| &edge.item);
        follower.seam = Some(Box::new(Seam::new(key, items, place, subscription.ask())));
        // Each holds the subscription's place: where its live changes start.
        let position = subscription
            .position()
            .map(|place| codec.seal_bytes(&place.to_bytes(), &follower.binding));
        caught_up = page
            .edges
            .into_iter()
            .filter_map(|edge| follower.caught_up(edge, position.clone()))
            .collect();
    }
    let following = live::Following {
        seat,
        caught_up,
        expires: caller.expires(),
    };
    live::hand_off(ctx, following, subscription, move |change, changes| {
        follower.judge(change, changes)
    })
}

/// Where a resumed page's cursor stands in the order of its connection's read (see [`Place`]):
/// `None` for a Scan, or a read with no sort key.
fn place(site: Site, page: &resolve::PreparedPage<'_>) -> Option<Place> {
    let (start, descending) = page.start();
    if matches!(site.connection.read, Read::Scan) {
        return None;
    }
    let table = site.model.table_of(site.connection.entity);
    let (key, unique) = match site.connection.index {
        Some(index) => (table.indexes[index].key, false),
        None => (table.key, true),
    };
    let attribute = key.get(1)?.name;
    Some(Place {
        attribute,
        value: start?.get(attribute)?.to_attribute_value(),
        descending,
        unique,
    })
}

impl Follower {
    /// An item of the catch-up page, as an `ADDED` change.
    fn caught_up(&self, edge: EdgeValue, position: Option<String>) -> Option<ChangeValue> {
        let entity = match edge.entity {
            Some(entity) => entity,
            None => self
                .spec
                .holds(&edge.item)?
                .map_or(self.site.connection.entity, |kind| kind as EntityId),
        };
        Some(ChangeValue {
            kind: Kind::Added,
            id: resolve::item_id(self.site.model, entity, &edge.item).ok()?,
            edge: Some(EdgeValue {
                entity: Some(entity),
                ..edge
            }),
            position,
        })
    }

    /// The change as the connection sees it, or `None` when it never holds the item (or, while
    /// a resumed subscription's seam lasts, when the client already has it or never had it).
    fn judge(&mut self, change: &Change, changes: &Changes) -> Option<Judged> {
        let model = self.site.model;
        let held = |image: Option<&Item>| -> Option<EntityId> {
            let item = image?;
            let entity = self
                .spec
                .holds(item)?
                .map_or(self.site.connection.entity, |kind| kind as EntityId);
            access::may_see(model, entity, item, &self.caller).then_some(entity)
        };
        let before = held(change.old.as_ref());
        let after = held(change.new.as_ref());
        // What the client holds before the change: what the connection held, unless the seam
        // of a resumed subscription knows better.
        let holds = match &mut self.seam {
            Some(seam) if !seam.over(changes) => {
                seam.holds(change, before.is_some(), after.is_some())?
            }
            _ => {
                self.seam = None;
                before.is_some()
            }
        };
        match (holds, after, &change.new, &change.old) {
            (holds, Some(entity), Some(item), _) => {
                let key = Key::from_item(item, self.spec.shape).ok()?;
                Some(Judged {
                    kind: Kind::of(holds, true)?,
                    id: resolve::item_id(model, entity, item).ok()?,
                    edge: Some((item.clone(), entity, key)),
                    binding: Arc::clone(&self.binding),
                    position: changes.position(),
                })
            }
            (true, None, _, Some(item)) => {
                // The client holds the item, as the connection held it.
                let entity = before.or_else(|| {
                    let kind = self.spec.holds(item)?;
                    Some(kind.map_or(self.site.connection.entity, |kind| kind as EntityId))
                })?;
                Some(Judged {
                    kind: Kind::Removed,
                    id: resolve::item_id(model, entity, item).ok()?,
                    edge: None,
                    binding: Arc::clone(&self.binding),
                    position: changes.position(),
                })
            }
            _ => None,
        }
    }
}

/// The parent item a nested connection's subscription names by global id: one the caller may
/// see, or a coded error that does not say whether it exists.
async fn parent_item(
    store: &Store,
    model: &Model,
    parent: EntityId,
    args: &Args,
    caller: &Caller,
) -> ApiResult<Item> {
    let name = parent_argument(model, parent);
    let entity = &model.entities[parent];
    let not_found =
        || ApiError::BadUserInput(format!("`{name}` names no `{}` you may see.", entity.name));
    let Some(Value::String(id)) = args.get(name.as_str()) else {
        return Err(not_found());
    };
    let (found, key) = parse_node_id(model, id).ok_or_else(not_found)?;
    if found != parent {
        return Err(not_found());
    }
    let item = store.get(entity.table, &key).await?.ok_or_else(not_found)?;
    if !access::may_see(model, parent, &item, caller) {
        return Err(not_found());
    }
    Ok(item)
}
