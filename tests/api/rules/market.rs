//! The market (attack 7, continued): listings whose seller, not part of the key, may change. A
//! delete racing a change of owner is refused by its conditional write, an update of someone
//! else's versioned item answers as for a missing one, and a field rule on the non-key owner
//! admits the owner in a connection.

use std::sync::OnceLock;

use aws_sdk_dynamodb::types::AttributeValue::{N, S};
use dynarelay::{dynamo::Item, model::Model};
use serde_json::json;

use super::{Served, calls, gid, with_auth};
use crate::helpers::{ModelApp, TestIssuer, auth_model_app, model_claims};

/// The market: listings whose seller (not part of the key) may change, withdraw and see the
/// floor price of their own. `secure.toml` cannot show a change of owner racing a write: its
/// owner field, `userId`, is the purchases' partition key, so an item's owner never changes
/// (an item with another owner is another item). This model's can.
const MARKET: &str = r#"
[tables.Listings]
partition_key = "listingId"
attributes = { listingId = "S" }

[entities.Listing]
table = "Listings"
description = "Something for sale by a seller."
id_tag = "L"
version_field = "version"

[entities.Listing.fields]
listingId = { type = "String!", description = "The listing's id." }
sellerId = { type = "String!", description = "Who sells it." }
title = { type = "String!", description = "What is for sale." }
floorPrice = { type = "String", description = "The least the seller takes: for the seller only.", allow = [{ owner = "sellerId" }] }
version = { type = "Int!", description = "Bumped by each update." }

[entities.Listing.mutations]
update = { allow = [{ owner = "sellerId" }], description = "Changes one of the caller's listings." }
delete = { allow = [{ owner = "sellerId" }], description = "Withdraws one of the caller's listings." }

[connections.listings]
entity = "Listing"
scan = true
description = "Every listing."
"#;

fn market() -> &'static Model {
    static MODEL: OnceLock<&'static Model> = OnceLock::new();
    MODEL.get_or_init(|| with_auth("market", MARKET))
}

fn listing(id: &str, seller: &str, title: &str, version: u32) -> Item {
    Item::from([
        ("listingId".to_owned(), S(id.to_owned())),
        ("sellerId".to_owned(), S(seller.to_owned())),
        ("title".to_owned(), S(title.to_owned())),
        ("floorPrice".to_owned(), S("10".to_owned())),
        ("version".to_owned(), N(version.to_string())),
    ])
}

/// The market on fresh tables, with its sellers' tokens.
struct Market {
    issuer: TestIssuer,
    app: ModelApp,
    served: Served,
}

impl Market {
    async fn start() -> Self {
        let issuer = TestIssuer::start().await;
        let (app, log) = auth_model_app(market(), &issuer).await;
        let served = Served::of(&app, &log);
        Self {
            issuer,
            app,
            served,
        }
    }

    fn token(&self, sub: &str) -> String {
        self.issuer.mint(&model_claims(market(), sub, &[]))
    }

