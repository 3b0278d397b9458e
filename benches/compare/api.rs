//! A server's `/graphql` and `/metrics` as the bench reads them: the page it asks for
//! ([`PageShape`]), pages timed and walked, the DynamoDB calls per page, and the server's own
//! timers.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use super::{CALL_PAGES, PAGE};

/// A page the bench requests: its query, with `$u` the lookup's key, `$after` and (when
/// `filtered`) `$status`, and where its connection is in the response.
#[derive(Debug, Clone, Copy)]
pub(super) struct PageShape {
    pub(super) query: &'static str,
    /// The root field the connection hangs off: `data.<lookup>.<connection>`.
    pub(super) lookup: &'static str,
    pub(super) connection: &'static str,
    /// How the table names the page.
    pub(super) name: &'static str,
    /// Whether the query declares `$status`.
    pub(super) filtered: bool,
}

/// How a request names the page's document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Its full text.
    Text,
    /// Apollo's hash of it, registered before as an automatic persisted query.
    Apq,
    /// The id an operation manifest lists it under, as Relay's `doc_id`.
    Listed(&'static str),
}

/// One server's `/graphql`, and the page the bench asks it for.
pub(super) struct Api {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
    pub(super) shape: PageShape,
    /// A bearer token sent with every request, if any.
    pub(super) token: Option<String>,
    /// How requests name the page's document.
    pub(super) form: Form,
}

/// DynamoDB calls by operation, summed over tables and outcomes, from the counter
/// `dynarelay_dynamodb_calls_total` of a `/metrics` text.
fn dynamodb_calls(text: &str) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("dynarelay_dynamodb_calls_total{") else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").context("odd calls line")?;
        let operation = labels
            .split(',')
            .find_map(|label| label.strip_prefix("operation=\""))
            .and_then(|op| op.strip_suffix('"'))
            .context("a calls line without its operation")?;
        *calls.entry(operation.to_owned()).or_insert(0.0) += value.trim().parse::<f64>()?;
    }
    Ok(calls)
}

