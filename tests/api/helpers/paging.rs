//! Walking a connection page by page, every page checked as Relay defines it, and merging paging
//! variables into a query's.

use serde_json::{Value, json};

/// `vars` with every key of `extra` set (replacing what it held).
pub fn merge(mut vars: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().expect("extra variables are an object") {
        vars[k] = v.clone();
    }
    vars
}

/// Walks one connection to its end in one direction, `size` edges a page, sending each page's
/// paging variables (`first`/`after` or `last`/`before`) through `page`, which answers the
/// response. `path` leads from `data` to the connection. Every page is checked as Relay
/// defines it: no error; no flag on the side the walk came from; full pages while more follow,
/// and no empty last page after a page that claimed more; a cursor on every edge; `startCursor`
/// and `endCursor` the first and last edge's. Returns every node, in connection order.
pub async fn walk_pages<F, Fut>(
    mut page: F,
    path: &[&str],
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<Value>
where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let mut nodes: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        assert!(page_number < 2000, "{label}: the walk does not end");
        let paging = if forward {
            json!({ "first": size, "after": cursor })
        } else {
            json!({ "last": size, "before": cursor })
        };
        let response = page(paging).await;
        assert!(response.get("errors").is_none(), "{label}: {response}");
        let connection = path.iter().fold(&response["data"], |v, k| &v[*k]);
        let info = &connection["pageInfo"];
        let edges = connection["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: {response}"));
        let found: Vec<Value> = edges.iter().map(|e| e["node"].clone()).collect();
        let (next, previous) = (
            info["hasNextPage"].as_bool().unwrap(),
            info["hasPreviousPage"].as_bool().unwrap(),
        );
        let (more, other_side) = if forward {
            (next, previous)
        } else {
            (previous, next)
        };
        assert!(
            !other_side,
            "{label}: page {page_number} claims a page on the side it came from"
        );
        if more {
            assert_eq!(
                found.len(),
                size as usize,
                "{label}: page {page_number} is not full"
            );
        } else {
            assert!(
                !found.is_empty() || page_number == 0,
                "{label}: an empty last page after a page that claimed more"
            );
        }
        assert!(
            edges
                .iter()
                .all(|e| e["cursor"].as_str().is_some_and(|c| !c.is_empty())),
            "{label}: an edge without a cursor"
        );
        assert_eq!(
            info["startCursor"],
            edges.first().map_or(Value::Null, |e| e["cursor"].clone()),
            "{label}"
        );
        assert_eq!(
            info["endCursor"],
            edges.last().map_or(Value::Null, |e| e["cursor"].clone()),
            "{label}"
        );
        if forward {
            nodes.extend(found);
        } else {
            nodes.splice(0..0, found);
        }
        if !more {
            return nodes;
        }
        let next = if forward {
            &info["endCursor"]
        } else {
            &info["startCursor"]
        };
        cursor = Some(next.as_str().unwrap().to_owned());
    }
    unreachable!()
}

/// The page sizes every walk of another tool's data is made at: one edge, a size that divides
/// nothing, DynamoDB-sized pages and one larger than most partitions.
pub const WALK_SIZES: [i64; 4] = [1, 7, 20, 100];

/// Walks one connection to its end at every size of [`WALK_SIZES`], forward and backward,
/// through `page` (as [`walk_pages`]), and asserts that each walk yields `want`: the text `key`
/// gives each node, in connection order. Returns the nodes of the last walk.
pub async fn walk_matches<F, Fut>(
    mut page: F,
    path: &[&str],
    key: impl Fn(&Value) -> String,
    want: &[String],
    label: &str,
) -> Vec<Value>
where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let mut last = Vec::new();
    for size in WALK_SIZES {
        for forward in [true, false] {
            let label = format!(
                "{label}, {size} a page, {}",
                if forward { "forward" } else { "backward" }
            );
            let nodes = walk_pages(&mut page, path, size, forward, &label).await;
            let got: Vec<String> = nodes.iter().map(&key).collect();
            assert_eq!(got, want, "{label}");
            last = nodes;
        }
    }
    last
}

/// Every node of a connection whose pages may be short (a Scan that skips items of other
/// entities), `size` at a time forward, following `endCursor` while `hasNextPage`. `page` gets
/// `first`/`after`; `path` leads from `data` to the connection, which must select `nodes` and
/// `pageInfo { hasNextPage endCursor }`.
pub async fn all_nodes<F, Fut>(mut page: F, path: &[&str], size: i64) -> Vec<Value>
where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let mut nodes = Vec::new();
    let mut after = Value::Null;
    for _ in 0..10_000 {
        let response = page(json!({ "first": size, "after": after })).await;
        assert!(response.get("errors").is_none(), "{response}");
        let connection = path.iter().fold(&response["data"], |v, k| &v[*k]);
        nodes.extend(
            connection["nodes"]
                .as_array()
                .unwrap_or_else(|| panic!("{response}"))
                .clone(),
        );
        if connection["pageInfo"]["hasNextPage"] != true {
            return nodes;
        }
        after = connection["pageInfo"]["endCursor"].clone();
        assert!(after.is_string(), "more pages and no cursor: {response}");
    }
    panic!("the connection does not end")
}
