//! Key templates for single-table designs: a key attribute written as literal text and facets,
//! such as `CUSTOMER#{customerId}` or `ORDER#{orderDate}#{orderId}`.
//!
//! A template renders facet values into a key string and reads them back from one. For keys
//! dynarelay writes, three rules make that exact (keys other tools wrote are read without
//! escapes, as those tools mean them: see [`KeyTemplate::parse_unescaped`]):
//! - **Escaping.** The template's separators are the characters next to its facets (`#` in the
//!   examples). Inside a facet value, a backslash becomes `\\` and a separator becomes `\` and
//!   that character. No value can then end its facet early or pass for the template's structure,
//!   so no values can make one key look like another's, not even the key of another template
//!   that starts the same way, and [`KeyTemplate::read`] finds every facet again.
//! - **Facets are separated.** Two facets with no literal text between them could split one key
//!   two ways; such a template is refused.
//! - **Numbers sort as numbers.** An integer facet is written as [`sortable_integer`]: fixed width,
//!   so that the key's string order is the numbers' order.
//!
//! The building block for key attributes declared as templates; the model file format does not
//! declare templates yet. Pure: no I/O, nothing of GraphQL or DynamoDB.

use std::{borrow::Cow, fmt};

/// The escape character inside facet values.
const ESCAPE: char = '\\';

/// A parsed key template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<Part>,
    /// The characters next to a facet: escaped inside every facet value.
    separators: Vec<char>,
    /// Whether facet values are escaped (dynarelay's own keys) or written as they are (keys
    /// other tools wrote: see [`KeyTemplate::parse_unescaped`]).
    escaped: bool,
    /// The case the whole key is written in.
    case: KeyCase,
}

/// The case a key is written in: ElectroDB lowercases whole keys by default, so its lookups
/// find an item whatever the casing of the id they are given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyCase {
    /// As the values are.
    #[default]
    AsStored,
    /// Lowercase: literal text and values.
    Lower,
    /// Uppercase: literal text and values.
    Upper,
}

impl KeyCase {
    /// `text` in this case.
    pub fn apply<'t>(self, text: &'t str) -> Cow<'t, str> {
        // Unicode's full mappings, as JavaScript's `toLowerCase` (ElectroDB's) applies them:
        // titlecase letters such as `ᾈ` change too, so only ASCII text is let through unchanged.
        match self {
            KeyCase::AsStored => Cow::Borrowed(text),
            KeyCase::Lower if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_uppercase()) => {
                Cow::Borrowed(text)
            }
            KeyCase::Lower => Cow::Owned(text.to_lowercase()),
            KeyCase::Upper if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_lowercase()) => {
                Cow::Borrowed(text)
            }
            KeyCase::Upper => Cow::Owned(text.to_uppercase()),
        }
    }
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text.
    Text(String),
    /// A facet, by name, with the width its numbers are zero-padded to (`{seq:08}`), if any.
    Facet(String, Option<usize>),
}

/// Why a template cannot be used, with the byte offset in the template's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` with no `}` after it.
    #[error("a `{{` at {at} is not closed by `}}`")]
    Unclosed {
        /// Where the `{` is.
        at: usize,
    },
    /// A `}` with no `{` before it.
    #[error("a `}}` at {at} closes no facet")]
    StrayClose {
        /// Where the `}` is.
        at: usize,
    },
    /// `{}` or a name that is not a GraphQL name, or a bad width after it.
    #[error(
        "`{name}` at {at} is not a facet (a name of letters, digits and `_`, not starting with a \
         digit, then optionally `:0` and a width, such as `{{seq:08}}`)"
    )]
    BadName {
        /// Where the facet starts.
        at: usize,
        /// The text between the braces.
        name: String,
    },
    /// Two facets with nothing between them.
    #[error(
        "the facet at {at} follows another with no text between them, so a key could be split two ways"
    )]
    Adjacent {
        /// Where the second facet starts.
        at: usize,
    },
    /// The same facet twice.
    #[error("the facet `{name}` appears twice")]
    Repeated {
        /// The facet's name.
        name: String,
    },
    /// A backslash in the literal text, which is the escape character of facet values.
    #[error("a `\\` at {at} in the literal text would read as an escape")]
    EscapeInText {
        /// Where it is.
        at: usize,
    },
}

