//! Writers: create and delete purchases (never `PAID`), between the seeded ones and now, logging
//! each acknowledged write for the walkers' checks.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{
    BASE_MS, Created, Ctx, Op, Report, SEEDED_PER_USER, SPACING_MS, USERS, below, failure, iso,
    str_of,
};

/// A writer creates while it has fewer live purchases than `LOW`, deletes while it has `HIGH` or
/// more, and tosses a coin in between: the data set stays the same size however long the run.
const LOW: usize = 5;
const HIGH: usize = 25;

const CREATE: &str = "mutation($input: CreatePurchaseInput!) { createPurchase(input: $input) {
    purchase { id purchasedAt status user { userId } }
    purchaseEdge { cursor node { id } } } }";
const DELETE: &str =
    "mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }";

pub(super) async fn writer(ctx: Arc<Ctx>, w: usize, mut rng: ChaCha8Rng) -> Report {
    let mut report = Report::default();
    let mut live: Vec<String> = Vec::new();
    let mut n: i64 = 0;
    while Instant::now() < ctx.deadline {
        let create = live.len() < LOW || (live.len() < HIGH && below(&mut rng, 2) == 0);
        if create {
            let user = below(&mut rng, USERS);
            let mut input = json!({
                "userId": ctx.expected.users[user],
                "sku": ctx.expected.skus[below(&mut rng, ctx.expected.skus.len())],
                "quantity": 1 + below(&mut rng, 5),
                "amount": format!("{}.{}", below(&mut rng, 500), below(&mut rng, 100)),
            });
            // Never PAID: `status: PAID` walks must return exactly the seeded purchases.
            match below(&mut rng, 3) {
                0 => input["status"] = json!("SHIPPED"),
                1 => input["status"] = json!("REFUNDED"),
                _ => {}
            }
            // Half between the seeded purchases (a time of this writer's own), half now.
            let explicit =
                (below(&mut rng, 2) == 0).then(|| explicit_time(n * ctx.writers as i64 + w as i64));
            if let Some(at) = &explicit {
                input["purchasedAt"] = json!(at);
            }
            n += 1;
            let body = match ctx
                .api
                .post(
                    &mut report.rec,
                    Op::Create,
                    CREATE,
                    json!({ "input": input }),
                )
                .await
            {
                Ok(body) => body,
                Err(f) => {
                    ctx.failures.add(f);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let acked = Instant::now();
            let payload = &body["data"]["createPurchase"];
            let id = str_of(&payload["purchase"], "id").to_owned();
            let at = str_of(&payload["purchase"], "purchasedAt").to_owned();
            if id.is_empty()
                || payload["purchaseEdge"]["node"]["id"] != json!(id)
                || payload["purchase"]["user"]["userId"] != json!(ctx.expected.users[user])
                || explicit.as_ref().is_some_and(|e| *e != at)
            {
                ctx.failures
                    .add(failure("create-payload", format!("{input}: {payload}")));
                continue;
            }
            ctx.log.lock().expect("log lock").insert(
                user,
                Created {
                    id: id.clone(),
                    purchased_at: at,
                    acked,
                    delete_sent: None,
                    delete_acked: None,
                },
            );
            live.push(id);
        } else {
            let id = live.swap_remove(below(&mut rng, live.len()));
            if let Some(c) = ctx.log.lock().expect("log lock").get_mut(&id) {
                c.delete_sent = Some(Instant::now());
            }
            match ctx
                .api
                .post(&mut report.rec, Op::Delete, DELETE, json!({ "id": id }))
                .await
            {
                Ok(body) if body["data"]["deletePurchase"]["deletedPurchaseId"] == json!(id) => {
                    if let Some(c) = ctx.log.lock().expect("log lock").get_mut(&id) {
                        c.delete_acked = Some(Instant::now());
                    }
                }
                Ok(body) => ctx
                    .failures
                    .add(failure("delete-payload", format!("{id}: {body}"))),
                Err(f) => ctx.failures.add(f),
            }
        }
    }
    report
}

/// A purchase time for write number `slot` (unique across writers): never a whole minute, so
/// never a seeded time, and spread over the gaps between the seeded purchases, so that walks
/// meet new purchases everywhere in a partition, not only at its ends. Unique for the first 3
/// million slots.
fn explicit_time(slot: i64) -> String {
    let gap = slot % SEEDED_PER_USER as i64;
    let offset = 1 + 3 * (slot / SEEDED_PER_USER as i64);
    assert!(offset < SPACING_MS, "ran out of explicit purchase times");
    iso(BASE_MS + gap * SPACING_MS + offset)
}
