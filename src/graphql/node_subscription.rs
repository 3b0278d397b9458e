//! `nodeChanged(id:)`: the changes of one node, of any type whose table has a stream of old and
//! new images, as they happen.
//!
//! Each change of the table whose key is the node's is judged twice: is the old image, and is
//! the new one, an item of the node's entity that the caller may see? Then `ADDED` (created, or
//! now visible), `UPDATED` or `REMOVED` (deleted, or no longer visible), with the node as it is
//! now. A node that does not exist yet, or that the caller may not see, may be followed: nothing
//! tells it apart from a missing one, as with `node(id:)`.
//!
//! Each change carries a `position`, sealed for the node, from which a subscription resumes
//! (`resumeFrom`) as a connection's does.

use std::sync::Arc;

use async_graphql::{
    dynamic::{
        FieldFuture, FieldValue, InputValue, Object, SubscriptionField, SubscriptionFieldFuture,
        TypeRef,
    },
    futures_util::{StreamExt, stream, stream::BoxStream},
};

use super::{
    access,
    change::{self, Kind},
    error::ApiError,
    live,
    node::parse_node_id,
    nullability, resolve, values,
};
use crate::{
    auth::Caller,
    cursor::{Binding, CursorCodec, Key},
    dynamo::{Item, Store},
    model::{EntityId, Model, StreamView},
    stream::{Change, Position, Route, Streams, Subscription},
};

/// The type of a node's change.
const NODE_CHANGE: &str = "NodeChange";

/// Whether some table's stream holds old and new images, so that `nodeChanged` can follow its
/// items.
pub fn any_followed(model: &Model) -> bool {
    model
        .tables
        .iter()
        .any(|t| t.stream == Some(StreamView::NewAndOldImages))
}

/// One change of a node.
struct NodeChangeValue {
    kind: Kind,
    id: String,
    /// The item as it is now and its entity, unless removed.
    node: Option<(Item, EntityId)>,
    /// Where the change stands in the table's changes, sealed for the node.
    position: Option<String>,
}

/// A change as a follower's judge makes it between executions; the execution that sends it
/// seals its position (it holds the codec).
struct Judged {
    value: NodeChangeValue,
    binding: Arc<Binding>,
    /// The subscription's place in the table's changes after it.
    position: Option<Arc<Position>>,
}

impl Judged {
    fn seal(self, codec: &CursorCodec) -> NodeChangeValue {
        NodeChangeValue {
            position: self
                .position
                .map(|place| codec.seal_bytes(&place.to_bytes(), &self.binding)),
            ..self.value
        }
    }
}

/// What positions of `id`'s changes are sealed for: the node, by its global id.
fn binding(table: &str, id: &str) -> Binding {
    Binding::builder("nodeChanged", table, None)
        .argument("id", Some(id))
        .finish()
}

/// `NodeChange`.
pub fn change_type(model: &'static Model) -> Object {
    Object::new(NODE_CHANGE)
        .description("A change of one node: what happened, its id, and (unless it was removed) the node as it is now.")
        .field(change::kind_field::<NodeChangeValue>(|c| c.kind))
        .field(change::id_field::<NodeChangeValue>(
            |c| &c.id,
            "The node's global id.",
        ))
        .field(
            nullability::field("node", TypeRef::named("Node"), move |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<NodeChangeValue>()
                        .and_then(|c| c.node.as_ref())
                        .map(|(item, entity)| {
                            FieldValue::borrowed_any(item)
                                .with_type(model.entities[*entity].name.as_str())
                        }),
                )
            })
            .description("The node as it is now; null when it was removed."),
        )
        .field(change::position_field::<NodeChangeValue>(|c| {
            c.position.as_deref()
        }))
}

/// `nodeChanged(id: ID!): NodeChange!`.
pub fn field(model: &'static Model) -> SubscriptionField {
    SubscriptionField::new("nodeChanged", TypeRef::named_nn(NODE_CHANGE), move |ctx| {
        SubscriptionFieldFuture::new(async move {
            if let Some(judged) = live::preset::<Judged>(&ctx) {
                let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
                let value = judged.map(|judged| FieldValue::owned_any(judged.seal(codec)));
                return Ok(stream::once(std::future::ready(value)).boxed());
            }
            changes(&ctx, model).await
        })
    })
    .description(
        "The changes of one node as they happen, whoever makes them: `UPDATED` with the node as it \
         is now, `REMOVED` when it is deleted (or you may no longer see it), `ADDED` when it is \
         created (or you may now see it). For nodes of types whose table has a stream of old and \
         new images.",
    )
    .argument(
        InputValue::new("id", TypeRef::named_nn(TypeRef::ID)).description("The node's global id."),
    )
    .argument(
        InputValue::new(change::RESUME_FROM, TypeRef::named(TypeRef::STRING)).description(
            "The `position` of the last change received before this subscription's predecessor\n\
             ended: every change of the node after it is sent first, none twice, then the live\n\
             ones. Without it, changes come from now on.",
        ),
    )
}