impl TemplateError {
    /// The byte offset in the template's text the problem is at, if it has one.
    pub fn at(&self) -> Option<usize> {
        match self {
            TemplateError::Unclosed { at }
            | TemplateError::StrayClose { at }
            | TemplateError::BadName { at, .. }
            | TemplateError::Adjacent { at }
            | TemplateError::EscapeInText { at } => Some(*at),
            TemplateError::Repeated { .. } => None,
        }
    }
}

/// A facet with no value where a whole key is needed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no value for the facet `{0}`")]
pub struct MissingFacet(pub String);

impl KeyTemplate {
    /// Parses a template: literal text, and facets as `{name}`, whose values are escaped.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        Self::parse_with(text, true)
    }

    /// Parses a template whose facet values are written as they are, as every other tool writes
    /// keys (ElectroDB, dynamodb-toolbox, OneTable, hand-written code): nobody escapes a `#`
    /// inside a value. Such a key is read as those tools mean it: a facet followed by literal
    /// text ends where that text first occurs, and the last facet takes the rest of the key. A
    /// value holding its facet's following text therefore reads back split differently, the
    /// price of reading keys written without escapes; the last facet may hold anything.
    pub fn parse_unescaped(text: &str) -> Result<Self, TemplateError> {
        Self::parse_with(text, false)
    }

    /// Whether facet values are escaped.
    pub fn is_escaped(&self) -> bool {
        self.escaped
    }

    fn parse_with(text: &str, escaped: bool) -> Result<Self, TemplateError> {
        let mut parts: Vec<Part> = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for (_, c) in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(TemplateError::Unclosed { at });
                    }
                    let (name, pad) = match name.split_once(':') {
                        None => (name, None),
                        Some((facet, width)) => match pad_width(width) {
                            Some(width) => (facet.to_owned(), Some(width)),
                            None => return Err(TemplateError::BadName { at, name }),
                        },
                    };
                    if !is_name(&name) {
                        return Err(TemplateError::BadName { at, name });
                    }
                    if literal.is_empty() && matches!(parts.last(), Some(Part::Facet(..))) {
                        return Err(TemplateError::Adjacent { at });
                    }
                    if parts
                        .iter()
                        .any(|p| matches!(p, Part::Facet(n, _) if *n == name))
                    {
                        return Err(TemplateError::Repeated { name });
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Facet(name, pad));
                }
                '}' => return Err(TemplateError::StrayClose { at }),
                ESCAPE if escaped => return Err(TemplateError::EscapeInText { at }),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        let mut separators = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if let Part::Facet(..) = part {
                let before = i.checked_sub(1).and_then(|j| match &parts[j] {
                    Part::Text(text) => text.chars().last(),
                    Part::Facet(..) => None,
                });
                let after = match parts.get(i + 1) {
                    Some(Part::Text(text)) => text.chars().next(),
                    _ => None,
                };
                for c in [before, after].into_iter().flatten() {
                    if !separators.contains(&c) {
                        separators.push(c);
                    }
                }
            }
        }
        Ok(Self {
            parts,
            separators,
            escaped,
            case: KeyCase::AsStored,
        })
    }

    /// This template writing whole keys in `case`: its literal text, and every value as it is
    /// written. Keys are then read back in that case, so a facet read from a key (rather than
    /// from the item's own attribute) has that case too.
    pub fn with_case(mut self, case: KeyCase) -> Self {
        self.case = case;
        for part in &mut self.parts {
            if let Part::Text(text) = part {
                *text = case.apply(text).into_owned();
            }
        }
        for c in &mut self.separators {
            *c = case
                .apply(c.encode_utf8(&mut [0; 4]))
                .chars()
                .next()
                .unwrap_or(*c);
        }
        self
    }

    /// The case keys are written in.
    pub fn case(&self) -> KeyCase {
        self.case
    }

    /// An integer value of facet `facet` (DynamoDB's decimal text) as this template writes it.
    /// A facet with a width (`{seq:08}`) is zero-padded to at least that many digits, escaped or
    /// not, as OneTable and hand-rolled code write numbers: a wider value is written as it is
    /// (so it sorts by its first digits, `copy#123456789` between `copy#12345678` and
    /// `copy#12345679`), and so is a negative one. Otherwise dynarelay's own (escaped) keys write
    /// [`sortable_integer`]'s fixed width, and keys other tools wrote plain decimal text. `None`
    /// for a number an escaped key without a width cannot hold (not a 64-bit integer).
    pub fn integer_text(&self, facet: &str, number: &str) -> Option<String> {
        match (self.pad(facet), number.parse::<i64>()) {
            (Some(width), Ok(n)) if n >= 0 => Some(format!("{n:0width$}")),
            (Some(_), _) => Some(number.to_owned()),
            (None, parsed) if self.escaped => parsed.ok().map(sortable_integer),
            (None, _) => Some(number.to_owned()),
        }
    }

    /// The integer an integer facet's text in a key of this template stands for: the inverse of
    /// [`KeyTemplate::integer_text`]; `None` for text it does not write (a facet with a width
    /// holds digits only, at least that many, with no zero before a wider value's first digit).
    pub fn read_integer(&self, facet: &str, text: &str) -> Option<i64> {
        match self.pad(facet) {
            Some(width) => {
                let canonical = text.len() >= width
                    && text.bytes().all(|b| b.is_ascii_digit())
                    && (text.len() == width || !text.starts_with('0'));
                if canonical { text.parse().ok() } else { None }
            }
            None if self.escaped => read_sortable_integer(text),
            None => text.parse().ok(),
        }
    }

    /// The width numbers of facet `facet` are zero-padded to (`{seq:08}`), if it has one.
    pub fn pad(&self, facet: &str) -> Option<usize> {
        self.parts.iter().find_map(|p| match p {
            Part::Facet(name, pad) if name == facet => *pad,
            _ => None,
        })
    }

    /// The facets, in template order.
    pub fn facets(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Facet(name, _) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The literal text before the first facet (all of it for a template with no facet): what
    /// tells the items of one template apart in a shared partition, as a `begins_with` key
    /// condition.
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Text(text)) => text,
            _ => "",
        }
    }

    /// The key for the facet values `value` gives, each escaped.
    pub fn render<'v>(
        &self,
        value: impl Fn(&str) -> Option<&'v str>,
    ) -> Result<String, MissingFacet> {
        let mut key = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => key.push_str(text),
                Part::Facet(name, _) => {
                    let v = value(name).ok_or_else(|| MissingFacet(name.clone()))?;
                    self.write_value(&mut key, v);
                }
            }
        }
        Ok(key)
    }

    /// The text every key with these leading facet values starts with: the template up to the
    /// first facet `value` does not give (with the literal text before it), for a `begins_with`
    /// key condition over leading facets. With every facet given, the whole key.
    ///
    /// A prefix that ends inside a facet value (`ORDER#2026-11` for the month of an
    /// `ORDER#{orderDate}#{orderId}` key) comes from [`KeyTemplate::partial`].
    pub fn prefix<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> String {
        self.leading(value, None)
    }

    /// [`KeyTemplate::prefix`] through the facets `value` gives, then the start `partial` of the
    /// next facet's value, escaped: every key whose next facet starts with `partial`.
    pub fn partial<'v>(&self, value: impl Fn(&str) -> Option<&'v str>, partial: &str) -> String {
        self.leading(value, Some(partial))
    }

    /// The template through the facets `value` gives, up to the first it does not give, then
    /// `partial` escaped in that facet's place if there is one.
    fn leading<'v>(
        &self,
        value: impl Fn(&str) -> Option<&'v str>,
        partial: Option<&str>,
    ) -> String {
        let mut key = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => key.push_str(text),
                Part::Facet(name, _) => {
                    let given = value(name);
                    if let Some(v) = given.or(partial) {
                        self.write_value(&mut key, v);
                    }
                    if given.is_none() {
                        break;
                    }
                }
            }
        }
        key
    }

    /// Reads the facet values back from a key made by this template; `None` when the key does not
    /// fit it (another template's key, or a key written by hand).
    pub fn read<'k>(&self, key: &'k str) -> Option<Vec<(&str, Cow<'k, str>)>> {
        let mut values = Vec::new();
        self.read_each(key, |_, name, value| {
            values.push((name, value));
            true
        })
        .then_some(values)
    }

    /// Reads `key` back as [`read`](Self::read) does, without collecting: gives each facet, in
    /// the template's order, to `each` (its position among the facets, its name and its value),
    /// and stops as soon as `each` returns false. True when `key` is one the template renders
    /// and `each` accepted every facet. Items are matched against templates on every page, so
    /// this allocates nothing unless a value holds an escape.
    pub fn read_each<'t, 'k>(
        &'t self,
        key: &'k str,
        mut each: impl FnMut(usize, &'t str, Cow<'k, str>) -> bool,
    ) -> bool {
        let mut rest = key;
        let mut facet = 0;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Text(text) => match rest.strip_prefix(text.as_str()) {
                    Some(after) => rest = after,
                    None => return false,
                },
                Part::Facet(name, _) => {
                    let read = if self.escaped {
                        unescape_until(rest, self.separator_after(i), &self.separators)
                    } else {
                        Some(raw_until(rest, self.parts.get(i + 1)))
                    };
                    let Some((value, after)) = read else {
                        return false;
                    };
                    if !each(facet, name.as_str(), value) {
                        return false;
                    }
                    facet += 1;
                    rest = after;
                }
            }
        }
        rest.is_empty()
    }

    /// Whether `key` is one this template renders.
    pub fn matches(&self, key: &str) -> bool {
        self.read(key).is_some()
    }

    /// The text after the facet named `facet` up to the next facet (or the end); empty when the
    /// facet ends the template.
    pub fn text_after(&self, facet: &str) -> &str {
        let at = self
            .parts
            .iter()
            .position(|p| matches!(p, Part::Facet(name, _) if name == facet));
        match at.and_then(|i| self.parts.get(i + 1)) {
            Some(Part::Text(text)) => text,
            _ => "",
        }
    }

    /// Whether a key of this template can hold `value` (or, for a prefix, a value starting with
    /// it) as facet `facet`'s text, and be read back with that text: always for escaped keys and
    /// for a facet that ends the key. In an unescaped key a facet ends where the text after it first
    /// occurs, so a value holding that text (`A#001` for `{section}` in
    /// `SEAT#{section}#{row}`) would make the key of other values (section `A`, row `001#…`):
    /// a lookup, condition or write with it would reach into the next facet.
    pub fn holds(&self, facet: &str, value: &str) -> bool {
        let after = self.text_after(facet);
        if self.escaped || after.is_empty() {
            return true;
        }
        let mut written = self.case.apply(value).into_owned();
        let end = written.len();
        written.push_str(after);
        written.find(after) == Some(end)
    }

    /// `value` as this template writes it inside a key: in the key's case, escaped if the
    /// template escapes. What a range's bounds are compared as.
    pub fn written(&self, value: &str) -> String {
        let mut text = String::new();
        self.write_value(&mut text, value);
        text
    }

    /// The characters escaped inside facet values.
    pub fn separators(&self) -> &[char] {
        &self.separators
    }

    /// The first of the template's separators among `alphabet`, the characters a facet's values
    /// hold as keys write them: a range on such a facet cannot follow the keys' order.
    pub fn separator_among(&self, alphabet: &str) -> Option<char> {
        self.separators
            .iter()
            .copied()
            .find(|c| alphabet.contains(*c))
    }

    /// Whether a range on facet `facet`, whose values hold only characters of `alphabet` as
    /// keys write them, is bounded exactly by the keys of its bounds: the facet ends the key, or
    /// the character after it sorts at least two places below the lowest of `alphabet`.
    pub fn bounds_after(&self, facet: &str, alphabet: &str) -> bool {
        let lowest = alphabet.chars().min().unwrap_or('0');
        self.text_after(facet)
            .chars()
            .next()
            .is_none_or(|c| (c as u32) + 1 < lowest as u32)
    }

    /// Appends a facet value to `key`, in the template's case, escaped if the template escapes.
    fn write_value(&self, key: &mut String, value: &str) {
        let value = self.case.apply(value);
        if self.escaped {
            escape_into(key, &value, &self.separators);
        } else {
            key.push_str(&value);
        }
    }

    /// The character that ends the facet at `i`: the first of the text after it, if any.
    fn separator_after(&self, i: usize) -> Option<char> {
        match self.parts.get(i + 1) {
            Some(Part::Text(text)) => text.chars().next(),
            _ => None,
        }
    }
}

