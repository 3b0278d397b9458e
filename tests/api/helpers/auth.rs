//! Bearer-token auth: claims and settings from a model's `[auth]`, servers verifying tokens
//! against a [`TestIssuer`]'s JWKS, and requests with a token.

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use axum::{
    Router,
    body::Body,
    http::{Request, header},
};
use dynarelay::{
    dynamo::{self, Store, Tables, tables},
    http::{HttpSettings, router},
    model::Model,
    pagination::PageLimits,
};
use serde_json::{Value, json};

use super::{
    Answer, CallLog, ModelApp, Origin, answer, endpoint, load_model, model_state, test_ring,
    unique_prefix,
};
use crate::issuer::{TestIssuer, claims, with};

/// The claims of a token `model`'s `[auth]` accepts for `sub`: [`claims`] with the model's
/// issuer and first audience, and `groups` in its groups claim when there are any.
pub fn model_claims(model: &Model, sub: &str, groups: &[&str]) -> Value {
    let spec = model
        .auth
        .as_ref()
        .expect("the model has an `[auth]` section");
    let mut changes = json!({ "iss": spec.issuer, "aud": spec.audience[0] });
    if !groups.is_empty() {
        changes[&spec.groups_claim] = json!(groups);
    }
    with(claims(sub), changes)
}

/// The `AuthSettings` `dynarelay serve --model <model's file> --auth-jwks-url <jwks_url>` uses:
/// the model's `[auth]` (algorithms, issuer, audience, groups claim, timings), mapped by
/// `ApiArgs::auth_settings`, with the keys `jwks_url` serves.
pub fn model_auth_settings(model: &Model, jwks_url: &str) -> dynarelay::auth::AuthSettings {
    use clap::Parser;
    use dynarelay::config::{Cli, Command};
    let cli = Cli::try_parse_from([
        "dynarelay",
        "serve",
        "--model",
        "model.toml",
        "--auth-jwks-url",
        jwks_url,
    ])
    .expect("serve's flags");
    let Command::Serve(args) = cli.command else {
        unreachable!("parsed as serve")
    };
    let spec = model
        .auth
        .as_ref()
        .expect("the model has an `[auth]` section");
    args.api
        .auth_settings(spec)
        .expect("the model's `[auth]` maps")
}

/// Serves `model` (which has an `[auth]` section) on `store` as [`model_app`] does (default
/// HTTP settings and page limits, the test cursor keys), verifying bearer tokens as its `[auth]`
/// says against `issuer`'s JWKS.
pub async fn auth_router(model: &'static Model, store: &Store, issuer: &TestIssuer) -> Router {
    auth_router_with(model, store, issuer, PageLimits::default()).await
}

/// [`auth_router`] with page limits of its own.
pub async fn auth_router_with(
    model: &'static Model,
    store: &Store,
    issuer: &TestIssuer,
    limits: PageLimits,
) -> Router {
    router(auth_state(model, store, issuer, limits, HttpSettings::default()).await)
}

/// The application state of [`auth_router_with`], with `http` settings of its own (its bearer
/// tokens verified against `issuer`).
pub async fn auth_state(
    model: &'static Model,
    store: &Store,
    issuer: &TestIssuer,
    limits: PageLimits,
    http: HttpSettings,
) -> dynarelay::http::AppState {
    let auth = dynarelay::auth::Authenticator::new(model_auth_settings(model, &issuer.url()))
        .await
        .expect("the authenticator starts");
    let http = HttpSettings {
        auth: Some(auth),
        ..http
    };
    model_state(model, store, limits, &test_ring(), http)
}

/// `model` served on fresh tables of its own with bearer tokens verified against `issuer`'s
/// JWKS (see [`auth_router`]), and the log of every DynamoDB call its client sends (test writes
/// through [`ModelApp::client`] included).
pub async fn auth_model_app(model: &'static Model, issuer: &TestIssuer) -> (ModelApp, CallLog) {
    let (store, prefix, log) = logged_store(model).await;
    let router = auth_router(model, &store, issuer).await;
    (ModelApp::new(model, prefix, store, router), log)
}

/// `model` (with no `[auth]`) served on fresh tables of its own, and the log of every DynamoDB
/// call its client sends.
pub async fn logged_model_app(model: &'static Model) -> (ModelApp, CallLog) {
    let (store, prefix, log) = logged_store(model).await;
    let router = crate::helpers::apps::router_for(model, &store);
    (ModelApp::new(model, prefix, store, router), log)
}

/// Fresh tables of `model` under a new prefix, and a store over them whose client logs every
/// call it sends.
async fn logged_store(model: &'static Model) -> (Store, String, CallLog) {
    let prefix = unique_prefix();
    let log = CallLog::default();
    let local = dynamo::client_for_local(&endpoint());
    let client = Client::from_conf(local.config().to_builder().interceptor(log.clone()).build());
    let names = Tables::new(model, &prefix);
    tables::create_missing(&client, model, &names, Duration::from_secs(30))
        .await
        .expect("creating test tables");
    (Store::new(client, names), prefix, log)
}

/// `examples/shop/secure.toml` served on fresh tables, its tokens verified against `issuer`'s
/// JWKS with the model's issuer, audience and groups claim.
pub async fn secure_app(issuer: &TestIssuer) -> ModelApp {
    secure_app_logged(issuer).await.0
}

/// [`secure_app`] with the log of its DynamoDB calls.
pub async fn secure_app_logged(issuer: &TestIssuer) -> (ModelApp, CallLog) {
    auth_model_app(load_model("examples/shop/secure.toml"), issuer).await
}

/// POSTs `query` with `variables` to `/graphql` through `router`, with `Authorization: Bearer
/// <token>` when there is a token.
pub async fn graphql_with_token(
    router: &Router,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> Answer {
    let request = Request::post("/graphql")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({ "query": query, "variables": variables }).to_string(),
        ))
        .expect("request");
    let origin = Origin {
        token,
        ..Origin::default()
    };
    answer(router, origin.apply(request)).await
}