/// Starts following a node: checks its id and its table's stream, and waits until the table's
/// reader reads the stream's end.
async fn changes<'a>(
    ctx: &async_graphql::dynamic::ResolverContext<'a>,
    model: &'static Model,
) -> async_graphql::Result<BoxStream<'a, async_graphql::Result<FieldValue<'a>>>> {
    let store: &'a Store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let codec: &CursorCodec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let streams: &'a Streams = ctx.data::<Streams>().map_err(|_| ApiError::Internal)?;
    let caller = access::caller(ctx).into_owned();
    let seat = change::seat(streams, &caller)?;
    let id = match ctx.args.get("id").map(|v| v.string()) {
        Some(Ok(id)) => id.to_owned(),
        _ => return Err(ApiError::BadUserInput("`id` must be a string.".to_owned()).into()),
    };
    let (entity, key) = parse_node_id(model, &id)
        .ok_or_else(|| ApiError::BadUserInput("`id` is not a node id.".to_owned()))?;
    let table = &model.tables[model.entities[entity].table];
    let table_name = store.tables().name(model.entities[entity].table);
    let binding = binding(table_name, &id);
    // A position of this node's changes, opened before anything is read.
    let since = match ctx
        .args
        .get(change::RESUME_FROM)
        .filter(|v| !v.is_null())
        .map(|v| v.string())
    {
        None => None,
        Some(Ok(sealed)) => Some(change::open_position(codec, sealed, &binding)?),
        Some(Err(_)) => {
            return Err(ApiError::BadUserInput("`resumeFrom` must be a string.".to_owned()).into());
        }
    };
    if table.stream != Some(StreamView::NewAndOldImages) {
        return Err(ApiError::BadUserInput(format!(
            "Changes of `{}` nodes cannot be followed: their table has no stream of old and new \
             images.",
            model.entities[entity].name
        ))
        .into());
    }
    // Only changes of the node's own item reach it.
    let route = Route::Item(key.to_attribute_map());
    let subscription = match since {
        Some(since) => streams.resume_from(table_name, &route, since),
        None => streams.subscribe_to(table_name, &route),
    };
    // Its place is taken while it waits for its first change (see `subscription::changes`).
    let expires = caller.expires();
    let follower = Follower {
        model,
        entity,
        key,
        id,
        caller,
        binding: Arc::new(binding),
    };
    live::hand_off(
        ctx,
        live::Following::<NodeChangeValue> {
            seat,
            caught_up: Vec::new(),
            expires,
        },
        subscription,
        move |change, changes| follower.judge(change, changes),
    )
}

/// One subscriber of a node.
struct Follower {
    model: &'static Model,
    entity: EntityId,
    key: Key,
    id: String,
    caller: Caller,
    binding: Arc<Binding>,
}

impl Follower {
    fn judge<'c>(&self, change: &'c Change, changes: &Subscription) -> Option<Judged> {
        let model = self.model;
        if Key::from_item(&change.keys, self.key.shape()).ok()? != self.key {
            return None;
        }
        // An image of this node: an item of its entity (a shared table holds others under
        // other keys, but the entity rule decides) that the caller may see.
        let seen = |image: Option<&'c Item>| -> Option<&'c Item> {
            image.filter(|item| {
                values::entity_of(model, &[self.entity], item) == Some(self.entity)
                    && access::may_see(model, self.entity, item, &self.caller)
            })
        };
        let (before, after) = (seen(change.old.as_ref()), seen(change.new.as_ref()));
        let kind = Kind::of(before.is_some(), after.is_some())?;
        // The id stays the one followed; `resolve::item_id` gives it for the item too.
        debug_assert!(after.is_none_or(|item| {
            resolve::item_id(model, self.entity, item).ok().as_deref() == Some(self.id.as_str())
        }));
        Some(Judged {
            value: NodeChangeValue {
                kind,
                id: self.id.clone(),
                node: after.map(|item| (item.clone(), self.entity)),
                position: None,
            },
            binding: Arc::clone(&self.binding),
            position: changes.position(),
        })
    }
}
