use proptest::prelude::*;

use super::*;

fn values<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
    move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

#[test]
fn templates_render_and_read_back() {
    let t = KeyTemplate::parse("ORDER#{orderDate}#{orderId}").unwrap();
    assert_eq!(t.facets().collect::<Vec<_>>(), ["orderDate", "orderId"]);
    assert_eq!(t.literal_prefix(), "ORDER#");
    let pairs = [("orderDate", "2026-11-23"), ("orderId", "o-1")];
    let key = t.render(values(&pairs)).unwrap();
    assert_eq!(key, "ORDER#2026-11-23#o-1");
    assert_eq!(
        t.read(&key).unwrap(),
        [
            ("orderDate", Cow::from("2026-11-23")),
            ("orderId", Cow::from("o-1"))
        ]
    );
    assert_eq!(t.to_string(), "ORDER#{orderDate}#{orderId}");
}

#[test]
fn cased_templates_write_whole_keys_in_their_case() {
    // ElectroDB's default: the whole key lowercased, literal text and values.
    let t = KeyTemplate::parse_unescaped("$Lending#memberId_{memberId}")
        .unwrap()
        .with_case(KeyCase::Lower);
    assert_eq!(t.literal_prefix(), "$lending#memberid_");
    let key = t.render(values(&[("memberId", "M-001 Ünï")])).unwrap();
    assert_eq!(key, "$lending#memberid_m-001 ünï");
    // Any casing of a value renders the same key, which reads back in the key's case.
    assert_eq!(t.render(values(&[("memberId", "m-001 ÜNÏ")])).unwrap(), key);
    assert_eq!(t.read(&key).unwrap()[0].1, "m-001 ünï");
    assert_eq!(t.prefix(|_| None), "$lending#memberid_");
    assert_eq!(t.partial(|_| None, "M-0"), "$lending#memberid_m-0");
    let upper = KeyTemplate::parse("a#{b}")
        .unwrap()
        .with_case(KeyCase::Upper);
    assert_eq!(upper.render(values(&[("b", "x#y")])).unwrap(), r"A#X\#Y");
}

