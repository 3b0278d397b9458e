//! Whether two key templates can give the same key: what `check` asks of two entities' partition
//! keys to know that a Query of one never reads the other's items. Literal text anywhere in a
//! template counts, before, between or after its facets (`u#{userId}#follower` and
//! `u#{userId}#following` share no key, though they start alike), in the case the template
//! writes keys in. A facet stands for any text, empty included: the answer is "no" only where
//! no key of any facet values is both templates' (escaped values, or values of a narrower type,
//! would give fewer keys, never more).
//!
//! Hand-written rather than taken from a regular-expression crate: the question is whether two
//! patterns' languages meet, which those crates do not answer (they match one text at a time).
//! Each template is a sequence of characters and wildcards (one per facet); a key of both is a
//! path through the pairs of positions, which a breadth-first walk finds in at most
//! (length + 1)² steps.

use super::{KeyTemplate, Part};

impl KeyTemplate {
    /// Whether some key reads under both templates (see the module's documentation).
    pub fn may_share_a_key(&self, other: &KeyTemplate) -> bool {
        let (a, b) = (self.glob(), other.glob());
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
            if x == Some(None) {
                waiting.push((i + 1, j));
            }
            if y == Some(None) {
                waiting.push((i, j + 1));
            }
            match (x, y) {
                // The same character in both.
                (Some(Some(c)), Some(Some(d))) if c == d => waiting.push((i + 1, j + 1)),
                // A facet takes the other's next character.
                (Some(None), Some(Some(_))) => waiting.push((i, j + 1)),
                (Some(Some(_)), Some(None)) => waiting.push((i + 1, j)),
                _ => {}
            }
        }
        false
    }

    /// The template as characters (`Some`, in the key's case) and facets (`None`).
    fn glob(&self) -> Vec<Option<char>> {
        let mut glob = Vec::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => glob.extend(text.chars().map(Some)),
                Part::Facet(..) => glob.push(None),
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
    }

    /// Whether `key` reads under `glob` (facets as any text), by dynamic programming.
    fn matches(glob: &[Option<char>], key: &[char]) -> bool {
        let mut can = vec![vec![false; key.len() + 1]; glob.len() + 1];
        can[0][0] = true;
        for i in 0..=glob.len() {
            for j in 0..=key.len() {
                if !can[i][j] {
                    continue;
                }
                match glob.get(i) {
                    Some(None) => {
                        can[i + 1][j] = true;
                        if j < key.len() {
                            can[i][j + 1] = true;
                        }
                    }
                    Some(Some(c)) if key.get(j) == Some(c) => can[i + 1][j + 1] = true,
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
            let (ga, gb) = (ta.glob(), tb.glob());
            let literal = |g: &[Option<char>]| g.iter().flatten().count();
            let found = texts(&['a', '#'], literal(&ga) + literal(&gb))
                .iter()
                .any(|key| matches(&ga, key) && matches(&gb, key));
            prop_assert_eq!(ta.may_share_a_key(&tb), found, "{} and {}", a, b);
            prop_assert_eq!(tb.may_share_a_key(&ta), found);
        }
    }
}
