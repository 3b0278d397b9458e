//! dynarelay serves DynamoDB tables as a GraphQL API with Relay cursor connections.
//!
//! # Layout
//!
//! A request flows down this list, and no module reaches back up it:
//!
//! | module | job |
//! |---|---|
//! | [`config`] | the command line: commands and flags (each also a `DYNARELAY_*` variable) |
//! | [`http`] | axum router: `/graphql`, GraphiQL, `/health`, `/ready`; layers; graceful `serve` |
//! | [`auth`] | `Authorization: Bearer` JWT -> verified caller (JWKS or shared secret, token cache) |
//! | [`graphql`] | the one choice of operation a request runs, schema, root and object types, connections, scalars, query limits and the document cache, null propagation and field order, the error boundary |
//! | [`pagination`] | Relay arguments -> page plan; fetched rows -> page with exact `hasNextPage` |
//! | [`cursor`] | DynamoDB key <-> sealed, connection-bound cursor string; key ring; pure |
//! | [`dynamo`] | client construction, table layout and creation, item <-> record, the store |
//! | [`number`] | DynamoDB numbers as exact decimal strings |
//! | [`model`] | the model file -> a checked, typed model; located errors; JSON Schema; key templates |
//! | [`metrics`], [`telemetry`] | Prometheus metrics and a request's cost; trace spans and their OTLP export |

pub mod auth;
pub mod config;
pub mod cursor;
pub mod dynamo;
pub mod graphql;
pub mod hangups;
pub mod http;
pub mod init;
pub mod metrics;
pub mod model;
pub mod number;
pub mod pagination;
pub mod policy;
pub mod stream;
pub mod telemetry;
