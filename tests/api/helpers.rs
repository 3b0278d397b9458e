//! Shared test fixtures: a `TestApp` on its own table prefix, direct DynamoDB writes, and (from
//! `issuer.rs`) a bearer-token issuer with its JWKS.
//!
//! Every helper is used as `crate::helpers::name`; each lives in one file of `helpers/`: the
//! applications under test on fresh tables (`apps.rs`), requests through a router (`requests.rs`),
//! ground-truth reads and raw items (`dynamo.rs`), the DynamoDB calls a client sends
//! (`calls.rs`), generated files kept in sync (`generated.rs`), walking a connection (`paging.rs`), servers on real sockets and HTTP exchanges
//! with them (`servers.rs`), a real Redis with the change relay and the `serve` instances reading
//! it (`redis.rs`), Node.js client scripts (`node.rs`), a loopback OTLP trace receiver
//! (`otlp.rs`), and bearer-token auth (`auth.rs`).

mod apps;
mod auth;
mod calls;
mod dynamo;
mod generated;
mod lambda;
mod live;
mod node;
mod otlp;
mod paging;
mod redis;
mod requests;
mod servers;

pub use crate::issuer::{AUDIENCE, ISSUER, TestIssuer, claims, hs256, now, unsigned, with};
pub use crate::shop_data::ShopTables;

pub use apps::{
    ModelApp, TEST_RING, TestApp, app_state, audited, control_client, endpoint, example_models,
    lint, load_model, load_model_with, model_app, model_app_at, model_app_from, model_app_over,
    model_file, model_state, shop, shop_store, test_ring, tool, unique_prefix,
};
pub use auth::{
    auth_model_app, auth_router, auth_router_with, auth_state, graphql_with_token,
    logged_model_app, model_auth_settings, model_claims, secure_app, secure_app_logged,
};
pub use calls::{
    CallCounter, CallLog, LoggedCall, POLICY_USES, PolicyAudit, PolicyCheck, PolicyUses, ReadShape,
    allowed, dynamodb_calls, used_pair,
};
pub use dynamo::{
    GroundQuery, SortCond, ground_truth, product_item, purchase_item, put_batch, put_plain,
    query_all, query_partition, scan_all, set_stream, user_item, user_purchases,
};
pub use generated::{book_says, check_generated, items_file};
pub use lambda::{LambdaFunction, package_lambda};
pub use live::{
    Received, Socket, WAIT, auth_live_router, live_router, live_router_logged,
    live_router_streams_at, live_router_through_feed, live_router_through_redis,
    live_router_through_redis_streams_at, live_router_with_streams, next_event, open_socket,
    received_within, refusal, subscribe, subscribe_as, subscribe_body, subscribe_reading,
    test_stream_settings, warm_up, ws_closed_with, ws_open, ws_ready, ws_receive_json, ws_send,
};
pub use node::{
    LOCAL_AWS, NodeLines, NodeRun, node_lines, read_back, run_node, serve_node, written_by,
    written_with,
};
pub use otlp::OtlpReceiver;
pub use paging::{all_nodes, merge, walk_matches, walk_pages};
pub use redis::{
    Instances, RedisServer, Relay, TlsRedisServer, connect_redis, relayed_notes, serve_from_redis,
    stream_entries, wait_for_relayed,
};
pub use requests::{
    Answer, Origin, answer, error_code, graphql_from, graphql_request, graphql_with_authorization,
    metric, metric_sum, metrics_of, post_graphql, post_graphql_text,
};
pub use servers::{
    APOLLO_ACCEPT, Exchange, GQL, JSON, ProcessLog, RoundRobin, Running, check_offline,
    dynarelay_command, exchange, graphql_as, graphql_at, loopback_listener, persisted, post,
    post_at, query_string, run_succeeding, sha256_hex, signal, spawn_serve, spawn_serve_logged,
    stop,
};
