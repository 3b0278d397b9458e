//! `init` on tables hand-rolled code wrote, with no type attribute and nothing escaped: the
//! books of *The DynamoDB Book* (authors `AUTHOR#<name>` / `#METADATA#<name>`, their titles
//! `AUTHOR#<name>` / `TITLE#<10 digits>`), and a table of teams unlike it (`|` between the
//! segments, four types, zero-padded numbers only the keys hold). Names hold the separator and
//! spaces, and one name holds most of a type's items, then another, then all of them: the
//! templates `init` writes are the same whoever it is, every item is served, and every connection
//! walks as DynamoDB reads.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;

use super::{Truth, infer, item, item_key, lines_starting, n, s, serve_and_walk};
use crate::helpers::{ModelApp, book_says, model_app, put_plain};

/// Writes `items` with the plain SDK, as hand-rolled code does, and runs `init`: the model's
/// text, and each item's type as the writer knows it (by its table key).
pub(super) async fn written(
    hand: &ModelApp,
    table: &str,
    items: Vec<(&'static str, Item)>,
    name: &str,
) -> (String, BTreeMap<String, &'static str>) {
    let entity = &hand.model.entities[0];
    let kinds = items
        .iter()
        .filter(|(kind, _)| !kind.is_empty())
        .map(|(kind, item)| (item_key(hand.model, entity, item), *kind))
        .collect();
    put_plain(
        hand.client(),
        &hand.table(table),
        items.into_iter().map(|(_, item)| item),
    )
    .await;
    (infer(hand, name).await, kinds)
}

/// What every model `init` writes for a table with no type attribute and unescaped keys holds:
/// each entity's templates read without escapes, no value of `names` as literal text, no empty
/// `keys`, and no lookup described by one field twice.
fn assert_unescaped_templates(text: &str, names: &[&str]) {
    let lines: Vec<&str> = text.lines().collect();
    let keys: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("keys = "))
        .collect();
    assert!(!keys.is_empty(), "no templates:\n{text}");
    for &i in &keys {
        assert_eq!(
            lines.get(i + 1),
            Some(&"escape_keys = false"),
            "{}: values the writer left unescaped need `escape_keys = false`\n{text}",
            lines[i]
        );
        for name in names {
            assert!(
                !lines[i].contains(name),
                "{}: the value `{name}` is literal text of a template\n{text}",
                lines[i]
            );
        }
    }
    assert!(!text.contains("keys = {  }"), "{text}");
    for line in lines.iter().filter(|l| l.contains("Looks up one")) {
        let named: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        for (at, name) in named.iter().enumerate() {
            assert!(!named[..at].contains(name), "{line}");
        }
    }
}

/// The facet that the template of key `attribute` starting with `start` pads to `width` digits,
/// and that a connection ranges over (`sort.min`, `sort.max`).
fn assert_padded_range(text: &str, attribute: &str, start: &str, width: usize) {
    let opening = format!("{attribute} = \"{start}{{");
    let line = lines_starting(text, "keys = ")
        .into_iter()
        .find(|l| l.contains(&opening))
        .unwrap_or_else(|| panic!("no template `{opening}…`\n{text}"));
    let rest = &line[line.find(&opening).unwrap() + opening.len()..];
    let facet = rest
        .split_once(&format!(":0{width}}}\""))
        .map(|(facet, _)| facet)
        .unwrap_or_else(|| {
            panic!("`{start}` is not followed by a facet padded to {width}: {line}")
        });
    for bound in ["Min", "Max"] {
        let want = format!(
            "sort.{} = {{ name = \"{facet}{bound}\"",
            bound.to_lowercase()
        );
        assert!(text.contains(&want), "no `{want}…`\n{text}");
    }
}

// ------------------------------------------------------------------ books

const BOOKS: &str = "examples/books/dynarelay.toml";

/// Authors, with the separator, spaces, unicode and both types' starts inside their names.
const AUTHORS: [&str; 7] = [
    "Anon #7",
    "A B",
    "Zoë Ünïcode 日本",
    "#hash",
    "TITLE#trick",
    "AUTHOR#nested #METADATA#x",
    "solo",
];

const GENRES: [&str; 3] = ["poetry", "crime #1", "Ünïcode"];

