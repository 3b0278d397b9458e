//! Unit tests of reading key templates from sampled items.

use super::*;
use crate::init::test_item as item;

fn text_of(t: &Template) -> String {
    t.text(|p| match p {
        Piece::Facet { attribute, .. } => attribute.clone(),
        Piece::KeyOnly(label, _) => format!("?{label}"),
        Piece::Literal(_) => unreachable!(),
    })
}

/// The template of `SK` among `items`, its keys joined by `#` and unescaped.
fn read_sk(items: &[Item], candidates: &[&str]) -> Template {
    let refs: Vec<&Item> = items.iter().collect();
    template(("SK", true), &refs, candidates, &BTreeSet::new(), HASH).unwrap()
}

const HASH: Writing = Writing {
    separator: '#',
    escaped: false,
};

#[test]
fn templates_are_read_from_the_keys_other_tools_write() {
    let cases: &[(&str, Vec<Item>, &str)] = &[
        (
            "SK",
            vec![
                item(&[
                    ("SK", "ORDER#2026-05-01T12:00:00.000Z#o-1"),
                    ("placedAt", "2026-05-01T12:00:00.000Z"),
                    ("orderId", "o-1"),
                ]),
                item(&[
                    ("SK", "ORDER#2026-05-02T12:00:00.000Z#o-2"),
                    ("placedAt", "2026-05-02T12:00:00.000Z"),
                    ("orderId", "o-2"),
                ]),
            ],
            "ORDER#{placedAt}#{orderId}",
        ),
        (
            "sk",
            vec![
                item(&[("sk", "issue#00000042"), ("seq", "N:42")]),
                item(&[("sk", "issue#00000007"), ("seq", "N:7")]),
            ],
            "issue#{seq:08}",
        ),
        (
            "pk",
            vec![
                item(&[("pk", "$lending#memberid_m-001"), ("memberId", "M-001")]),
                item(&[("pk", "$lending#memberid_m-002"), ("memberId", "m-002")]),
            ],
            "$lending#memberid_{memberId}",
        ),
        (
            "PK",
            vec![
                item(&[
                    ("PK", "CUSTOMER#a#b@example.com"),
                    ("email", "a#b@example.com"),
                ]),
                item(&[("PK", "CUSTOMER#c@example.com"), ("email", "c@example.com")]),
            ],
            "CUSTOMER#{email}",
        ),
        (
            "PK",
            vec![item(&[("PK", "EVENT#e-1")]), item(&[("PK", "EVENT#e-2")])],
            "EVENT#{?EVENT}",
        ),
        (
            "SK",
            vec![
                item(&[("SK", "#PROFILE"), ("x", "1")]),
                item(&[("SK", "#PROFILE")]),
            ],
            "#PROFILE",
        ),
    ];
    for (attribute, items, want) in cases {
        let refs: Vec<&Item> = items.iter().collect();
        let candidates: Vec<&str> =
            ["placedAt", "orderId", "seq", "memberId", "email", "x"].to_vec();
        let t = template(
            (attribute, true),
            &refs,
            &candidates,
            &BTreeSet::new(),
            HASH,
        )
        .unwrap();
        assert_eq!(text_of(&t), *want, "{items:?}");
        assert_eq!((t.fits, t.holding), (items.len(), items.len()));
    }
    let refs: Vec<Item> = vec![item(&[("sk", "issue#00000042"), ("seq", "N:42")])];
    let t = template(
        ("sk", true),
        &refs.iter().collect::<Vec<_>>(),
        &["seq"],
        &BTreeSet::new(),
        HASH,
    )
    .unwrap();
    assert_eq!(
        t.pieces[1],
        Piece::Facet {
            attribute: "seq".to_owned(),
            width: Some(8)
        }
    );
    let lower = template(
        ("pk", true),
        &[&item(&[("pk", "$x#id_abc"), ("id", "ABC")])],
        &["id"],
        &BTreeSet::new(),
        HASH,
    )
    .unwrap();
    assert!(lower.lower);
}

/// Keys of titles whose author only the key holds, `counts` of each author's.
fn titles(counts: &[(&str, usize)], separator: char) -> Vec<Item> {
    let mut items = Vec::new();
    for (author, count) in counts {
        for n in 0..*count {
            let pk = format!("AUTHOR{separator}{author}");
            let sk = format!("TITLE{separator}{:010}", n * 3 + 1);
            items.push(item(&[("PK", &pk), ("SK", &sk), ("year", "N:1990")]));
        }
    }
    items
}

#[test]
fn literal_text_is_only_what_every_key_shares_however_skewed() {
    let skews: &[&[(&str, usize)]] = &[
        &[("Anon #7", 100), ("A B", 1), ("#x", 2)],
        &[("Anon #7", 1), ("A B", 100), ("#x", 2)],
        &[("Anon #7", 2), ("A B", 2), ("x #y #z", 90)],
        &[("Anon |7", 100), ("A B", 1)],
        &[("A B", 1), ("Anon |7", 50), ("c|d|e", 3)],
    ];
    for counts in skews {
        for separator in ['#', '|'] {
            let items = titles(counts, separator);
            let refs: Vec<&Item> = items.iter().collect();
            let writing = Writing {
                separator,
                escaped: false,
            };
            let pk = template(("PK", true), &refs, &["year"], &BTreeSet::new(), writing).unwrap();
            let sk = template(("SK", true), &refs, &["year"], &BTreeSet::new(), writing).unwrap();
            let want = |start: &str| start.replace('#', &separator.to_string());
            assert_eq!(text_of(&pk), want("AUTHOR#{?AUTHOR}"), "{counts:?}");
            assert_eq!(text_of(&sk), want("TITLE#{?TITLE:010}"), "{counts:?}");
            assert_eq!((pk.fits, sk.fits), (items.len(), items.len()), "{counts:?}");
        }
    }
}

