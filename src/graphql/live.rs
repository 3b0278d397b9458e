//! A running subscription between its changes, and the executions that send them.
//!
//! A subscription is executed by async-graphql once to start it: its root field checks the
//! arguments, takes a seat, joins the table's stream reader and reads what a resumed client
//! missed, then hands what it follows over ([`hand_off`]) and answers with the caught-up items
//! alone, which ends that execution. From then on a [`Live`] waits for changes and judges them
//! in memory; each one to send is rendered by executing the same document again with the
//! judged value preset ([`preset`]): the root field resolves to it, and async-graphql resolves
//! the selection on it exactly as it would have on a stream's item.
//!
//! Why not one long execution, as async-graphql's `execute_stream` offers: an idle subscription
//! would then hold that execution's whole state until its next change (the request's context
//! and variables, a copy of the operation, and the futures that resolve each item, sized for
//! the largest step of the execution), most of what an idle subscription cost; its memory now
//! is `scripts/bench-live`'s "per idle subscription" (docs/src/benchmarks.md). A change sent
//! costs one more execution of the document instead, with a schema that does not validate it
//! again ([`Rendering`]).

use std::{
    any::Any,
    ops::Deref,
    sync::{Arc, Mutex},
};

use async_graphql::{
    CacheControl, Name, Request, Response, ServerError, ValidationResult, Value as ConstValue,
    Variables,
    dynamic::{FieldValue, ResolverContext, Schema},
    extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation},
    futures_util::{StreamExt, stream, stream::BoxStream},
    parser::types::ExecutableDocument,
};

use super::{
    change::{changes_lost, position_expired, token_expired, unfollowable},
    error::ApiError,
    node::request_loader,
    nullability::NullItems,
};
use crate::{
    auth::Caller,
    dynamo::Store,
    stream::{Change, Event, Seat, Streams, Subscription, Turn},
};

/// A value a subscription sends, as its judge made it.
pub type Sent = Box<dyn Any + Send + Sync>;

/// What a subscription makes of each change: `None` for a change it does not send. It may ask
/// the subscription where it stands in the table's stream.
pub type Judge = Box<dyn FnMut(&Change, &Subscription) -> Option<Sent> + Send>;

/// What a started subscriber is sent besides each change, and its seat.
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

/// A subscription between its changes: where it stands in its table's stream, how it judges a
/// change, its seat, and when its caller's token expires.
struct Live {
    subscription: Subscription,
    judge: Judge,
    seat: Seat,
    deadline: Option<tokio::time::Instant>,
}

impl Live {
    /// The next value to send, or the error that ends the subscription: `CHANGES_LOST` when
    /// changes were lost, `UNAUTHENTICATED` when the caller's token expires,
    /// `SUBSCRIPTIONS_UNAVAILABLE` when the table's changes cannot be followed (no stream, or one
    /// without old and new images), `SERVICE_UNAVAILABLE` when the table's reader stopped
    /// otherwise.
    async fn next(&mut self) -> async_graphql::Result<Sent> {
        loop {
            let deadline = self.deadline;
            let expired = async move {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                biased;
                () = expired => return Err(token_expired()),
                event = self.subscription.next() => event,
            };
            match event {
                Some(Event::Change(change)) => {
                    if let Some(value) = (self.judge)(&change, &self.subscription) {
                        self.seat.sent();
                        return Ok(value);
                    }
                }
                Some(Event::Gap) => {
                    self.seat.lost();
                    return Err(changes_lost());
                }
                Some(Event::Expired) => return Err(position_expired()),
                None => {
                    return Err(match self.subscription.unfollowable() {
                        Some(why) => unfollowable(&why),
                        None => ApiError::Unavailable.into(),
                    });
                }
            }
        }
    }
}

/// The instant a token expiring at `expires` (Unix seconds) expires, on the runtime's clock.
fn deadline(expires: u64) -> tokio::time::Instant {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let left = std::time::Duration::from_secs(expires).saturating_sub(now);
    tokio::time::Instant::now() + left
}

/// Request data of a subscription's first execution: where its root field leaves its [`Live`].
#[derive(Default)]
struct Handoff(Mutex<Option<Live>>);

/// Request data of an execution that sends one value: what the root field resolves to.
struct Preset(Mutex<Option<async_graphql::Result<Sent>>>);

/// Hands a started subscription over to the [`Live`] that follows it (see the module docs):
/// the root field answers with the returned stream, the caught-up values.
pub fn hand_off<'a, T, J, V>(
    ctx: &ResolverContext<'_>,
    following: Following<T>,
    subscription: Subscription,
    mut judge: J,
) -> async_graphql::Result<BoxStream<'a, async_graphql::Result<FieldValue<'a>>>>
where
    T: Any + Send + Sync,
    J: FnMut(&Change, &Subscription) -> Option<V> + Send + 'static,
    V: Any + Send + Sync,
{
    let handoff = ctx.data::<Arc<Handoff>>().map_err(|_| ApiError::Internal)?;
    let Following {
        seat,
        caught_up,
        expires,
    } = following;
    for _ in &caught_up {
        seat.sent();
    }
    let live = Live {
        subscription,
        judge: Box::new(move |change, subscription| {
            judge(change, subscription).map(|value| Box::new(value) as Sent)
        }),
        seat,
        deadline: expires.map(deadline),
    };
    *handoff.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(live);
    Ok(stream::iter(
        caught_up
            .into_iter()
            .map(|value| Ok(FieldValue::owned_any(value))),
    )
    .boxed())
}

