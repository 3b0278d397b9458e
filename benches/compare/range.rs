//! The range page: a member's loans between two times on the ElectroDB example, a range on a text
//! facet of ElectroDB's lowercased sort key (`$loan_1#loanedat_<iso time>#loanid_<id>`). dynarelay
//! reads it as a key condition, so its Queries should read no more items than they return; the
//! bench walks the range and compares the capacity DynamoDB reports for those Queries with the
//! capacity of the same range read directly with that key condition, and with the partition read
//! through a `FilterExpression` instead.

use std::path::Path;

use anyhow::{Context, bail, ensure};
use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, ReturnConsumedCapacity},
};
use dynarelay::{dynamo::Tables, model};
use serde_json::{Value, json};

use super::{
    BASE_MS, PAGE,
    examples::{Example, MEMBER},
    seed::iso,
    table::{Row, quotient, row},
};

/// The first loan in the range: loan `i` was made `i` seconds after [`BASE_MS`].
const FIRST: i64 = 5_000;
/// How many consecutive loans the range holds (of the member's 20,100).
const LOANS: i64 = 1_000;

/// The range page: the member's loans from `$from` to `$until`, with the shop page's four kinds
/// of field.
const QUERY: &str = "query($u: ID!, $from: DateTime, $until: DateTime, $after: String) {
  member(memberId: $u) { loans(first: 20, after: $after, loanedFrom: $from, loanedUntil: $until) {
    edges { cursor node { loanId title loanedAt status } }
    pageInfo { hasNextPage endCursor } } } }";
/// The member alone, read with the GetItem every range page also makes.
const MEMBER_QUERY: &str = "query($u: ID!) { member(memberId: $u) { name } }";

/// What a walk's DynamoDB calls cost, from `extensions.cost`.
#[derive(Debug, Default, Clone, Copy)]
struct Cost {
    calls: u64,
    capacity: f64,
    evaluated: u64,
    returned: u64,
}

impl Cost {
    fn of(response: &Value) -> anyhow::Result<Self> {
        let cost = &response["extensions"]["cost"];
        let number = |name: &str| cost[name].as_u64().with_context(|| format!("no {name}"));
        Ok(Self {
            calls: number("dynamodbCalls")?,
            capacity: cost["consumedCapacityUnits"]
                .as_f64()
                .context("no consumedCapacityUnits")?,
            evaluated: number("itemsEvaluated")?,
            returned: number("itemsReturned")?,
        })
    }

    fn add(&mut self, other: Self) {
        self.calls += other.calls;
        self.capacity += other.capacity;
        self.evaluated += other.evaluated;
        self.returned += other.returned;
    }