#[test]
fn a_value_seen_in_the_sample_is_never_literal_text() {
    let titles = titles(&[("Anon #7", 20)], '#');
    let metadata = [item(&[("SK", "#METADATA#x y"), ("n", "N:1")])];
    // The items, their key, the values seen, the template, and why.
    type Case<'c> = (&'c [Item], &'c str, &'c [&'c str], &'c str, &'c str);
    let cases: &[Case] = &[
        (
            &titles,
            "PK",
            &[],
            "AUTHOR#Anon #7",
            "no other author: one value",
        ),
        (
            &titles,
            "PK",
            &["Anon #7", "A B"],
            "AUTHOR#{?AUTHOR}",
            "an author's name",
        ),
        (
            &metadata,
            "SK",
            &["METADATA", "x y"],
            "#METADATA#{?METADATA}",
            "after a start",
        ),
        (
            &titles,
            "PK",
            &["AUTHOR"],
            "AUTHOR#Anon #7",
            "the start names the type",
        ),
    ];
    for (items, key, seen, want, why) in cases {
        let refs: Vec<&Item> = items.iter().collect();
        let seen = seen.iter().map(|v| (*v).to_owned()).collect();
        let t = template((key, true), &refs, &["year", "n"], &seen, HASH).unwrap();
        assert_eq!(text_of(&t), *want, "{why}");
    }
}

#[test]
fn facets_every_key_agrees_on_are_kept_around_a_value_holding_the_separator() {
    let items = [
        item(&[("SK", "YEAR#1990#Anon #7"), ("year", "N:1990")]),
        item(&[("SK", "YEAR#1991#A B"), ("year", "N:1991")]),
        item(&[("SK", "YEAR#1992#A B"), ("year", "N:1992")]),
    ];
    let t = read_sk(&items, &["year"]);
    assert_eq!(text_of(&t), "YEAR#{year}#{?YEAR}");
    assert_eq!(t.fits, 3);
}

#[test]
fn facets_are_what_the_server_reads_back_from_the_keys() {
    let colon = Writing {
        separator: ':',
        escaped: false,
    };
    // A time holding the separator ends where the server reads its facet: the rest of the
    // key is one value.
    let items = [
        item(&[
            ("SK", "ORDER:2026-05-01T12:00:00Z:o-1"),
            ("placedAt", "2026-05-01T12:00:00Z"),
            ("orderId", "o-1"),
        ]),
        item(&[
            ("SK", "ORDER:2026-05-02T12:00:00Z:o-2"),
            ("placedAt", "2026-05-02T12:00:00Z"),
            ("orderId", "o-2"),
        ]),
    ];
    let refs: Vec<&Item> = items.iter().collect();
    let t = template(
        ("SK", true),
        &refs,
        &["placedAt", "orderId"],
        &BTreeSet::new(),
        colon,
    );
    assert_eq!(text_of(&t.unwrap()), "ORDER:{?ORDER}");
    // An index's key does not decide an item's type: its facets stay as the writer meant.
    let candidates = ["placedAt", "orderId"];
    let index = template(("SK", false), &refs, &candidates, &BTreeSet::new(), colon);
    assert_eq!(text_of(&index.unwrap()), "ORDER:{placedAt}:{orderId}");
    // An item whose key holds another value than its attribute (one in ten, which an
    // escaped key would leave to another writer): the keys' own value.
    let items: Vec<Item> = (0..10)
        .map(|n| {
            let key = format!("A#v{n}#{n}");
            let own = if n == 9 {
                "w".to_owned()
            } else {
                format!("v{n}")
            };
            item(&[("SK", &key), ("n", &own)])
        })
        .collect();
    let t = read_sk(&items, &["n"]);
    assert_eq!(text_of(&t), "A#{?A}#{?A}");
    assert_eq!(t.fits, 10);
}

#[test]
fn keys_dynarelay_escaped_are_split_at_their_unescaped_separators() {
    assert_eq!(
        split_escaped(r"CUSTOMER#ana\#b", '#'),
        ["CUSTOMER", "ana#b"]
    );
    assert_eq!(split_escaped(r"A#x\\#y", '#'), ["A", r"x\", "y"]);
    assert_eq!(split_escaped(r"A#end\", '#'), ["A", r"end\"]);
    let items = [
        item(&[("PK", r"CUSTOMER#ana\#b"), ("username", "ana#b")]),
        item(&[("PK", "CUSTOMER#zoe"), ("username", "zoe")]),
        item(&[("PK", "CUSTOMER#zoe#junk"), ("username", "zoe")]),
    ];
    let refs: Vec<&Item> = items.iter().collect();
    let escaped = Writing {
        separator: '#',
        escaped: true,
    };
    let t = template(
        ("PK", true),
        &refs,
        &["username"],
        &BTreeSet::new(),
        escaped,
    )
    .unwrap();
    assert_eq!(text_of(&t), "CUSTOMER#{username}");
    assert_eq!(
        (t.fits, t.holding),
        (2, 3),
        "a key of another shape is another's"
    );
}

#[test]
fn padded_numbers_only_the_keys_hold_are_told_by_their_leading_zeros() {
    assert_eq!(
        padding(&["0000000001", "0000000042", "12345678901"]),
        Some(10)
    );
    assert_eq!(padding(&["0001", "12"]), None);
    assert_eq!(padding(&["1990", "1991"]), None);
    assert_eq!(padding(&["007", "x07"]), None);
}
