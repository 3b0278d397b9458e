//! Live data: a model served with a stream reader of its own, with or without bearer tokens, and
//! waiting for a subscription to reach its table's stream.

use std::{sync::Arc, time::Duration};

use axum::Router;
use dynarelay::{
    dynamo,
    http::{HttpSettings, router},
    metrics::Metrics,
    pagination::PageLimits,
    stream::{StreamSettings, Streams},
};

use super::{ModelApp, TestIssuer, endpoint, model_auth_settings, model_state, test_ring};

/// Longest wait for a subscription to start: far beyond what DynamoDB Local takes, so that a
/// slow machine never fails a test; one that never starts still fails it.
const START: Duration = Duration::from_secs(60);

/// `app` served with a stream reader of its own that polls often, and `http` settings.
fn live_router_with(app: &ModelApp, http: HttpSettings) -> Router {
    let streams = Streams::new(
        dynamo::client_for_local(&endpoint()),
        dynamo::streams_client_for_local(&endpoint()),
        StreamSettings {
            poll_interval: Duration::from_millis(50),
            ..StreamSettings::default()
        },
        Arc::new(Metrics::new()),
    );
    router(
        model_state(
            app.model,
            &app.store,
            PageLimits::default(),
            &test_ring(),
            http,
        )
        .with_streams(streams),
    )
}

/// [`live_router_with`] the default settings.
pub fn live_router(app: &ModelApp) -> Router {
    live_router_with(app, HttpSettings::default())
}

/// [`live_router_with`] bearer tokens verified as `app`'s `[auth]` says, against `issuer`.
pub async fn auth_live_router(app: &ModelApp, issuer: &TestIssuer) -> Router {
    let auth = dynarelay::auth::Authenticator::new(model_auth_settings(app.model, &issuer.url()))
        .await
        .expect("the authenticator starts");
    live_router_with(
        app,
        HttpSettings {
            auth: Some(auth),
            ..HttpSettings::default()
        },
    )
}

/// Waits for a subscription to reach its table's stream: writes a warm-up item each round
/// (`write`, a new value each time: a write that changes nothing leaves no stream record) until
/// `arrived` sees a message within 300 ms. Every later write is then delivered. Never a sleep
/// that a slow machine could outlast.
pub async fn warm_up(
    mut write: impl AsyncFnMut(u32),
    mut arrived: impl AsyncFnMut(Duration) -> bool,
) {
    let started = async {
        for round in 0.. {
            write(round).await;
            if arrived(Duration::from_millis(300)).await {
                return;
            }
        }
    };
    tokio::time::timeout(START, started)
        .await
        .expect("the subscription starts");
}
