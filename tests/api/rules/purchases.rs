//! Whose purchases a caller reads (attacks 1 to 3): a user pages through exactly their own, a
//! cursor works only for the caller it was given to, and global ids of someone else's purchases
//! are null and never read.

use serde_json::{Value, json};

use super::{A, B, NODE, NODES, PURCHASES, Shop, calls, end_cursor, gid, ids};
use crate::helpers::{merge, metric_sum, walk_pages};

/// The ids of a connection's page.
fn page_ids(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("no edges: {connection}"))
        .iter()
        .map(|e| e["node"]["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `secure.toml`'s `Purchase` rules, taken out by the controls.
const PURCHASE_RULES: &str =
    "id_tag = \"P\"\nallow = [{ owner = \"userId\" }, { groups = [\"admin\"] }]\n";

/// 1. A user pages through exactly their own purchases; another user's are `FORBIDDEN` without a
/// Query; an admin pages through anyone's.
#[tokio::test]
async fn rules_a_user_pages_through_exactly_their_own_purchases_and_no_one_elses() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let truth_a = shop.purchase_ids(a).await;
    let truth_b = shop.purchase_ids(b).await;
    assert_eq!((truth_a.len(), truth_b.len()), (21, 20));
    let others: Vec<&str> = (0..5).filter(|&i| i != A).map(|i| shop.user(i)).collect();

    // A, five a page: exactly A's purchases, one GetItem (the user) and one Query a page, and
    // no call names anyone else's partition.
    let before = shop.served.calls();
    let mark = shop.served.log.mark();
    let walked = walk_pages(
        |paging| {
            shop.served.body(
                Some(&a_token),
                PURCHASES,
                merge(json!({ "user": a }), paging),
            )
        },
        &["user", "purchases"],
        5,
        true,
        "A's purchases as A",
    )
    .await;
    assert_eq!(ids(&walked), truth_a);
    assert!(walked.iter().all(|n| n["userId"] == a));
    let after = shop.served.calls();
    for (key, n) in [("GetItem Users", 5.0), ("Query Purchases", 5.0)] {
        assert_eq!(
            after[key] - before.get(key).copied().unwrap_or(0.0),
            n,
            "{key}"
        );
    }
    for call in shop.served.log.since(mark) {
        assert!(
            others.iter().all(|o| !call.touches("Purchases", o)),
            "{call:?}"
        );
    }

    // B's own, in one page.
    let seen = shop
        .ask(Some(&b_token), PURCHASES, json!({ "user": b, "first": 20 }))
        .await;
    let page = &seen.ok("B's purchases as B")["user"]["purchases"];
    assert_eq!(page_ids(page), truth_b);
    assert_eq!(page["pageInfo"]["hasNextPage"], false);
    seen.untouched("Purchases", a, "B's purchases as B");

    // B sees A (any signed-in caller does)...
    let seen = shop
        .ask(
            Some(&b_token),
            "query($user: String!) { user(userId: $user) { userId name } }",
            json!({ "user": a }),
        )
        .await;
    assert_eq!(seen.ok("A as B")["user"]["userId"], a);
    // ...but not A's purchases: FORBIDDEN (the connection is non-null, so `user` is null), and
    // only the user is read, never A's partition of Purchases.
    for (label, variables) in [
        ("A's purchases as B", json!({ "user": a, "first": 5 })),
        ("A's purchases as B, no page size", json!({ "user": a })),
    ] {
        let seen = shop.ask(Some(&b_token), PURCHASES, variables).await;
        seen.refused("FORBIDDEN", json!(["user", "purchases"]), label);
        assert_eq!(seen.body["data"], json!({ "user": null }), "{label}");
        assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]), "{label}");
        seen.no_call_on("Purchases", label);
    }

    // An admin pages through anyone's.
    for (user, truth) in [(a, &truth_a), (b, &truth_b)] {
        let walked = walk_pages(
            |paging| {
                shop.served.body(
                    Some(&admin),
                    PURCHASES,
                    merge(json!({ "user": user }), paging),
                )
            },
            &["user", "purchases"],
            7,
            true,
            "purchases as the admin",
        )
        .await;
        assert_eq!(&ids(&walked), truth, "{user}");
    }

    // Control: without `Purchase`'s rules, B reads A's purchases.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let seen = open
        .ask(Some(&b_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    assert_eq!(
        page_ids(&seen.ok("without the rule")["user"]["purchases"]),
        truth_a[..5]
    );
}

/// 2. A cursor belongs to the caller it was given to: anyone else's use of it is refused with
/// `BAD_USER_INPUT` before any read, even on the same partition by an admin; its owner goes on.
#[tokio::test]
async fn rules_a_cursor_works_only_for_the_caller_it_was_given_to() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let truth_a = shop.purchase_ids(a).await;
    let rejections = || {
        metric_sum(
            &shop.served.store.metrics().render(),
            "dynarelay_cursor_rejections_total",
        )
        .unwrap_or(0.0)
    };

    let first = shop
        .ask(Some(&a_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let a_cursor = end_cursor(&first.ok("A's first page")["user"]["purchases"]);
    let admin_page = shop
        .ask(Some(&admin), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let admin_cursor = end_cursor(&admin_page.ok("A's first page as admin")["user"]["purchases"]);

    let auditor = shop.admin_as("auditor");
    let cases = [
        (
            "A's cursor, B on B's own purchases",
            &b_token,
            b,
            &a_cursor,
            "BAD_USER_INPUT",
        ),
        (
            "A's cursor, an admin on A's purchases",
            &admin,
            a,
            &a_cursor,
            "BAD_USER_INPUT",
        ),
        // Same connection, same partition, same position: only the caller differs.
        (
            "the admin's cursor, A on A's purchases",
            &a_token,
            a,
            &admin_cursor,
            "BAD_USER_INPUT",
        ),
        (
            "the admin's cursor, another admin",
            &auditor,
            a,
            &admin_cursor,
            "BAD_USER_INPUT",
        ),
        // Not B's partition at all: refused for that first.
        (
            "A's cursor, B on A's purchases",
            &b_token,
            a,
            &a_cursor,
            "FORBIDDEN",
        ),
    ];
    let rejected_before = rejections();
    for (label, token, user, cursor, code) in cases {
        let seen = shop
            .ask(
                Some(token),
                PURCHASES,
                json!({ "user": user, "first": 5, "after": cursor }),
            )
            .await;
        let message = seen.refused(code, json!(["user", "purchases"]), label);
        if code == "BAD_USER_INPUT" {
            assert_eq!(
                message, "The cursor is not valid for this connection.",
                "{label}"
            );
        }
        assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]), "{label}");
        seen.no_call_on("Purchases", label);
    }
    assert_eq!(rejections() - rejected_before, 4.0);

    // Each cursor works for its own caller: the next five.
    for (label, token, cursor) in [
        ("A", &a_token, &a_cursor),
        ("the admin", &admin, &admin_cursor),
    ] {
        let seen = shop
            .ask(
                Some(token),
                PURCHASES,
                json!({ "user": a, "first": 5, "after": cursor }),
            )
            .await;
        assert_eq!(
            page_ids(&seen.ok(label)["user"]["purchases"]),
            truth_a[5..10],
            "{label}"
        );
        assert_eq!(
            seen.calls,
            calls(&[("GetItem Users", 1.0), ("Query Purchases", 1.0)]),
            "{label}"
        );
    }

    // Control: without `Purchase`'s rules the connection is public, its cursors are bound to no
    // one, and the admin continues from A's.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let first = open
        .ask(Some(&a_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let open_cursor = end_cursor(&first.ok("without the rule")["user"]["purchases"]);
    let seen = open
        .ask(
            Some(&admin),
            PURCHASES,
            json!({ "user": a, "first": 5, "after": open_cursor }),
        )
        .await;
    assert_eq!(
        page_ids(&seen.ok("without the rule, the admin")["user"]["purchases"]),
        truth_a[5..10]
    );
}

/// 3. Global ids of someone else's purchases are null and never read: alone, mixed with the
/// caller's own, and for an anonymous caller; an admin gets them all.
#[tokio::test]
async fn rules_global_ids_of_someone_elses_purchases_are_null_and_never_read() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (b_token, admin) = (shop.token(b), shop.admin());
    let a_ids = shop.purchase_ids(a).await;
    let b_ids = shop.purchase_ids(b).await;
    let a_user = gid(shop.model(), "User", &shop.data.users[A].to_item());

    // B, A's purchase: null, as if it did not exist, with nothing read.
    let seen = shop
        .ask(Some(&b_token), NODE, json!({ "id": a_ids[0] }))
        .await;
    assert_eq!(seen.ok("A's purchase as B"), &json!({ "node": null }));
    seen.nothing_read("A's purchase as B");

    // B, a mix: B's purchases, nulls for A's, in one BatchGetItem of B's two keys alone.
    let mix = [&b_ids[0], &a_ids[0], &b_ids[1], &a_ids[1]];
    let seen = shop.ask(Some(&b_token), NODES, json!({ "ids": mix })).await;
    let nodes = &seen.ok("a mix as B")["nodes"];
    assert_eq!(nodes.as_array().unwrap().len(), 4, "{nodes}");
    for (at, id) in [(0, &b_ids[0]), (2, &b_ids[1])] {
        assert_eq!(nodes[at]["id"], **id, "{nodes}");
        assert_eq!(nodes[at]["userId"], b, "{nodes}");
    }
    assert!(nodes[1].is_null() && nodes[3].is_null(), "{nodes}");
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));
    let asked = &seen.log[0];
    assert_eq!(
        asked.values.iter().filter(|v| *v == b).count(),
        2,
        "{asked:?}"
    );
    seen.untouched("Purchases", a, "a mix as B");

    // Anonymous: null for a purchase and for a user (users are for signed-in callers), with
    // nothing read.
    for (label, id) in [("a purchase", &a_ids[0]), ("a user", &a_user)] {
        let seen = shop.ask(None, NODE, json!({ "id": id })).await;
        assert_eq!(seen.ok(label), &json!({ "node": null }), "{label}");
        seen.nothing_read(label);
        let seen = shop.ask(None, NODES, json!({ "ids": [id] })).await;
        assert_eq!(seen.ok(label), &json!({ "nodes": [null] }), "{label}");
        seen.nothing_read(label);
    }

    // B, A's user: users are visible to any signed-in caller.
    let seen = shop
        .ask(Some(&b_token), NODE, json!({ "id": a_user }))
        .await;
    assert_eq!(seen.ok("A as B")["node"]["userId"], a);

    // An admin: all four, in one BatchGetItem.
    let seen = shop.ask(Some(&admin), NODES, json!({ "ids": mix })).await;
    let nodes = &seen.ok("a mix as the admin")["nodes"];
    let got: Vec<String> = ids(nodes.as_array().unwrap());
    assert_eq!(got, mix.map(String::clone));
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));

    // Control: without `Purchase`'s rules, B reads A's purchase by id.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let seen = open
        .ask(Some(&b_token), NODE, json!({ "id": a_ids[0] }))
        .await;
    assert_eq!(seen.ok("without the rule")["node"]["userId"], a);
}
