//! Whether two key templates can give the same key: what `check` asks of two entities' keys to
//! know that a read of one never takes the other's items for its own. Literal text anywhere in
//! a template counts, before, between or after its facets (`u#{userId}#follower` and
//! `u#{userId}#following` share no key, though they start alike), in the case the template
//! writes keys in, and so does what each facet can hold ([`FacetText`]): a date-time's text
//! never holds a `J`, so `{postedAt}` and `Join:{roomId}` share no key either. A facet of any
//! text may be empty here too: the answer is "no" only where no key of any facet values is both
//! templates' (escaped values would give fewer keys, never more).
//!
//! Hand-written rather than taken from a regular-expression crate: the question is whether two
//! patterns' languages meet, which those crates do not answer (they match one text at a time).
//! Each template is a sequence of characters and facets; a key of both is a path through the
//! pairs of positions, which a walk finds in at most (length + 1)² steps.

use super::{KeyTemplate, Part};

/// What a facet's text can hold, as far as telling keys apart goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FacetText {
    /// Any text.
    Any,
    /// Only these characters (ASCII letters in either case).
    Of(&'static str),
    /// Only the ASCII characters whose bits are set (an enum's values' characters, letters in
    /// either case).
    Ascii(u128),
}

impl FacetText {
    /// The characters of a number as keys write it (a width's zeros, a sign).
    pub const NUMBER: FacetText = FacetText::Of("0123456789-+");
    /// The characters of a date-time as RFC 3339 writes it, or a date.
    pub const TIME: FacetText = FacetText::Of("0123456789-+:.TZ ");

    /// The characters of `values` (an enum's), letters in either case; any text when one is
    /// not ASCII.
    pub fn of_values<'v>(values: impl IntoIterator<Item = &'v str>) -> FacetText {
        let mut set = 0u128;
        for c in values.into_iter().flat_map(str::chars) {
            if !c.is_ascii() {
                return FacetText::Any;
            }
            for c in [c.to_ascii_lowercase(), c.to_ascii_uppercase()] {
                set |= 1u128 << u32::from(c);
            }
        }
        FacetText::Ascii(set)
    }

    fn holds(self, c: char) -> bool {
        match self {
            FacetText::Any => true,
            FacetText::Ascii(set) => c.is_ascii() && set & (1u128 << u32::from(c)) != 0,
            FacetText::Of(chars) => chars
                .chars()
                .any(|d| d == c || (d.is_ascii_alphabetic() && d.eq_ignore_ascii_case(&c))),
        }
    }
}

/// A template's piece, as the walk reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Piece {
    Char(char),
    Facet(FacetText),
}

impl KeyTemplate {
    /// Whether some key reads under both templates, each facet any text (see the module's
    /// documentation).
    pub fn may_share_a_key(&self, other: &KeyTemplate) -> bool {
        self.may_share_a_key_holding(other, |_| FacetText::Any, |_| FacetText::Any)
    }

    /// Whether some key reads under both templates, each facet holding what `mine` (this
    /// template's, by name) or `theirs` (the other's) says.
    pub fn may_share_a_key_holding(
        &self,
        other: &KeyTemplate,
        mine: impl Fn(&str) -> FacetText,
        theirs: impl Fn(&str) -> FacetText,
    ) -> bool {
        let (a, b) = (self.glob(mine), other.glob(theirs));
        let width = b.len() + 1;
        let mut seen = vec![false; (a.len() + 1) * width];
        let mut waiting = vec![(0, 0)];
        while let Some((i, j)) = waiting.pop() {
            if std::mem::replace(&mut seen[i * width + j], true) {
                continue;
            }
            if (i, j) == (a.len(), b.len()) {
                return true;
            }
            let (x, y) = (a.get(i).copied(), b.get(j).copied());
            // A facet may end here (it holds no more text).
            if let Some(Piece::Facet(_)) = x {
                waiting.push((i + 1, j));
            }
            if let Some(Piece::Facet(_)) = y {
                waiting.push((i, j + 1));
            }
            match (x, y) {
                // The same character in both.
                (Some(Piece::Char(c)), Some(Piece::Char(d))) if c == d => {
                    waiting.push((i + 1, j + 1));
                }
                // A facet takes the other's next character, if it can hold it.
                (Some(Piece::Facet(f)), Some(Piece::Char(d))) if f.holds(d) => {
                    waiting.push((i, j + 1));
                }
                (Some(Piece::Char(c)), Some(Piece::Facet(f))) if f.holds(c) => {
                    waiting.push((i + 1, j));
                }
                _ => {}
            }
        }
        false
    }