/// In an execution that sends one value, that value, as the judge of type `V` made it (or the
/// error that ends the subscription); `None` in a subscription's first execution.
pub fn preset<V: Any>(ctx: &ResolverContext<'_>) -> Option<async_graphql::Result<Box<V>>> {
    let preset = ctx.data_opt::<Preset>()?;
    let value = preset.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    Some(value.and_then(|sent| sent.downcast::<V>().map_err(|_| ApiError::Internal.into())))
}

/// What the schema that renders changes ([`super::Api::rendering`]) adds: no validation. Each
/// of its executions runs a document, variables and operation name that a subscription's first
/// execution ran through every validation rule with the same schema types, so validating them
/// again for each change would spend CPU to find nothing.
#[derive(Debug)]
pub struct Rendering;

impl ExtensionFactory for Rendering {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Rendering)
    }
}

#[async_trait::async_trait]
impl Extension for Rendering {
    async fn validation(
        &self,
        _ctx: &ExtensionContext<'_>,
        _next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        Ok(ValidationResult {
            cache_control: CacheControl::default(),
            complexity: 0,
            depth: 0,
        })
    }
}

/// A subscription's operation, as each of its executions runs it.
pub struct Execution {
    /// The schema the subscription starts with.
    pub schema: Schema,
    /// The schema that renders its changes ([`super::Api::rendering`]).
    pub rendering: Schema,
    /// The document, parsed and checked (the document cache's, shared).
    pub document: Arc<dyn Deref<Target = ExecutableDocument> + Send + Sync>,
    /// The operation's name, if the request gave one.
    pub operation_name: Option<String>,
    /// The request's variables, as pairs: they are kept as long as the subscription runs, and a
    /// map of them holds room for eleven.
    pub variables: Box<[(Name, ConstValue)]>,
    /// Whether the caller may introspect.
    pub introspection: bool,
    /// The request's store.
    pub store: Store,
    /// The caller.
    pub caller: Caller,
    /// The server's stream readers.
    pub streams: Streams,
}

impl std::fmt::Debug for Execution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Execution")
            .field("operation_name", &self.operation_name)
            .finish_non_exhaustive()
    }
}

impl Execution {
    /// One execution's request: the document, its variables and the request's data.
    fn request(&self) -> Request {
        let mut variables = Variables::default();
        variables.extend(self.variables.iter().cloned());
        let mut request = Request::new(String::new()).variables(variables);
        request.set_parsed_query(ExecutableDocument::clone(&**self.document));
        if let Some(name) = &self.operation_name {
            request = request.operation_name(name.as_str());
        }
        if !self.introspection {
            request = request.disable_introspection();
        }
        request
            .data(request_loader(&self.store))
            .data(self.store.clone())
            .data(self.caller.clone())
            .data(self.streams.clone())
            .data(Arc::new(NullItems::default()))
    }

    /// The response that sends `value` (or ends the subscription with its error).
    async fn send(&self, value: async_graphql::Result<Sent>) -> Option<Response> {
        let request = self.request().data(Preset(Mutex::new(Some(value))));
        self.rendering.execute_stream(request).next().await
    }
}

/// What a subscription's stream of changes holds: nothing yet, until its turn to start comes;
/// its first execution, with its turn and the hand-off, until that execution ends; then the
/// [`Live`] left there.
enum Held {
    Waiting,
    Starting {
        first: BoxStream<'static, Response>,
        handoff: Arc<Handoff>,
        _turn: Turn,
    },
    Running(Live),
}

/// A subscription's responses: the first execution's (its refusal, or what a resumed client
/// missed), then one for each value its [`Live`] sends, until it ends.
///
/// The first execution waits for its turn ([`Streams::turn_to_start`]): nothing of it (the
/// request, its copy of the document, the resolvers' state, the parent's read) exists before,
/// so a storm of subscriptions arriving at once (every client of a restarted instance back
/// within seconds) holds a few hundred of those at a time, not every one, and asks DynamoDB for
/// a few hundred parents at a time.
pub fn results(execution: Execution) -> BoxStream<'static, Response> {
    // Boxed: the future that waits for the next change holds the state, and an idle
    // subscription is that future.
    let state = Box::new((execution, Held::Waiting));
    stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        loop {
            let (execution, held) = &mut *state;
            match held {
                Held::Waiting => {
                    let turn = execution.streams.turn_to_start().await;
                    let handoff = Arc::new(Handoff::default());
                    let first = execution
                        .schema
                        .execute_stream(execution.request().data(Arc::clone(&handoff)));
                    *held = Held::Starting {
                        first,
                        handoff,
                        _turn: turn,
                    };
                }
                Held::Starting { first, handoff, .. } => {
                    if let Some(response) = first.next().await {
                        return Some((response, Some(state)));
                    }
                    let live = handoff.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
                    *held = Held::Running(live);
                }
                Held::Running(live) => {
                    let value = live.next().await;
                    let ends = value.is_err();
                    // Boxed, as sending is rare beside waiting: this future is sized for its
                    // largest step, and an idle subscription is this future.
                    if let Some(response) = Box::pin(execution.send(value)).await {
                        return Some((response, (!ends).then_some(state)));
                    }
                    if ends {
                        return None;
                    }
                }
            }
        }
    })
    .boxed()
}