    /// This less `pages` times `each`.
    fn less(self, each: Self, pages: u64) -> Self {
        Self {
            calls: self.calls - each.calls * pages,
            capacity: self.capacity - each.capacity * pages as f64,
            evaluated: self.evaluated - each.evaluated * pages,
            returned: self.returned - each.returned * pages,
        }
    }
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> anyhow::Result<Value> {
    let value: Value = http
        .post(url)
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    if value.get("errors").is_some() {
        bail!("the range page failed: {value}");
    }
    Ok(value)
}

/// Walks the range through the ElectroDB example's server at `url`: the loans it returned, the
/// pages, and what the pages' Queries cost (the member's GetItem on each page taken out).
async fn walk(
    http: &reqwest::Client,
    url: &str,
    from: &str,
    until: &str,
) -> anyhow::Result<(u64, u64, Cost)> {
    let member = Cost::of(
        &post(
            http,
            url,
            json!({ "query": MEMBER_QUERY, "variables": { "u": MEMBER } }),
        )
        .await?,
    )?;
    ensure!(
        member.calls == 1,
        "the member alone took {} calls",
        member.calls
    );
    let (mut loans, mut pages, mut total) = (0u64, 0u64, Cost::default());
    let mut after: Option<String> = None;
    loop {
        let variables = json!({ "u": MEMBER, "from": from, "until": until, "after": after });
        let value = post(http, url, json!({ "query": QUERY, "variables": variables })).await?;
        total.add(Cost::of(&value)?);
        pages += 1;
        let connection = &value["data"]["member"]["loans"];
        let edges = connection["edges"].as_array().context("no edges")?;
        loans += edges.len() as u64;
        if connection["pageInfo"]["hasNextPage"] != true {
            break;
        }
        ensure!(
            edges.len() == PAGE,
            "a short page inside the range: {value}"
        );
        after = connection["pageInfo"]["endCursor"]
            .as_str()
            .map(str::to_owned);
    }
    Ok((loans, pages, total.less(member, pages)))
}

/// Reads the member's partition directly, every page of a Query to the end, with `narrow` adding
/// its conditions: the items returned, evaluated, and the capacity consumed.
async fn direct(
    client: &Client,
    table: &str,
    narrow: impl Fn(
        aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> anyhow::Result<(u64, u64, f64)> {
    let partition = format!("$lending#memberid_{}", MEMBER.to_lowercase());
    let (mut returned, mut evaluated, mut capacity) = (0u64, 0u64, 0.0);
    let mut start = None;
    loop {
        let query = client
            .query()
            .table_name(table)
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_values(":pk", AttributeValue::S(partition.clone()))
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        let out = narrow(query).send().await?;
        returned += out.count() as u64;
        evaluated += out.scanned_count() as u64;
        capacity += out
            .consumed_capacity()
            .and_then(|c| c.capacity_units())
            .context("no consumed capacity")?;
        start = out.last_evaluated_key;
        if start.is_none() {
            break;
        }
    }
    Ok((returned, evaluated, capacity))
}

/// The range page's rows: its Queries' items evaluated against returned, and their capacity
/// against the same range read directly, by key condition and by filter.
pub(super) async fn range_rows(
    client: &Client,
    http: &reqwest::Client,
    url: &str,
    shop_prefix: &str,
) -> anyhow::Result<Vec<Row>> {
    let model = model::load(Path::new(Example::ElectroDb.model()))?;
    let names = Tables::new(&model, &Example::ElectroDb.prefix(shop_prefix));
    let table = names.names().next().context("no table")?.to_owned();
    let (from, until) = (
        iso(BASE_MS + FIRST * 1000)?,
        iso(BASE_MS + (FIRST + LOANS - 1) * 1000)?,
    );
    let (loans, pages, ours) = walk(http, url, &from, &until).await?;
    ensure!(loans == LOANS as u64, "the range page walked {loans} loans");

    // The same range by the key condition, its bounds as ElectroDB renders them: `$` sorts just
    // above the `#` that follows the time, so the upper bound holds every loan at `until`.
    let sort = |time: &str| format!("$loan_1#loanedat_{time}").to_lowercase();
    let (low, high) = (sort(&from), format!("{}$", sort(&until)));
    let (keyed, keyed_evaluated, keyed_capacity) = direct(client, &table, |q| {
        q.key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
            .expression_attribute_names("#sk", "sk")
            .expression_attribute_values(":low", AttributeValue::S(low.clone()))
            .expression_attribute_values(":high", AttributeValue::S(high.clone()))
    })
    .await?;
    ensure!(
        keyed == LOANS as u64 && keyed_evaluated == keyed,
        "the direct key condition returned {keyed} of {keyed_evaluated} items"
    );
    // The same range as a filter on the partition's loans.
    let (filtered, filter_evaluated, filter_capacity) = direct(client, &table, |q| {
        q.key_condition_expression("#pk = :pk AND begins_with(#sk, :loan)")
            .filter_expression("#at BETWEEN :from AND :until")
            .expression_attribute_names("#sk", "sk")
            .expression_attribute_names("#at", "loanedAt")
            .expression_attribute_values(":loan", AttributeValue::S("$loan_1#".to_owned()))
            .expression_attribute_values(":from", AttributeValue::S(from.clone()))
            .expression_attribute_values(":until", AttributeValue::S(until.clone()))
    })
    .await?;
    ensure!(
        filtered == LOANS as u64,
        "the direct filter returned {filtered} items"
    );

    let name = format!(
        "ElectroDB range page: `member {{ loans(first: 20, loanedFrom, loanedUntil) }}` over \
         {LOANS} of the member's loans, {pages} pages"
    );
    Ok(vec![
        row(
            format!("{name}, items its Queries evaluated / returned"),
            format!("{} / {}", ours.evaluated, ours.returned),
            format!(
                "{keyed_evaluated} / {keyed} (one key condition) / {filter_evaluated} / {filtered} (a filter)"
            ),
            quotient(ours.evaluated, ours.returned),
            format!(
                "a key condition: at most 1.00, every item read is returned; {} Queries, each reading the page and the item after it",
                ours.calls
            ),
        ),
        row(
            format!("{name}, read capacity its Queries consumed"),
            format!("{:.1} RCU", ours.capacity),
            format!(
                "{keyed_capacity:.1} RCU (one key condition) / {filter_capacity:.1} RCU (a filter)"
            ),
            format!(
                "{} / {}",
                quotient(ours.capacity, keyed_capacity),
                quotient(ours.capacity, filter_capacity)
            ),
            "as DynamoDB Local reports it (ReturnConsumedCapacity TOTAL); each Query rounds its items up to 4 KB",
        ),
    ])
}