    /// The template as characters (in the key's case) and facets.
    fn glob(&self, holding: impl Fn(&str) -> FacetText) -> Vec<Piece> {
        let mut glob = Vec::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => glob.extend(text.chars().map(Piece::Char)),
                Part::Facet(name, _) => glob.push(Piece::Facet(holding(name))),
            }
        }
        glob
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::template::KeyCase;

    fn t(text: &str) -> KeyTemplate {
        KeyTemplate::parse_unescaped(text).unwrap()
    }

    #[test]
    fn literal_text_after_a_facet_tells_keys_apart() {
        let shares = |a: &str, b: &str| t(a).may_share_a_key(&t(b));
        assert!(!shares("u#{userId}#follower", "u#{userId}#following"));
        assert!(!shares("u#{userId}#post", "u#{userId}#timeline"));
        // The facet may hold `er`, or `#follower` itself.
        assert!(shares("u#{userId}#follow{rest}", "u#{userId}#follower"));
        assert!(shares("u#{userId}", "u#{userId}#following"));
        assert!(shares("{a}#x", "y#{b}"));
        assert!(!shares("A#{a}", "B#{b}"));
        assert!(!shares("A#{a}#x", "A#{b}#y"));
        assert!(shares("A", "A"));
        assert!(!shares("A", "AB"));
        // In the case the keys are written in.
        let lower = t("U#{a}#X").with_case(KeyCase::Lower);
        assert!(!lower.may_share_a_key(&t("U#{a}#X")));
        assert!(lower.may_share_a_key(&t("u#{a}#x")));
        // What a facet can hold: a time never begins with `J`.
        let time = |_: &str| FacetText::TIME;
        let any = |_: &str| FacetText::Any;
        assert!(!t("{postedAt}").may_share_a_key_holding(&t("Join:{roomId}"), time, any));
        assert!(t("{postedAt}").may_share_a_key(&t("Join:{roomId}")));
        assert!(t("{postedAt}").may_share_a_key_holding(&t("2026{x}"), time, any));
        assert!(!t("V#{n}").may_share_a_key_holding(&t("V#x{m}"), |_| FacetText::NUMBER, any));
        // An enum's values: `ACTIVE` and `CLOSED` never begin `Join:`, but may begin `AC`.
        let status = |_: &str| FacetText::of_values(["ACTIVE", "CLOSED"]);
        assert!(!t("{status}#{id}").may_share_a_key_holding(&t("Join:{roomId}"), status, any));
        assert!(t("{status}#{id}").may_share_a_key_holding(&t("AC{x}"), status, any));
        assert!(t("{s}").may_share_a_key_holding(&t("é{x}"), |_| FacetText::of_values(["é"]), any));
    }

    /// Whether `key` reads under `glob`, by dynamic programming.
    fn matches(glob: &[Piece], key: &[char]) -> bool {
        let mut can = vec![vec![false; key.len() + 1]; glob.len() + 1];
        can[0][0] = true;
        for i in 0..=glob.len() {
            for j in 0..=key.len() {
                if !can[i][j] {
                    continue;
                }
                match glob.get(i) {
                    Some(Piece::Facet(f)) => {
                        can[i + 1][j] = true;
                        if key.get(j).is_some_and(|&c| f.holds(c)) {
                            can[i][j + 1] = true;
                        }
                    }
                    Some(Piece::Char(c)) if key.get(j) == Some(c) => can[i + 1][j + 1] = true,
                    _ => {}
                }
            }
        }
        can[glob.len()][key.len()]
    }

    /// A template of literal runs from a small alphabet and facets between them.
    fn template() -> impl Strategy<Value = String> {
        let text = "[a#]{1,2}";
        (
            any::<bool>(),
            prop::collection::vec(text, 1..4),
            any::<bool>(),
        )
            .prop_map(|(lead, texts, trail)| {
                let mut out = String::new();
                let mut facet = 0;
                let mut push_facet = |out: &mut String| {
                    out.push_str(&format!("{{f{facet}}}"));
                    facet += 1;
                };
                if lead {
                    push_facet(&mut out);
                }
                for (i, text) in texts.iter().enumerate() {
                    if i > 0 {
                        push_facet(&mut out);
                    }
                    out.push_str(text);
                }
                if trail {
                    push_facet(&mut out);
                }
                out
            })
    }

    /// Every text of `alphabet` up to `len` characters.
    fn texts(alphabet: &[char], len: usize) -> Vec<Vec<char>> {
        let mut all = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..len {
            last = last
                .iter()
                .flat_map(|t: &Vec<char>| {
                    alphabet.iter().map(move |&c| {
                        let mut t = t.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Two templates may share a key exactly when some key reads under both: a text of
        /// their literal characters no longer than both templates' literal texts together (a
        /// shortest shared key needs no more: each of its characters is one of a literal text).
        #[test]
        fn templates_share_a_key_exactly_when_some_key_reads_under_both(
            a in template(),
            b in template(),
        ) {
            let (ta, tb) = (t(&a), t(&b));
            // Facets `f0` hold any text, the others `a` only.
            let holding = |name: &str| if name == "f0" { FacetText::Any } else { FacetText::Of("a") };
            let (ga, gb) = (ta.glob(holding), tb.glob(holding));
            let literal = |g: &[Piece]| g.iter().filter(|p| matches!(p, Piece::Char(_))).count();
            let found = texts(&['a', '#'], literal(&ga) + literal(&gb))
                .iter()
                .any(|key| matches(&ga, key) && matches(&gb, key));
            prop_assert_eq!(
                ta.may_share_a_key_holding(&tb, holding, holding),
                found,
                "{} and {}",
                a,
                b
            );
            prop_assert_eq!(tb.may_share_a_key_holding(&ta, holding, holding), found);
        }
    }
}
