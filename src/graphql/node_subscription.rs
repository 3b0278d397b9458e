//! `nodeChanged(id:)`: the changes of one node, of any type whose table has a stream of old and
//! new images, as they happen.
//!
//! Each change of the table whose key is the node's is judged twice: is the old image, and is
//! the new one, an item of the node's entity that the caller may see? Then `ADDED` (created, or
//! now visible), `UPDATED` or `REMOVED` (deleted, or no longer visible), with the node as it is
//! now. A node that does not exist yet, or that the caller may not see, may be followed: nothing
//! tells it apart from a missing one, as with `node(id:)`.

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
    cursor::Key,
    dynamo::{Item, Store},
    model::{EntityId, Model, StreamView},
    stream::{Change, Route, Streams},
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
}

/// `nodeChanged(id: ID!): NodeChange!`.
pub fn field(model: &'static Model) -> SubscriptionField {
    SubscriptionField::new("nodeChanged", TypeRef::named_nn(NODE_CHANGE), move |ctx| {
        SubscriptionFieldFuture::new(async move {
            if let Some(sent) = live::preset::<NodeChangeValue>(&ctx) {
                let value = sent.map(|value| FieldValue::boxed_any(value));
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
}

/// Starts following a node: checks its id and its table's stream, and waits until the table's
/// reader reads the stream's end.
async fn changes<'a>(
    ctx: &async_graphql::dynamic::ResolverContext<'a>,
    model: &'static Model,
) -> async_graphql::Result<BoxStream<'a, async_graphql::Result<FieldValue<'a>>>> {
    let store: &'a Store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
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
    if table.stream != Some(StreamView::NewAndOldImages) {
        return Err(ApiError::BadUserInput(format!(
            "Changes of `{}` nodes cannot be followed: their table has no stream of old and new \
             images.",
            model.entities[entity].name
        ))
        .into());
    }
    // Only changes of the node's own item reach it.
    let mut subscription = streams.subscribe_to(
        store.tables().name(model.entities[entity].table),
        &Route::Item(key.to_attribute_map()),
    );
    subscription.ready().await;
    let expires = caller.expires();
    let follower = Follower {
        model,
        entity,
        key,
        id,
        caller,
    };
    live::hand_off(
        ctx,
        live::Following::<NodeChangeValue> {
            seat,
            caught_up: Vec::new(),
            expires,
        },
        subscription,
        move |change, _| follower.judge(change),
    )
}

/// One subscriber of a node.
struct Follower {
    model: &'static Model,
    entity: EntityId,
    key: Key,
    id: String,
    caller: Caller,
}

impl Follower {
    fn judge<'c>(&self, change: &'c Change) -> Option<NodeChangeValue> {
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
        Some(NodeChangeValue {
            kind,
            id: self.id.clone(),
            node: after.map(|item| (item.clone(), self.entity)),
        })
    }
}
