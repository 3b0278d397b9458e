//! What subscriptions share: the kind of a change (`ChangeKind`), judged from an item's old and
//! new image, and the error that ends a subscription whose changes were lost.

use std::any::Any;

use async_graphql::{
    ErrorExtensions, Value,
    dynamic::{Enum, EnumItem, Field, FieldFuture, FieldValue, TypeRef},
};

use super::{
    error::{ApiError, UNAUTHENTICATED},
    nullability,
};
use crate::{
    auth::Caller,
    cursor::{Binding, CursorCodec},
    stream::{Full, Position, Seat, Streams, Unfollowable},
};

/// The enum of what happened to an item.
pub const CHANGE_KIND: &str = "ChangeKind";
/// The code of the error that refuses a subscription past a cap.
const TOO_MANY_SUBSCRIPTIONS: &str = "TOO_MANY_SUBSCRIPTIONS";
/// The code of the error that ends a subscription whose changes were lost.
const CHANGES_LOST: &str = "CHANGES_LOST";

/// What happened to an item in what a subscription follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// It entered (was created, changed to match, became visible).
    Added,
    /// It changed and is still in.
    Updated,
    /// It left (was deleted, changed not to match, became invisible).
    Removed,
}

impl Kind {
    /// Judged from whether the item was in before the change and is after it; `None` when it
    /// is in neither.
    pub fn of(before: bool, after: bool) -> Option<Self> {
        match (before, after) {
            (false, true) => Some(Self::Added),
            (true, true) => Some(Self::Updated),
            (true, false) => Some(Self::Removed),
            (false, false) => None,
        }
    }

    /// Its enum value.
    pub fn value(self) -> Value {
        Value::Enum(async_graphql::Name::new(match self {
            Self::Added => "ADDED",
            Self::Updated => "UPDATED",
            Self::Removed => "REMOVED",
        }))
    }
}

/// `ChangeKind`.
pub fn kind_enum() -> Enum {
    Enum::new(CHANGE_KIND)
        .description("What happened to an item that a subscription follows.")
        .item(EnumItem::new("ADDED").description(
            "The item entered what the subscription follows (it was created, or changed to match, \
             or became visible to you): `edge` or `node` holds it.",
        ))
        .item(EnumItem::new("UPDATED").description(
            "The item changed and is still followed: `edge` or `node` holds it as it is now.",
        ))
        .item(EnumItem::new("REMOVED").description(
            "The item left (it was deleted, or changed so that it no longer matches, or you may no \
             longer see it): remove the node with this `id`.",
        ))
}

/// The error that ends a subscription whose changes were lost before they could be sent.
pub fn changes_lost() -> async_graphql::Error {
    async_graphql::Error::new(
        "Changes were lost before they could be sent: subscribe again with `resumeFrom` set to the \
         `position` of the last change you received, and they are sent again.",
    )
    .extend_with(|_, ext| ext.set("code", CHANGES_LOST))
}

/// The code of the error that ends a subscription resumed from a position the table's stream no
/// longer holds the changes after.
const POSITION_EXPIRED: &str = "POSITION_EXPIRED";

/// The error that ends a subscription resumed from a position the table's stream no longer
/// holds the changes after (it keeps them 24 hours; a stream disabled and enabled again starts
/// anew): only reading the connection again tells what changed.
pub fn position_expired() -> async_graphql::Error {
    async_graphql::Error::new(
        "The changes after `resumeFrom` are no longer kept (a table's stream keeps them 24 hours, \
         and a new stream starts without them): read the connection again (for `nodeChanged`, \
         the node), then subscribe with its last cursor.",
    )
    .extend_with(|_, ext| ext.set("code", POSITION_EXPIRED))
}

/// The argument that resumes a subscription from a change's position.
pub const RESUME_FROM: &str = "resumeFrom";