/// The books table, with `most` holding 100 titles and the others 0 to 2 (none when `all`):
/// authors hold their name, titles only their own title, year and genre (the author and number
/// are only in the keys), a title of `most`'s numbered wider than the keys' 10 digits, titles
/// with a genre filed under it in `GSI1`, and a `#STATS` item in some partitions, of no type the
/// writer knows.
fn books(most: &str, all: bool) -> Vec<(&'static str, Item)> {
    let mut items = Vec::new();
    for (a, author) in AUTHORS.iter().enumerate() {
        let pk = format!("AUTHOR#{author}");
        items.push((
            "Author",
            item([
                ("PK", s(&pk)),
                ("SK", s(format!("#METADATA#{author}"))),
                ("name", s(*author)),
                ("born", n(1900 + a)),
            ]),
        ));
        if a % 3 == 1 {
            items.push((
                "",
                item([("PK", s(&pk)), ("SK", s("#STATS")), ("views", n(12 + a))]),
            ));
        }
        let count = match (*author == most, all) {
            (true, _) => 100,
            (false, true) => 0,
            (false, false) => a % 3,
        };
        for t in 0..count {
            let number = if t == 57 {
                12_345_678_901
            } else {
                t as u64 * 3 + 1
            };
            let year = 1990 + t % 5;
            let mut title = item([
                ("PK", s(&pk)),
                ("SK", s(format!("TITLE#{number:010}"))),
                ("title", s(format!("volume {t}"))),
                ("year", n(year)),
            ]);
            if t % 4 != 0 {
                let genre = GENRES[(t + a) % GENRES.len()];
                title.insert("genre".to_owned(), s(genre));
                title.insert("GSI1PK".to_owned(), s(format!("GENRE#{genre}")));
                title.insert("GSI1SK".to_owned(), s(format!("YEAR#{year}#{author}")));
            }
            items.push(("Title", title));
        }
    }
    items
}

/// The table: whoever holds most of the titles (one author, another, or one alone),
/// `init` writes the same templates, with every author's name a facet, `escape_keys = false`
/// and the titles' numbers as a 10-digit facet with a range; the model serves every author and
/// title, and every connection walks as DynamoDB reads.
#[tokio::test]
async fn a_hand_rolled_table_is_served_whole_whoever_holds_most_of_its_titles() {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for (most, all) in [("Anon #7", false), ("A B", false), ("Anon #7", true)] {
        let hand = model_app(BOOKS).await;
        let (text, kinds) = written(&hand, "Books", books(most, all), "books").await;
        serve_and_walk(&hand, "books", &text, Truth::Kinds(&kinds)).await;
        assert_unescaped_templates(&text, &AUTHORS);
        assert_padded_range(&text, "SK", "TITLE#", 10);
        let keys: Vec<String> = lines_starting(&text, "keys = ")
            .into_iter()
            .map(str::to_owned)
            .collect();
        if let Some((first, earlier)) = seen.first() {
            assert_eq!(
                &keys, earlier,
                "with {most} holding most titles, other templates than with {first}"
            );
        }
        seen.push((format!("{most}{}", if all { " alone" } else { "" }), keys));
    }
    // Authors and titles share a table with no type attribute: the model serving both tells
    // them apart by their keys' literal starts, as the reference says.
    book_says(
        "docs/src/reference/model-file-by-key.md",
        "or, without one, by the literal text its keys start with (`#METADATA#{name}` beside \
         `TITLE#{number}`: neither start begins the other)",
    );
}

// ------------------------------------------------------------------ teams

/// Teams of `|`-joined keys: a team `TEAM|<name>` / `META|<name>`, its tickets
/// `TICKET|<6-digit number>` and members `MEMBER|<email>` in its partition, tickets also filed
/// by state in `gsi1` (`STATE|<state>`, `OPENED|<time>|<team>`), and events in partitions of
/// their day (`DAY|<date>`, `EVENT|<time>|<team>`).
const TEAMS_MODEL: &str = "tests/fixtures/init/teams.toml";

/// Team names with the separator and spaces inside.
const TEAMS: [&str; 5] = ["Ops | Night", "core", "a|b|c", "Ünï team", "solo"];