    async fn put(&self, item: Item) {
        self.app
            .client()
            .put_item()
            .table_name(self.app.table("Listings"))
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    async fn stored(&self, id: &str) -> Option<Item> {
        self.app
            .client()
            .get_item()
            .table_name(self.app.table("Listings"))
            .key("listingId", S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }

    fn id(&self, listing_id: &str) -> String {
        gid(market(), "Listing", &listing(listing_id, "-", "-", 1))
    }
}

const DELETE_LISTING: &str =
    r#"mutation($id: ID!) { deleteListing(input: { id: $id }) { deletedListingId } }"#;
const UPDATE_LISTING: &str = r#"mutation($input: UpdateListingInput!) {
  updateListing(input: $input) { listing { id title sellerId version } } }"#;

/// 7 (continued). A change of owner racing a delete: the seller got the listing's id, then the
/// listing changed hands before the seller's delete arrived. The delete is refused, answered
/// as for a missing listing, and the listing is left as it is; the owner condition is part of
/// the one conditional DeleteItem (no read before it), so no interleaving can let it through.
#[tokio::test]
async fn rules_a_delete_racing_a_change_of_owner_is_refused_by_its_conditional_write() {
    let market = Market::start().await;
    let (sam, tina) = (market.token("sam"), market.token("tina"));
    market.put(listing("L1", "sam", "Lamp", 1)).await;

    let seen = market
        .served
        .ask(
            Some(&sam),
            "{ listings(first: 10) { edges { node { id sellerId } } } }",
            json!({}),
        )
        .await;
    let id = seen.ok("the listings")["listings"]["edges"][0]["node"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id, market.id("L1"));

    // The listing changes hands.
    let tinas = listing("L1", "tina", "Lamp", 2);
    market.put(tinas.clone()).await;

    let seen = market
        .served
        .ask(Some(&sam), DELETE_LISTING, json!({ "id": id }))
        .await;
    assert_eq!(
        seen.refused("BAD_USER_INPUT", json!(["deleteListing"]), "sam's delete"),
        "No listing has this id."
    );
    assert_eq!(
        seen.calls,
        calls(&[("DeleteItem Listings condition_failed", 1.0)])
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);
    assert!(seen.log[0].touches("Listings", "sam"), "{:?}", seen.log);
    assert_eq!(market.stored("L1").await, Some(tinas));
    let missing = market
        .served
        .ask(
            Some(&sam),
            DELETE_LISTING,
            json!({ "id": market.id("L-none") }),
        )
        .await;
    assert_eq!(
        missing.body, seen.body,
        "as for a listing that never existed"
    );

    // The new owner withdraws it.
    let seen = market
        .served
        .ask(Some(&tina), DELETE_LISTING, json!({ "id": id }))
        .await;
    assert_eq!(
        seen.ok("tina's delete")["deleteListing"]["deletedListingId"],
        id
    );
    assert_eq!(market.stored("L1").await, None);
}

/// An update of someone else's versioned item answers exactly as for a missing one (errors,
/// data and `extensions.cost`), in the one conditional UpdateItem: telling a stale version from
/// a missing item uses the item the failed write returns, never a second read. The owner gets
/// "changed since that version" for their own stale update.
#[tokio::test]
async fn rules_an_update_of_someone_elses_versioned_item_answers_as_for_a_missing_one() {
    let market = Market::start().await;
    let sam = market.token("sam");
    let tinas = listing("L2", "tina", "Kettle", 1);
    market.put(tinas.clone()).await;

    let update = |id: String| json!({ "input": { "id": id, "version": 1, "title": "Mine now" } });
    let seen = market
        .served
        .ask(Some(&sam), UPDATE_LISTING, update(market.id("L2")))
        .await;
    let missing = market
        .served
        .ask(Some(&sam), UPDATE_LISTING, update(market.id("L-none")))
        .await;
    assert_eq!(market.stored("L2").await, Some(tinas));
    assert_eq!(
        seen.refused(
            "BAD_USER_INPUT",
            json!(["updateListing"]),
            "sam updates tina's"
        ),
        "No listing has this id."
    );
    assert_eq!(seen.body, missing.body);
    assert_eq!(
        seen.calls,
        calls(&[("UpdateItem Listings condition_failed", 1.0)]),
        "{:?}",
        seen.log
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);

    // The owner's stale update is told so, also in one call.
    let tina = market.token("tina");
    let fresh =
        json!({ "input": { "id": market.id("L2"), "version": 1, "title": "Kettle, blue" } });
    let seen = market.served.ask(Some(&tina), UPDATE_LISTING, fresh).await;
    assert_eq!(
        seen.ok("tina updates hers")["updateListing"]["listing"]["version"],
        2
    );
    let seen = market
        .served
        .ask(Some(&tina), UPDATE_LISTING, update(market.id("L2")))
        .await;
    assert_eq!(
        seen.refused("BAD_USER_INPUT", json!(["updateListing"]), "tina, stale"),
        "The listing has changed since that version: read it again and retry."
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);
}

/// A page read with a projection also reads the owner field a field rule needs when that field
/// is not part of the key and not selected, so the owner sees their own `floorPrice` without
/// selecting `sellerId`.
#[tokio::test]
async fn rules_a_field_rule_on_a_non_key_owner_admits_the_owner_in_a_connection() {
    let market = Market::start().await;
    let (sam, tina) = (market.token("sam"), market.token("tina"));
    market.put(listing("L3", "sam", "Tent", 1)).await;

    // With the owner field selected, the rule works.
    let both = "{ listings(first: 10) { edges { node { sellerId floorPrice } } } }";
    let seen = market.served.ask(Some(&sam), both, json!({})).await;
    assert_eq!(
        seen.ok("sam, with sellerId")["listings"]["edges"][0]["node"]["floorPrice"],
        "10"
    );
    let seen = market.served.ask(Some(&tina), both, json!({})).await;
    seen.refused(
        "FORBIDDEN",
        json!(["listings", "edges", 0, "node", "floorPrice"]),
        "tina, with sellerId",
    );
    // Without it, the owner is refused their own.
    let alone = "{ listings(first: 10) { edges { node { floorPrice } } } }";
    let seen = market.served.ask(Some(&sam), alone, json!({})).await;
    assert_eq!(
        seen.ok("sam, floorPrice alone")["listings"]["edges"][0]["node"]["floorPrice"],
        "10"
    );
}
