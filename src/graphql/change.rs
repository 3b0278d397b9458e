//! What subscriptions share: the kind of a change (`ChangeKind`), judged from an item's old and
//! new image, and the error that ends a subscription whose changes were lost.

use std::any::Any;

use async_graphql::{
    ErrorExtensions, Value,
    dynamic::{Enum, EnumItem, Field, FieldFuture, FieldValue, TypeRef},
    futures_util::{Stream, StreamExt, stream},
};

use super::{
    error::{ApiError, UNAUTHENTICATED},
    nullability,
};
use crate::{
    auth::Caller,
    stream::{Change, Event, Full, Seat, Streams, Subscription},
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
        "Changes were lost before they could be sent: read again and subscribe anew.",
    )
    .extend_with(|_, ext| ext.set("code", CHANGES_LOST))
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

/// What a subscriber is sent, besides each change, and its seat.
#[derive(Debug)]
pub struct Following<T> {
    /// The subscription's seat, held while it runs; it counts what is sent.
    pub seat: Seat,
    /// What a resumed subscription missed, sent first.
    pub caught_up: Vec<T>,
    /// When the caller's token expires (seconds since the Unix epoch): the subscription then
    /// ends with `UNAUTHENTICATED`.
    pub expires: Option<u64>,
}

/// The instant a token expiring at `expires` (Unix seconds) expires, on the runtime's clock.
fn deadline(expires: u64) -> tokio::time::Instant {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let left = std::time::Duration::from_secs(expires).saturating_sub(now);
    tokio::time::Instant::now() + left
}

/// The changes a subscriber is sent: first `following.caught_up`, then each of the table's
/// changes that `judge` makes something of (it may ask the subscription where it stands), in
/// order; the end, with `CHANGES_LOST`, when
/// changes were lost; with `UNAUTHENTICATED` when the caller's token expires; or with
/// `UNAVAILABLE` when the table's reader stopped.
pub fn followed<'a, J, T>(
    following: Following<T>,
    subscription: Subscription,
    judge: J,
) -> impl Stream<Item = async_graphql::Result<FieldValue<'a>>> + Send + 'a
where
    J: FnMut(&Change, &Subscription) -> Option<T> + Send + 'a,
    T: Any + Send + Sync,
{
    let Following {
        seat,
        caught_up,
        expires,
    } = following;
    let deadline = expires.map(deadline);
    for _ in &caught_up {
        seat.sent();
    }
    let caught_up = stream::iter(
        caught_up
            .into_iter()
            .map(|value| Ok(FieldValue::owned_any(value))),
    );
    // The state is boxed: the future that waits for the next change moves it in and holds it,
    // and an idle subscription is that future. Boxed, it is a pointer there, not a copy.
    let live = stream::unfold(
        Some(Box::new((subscription, judge, seat))),
        move |state| async move {
            let mut state = state?;
            let (subscription, judge, seat) = &mut *state;
            loop {
                let expired = async {
                    match deadline {
                        Some(deadline) => tokio::time::sleep_until(deadline).await,
                        None => std::future::pending().await,
                    }
                };
                let event = tokio::select! {
                    biased;
                    () = expired => return Some((Err(token_expired()), None)),
                    event = subscription.next() => event,
                };
                match event {
                    Some(Event::Change(change)) => {
                        if let Some(value) = judge(&change, subscription) {
                            seat.sent();
                            return Some((Ok(FieldValue::owned_any(value)), Some(state)));
                        }
                    }
                    Some(Event::Gap) => {
                        seat.lost();
                        return Some((Err(changes_lost()), None));
                    }
                    None => return Some((Err(ApiError::Unavailable.into()), None)),
                }
            }
        },
    );
    caught_up.chain(live)
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
