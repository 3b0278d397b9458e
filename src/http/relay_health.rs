//! A relay's health checks (`dynarelay relay --health-listen`): `/ready` answers 200 once the
//! relay reads every table's stream, 503 before; `/metrics` its metrics, as `serve`'s.

use std::sync::Arc;

use axum::{
    Json, Router,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use serde_json::json;

use crate::{metrics::Metrics, stream::relay::Progress};

/// The routes of a relay's health listener.
pub fn relay_health_router(metrics: Arc<Metrics>, progress: Arc<Progress>) -> Router {
    Router::new()
        .route("/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route(
            "/ready",
            get(move || async move {
                if progress.ready() {
                    (StatusCode::OK, Json(json!({ "status": "ready" })))
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        Json(json!({ "status": "starting" })),
                    )
                }
            }),
        )
        .route(
            "/metrics",
            get(move || async move {
                let body = metrics.render();
                let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
                ([(header::CONTENT_TYPE, content_type)], body).into_response()
            }),
        )
}