/// Calls per page by operation, such as `1.00 GetItem + 1.00 Query`.
pub(super) fn calls_text(calls: &BTreeMap<String, f64>) -> String {
    if calls.is_empty() {
        return "none".to_owned();
    }
    calls
        .iter()
        .map(|(operation, n)| format!("{n:.2} {operation}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Running sums and counts of the server's own timers, from `/metrics`: the time it spends on
/// `/graphql` requests, and on GetItem and Query calls.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Timers {
    page: (f64, f64),
    get: (f64, f64),
    query: (f64, f64),
}

/// Mean durations between two [`Timers`] readings.
pub(super) struct Means {
    pub(super) page: Duration,
    pub(super) get: Duration,
    pub(super) query: Duration,
}

impl Timers {
    fn parse(text: &str) -> anyhow::Result<Self> {
        let read = |series: &str| -> anyhow::Result<f64> {
            let line = text
                .lines()
                .find(|line| line.starts_with(series) && line[series.len()..].starts_with(' '))
                .with_context(|| format!("no {series} in /metrics"))?;
            Ok(line[series.len()..].trim().parse()?)
        };
        let pair = |metric: &str, label: &str| -> anyhow::Result<(f64, f64)> {
            Ok((
                read(&format!("{metric}_sum{{{label}}}"))?,
                read(&format!("{metric}_count{{{label}}}"))?,
            ))
        };
        Ok(Self {
            page: pair(
                "dynarelay_http_request_duration_seconds",
                "route=\"/graphql\"",
            )?,
            get: pair(
                "dynarelay_dynamodb_call_duration_seconds",
                "operation=\"GetItem\"",
            )?,
            query: pair(
                "dynarelay_dynamodb_call_duration_seconds",
                "operation=\"Query\"",
            )?,
        })
    }

    pub(super) fn since(&self, before: &Self) -> Means {
        let mean = |(sum, count): (f64, f64), (sum0, count0): (f64, f64)| {
            Duration::from_secs_f64((sum - sum0) / (count - count0).max(1.0))
        };
        Means {
            page: mean(self.page, before.page),
            get: mean(self.get, before.get),
            query: mean(self.query, before.query),
        }
    }
}

impl Api {
    /// The body of `GET path` on the server, checked to be a success.
    async fn get(&self, path: &str) -> anyhow::Result<String> {
        let url = self.url.replace("/graphql", path);
        Ok(self
            .http
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?)
    }

    /// The server's timers now.
    pub(super) async fn timers(&self) -> anyhow::Result<Timers> {
        Timers::parse(&self.get("/metrics").await?)
    }

    async fn page(
        &self,
        user: &str,
        after: Option<&str>,
        status: Option<&str>,
    ) -> anyhow::Result<(Duration, Value)> {
        let mut variables = json!({ "u": user, "after": after });
        if self.shape.filtered {
            variables["status"] = json!(status);
        } else {
            ensure!(status.is_none(), "{} takes no status", self.shape.name);
        }
        let mut body = json!({ "variables": variables });
        match self.form {
            Form::Text => body["query"] = json!(self.shape.query),
            Form::Apq => body["extensions"] = self.persisted_query(),
            Form::Listed(id) => body["doc_id"] = json!(id),
        }
        let body = body.to_string();
        let started = Instant::now();
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let bytes = request
            .body(body)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let elapsed = started.elapsed();
        let value: Value = serde_json::from_slice(&bytes)?;
        if value.get("errors").is_some() {
            bail!("the page failed: {value}");
        }
        Ok((elapsed, value))
    }

    /// Apollo's `persistedQuery` extension naming the page's document by its hash.
    fn persisted_query(&self) -> Value {
        use sha2::Digest;
        let hash = format!("{:x}", sha2::Sha256::digest(self.shape.query.as_bytes()));
        json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } })
    }

    /// Registers the page's document as an automatic persisted query, as Apollo's link does on
    /// its first request: the hash with the text.
    pub(super) async fn register_persisted_query(&self) -> anyhow::Result<()> {
        let body = json!({
            "query": self.shape.query,
            "variables": { "u": "nobody", "after": null },
            "extensions": self.persisted_query(),
        });
        let value: Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ensure!(
            value.get("errors").is_none(),
            "registering the page failed: {value}"
        );
        Ok(())
    }

    /// The page's connection in a response.
    fn connection<'v>(&self, value: &'v Value) -> &'v Value {
        &value["data"][self.shape.lookup][self.shape.connection]
    }

    /// The latency of `GET /health`, which answers at once.
    pub(super) async fn health_timed(&self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.get("/health").await?;
        Ok(started.elapsed())
    }

    /// One page's latency, checked to be a full page.
    pub(super) async fn page_timed(
        &self,
        user: &str,
        after: Option<&str>,
        status: Option<&str>,
    ) -> anyhow::Result<Duration> {
        let (elapsed, value) = self.page(user, after, status).await?;
        let edges = self.connection(&value)["edges"]
            .as_array()
            .map_or(0, Vec::len);
        ensure!(edges == PAGE, "a page of {edges} edges: {value}");
        Ok(elapsed)
    }

    /// The end cursor of a full page that has a next page.
    pub(super) async fn page_cursor(
        &self,
        user: &str,
        after: Option<&str>,
    ) -> anyhow::Result<String> {
        let (_, value) = self.page(user, after, None).await?;
        let edges = self.connection(&value)["edges"]
            .as_array()
            .map_or(0, Vec::len);
        ensure!(edges == PAGE, "a page of {edges} edges: {value}");
        let info = &self.connection(&value)["pageInfo"];
        ensure!(info["hasNextPage"] == true, "the partition ended early");
        Ok(info["endCursor"]
            .as_str()
            .context("no endCursor")?
            .to_owned())
    }

    /// DynamoDB calls per page by operation, from the server's `/metrics` around a walk of
    /// [`CALL_PAGES`] full pages of `owner`'s, from the first.
    pub(super) async fn calls_per_page(
        &self,
        owner: &str,
    ) -> anyhow::Result<BTreeMap<String, f64>> {
        let before = dynamodb_calls(&self.get("/metrics").await?)?;
        let mut after = None;
        for _ in 0..CALL_PAGES {
            after = Some(self.page_cursor(owner, after.as_deref()).await?);
        }
        let mut calls = dynamodb_calls(&self.get("/metrics").await?)?;
        for (operation, n) in &mut calls {
            *n = (*n - before.get(operation).copied().unwrap_or(0.0)) / CALL_PAGES as f64;
        }
        calls.retain(|_, n| *n > 0.0);
        Ok(calls)
    }

    /// Walks the `REFUNDED` purchases of `user`; DynamoDB calls and items evaluated per filled
    /// page, from `extensions.cost` less the user's GetItem (one call, one item).
    pub(super) async fn filtered_walk(&self, user: &str) -> anyhow::Result<(f64, f64)> {
        let (mut calls, mut items, mut filled) = (0u64, 0u64, 0u64);
        let mut after: Option<String> = None;
        loop {
            let (_, value) = self.page(user, after.as_deref(), Some("REFUNDED")).await?;
            let cost = &value["extensions"]["cost"];
            let page = self.connection(&value);
            if page["edges"].as_array().map_or(0, Vec::len) == PAGE {
                calls += cost["dynamodbCalls"].as_u64().context("no cost")? - 1;
                items += cost["itemsEvaluated"].as_u64().context("no cost")? - 1;
                filled += 1;
            }
            if page["pageInfo"]["hasNextPage"] != true {
                break;
            }
            after = page["pageInfo"]["endCursor"].as_str().map(str::to_owned);
        }
        ensure!(filled > 0, "no filled page");
        Ok((calls as f64 / filled as f64, items as f64 / filled as f64))
    }
}
