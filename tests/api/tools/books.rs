//! Hand-rolled code (`examples/books`), in the style of *The DynamoDB Book*: authors and their
//! titles in one partition, no type attribute, nothing escaped. An item is an author or a title
//! by its sort key's leading text alone (`#METADATA#` or `TITLE#`), so the ground truth here is
//! DynamoDB's own reads (plain SDK Queries and Scans) filtered by that rule.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use super::{refetch_all, scanned, text};
use crate::helpers::{GroundQuery, ModelApp, merge, model_app, put_plain, query_all, walk_matches};

const MODEL: &str = "examples/books/dynarelay.toml";

/// Authors with separators, spaces, unicode and the other entity's start inside their names,
/// each with its number of titles: 0, 1, 7, 20, 21 and 100.
const AUTHORS: [(&str, usize); 7] = [
    ("Anon #7", 20),
    ("Zoë Ünïcode 日本", 7),
    ("A B", 1),
    ("#hash", 100),
    ("TITLE#trick", 0),
    ("AUTHOR#nested #METADATA#x", 21),
    ("solo", 0),
];

const GENRES: [&str; 3] = ["poetry", "crime #1", "Ünïcode"];

const TITLES: &str = r#"query($name: String!, $first: Int, $after: String, $last: Int, $before: String,
    $from: BigInt, $to: BigInt) {
  author(name: $name) {
    titles(first: $first, after: $after, last: $last, before: $before,
           fromNumber: $from, toNumber: $to) {
      edges { cursor node { id author number name genre year writer { name } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const IN_GENRE: &str = r#"query($genre: String!, $first: Int, $after: String, $last: Int, $before: String) {
  titlesInGenre(genre: $genre, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { author number } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

/// The n-th title's number: 1, 2, 3 ..., and the last of `Anon #7`'s wider than its key's 10
/// digits, so that it sorts by its first digits.
fn number(author: &str, n: usize) -> u64 {
    if author == "Anon #7" && n == 19 {
        12_345_678_901
    } else {
        n as u64 * 3 + 1
    }
}

/// The table as the hand-rolled code writes it: each author's item, its titles (the n-th with a
/// genre unless n is a multiple of 4: the index is sparse), and in each partition an item of no
/// entity (`#STATS`), which no read may show.
fn items() -> Vec<Item> {
    let mut items = Vec::new();
    for (a, (author, count)) in AUTHORS.iter().enumerate() {
        let pk = format!("AUTHOR#{author}");
        items.push(Item::from([
            ("PK".to_owned(), s(&pk)),
            ("SK".to_owned(), s(format!("#METADATA#{author}"))),
            ("name".to_owned(), s(*author)),
            (
                "born".to_owned(),
                AttributeValue::N(format!("{}", 1900 + a)),
            ),
        ]));
        items.push(Item::from([
            ("PK".to_owned(), s(&pk)),
            ("SK".to_owned(), s("#STATS")),
            ("views".to_owned(), AttributeValue::N("12".into())),
        ]));
        for n in 0..*count {
            let number = number(author, n);
            let year = 1990 + (n % 5);
            let mut item = Item::from([
                ("PK".to_owned(), s(&pk)),
                ("SK".to_owned(), s(format!("TITLE#{number:010}"))),
                ("author".to_owned(), s(*author)),
                ("number".to_owned(), AttributeValue::N(number.to_string())),
                ("name".to_owned(), s(format!("{author}: volume {n}"))),
                ("year".to_owned(), AttributeValue::N(year.to_string())),
            ]);
            if n % 4 != 0 {
                let genre = GENRES[(n + a) % GENRES.len()];
                item.insert("genre".to_owned(), s(genre));
                item.insert("GSI1PK".to_owned(), s(format!("GENRE#{genre}")));
                item.insert("GSI1SK".to_owned(), s(format!("YEAR#{year}#{author}")));
            }
            items.push(item);
        }
    }
    items
}

/// `author/number` of a title node, or of a stored title.
fn title_key(node: &Value) -> String {
    format!("{}/{}", text(node, "author"), text(node, "number"))
}

fn stored_key(item: &Item) -> String {
    let text = |name: &str| match &item[name] {
        AttributeValue::S(s) | AttributeValue::N(s) => s.clone(),
        other => panic!("{name}: {other:?}"),
    };
    format!("{}/{}", text("author"), text("number"))
}

/// The items DynamoDB's own Query returns for `condition`, kept by the key-prefix rule: titles
/// are the items whose sort key starts with `TITLE#`.
async fn titles_where(
    app: &ModelApp,
    index: Option<&str>,
    condition: &str,
    values: &[(&str, AttributeValue)],
    forward: bool,
) -> Vec<String> {
    let table = app.table("Books");
    let names: &[(&str, &str)] = match index {
        Some(_) => &[("#p", "GSI1PK")],
        None if condition.contains("#s") => &[("#p", "PK"), ("#s", "SK")],
        None => &[("#p", "PK")],
    };
    let items = query_all(
        app.client(),
        &GroundQuery {
            table: &table,
            index,
            condition,
            names,
            values,
            forward,
        },
    )
    .await;
    items
        .iter()
        .filter(|item| matches!(&item["SK"], AttributeValue::S(sk) if sk.starts_with("TITLE#")))
        .map(stored_key)
        .collect()
}

/// Writes the table with the plain SDK, as the hand-rolled code would.
async fn write(app: &ModelApp) {
    put_plain(app.client(), &app.table("Books"), items()).await;
}

/// Every author's titles and every genre's, walked at every page size both ways, are exactly
/// DynamoDB's own Queries kept by the key-prefix rule; authors by a Scan are exactly the items
/// starting `#METADATA#`; every author and title is reachable by its lookup, its connection and
/// `node`; the item of no entity in each partition is never shown.
#[tokio::test]
async fn a_hand_rolled_table_without_a_type_attribute_is_served_by_its_key_prefixes() {
    let app = model_app(MODEL).await;
    write(&app).await;

    let mut titles = Vec::new();
    for (author, count) in AUTHORS {
        let pk = [(":p", s(format!("AUTHOR#{author}")))];
        let want = titles_where(&app, None, "#p = :p", &pk, true).await;
        assert_eq!(want.len(), count, "{author}");
        let vars = json!({ "name": author });
        let nodes = walk_matches(
            |paging| app.graphql(TITLES, merge(vars.clone(), paging)),
            &["author", "titles"],
            title_key,
            &want,
            &format!("{author}'s titles"),
        )
        .await;
        for node in &nodes {
            assert_eq!(node["writer"]["name"], author, "{node}");
            let n = node["name"].as_str().unwrap();
            assert!(n.starts_with(&format!("{author}: volume ")), "{node}");
        }
        titles.extend(nodes);
    }
    assert_eq!(titles.len(), 149);
    refetch_all(
        &app,
        "Title",
        &titles,
        &["id", "author", "number", "name", "genre", "year"],
    )
    .await;

    // Each title by its lookup, with the id its connection gave.
    for title in &titles {
        let answer = app
            .graphql(
                "query($a: String!, $n: BigInt!) { title(author: $a, number: $n) { id name } }",
                json!({ "a": title["author"], "n": title["number"] }),
            )
            .await;
        assert_eq!(
            answer["data"]["title"],
            json!({ "id": title["id"], "name": title["name"] }),
            "{answer}"
        );
    }

    // Genres through the sparse index: titles without a genre are in none.
    let mut in_genres = 0;
    for genre in GENRES {
        let pk = [(":p", s(format!("GENRE#{genre}")))];
        let want = titles_where(&app, Some("GSI1"), "#p = :p", &pk, true).await;
        assert!(want.len() > 20, "{genre}: {}", want.len());
        in_genres += want.len();
        walk_matches(
            |paging| app.graphql(IN_GENRE, merge(json!({ "genre": genre }), paging)),
            &["titlesInGenre"],
            title_key,
            &want,
            &format!("titles of {genre}"),
        )
        .await;
    }
    let with_genre = titles.iter().filter(|t| t["genre"].is_string()).count();
    assert_eq!(in_genres, with_genre);
    assert!(with_genre < titles.len());

    // Authors by a Scan, then each by its lookup and by `node`.
    let authors = scanned(&app, "authors", "id name born", "name").await;
    let mut want: Vec<&str> = AUTHORS.iter().map(|(a, _)| *a).collect();
    want.sort();
    let names: Vec<String> = authors.iter().map(|a| text(a, "name")).collect();
    assert_eq!(names, want);
    for author in &authors {
        let answer = app
            .graphql(
                "query($name: String!, $id: ID!) { author(name: $name) { id born } node(id: $id) { ... on Author { name } } }",
                json!({ "name": author["name"], "id": author["id"] }),
            )
            .await;
        assert_eq!(
            answer["data"],
            json!({ "author": { "id": author["id"], "born": author["born"] }, "node": { "name": author["name"] } }),
            "{answer}"
        );
    }
}

/// A range of title numbers is a key condition on the text the keys hold, in DynamoDB's byte
/// order: every pair of bounds of 1 to 12 digits (numbers wider than the key's 10 digits
/// included) selects exactly what DynamoDB's own `BETWEEN` on the rendered bounds selects, and
/// bounds whose text is out of order are refused before any read.
#[tokio::test]
async fn title_ranges_are_the_keys_byte_order_of_any_width() {
    let app = model_app(MODEL).await;
    write(&app).await;
    let author = "Anon #7";
    let bounds: [u64; 9] = [
        0,
        4,
        7,
        25,
        58,
        999,
        9_999_999_999,
        12_345_678_901,
        100_000_000_000,
    ];
    let mut checked = 0;
    for lo in bounds {
        for hi in bounds {
            let (from, to) = (format!("TITLE#{lo:010}"), format!("TITLE#{hi:010}"));
            let vars = json!({ "name": author, "first": 100, "from": lo.to_string(), "to": hi.to_string() });
            let answer = app.graphql(TITLES, vars).await;
            if from > to {
                assert_eq!(
                    answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
                    "{lo}..{hi}: {answer}"
                );
                continue;
            }
            let values = [
                (":p", s(format!("AUTHOR#{author}"))),
                (":lo", s(from)),
                (":hi", s(to)),
            ];
            let want = titles_where(
                &app,
                None,
                "#p = :p AND #s BETWEEN :lo AND :hi",
                &values,
                true,
            )
            .await;
            let connection = &answer["data"]["author"]["titles"];
            let got: Vec<String> = connection["edges"]
                .as_array()
                .unwrap_or_else(|| panic!("{lo}..{hi}: {answer}"))
                .iter()
                .map(|e| title_key(&e["node"]))
                .collect();
            assert_eq!(got, want, "{lo}..{hi}");
            assert_eq!(connection["pageInfo"]["hasNextPage"], false);
            checked += 1;
        }
    }
    assert_eq!(checked, 45);
}