/// The teams table: `most` holds 60 tickets and most events (on one day), the others 0 to 2
/// tickets; tickets hold their summary, state and time (their team and number only the keys
/// hold), members their email (some holding `|`) and role, events their time and what happened.
fn teams(most: &str) -> Vec<(&'static str, Item)> {
    let mut items = Vec::new();
    let mut events = 0;
    for (t, team) in TEAMS.iter().enumerate() {
        let pk = format!("TEAM|{team}");
        items.push((
            "Team",
            item([
                ("pk", s(&pk)),
                ("sk", s(format!("META|{team}"))),
                ("name", s(*team)),
                ("founded", n(2000 + t)),
            ]),
        ));
        let tickets = if *team == most { 60 } else { t % 3 };
        for k in 0..tickets {
            let state = ["OPEN", "CLOSED", "BLOCKED"][k % 3];
            let at = format!("2026-05-{:02}T{:02}:{:02}:00.000Z", 1 + k % 9, k % 24, k);
            items.push((
                "Ticket",
                item([
                    ("pk", s(&pk)),
                    ("sk", s(format!("TICKET|{:06}", k * 7 + 1))),
                    ("summary", s(format!("fix {k}"))),
                    ("state", s(state)),
                    ("openedAt", s(&at)),
                    ("gsi1pk", s(format!("STATE|{state}"))),
                    ("gsi1sk", s(format!("OPENED|{at}|{team}"))),
                ]),
            ));
        }
        for m in 0..(t % 2 + 1) {
            let email = if m == 0 {
                format!("lead{t}@example.com")
            } else {
                format!("x|{t}@example.com")
            };
            items.push((
                "Member",
                item([
                    ("pk", s(&pk)),
                    ("sk", s(format!("MEMBER|{email}"))),
                    ("email", s(&email)),
                    ("role", s(["lead", "dev"][m])),
                ]),
            ));
        }
        let count = if *team == most { 30 } else { 1 };
        for e in 0..count {
            events += 1;
            let day = if *team == most {
                "2026-06-01".to_owned()
            } else {
                format!("2026-06-{:02}", 2 + t)
            };
            let at = format!("{day}T{:02}:{:02}:00.000Z", e % 24, events % 60);
            items.push((
                "Event",
                item([
                    ("pk", s(format!("DAY|{day}"))),
                    ("sk", s(format!("EVENT|{at}|{team}"))),
                    ("at", s(&at)),
                    ("what", s(format!("deploy {e}"))),
                ]),
            ));
        }
    }
    items
}

/// `items` with every `|` in their text written as `separator` instead: the same table, joined
/// by another character (a `:`, which the times inside the keys hold too).
fn joined_by(items: Vec<(&'static str, Item)>, separator: char) -> Vec<(&'static str, Item)> {
    let to = separator.to_string();
    items
        .into_iter()
        .map(|(kind, item)| {
            let item = item
                .into_iter()
                .map(|(k, v)| match v {
                    AttributeValue::S(text) => (k, s(text.replace('|', &to))),
                    other => (k, other),
                })
                .collect();
            (kind, item)
        })
        .collect()
}

/// A table unlike the books: four types in one table, joined by `|` (then by `:`, which the
/// times in its keys hold too), a team's name holding the separator in keys where only the keys
/// hold it, one team holding most tickets and events (then another), tickets numbered with 6
/// zero-padded digits only their keys hold. `init` reads every type by the text its keys start
/// with, writes each team's name as a facet and the numbers as a padded facet with a range, and
/// its model serves every item.
#[tokio::test]
async fn a_table_of_four_types_joined_by_bars_or_colons_is_served_whole() {
    for (separator, most, fixture) in [
        ('|', "Ops | Night", "teams"),
        ('|', "core", "teams"),
        (':', "Ops | Night", "teams_colon"),
    ] {
        let hand = model_app(TEAMS_MODEL).await;
        let items = joined_by(teams(most), separator);
        let (text, kinds) = written(&hand, "Work", items, fixture).await;
        serve_and_walk(&hand, fixture, &text, Truth::Kinds(&kinds)).await;
        let names: Vec<String> = TEAMS
            .iter()
            .map(|t| t.replace('|', &separator.to_string()))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_unescaped_templates(&text, &names);
        assert_padded_range(&text, "sk", &format!("TICKET{separator}"), 6);
    }
}

/// The same four types, each item naming its type in an attribute spelled as its writer chose
/// (`EntityType` as in AWS's online shop, `Type` as in its gaming profiles, `entity_type`, or a
/// name of its own): `init` reads it as the type attribute whatever its case and separators, or,
/// named otherwise, from its values keeping each to one start of the keys, and its model serves
/// every item as its type.
#[tokio::test]
async fn a_type_attribute_is_read_however_its_name_is_spelled() {
    for (name, fixture) in [
        ("EntityType", "teams_entity_type"),
        ("Type", "teams_type"),
        ("entity_type", "teams_entity_type_snake"),
        // A name no list holds: read from what it holds, one value to each start of the keys.
        ("recKind", "teams_rec_kind"),
    ] {
        let hand = model_app(TEAMS_MODEL).await;
        let items = teams("core")
            .into_iter()
            .map(|(kind, mut item)| {
                item.insert(name.to_owned(), s(kind));
                (kind, item)
            })
            .collect();
        let (text, kinds) = written(&hand, "Work", items, fixture).await;
        assert!(
            text.contains(&format!("type_attribute = \"{name}\"")),
            "{name}: {text}"
        );
        for kind in ["Team", "Ticket", "Member", "Event"] {
            assert!(
                text.contains(&format!("[entities.{kind}]")),
                "{kind}: {text}"
            );
        }
        serve_and_walk(&hand, fixture, &text, Truth::Kinds(&kinds)).await;
    }
}