impl fmt::Display for KeyTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(text) => f.write_str(text)?,
                Part::Facet(name, None) => write!(f, "{{{name}}}")?,
                Part::Facet(name, Some(width)) => write!(f, "{{{name}:0{width}}}")?,
            }
        }
        Ok(())
    }
}

/// The characters an integer's text holds in a key.
pub const INTEGER_TEXT: &str = "0123456789";

/// The characters a time stored as RFC 3339 text holds in a key (before the key's case).
pub const TIME_TEXT: &str = "+-.0123456789:TZ";

/// The characters a plain date (`2026-05-01`) holds in a key.
pub const DATE_TEXT: &str = "-0123456789";

/// The width of a facet's `:0N` suffix (`08` in `{seq:08}`): a zero, then 1 to 38 digits' width.
fn pad_width(text: &str) -> Option<usize> {
    let digits = text.strip_prefix('0')?;
    let width: usize = digits.parse().ok()?;
    (digits.bytes().all(|b| b.is_ascii_digit()) && (1..=38).contains(&width)).then_some(width)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Appends `value` with the escape character and the separators escaped.
fn escape_into(out: &mut String, value: &str, separators: &[char]) {
    for c in value.chars() {
        if c == ESCAPE || separators.contains(&c) {
            out.push(ESCAPE);
        }
        out.push(c);
    }
}

/// Reads an unescaped facet value: up to the first occurrence of the literal text that follows
/// the facet (`next`), or, for the last facet, to the end.
fn raw_until<'t>(text: &'t str, next: Option<&Part>) -> (Cow<'t, str>, &'t str) {
    match next {
        Some(Part::Text(literal)) => match text.find(literal.as_str()) {
            Some(at) => (Cow::Borrowed(&text[..at]), &text[at..]),
            // The text that must follow is not there: the literal's own check then fails.
            None => (Cow::Borrowed(text), ""),
        },
        _ => (Cow::Borrowed(text), ""),
    }
}

