//! Integration tests. Everything that touches DynamoDB runs against DynamoDB Local, started by
//! `scripts/test`, with every test on its own table prefix.

// Test code fails loudly: a panic is the report.
#![allow(clippy::unwrap_used)]

mod apollo;
mod audits;
mod auth;
mod binary;
mod browser;
mod change_relay;
mod connections;
mod cursors;
mod deploy;
mod differential;
mod direct;
mod docs;
mod ecommerce;
#[path = "../../examples/ecommerce/data.rs"]
mod ecommerce_data;
mod ecommerce_mutations;
mod empty_answers;
mod fault_proxy;
mod faults;
mod federation;
mod fleet;
#[path = "../../examples/fleet/data.rs"]
mod fleet_data;
mod foreign_keys;
mod helpers;
mod http;
mod include_indexes;
mod init;
mod issuer;
mod key_formats;
mod key_kinds;
mod lambda;
mod lambda_emulator;
mod limits;
mod live_fleet;
mod load;
mod local_aws;
mod model;
mod model_file;
mod modules;
mod mutations;
mod nodes;
mod nullability;
mod observability;
mod operations;
mod orders;
mod outages;
mod overlap;
mod policy;
mod purchases;
mod rate_limits;
mod record_places;
mod relay;
mod response_reader;
mod restart_storm;
mod resume;
mod rolling_rotation;
mod rules;
mod schema;
mod seed;
#[path = "../../examples/shop/data.rs"]
mod shop_data;
mod stream_faults;
mod streams;
mod subscription_isolation;
mod subscription_limits;
mod subscriptions;
mod tables;
mod text_ranges;
mod tools;
mod total_count;
mod traces;
mod trusted_clients;
mod trusted_documents;
mod websocket;