#[test]
fn facets_may_name_a_zero_padded_width() {
    let t = KeyTemplate::parse_unescaped("issue#{seq:08}#{title}").unwrap();
    assert_eq!(t.facets().collect::<Vec<_>>(), ["seq", "title"]);
    assert_eq!((t.pad("seq"), t.pad("title")), (Some(8), None));
    assert_eq!(t.to_string(), "issue#{seq:08}#{title}");
    for bad in [
        "{seq:8}",
        "{seq:0}",
        "{seq:0x}",
        "{seq:039}",
        "{:08}",
        "{seq:08:0}",
    ] {
        assert!(
            matches!(
                KeyTemplate::parse_unescaped(bad),
                Err(TemplateError::BadName { at: 0, .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn widths_pad_to_at_least_their_digits_escaped_or_not() {
    for t in [
        KeyTemplate::parse("TITLE#{n:010}").unwrap(),
        KeyTemplate::parse_unescaped("TITLE#{n:010}").unwrap(),
    ] {
        assert_eq!(t.integer_text("n", "42").as_deref(), Some("0000000042"));
        // Wider values as they are, as OneTable and hand-rolled code write them.
        assert_eq!(
            t.integer_text("n", "12345678901").as_deref(),
            Some("12345678901")
        );
        assert_eq!(t.read_integer("n", "0000000042"), Some(42));
        assert_eq!(t.read_integer("n", "12345678901"), Some(12_345_678_901));
        // Only the text the width writes reads back: nothing narrower, no zero before a
        // wider value, digits only.
        for other in ["042", "00000000042", "-000000042", "00000000x2", ""] {
            assert_eq!(t.read_integer("n", other), None, "{other}");
        }
    }
    // Without a width, escaped keys keep their sortable 20 digits.
    let plain = KeyTemplate::parse("TITLE#{n}").unwrap();
    assert_eq!(plain.integer_text("n", "42"), Some(sortable_integer(42)));
}

#[test]
fn separators_and_escapes_inside_values_are_escaped() {
    let t = KeyTemplate::parse("CUSTOMER#{customerId}#PROFILE").unwrap();
    let key = t.render(values(&[("customerId", r"a#b\c")])).unwrap();
    assert_eq!(key, r"CUSTOMER#a\#b\\c#PROFILE");
    assert_eq!(t.read(&key).unwrap()[0].1, r"a#b\c");
    // A value cannot end its facet early and pass for another key.
    let other = KeyTemplate::parse("CUSTOMER#{customerId}").unwrap();
    let tricky = other
        .render(values(&[("customerId", "x#PROFILE")]))
        .unwrap();
    assert_eq!(t.read(&tricky), None);
}

#[test]
fn keys_of_other_templates_do_not_read() {
    let order = KeyTemplate::parse("ORDER#{orderId}").unwrap();
    assert_eq!(order.read("ADDRESS#home"), None);
    assert_eq!(order.read("ORDER#"), Some(vec![("orderId", Cow::from(""))]));
    assert_eq!(order.read(r"ORDER#dangling\"), None);
}

#[test]
fn prefixes_cover_the_leading_facets_given() {
    let t = KeyTemplate::parse("ORDER#{orderDate}#{orderId}").unwrap();
    assert_eq!(t.prefix(values(&[])), "ORDER#");
    assert_eq!(
        t.prefix(values(&[("orderDate", "2026-11-23")])),
        "ORDER#2026-11-23#"
    );
    assert_eq!(t.partial(values(&[]), "2026-11"), "ORDER#2026-11");
    // A later facet without the earlier ones narrows nothing.
    assert_eq!(t.prefix(values(&[("orderId", "o-1")])), "ORDER#");
}

#[test]
fn malformed_templates_are_refused_with_their_place() {
    for (text, expected) in [
        ("A#{x", TemplateError::Unclosed { at: 2 }),
        ("A#x}", TemplateError::StrayClose { at: 3 }),
        (
            "A#{}",
            TemplateError::BadName {
                at: 2,
                name: String::new(),
            },
        ),
        (
            "A#{1x}",
            TemplateError::BadName {
                at: 2,
                name: "1x".into(),
            },
        ),
        ("{a}{b}", TemplateError::Adjacent { at: 3 }),
        ("{a}#{a}", TemplateError::Repeated { name: "a".into() }),
        (r"A\#{a}", TemplateError::EscapeInText { at: 1 }),
    ] {
        assert_eq!(KeyTemplate::parse(text), Err(expected), "{text}");
    }
    assert_eq!(
        KeyTemplate::parse("A#{a}#{b}")
            .unwrap()
            .render(values(&[("a", "1")])),
        Err(MissingFacet("b".into()))
    );
}

#[test]
fn sortable_integers_have_fixed_width_and_round_trip() {
    for n in [i64::MIN, -1, 0, 1, 42, i64::MAX] {
        let text = sortable_integer(n);
        assert_eq!(text.len(), SORTABLE_INTEGER_WIDTH, "{n}");
        assert_eq!(read_sortable_integer(&text), Some(n));
    }
    assert_eq!(read_sortable_integer("12"), None);
    assert_eq!(read_sortable_integer("1234567890123456789x"), None);
}

#[test]
fn unescaped_keys_read_as_other_tools_mean_them() {
    let customer = KeyTemplate::parse_unescaped("CUSTOMER#{email}").unwrap();
    assert!(!customer.is_escaped());
    // The last facet takes the rest: a `#` inside an email, as any other tool writes it.
    assert_eq!(
        customer.read("CUSTOMER#a#b@example.com").unwrap(),
        [("email", Cow::Borrowed("a#b@example.com"))]
    );
    assert_eq!(
        customer
            .render(values(&[("email", "a#b@example.com")]))
            .unwrap(),
        "CUSTOMER#a#b@example.com"
    );
    // A facet followed by literal text ends where that text first occurs.
    let order = KeyTemplate::parse_unescaped("ORDER#{date}#{orderId}").unwrap();
    assert_eq!(
        order.read("ORDER#2026-05-01#x#y").unwrap(),
        [
            ("date", Cow::Borrowed("2026-05-01")),
            ("orderId", Cow::Borrowed("x#y"))
        ]
    );
    let tail = KeyTemplate::parse_unescaped("{a}#{b}#END").unwrap();
    assert_eq!(
        tail.read("x#y#z#END").unwrap(),
        [("a", Cow::Borrowed("x")), ("b", Cow::Borrowed("y#z"))]
    );
    assert!(
        tail.read("x#y#z#EN").is_none(),
        "its closing text is missing"
    );
    assert!(order.read("ORDERS#1#2").is_none(), "another literal start");
    // A backslash is plain text in an unescaped template and in its values.
    let path = KeyTemplate::parse_unescaped("DIR\\{name}").unwrap();
    assert_eq!(
        path.read("DIR\\a\\b").unwrap(),
        [("name", Cow::Borrowed("a\\b"))]
    );
    // Prefixes are written without escapes too.
    assert_eq!(
        order.prefix(values(&[("date", "2026-05#1")])),
        "ORDER#2026-05#1#"
    );
    // Control: the escaped template refuses the unescaped key of a value with `#`.
    assert!(
        KeyTemplate::parse("CUSTOMER#{email}")
            .unwrap()
            .read("CUSTOMER#a#b@example.com")
            .is_none()
    );
}

proptest! {
    /// Unescaped keys: values render and read back whenever no facet but the last holds the
    /// text that follows it; the last may hold anything, the template's separators included.
    #[test]
    fn unescaped_values_round_trip_when_they_do_not_hold_their_closing_text(
        a in "[^#]*", b in "\\PC*",
    ) {
        let t = KeyTemplate::parse_unescaped("X#{a}#{b}").unwrap();
        let key = t.render(values(&[("a", &a), ("b", &b)])).unwrap();
        let read = t.read(&key).unwrap();
        prop_assert_eq!(read, vec![("a", Cow::Borrowed(a.as_str())), ("b", Cow::Borrowed(b.as_str()))]);
    }

    /// A cased template reads back the values in its case (ElectroDB's lowercase keys), and
    /// another casing of a value renders the same key, escaped or not.
    #[test]
    fn cased_values_round_trip_in_their_case(a in "[^#]*", b in "\\PC*") {
        for (escaped, case) in [(false, KeyCase::Lower), (true, KeyCase::Lower), (false, KeyCase::Upper)] {
            let text = "Loan#{a}#{b}";
            let t = if escaped { KeyTemplate::parse(text) } else { KeyTemplate::parse_unescaped(text) }
                .unwrap()
                .with_case(case);
            let key = t.render(values(&[("a", &a), ("b", &b)])).unwrap();
            let read = t.read(&key).unwrap();
            let (a, b) = (case.apply(&a).into_owned(), case.apply(&b).into_owned());
            prop_assert_eq!(read, vec![("a", Cow::Borrowed(a.as_str())), ("b", Cow::Borrowed(b.as_str()))]);
            // Another casing of the same values (ASCII's: Unicode's full mappings do not
            // always return, `µ` uppercases to `Μ`, which lowercases to `μ`, in JavaScript
            // as here).
            let (upper, lower) = (a.to_ascii_uppercase(), b.to_ascii_lowercase());
            let other = t.render(values(&[("a", &upper), ("b", &lower)])).unwrap();
            prop_assert_eq!(other, key);
        }
    }

    /// Any values, separators and escapes included, render to a key that reads back to them,
    /// with ASCII separators (found byte by byte) and others (character by character).
    #[test]
    fn any_values_round_trip(a in "\\PC*", b in "[#§·\\\\a-zé]*") {
        for text in ["CUSTOMER#{a}#ORDER#{b}", "KUNDE§{a}·{b}"] {
            let t = KeyTemplate::parse(text).unwrap();
            let pairs = [("a", a.as_str()), ("b", b.as_str())];
            let key = t.render(values(&pairs)).unwrap();
            let read = t.read(&key).unwrap();
            prop_assert_eq!(&read[0].1, &a);
            prop_assert_eq!(&read[1].1, &b);
        }
    }

    /// Any string that reads back under a template is the key its values render to: no
    /// other text passes for a key of the template.
    #[test]
    fn only_rendered_keys_read_back(key in "(X#|[#\\\\ab§]){0,12}") {
        for text in ["X#{p}#{q}", "X#{p}§{q}"] {
            let t = KeyTemplate::parse(text).unwrap();
            if let Some(read) = t.read(&key) {
                let pairs: Vec<(&str, &str)> =
                    read.iter().map(|(name, value)| (*name, value.as_ref())).collect();
                prop_assert_eq!(t.render(values(&pairs)).unwrap(), key.clone());
            }
        }
    }

    /// Different values never make the same key.
    #[test]
    fn different_values_make_different_keys(
        a in "[#\\\\ab]{0,6}", b in "[#\\\\ab]{0,6}", c in "[#\\\\ab]{0,6}", d in "[#\\\\ab]{0,6}",
    ) {
        let t = KeyTemplate::parse("X#{p}#{q}").unwrap();
        let one = t.render(values(&[("p", a.as_str()), ("q", b.as_str())])).unwrap();
        let two = t.render(values(&[("p", c.as_str()), ("q", d.as_str())])).unwrap();
        prop_assert_eq!(one == two, a == c && b == d);
    }

    /// A key starts with the prefix of its leading facets, and with any partial start of
    /// its next facet.
    #[test]
    fn keys_start_with_their_prefixes(a in "\\PC*", b in "\\PC*", cut in 0usize..8) {
        let t = KeyTemplate::parse("ORDER#{a}#{b}").unwrap();
        let pairs = [("a", a.as_str()), ("b", b.as_str())];
        let key = t.render(values(&pairs)).unwrap();
        prop_assert!(key.starts_with(&t.prefix(values(&pairs[..1]))));
        let start: String = a.chars().take(cut).collect();
        prop_assert!(key.starts_with(&t.partial(values(&[]), &start)));
    }

    /// Every value a template holds (see `holds`), given for a leading facet, selects only
    /// keys that read back with exactly that value, whatever the other facets hold: the
    /// keys starting with its prefix are its items, and a value it does not hold is one
    /// that would select others' (`A#1` for `{section}`, with the keys of section `A`).
    #[test]
    fn values_a_template_holds_select_keys_that_read_back_as_given(
        section in "[A#1]{0,4}", row in "[A#1]{0,4}", seat in "[A#1]{0,4}",
        given in "[A#1]{0,4}", case in 0..3usize,
    ) {
        let case = [KeyCase::AsStored, KeyCase::Lower, KeyCase::Upper][case];
        let t = KeyTemplate::parse_unescaped("SEAT#{section}#{row}#{seat}").unwrap().with_case(case);
        let pairs = [("section", section.as_str()), ("row", row.as_str()), ("seat", seat.as_str())];
        let key = t.render(values(&pairs)).unwrap();
        let prefix = t.prefix(values(&[("section", given.as_str())]));
        let partial = t.partial(values(&[]), &given);
        if t.holds("section", &given) && key.starts_with(&prefix) {
            let read = t.read(&key).unwrap();
            prop_assert_eq!(&read[0].1, &case.apply(&given));
        }
        // A prefix of the first facet: every key it selects has a section starting with it.
        if t.holds("section", &given) && key.starts_with(&partial) {
            let read = t.read(&key).unwrap();
            prop_assert!(read[0].1.starts_with(case.apply(&given).as_ref()));
        }
        // Control: a value holding the separator selects another section's key.
        if given.contains('#') {
            prop_assert!(!t.holds("section", &given));
        }
        // The last facet holds anything.
        prop_assert!(t.holds("seat", &given));
    }

    /// String order of sortable integers is numeric order.
    #[test]
    fn sortable_integers_sort_as_numbers(x in any::<i64>(), y in any::<i64>()) {
        prop_assert_eq!(sortable_integer(x).cmp(&sortable_integer(y)), x.cmp(&y));
    }
}