/// The position a subscription resumes from: its `resumeFrom` argument, `sealed` for
/// `binding` (the connection's, or the node's), opened before anything is read.
pub fn open_position(
    codec: &CursorCodec,
    sealed: &str,
    binding: &Binding,
) -> Result<Position, ApiError> {
    codec
        .open_bytes(sealed, binding)
        .ok()
        .and_then(|bytes| Position::from_bytes(&bytes))
        .ok_or_else(|| {
            ApiError::BadUserInput(
                "`resumeFrom` is not a position of this subscription's changes.".to_owned(),
            )
        })
}

/// The `position` field of a change object whose value is a `T`.
pub fn position_field<T: Any + Send + Sync>(position: fn(&T) -> Option<&str>) -> Field {
    nullability::field("position", TypeRef::named(TypeRef::STRING), move |ctx| {
        FieldFuture::Value(
            ctx.parent_value
                .downcast_ref::<T>()
                .and_then(position)
                .map(|p| FieldValue::value(p.to_owned())),
        )
    })
    .description(
        "Where this change stands in the table's changes. Keep the last one you receive: when\n\
         the subscription ends (`CHANGES_LOST`, a server shutting down, a dropped connection),\n\
         subscribe again with it as `resumeFrom` and every change after it is sent (for a\n\
         connection, to items anywhere in it), none twice. Null only when the server cannot\n\
         place the change (a change relay older than this server).",
    )
}

/// The code of the error that ends a subscription the server cannot serve (as the Lambda
/// function answers every subscription).
const SUBSCRIPTIONS_UNAVAILABLE: &str = "SUBSCRIPTIONS_UNAVAILABLE";

/// The error that ends a subscription whose table's changes cannot be followed: a lasting
/// condition of the server's tables, which subscribing again does not change.
pub fn unfollowable(why: &Unfollowable) -> async_graphql::Error {
    let reason = match why {
        Unfollowable::NoStream => "its table has no stream".to_owned(),
        Unfollowable::WithoutImages(view) => {
            format!("its table's stream holds {view}, not the item before and after each change")
        }
    };
    async_graphql::Error::new(format!(
        "This subscription cannot be served: {reason}. The server's tables must change, so \
         subscribing again will not help."
    ))
    .extend_with(|_, ext| ext.set("code", SUBSCRIPTIONS_UNAVAILABLE))
}

/// The error that ends a subscription when its caller's token expires.
pub fn token_expired() -> async_graphql::Error {
    async_graphql::Error::new(
        "Your token expired: subscribe again with a fresh one (from the cursor of the last edge \
         you hold, to miss nothing).",
    )
    .extend_with(|_, ext| ext.set("code", UNAUTHENTICATED))
}

/// A seat for one more subscription of `caller`, or the coded error that refuses it.
pub fn seat(streams: &Streams, caller: &Caller) -> async_graphql::Result<Seat> {
    streams
        .seat(caller.principal().map(|p| p.subject.as_str()))
        .map_err(|full| {
            let message = match full {
                Full::Server => "The server runs its most subscriptions: try again later.",
                Full::Caller => "You run your most subscriptions: complete one first.",
            };
            async_graphql::Error::new(message)
                .extend_with(|_, ext| ext.set("code", TOO_MANY_SUBSCRIPTIONS))
        })
}

/// The `kind` field of a change object whose value is a `T`.
pub fn kind_field<T: Any + Send + Sync>(kind: fn(&T) -> Kind) -> Field {
    nullability::field("kind", TypeRef::named_nn(CHANGE_KIND), move |ctx| {
        FieldFuture::Value(
            ctx.parent_value
                .downcast_ref::<T>()
                .map(|c| FieldValue::value(kind(c).value())),
        )
    })
    .description("What happened: `ADDED`, `UPDATED` or `REMOVED`.")
}

/// The `id` field of a change object whose value is a `T`.
pub fn id_field<T: Any + Send + Sync>(id: fn(&T) -> &str, description: &str) -> Field {
    nullability::field("id", TypeRef::named_nn(TypeRef::ID), move |ctx| {
        FieldFuture::Value(
            ctx.parent_value
                .downcast_ref::<T>()
                .map(|c| FieldValue::value(id(c).to_owned())),
        )
    })
    .description(description)
}