/// Reads an escaped facet value up to the first unescaped `separator` (or to the end when there
/// is none), returning the value and what follows it. `None` for a dangling escape, an escape of
/// anything but a separator or `\`, or another of the template's `separators` unescaped:
/// [`KeyTemplate::render`] writes none of these, so such a key is not one of this template's.
fn unescape_until<'t>(
    text: &'t str,
    separator: Option<char>,
    separators: &[char],
) -> Option<(Cow<'t, str>, &'t str)> {
    // The value is borrowed from the key unless it holds an escape (most do not): items are
    // matched against templates on every page. With ASCII separators (the usual `#`, `|` or
    // `:`) the end of a value without escapes is found byte by byte: in UTF-8 no byte of a
    // longer character equals an ASCII one.
    if ESCAPE.is_ascii() && separators.iter().all(char::is_ascii) {
        let stop = text
            .bytes()
            .position(|b| b == ESCAPE as u8 || separators.iter().any(|&s| s as u8 == b));
        match stop {
            None => return Some((Cow::Borrowed(text), "")),
            Some(at) if text.as_bytes()[at] != ESCAPE as u8 => {
                let ends_here = separator == Some(char::from(text.as_bytes()[at]));
                return ends_here.then(|| (Cow::Borrowed(&text[..at]), &text[at..]));
            }
            // An escape: the general loop below unescapes it.
            Some(_) => {}
        }
    }
    let mut unescaped: Option<String> = None;
    let mut run = 0;
    let mut chars = text.char_indices();
    let value = |unescaped: Option<String>, run: usize, end: usize| match unescaped {
        None => Cow::Borrowed(&text[..end]),
        Some(mut value) => {
            value.push_str(&text[run..end]);
            Cow::Owned(value)
        }
    };
    while let Some((at, c)) = chars.next() {
        if c == ESCAPE {
            let (escaped_at, escaped) = chars.next()?;
            if escaped != ESCAPE && !separators.contains(&escaped) {
                return None;
            }
            let so_far = unescaped.get_or_insert_with(String::new);
            so_far.push_str(&text[run..at]);
            so_far.push(escaped);
            run = escaped_at + escaped.len_utf8();
        } else if Some(c) == separator {
            return Some((value(unescaped, run, at), &text[at..]));
        } else if separators.contains(&c) {
            return None;
        }
    }
    Some((value(unescaped, run, text.len()), ""))
}

/// Digits of [`sortable_integer`]'s output: every `i64` fits.
pub const SORTABLE_INTEGER_WIDTH: usize = 20;

/// An integer as fixed-width digits whose string order is the numbers' order: `n` offset by
/// 2^63 (so negatives sort first), zero-padded to [`SORTABLE_INTEGER_WIDTH`] digits.
pub fn sortable_integer(n: i64) -> String {
    let offset = (n as i128 + (1i128 << 63)) as u64;
    format!("{offset:0width$}", width = SORTABLE_INTEGER_WIDTH)
}

/// The integer [`sortable_integer`] wrote, or `None` for other text.
pub fn read_sortable_integer(text: &str) -> Option<i64> {
    if text.len() != SORTABLE_INTEGER_WIDTH || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let offset: u64 = text.parse().ok()?;
    i64::try_from(offset as i128 - (1i128 << 63)).ok()
}

mod shared_keys;
pub use shared_keys::FacetText;

#[cfg(test)]
mod tests;
