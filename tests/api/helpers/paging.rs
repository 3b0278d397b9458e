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
