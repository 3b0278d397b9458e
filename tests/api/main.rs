//! Integration tests. Everything that touches DynamoDB runs against DynamoDB Local, started by
//! `scripts/test`, with every test on its own table prefix.

// Test code fails loudly: a panic is the report.
#![allow(clippy::unwrap_used)]

mod apollo;
mod audits;
mod binary;
mod browser;
mod cursors;
mod fault_proxy;
mod faults;
mod helpers;
mod http;
mod limits;
mod load;
mod model;
mod mutations;
mod nodes;
mod observability;
mod outages;
mod overlap;
mod purchases;
mod relay;
mod schema;
mod tables;
