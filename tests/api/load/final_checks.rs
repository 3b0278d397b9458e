//! After the run: every acknowledged write reads back as it should, and a last walk of every user
//! returns exactly the seeded purchases and the live created ones.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use serde_json::json;

use super::{
    Created, Ctx, Op, Recorder, Report, USERS, failure, str_of,
    walkers::{Target, WalkSpec, walk},
};

const NODES: &str =
    "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Purchase { purchasedAt } } }";

/// Reads every write back; returns the acknowledged creates and deletes.
pub(super) async fn final_checks(ctx: &Ctx) -> (usize, usize) {
    let mut rec = Recorder::default();
    let (live, deleted, creates) = {
        let log = ctx.log.lock().expect("log lock");
        for (id, at) in ctx.unknown.lock().expect("unknown lock").iter() {
            if log.get(id).is_none() {
                ctx.failures.add(failure(
                    "walk-phantom",
                    format!("nobody wrote {id} at {at}"),
                ));
            }
        }
        let live: Vec<(usize, Created)> = log
            .all()
            .filter(|(_, c)| c.delete_sent.is_none())
            .map(|(u, c)| (u, c.clone()))
            .collect();
        let deleted: Vec<Created> = log
            .all()
            .filter(|(_, c)| c.delete_acked.is_some())
            .map(|(_, c)| c.clone())
            .collect();
        (live, deleted, log.index.len())
    };

    // Every live create reads back by id, and every acknowledged delete reads back as null.
    let mut lookups: Vec<(&str, Option<&str>)> = live
        .iter()
        .map(|(_, c)| (c.id.as_str(), Some(c.purchased_at.as_str())))
        .collect();
    lookups.extend(deleted.iter().map(|c| (c.id.as_str(), None)));
    for chunk in lookups.chunks(100) {
        let ids: Vec<&str> = chunk.iter().map(|(id, _)| *id).collect();
        let body = match ctx
            .api
            .post(&mut rec, Op::Page, NODES, json!({ "ids": ids }))
            .await
        {
            Ok(body) => body,
            Err(f) => {
                ctx.failures.add(f);
                continue;
            }
        };
        let nodes = body["data"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if nodes.len() != chunk.len() {
            ctx.failures.add(failure(
                "readback-shape",
                format!("{} ids, {} nodes", chunk.len(), nodes.len()),
            ));
            continue;
        }
        for ((id, at), node) in chunk.iter().zip(&nodes) {
            match at {
                Some(at) if node["id"] != json!(id) || node["purchasedAt"] != json!(at) => {
                    ctx.failures.add(failure(
                        "readback-created-missing",
                        format!("{id} at {at}: {node}"),
                    ));
                }
                None if !node.is_null() => ctx
                    .failures
                    .add(failure("readback-deleted-present", format!("{id}: {node}"))),
                _ => {}
            }
        }
    }

    // A last walk of each user holds exactly the seeded purchases and the live created ones.
    let mut report = Report::default();
    for user in 0..USERS {
        let spec = WalkSpec {
            target: Target::Purchases {
                user,
                paid_only: false,
            },
            desc: false,
            backward: false,
            k: 100,
        };
        let stop = Instant::now() + Duration::from_secs(30);
        let items = match walk(ctx, &mut report, &spec, stop).await {
            Ok(Some(items)) => items,
            Ok(None) => {
                ctx.failures
                    .add(failure("final-walk", "not finished in time".to_owned()));
                continue;
            }
            Err(f) => {
                ctx.failures.add(f);
                continue;
            }
        };
        let got: BTreeMap<String, String> = items
            .iter()
            .map(|n| {
                (
                    str_of(n, "purchasedAt").to_owned(),
                    str_of(n, "id").to_owned(),
                )
            })
            .collect();
        let mut want: BTreeMap<String, String> = ctx.expected.purchases[user]
            .keys()
            .map(|at| (at.clone(), got.get(at).cloned().unwrap_or_default()))
            .collect();
        want.extend(
            live.iter()
                .filter(|(u, _)| *u == user)
                .map(|(_, c)| (c.purchased_at.clone(), c.id.clone())),
        );
        if got != want || items.len() != want.len() {
            let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
            ctx.failures.add(failure(
                "final-walk",
                format!(
                    "user {user}: {} items, want {}; extra {extra:?}, missing {missing:?}",
                    items.len(),
                    want.len()
                ),
            ));
        }
    }
    (creates, deleted.len())
}
