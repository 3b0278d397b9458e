//! The single-table examples beside the shop page: the ecommerce example's (a single-table design
//! of our own), the ElectroDB example's and the OneTable example's (tables as those libraries
//! write them). Each has its tables under a prefix of its own, seeded with one owner shaped like
//! the shop's long user, and its own server of the same binary; their pages are timed and loaded
//! in the same loops as the shop page, and their rows carry the ratio to it.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use aws_sdk_dynamodb::Client;
use dynarelay::{
    dynamo::{Store, Tables, tables},
    model,
};

use super::{
    LONG_USER,
    api::{Api, Form, PageShape},
    seed::{seed_ecommerce, seed_electrodb, seed_onetable},
    server::Server,
    stats::ms,
    table::{Row, row},
};

/// The ecommerce example's customer: as many orders as [`LONG_USER`] has purchases.
pub(super) const CUSTOMER: &str = LONG_USER;
/// The ElectroDB example's member, as many loans as [`LONG_USER`] has purchases. Its capitals
/// are lowercased in ElectroDB's keys and kept in its attributes.
pub(super) const MEMBER: &str = "Bench-Long";
/// The OneTable example's project, as many issues as [`LONG_USER`] has purchases.
pub(super) const PROJECT: &str = "Bench-Long";

/// A page of 20 of a connection under a lookup, its query laid out as the shop page's: `$u` the
/// lookup's key, `$after`, and `$status` when the connection is filtered by one; `node` the
/// fields selected on each edge's node. `page! { "name", customer(username: String)
/// orders(status: OrderStatus) { "placedAt total" } }` asks for
/// `customer(username: $u) { orders(first: 20, after: $after, status: $status) { … } }`.
macro_rules! page {
    ($name:literal, $lookup:ident($key:ident: $key_type:ident)
        $connection:ident $(($filter:ident: $filter_type:ident))? { $node:literal }) => {
        PageShape {
            query: concat!(
                "query($u: ", stringify!($key_type), "!, $after: String",
                $(", $", stringify!($filter), ": ", stringify!($filter_type),)? ") {\n  ",
                stringify!($lookup), "(", stringify!($key), ": $u) { ",
                stringify!($connection), "(first: 20, after: $after",
                $(", ", stringify!($filter), ": $", stringify!($filter),)?
                ") {\n    edges { cursor node { ", $node,
                " } }\n    pageInfo { hasNextPage endCursor } } } }"
            ),
            lookup: stringify!($lookup),
            connection: stringify!($connection),
            name: $name,
            filtered: !<[&str]>::is_empty(&[$(stringify!($filter))?]),
        }
    };
}

/// The shop page's twin on the ecommerce example: one entity type in a shared partition, the
/// same four kinds of field (a time, a decimal, an enum, an integer) and the same `status`
/// filter variable.
const ORDERS_PAGE: PageShape = page! {
    "single table: `customer { orders(first: 20) }`",
    customer(username: String) orders(status: OrderStatus) { "placedAt total status itemCount" }
};
/// The item collection of the ecommerce example: addresses, the profile and orders in one
/// connection of a union, the orders with the same fields as [`ORDERS_PAGE`].
const ACTIVITY_PAGE: PageShape = page! {
    "single table: `customer { activity(first: 20) }`, the item collection",
    customer(username: String) activity { "__typename
      ... on Order { placedAt total status itemCount }
      ... on Address { label }
      ... on Customer { name }" }
};
/// A member's loans on the ElectroDB example: one entity type in a shared partition, its keys
/// lowercased, its fields read from the items' attributes. It selects four fields, as the shop
/// page does (an id, a title, a time, an enum): pages are compared with the same number of
/// selected fields.
const LOANS_PAGE: PageShape = page! {
    "ElectroDB: `member { loans(first: 20) }`",
    member(memberId: ID) loans { "loanId title loanedAt status" }
};
/// A project's issues on the OneTable example: numbers zero-padded to 8 digits in the keys, times
/// in epoch milliseconds. Four fields, as the shop page (a number, a title, an enum, a time).
const ISSUES_PAGE: PageShape = page! {
    "OneTable: `project { issues(first: 20) }`",
    project(projectId: ID) issues { "seq title state created" }
};

/// One example: its model file, its server and tables, and its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Example {
    ECommerce,
    ElectroDb,
    OneTable,
}

impl Example {
    const ALL: [Self; 3] = [Self::ECommerce, Self::ElectroDb, Self::OneTable];

