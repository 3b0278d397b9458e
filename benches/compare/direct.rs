//! The shop page's DynamoDB work done directly with aws-sdk-dynamodb, as dynarelay's store sends
//! it: the page's Query, the user's GetItem, both, and the naive loop that fills a filtered page.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use anyhow::ensure;
use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, ReturnConsumedCapacity},
};

use super::{PAGE, seed::ShopNames};

pub(super) struct Direct {
    pub(super) client: Client,
    pub(super) names: ShopNames,
}

impl Direct {
    /// The Query as dynarelay's store builds it for an unfiltered page, with the consumed
    /// capacity it asks for (it feeds `extensions.cost`), so that both sides ask DynamoDB for the
    /// same work.
    fn query(
        &self,
        user: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.names.purchases)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", "userId")
            .expression_attribute_values(":pk", AttributeValue::S(user.to_owned()))
            .scan_index_forward(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
    }

    /// The user's GetItem, as the store sends it.
    fn get_user(
        &self,
        user: &str,
    ) -> aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(&self.names.users)
            .key("userId", AttributeValue::S(user.to_owned()))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
    }

    /// The Query dynarelay sends for a page of 20 (it reads one item more).
    pub(super) async fn query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let out = self.query(user).limit(PAGE as i32 + 1).send().await?;
        let elapsed = started.elapsed();
        ensure!(out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The Query for the page after the purchase at `after_ms`.
    pub(super) async fn query_after_timed(
        &self,
        user: &str,
        after_ms: i64,
    ) -> anyhow::Result<Duration> {
        let start = HashMap::from([
            ("userId".to_owned(), AttributeValue::S(user.to_owned())),
            (
                "purchasedAt".to_owned(),
                AttributeValue::N(after_ms.to_string()),
            ),
        ]);
        let started = Instant::now();
        let out = self
            .query(user)
            .limit(PAGE as i32 + 1)
            .set_exclusive_start_key(Some(start))
            .send()
            .await?;
        let elapsed = started.elapsed();
        ensure!(out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The user's GetItem, then the page's Query.
    pub(super) async fn get_and_query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let got = self.get_user(user).send().await?;
        let out = self.query(user).limit(PAGE as i32 + 1).send().await?;
        let elapsed = started.elapsed();
        ensure!(got.item.is_some() && out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The user's GetItem and the page's Query at the same time.
    pub(super) async fn get_with_query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let get = self.get_user(user).send();
        let query = self.query(user).limit(PAGE as i32 + 1).send();
        let (got, out) = tokio::join!(get, query);
        let elapsed = started.elapsed();
        ensure!(got?.item.is_some() && out?.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The naive loop: Query with `Limit = 20` and the filter until 20 match, page after page.
    pub(super) async fn naive_filtered_walk(&self, user: &str) -> anyhow::Result<(f64, f64)> {
        let (mut calls, mut items, mut filled) = (0u64, 0u64, 0u64);
        let (mut page_calls, mut page_items, mut matched) = (0u64, 0u64, 0usize);
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let out = self
                .query(user)
                .filter_expression("#s = :s")
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":s", AttributeValue::S("REFUNDED".to_owned()))
                .limit(PAGE as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await?;
            page_calls += 1;
            page_items += u64::try_from(out.scanned_count)?;
            matched += out.items().len();
            if matched >= PAGE {
                calls += page_calls;
                items += page_items;
                filled += 1;
                (page_calls, page_items, matched) = (0, 0, 0);
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        ensure!(filled > 0, "no filled page");
        Ok((calls as f64 / filled as f64, items as f64 / filled as f64))
    }
}