    /// The model without its tables' streams and its subscriptions, as the bench's tables are
    /// (see [`seed_all`]), written beside the bench's other files: the example's own lines, less
    /// each `stream = ...` and `subscription = { ... }` line (each is one line in the examples).
    fn served_model(self) -> anyhow::Result<String> {
        let text = std::fs::read_to_string(self.model())?;
        let kept: String = text
            .lines()
            .filter(|line| {
                let line = line.trim_start();
                !line.starts_with("stream =") && !line.starts_with("subscription =")
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("bench-{}.toml", self.label().replace(' ', "-")));
        std::fs::write(&path, kept)?;
        Ok(path.to_string_lossy().into_owned())
    }

    pub(super) fn model(self) -> &'static str {
        match self {
            Self::ECommerce => concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/ecommerce/dynarelay.toml"
            ),
            Self::ElectroDb => concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/electrodb/dynarelay.toml"
            ),
            Self::OneTable => concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/onetable/dynarelay.toml"
            ),
        }
    }

    /// How stderr names it; scripts/profile looks for "<label> serve: pid".
    fn label(self) -> &'static str {
        match self {
            Self::ECommerce => "single-table example",
            Self::ElectroDb => "ElectroDB example",
            Self::OneTable => "OneTable example",
        }
    }

    /// Its tables' prefix, after the shop's.
    pub(super) fn prefix(self, shop_prefix: &str) -> String {
        let name = match self {
            Self::ECommerce => "ecommerce",
            Self::ElectroDb => "electrodb",
            Self::OneTable => "onetable",
        };
        format!("{shop_prefix}{name}_")
    }

    /// Its pages, each with the owner whose page it asks for.
    fn pages(self) -> &'static [(PageShape, &'static str)] {
        match self {
            Self::ECommerce => &[(ORDERS_PAGE, CUSTOMER), (ACTIVITY_PAGE, CUSTOMER)],
            Self::ElectroDb => &[(LOANS_PAGE, MEMBER)],
            Self::OneTable => &[(ISSUES_PAGE, PROJECT)],
        }
    }

    async fn seed(self, store: &Store, table: &str) -> anyhow::Result<()> {
        match self {
            Self::ECommerce => seed_ecommerce(store, table).await,
            Self::ElectroDb => seed_electrodb(store, table).await,
            Self::OneTable => seed_onetable(store, table).await,
        }
    }
}

/// Creates each example's table under its prefix (after the shop's `prefix`) and seeds it.
pub(super) async fn seed_all(client: &Client, prefix: &str) -> anyhow::Result<()> {
    for example in Example::ALL {
        let mut model = model::load(Path::new(example.model()))?;
        // Without their streams: DynamoDB Local slows every write and Query of a table with a
        // stream as the records of all such tables pile up (20,000 loans written to a second
        // such table took 58 s, against 3 s without a stream, and a Query 6.8 ms against
        // 1.3 ms; a stream enabled once the items were written made each page take 30 ms),
        // which would time DynamoDB Local's stream bookkeeping, not dynarelay. Their servers
        // serve the model without its streams and subscriptions ([`Example::served_model`]):
        // pages of a server with no subscription in its model.
        for table in &mut model.tables {
            table.stream = None;
        }
        let names = Tables::new(&model, &example.prefix(prefix));
        tables::create_missing(client, &model, &names, Duration::from_secs(60)).await?;
        let table = names
            .names()
            .next()
            .context("an example without a table")?
            .to_owned();
        let seeding = Instant::now();
        example
            .seed(&Store::new(client.clone(), names), &table)
            .await?;
        eprintln!(
            "seeded the {} in {:.1} s",
            example.label(),
            seeding.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The examples' servers, killed on drop.
pub(super) struct Examples(Vec<(Example, Server)>);

/// An example's page as the bench times and loads it.
pub(super) struct ExamplePage {
    pub(super) api: Arc<Api>,
    /// Whose page it asks for.
    pub(super) owner: &'static str,
    /// Its server's pid.
    pub(super) pid: u32,
}

impl Examples {
    /// Starts a server of `binary` for each example on the tables [`seed_all`] seeded, one
    /// after the other, each once the one before is ready, so that no two start-ups compete.
    pub(super) async fn start(binary: &Path, endpoint: &str, prefix: &str) -> anyhow::Result<Self> {
        let mut servers = Vec::new();
        for example in Example::ALL {
            let model = example.served_model()?;
            let server = Server::start(binary, endpoint, &example.prefix(prefix), &model)?;
            let ready = server.wait_ready().await?;
            eprintln!(
                "{} serve: pid {}, ready in {}",
                example.label(),
                server.pid(),
                ms(ready)
            );
            servers.push((example, server));
        }
        Ok(Self(servers))
    }

    /// The `/graphql` address of `example`'s server.
    pub(super) fn url(&self, example: Example) -> Option<String> {
        self.0
            .iter()
            .find(|(e, _)| *e == example)
            .map(|(_, server)| format!("http://{}/graphql", server.address))
    }

    /// Every example's pages, in order, requested through `http`.
    pub(super) fn pages(&self, http: &reqwest::Client) -> Vec<ExamplePage> {
        self.0
            .iter()
            .flat_map(|(example, server)| {
                example.pages().iter().map(|&(shape, owner)| ExamplePage {
                    api: Arc::new(Api {
                        http: http.clone(),
                        url: format!("http://{}/graphql", server.address),
                        shape,
                        token: None,
                        form: Form::Text,
                    }),
                    owner,
                    pid: server.pid(),
                })
            })
            .collect()
    }
}

/// A row of an example's page beside the shop page: `what` of it, and `ratio` to the shop page's.
pub(super) fn to_shop(
    shape: PageShape,
    what: &str,
    value: String,
    ratio: String,
    note: &str,
) -> Row {
    row(
        format!("{}, {what}", shape.name),
        value,
        "",
        ratio,
        format!("ratio: / the shop page's{note}"),
    )
}
