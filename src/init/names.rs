//! Names for what `init` proposes: GraphQL names made from attribute and table names, which may
//! hold any characters (`status#createdAt`, `__edb_e__`, `Order-apiid-NONE`), kept distinct.

/// Whether `name` is a GraphQL name (`[_A-Za-z][_0-9A-Za-z]*`) that a schema may define: not
/// starting with `__`, which GraphQL keeps for introspection.
pub fn is_graphql_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !name.starts_with("__")
}

/// The words of a name: runs of ASCII letters and digits, split at anything else.
fn words(name: &str) -> Vec<&str> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

/// `name` in lowerCamelCase, its words joined (`status#createdAt` → `statusCreatedAt`,
/// `__edb_e__` → `edbE`), with `_` in front when it would start with a digit; `fallback` when
/// it has no letters or digits at all.
pub fn camel(name: &str, fallback: &str) -> String {
    let words = words(name);
    let Some((first, rest)) = words.split_first() else {
        return fallback.to_owned();
    };
    let mut out = String::new();
    let mut chars = first.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_lowercase());
        out.push_str(chars.as_str());
    }
    for word in rest {
        out.push_str(&capitalized(word));
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `name` in PascalCase (`Order-apiid-NONE` → `OrderApiidNONE`), `fallback` when it has no
/// letters or digits.
pub fn pascal(name: &str, fallback: &str) -> String {
    let out: String = words(name).iter().map(|w| capitalized(w)).collect();
    match out.chars().next() {
        None => fallback.to_owned(),
        Some(c) if c.is_ascii_digit() => format!("T{out}"),
        Some(_) => out,
    }
}

/// Names in backticks as a sentence lists them: `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and
/// `c` ``.
pub fn listed(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A field name for an attribute: the attribute's own name when GraphQL takes it as it is, else
/// [`camel`] of it. `id` is taken by every entity's global id.
pub fn field_name(attribute: &str, entity: &str) -> String {
    if attribute == "id" {
        return format!("{}Id", camel(entity, "item"));
    }
    if is_graphql_name(attribute) {
        return attribute.to_owned();
    }
    camel(attribute, "attribute")
}

/// The English singular of a plural table name's last word, by the common rules only
/// (`Purchases` → `Purchase`, `Categories` → `Category`, `Addresses` → `Address`); a name that
/// does not end in `s` is kept.
pub fn singular(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("ss") || lower.ends_with("us") || lower.ends_with("is") || name.len() < 4 {
        return name.to_owned();
    }
    if let Some(stem) = name.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for ending in ["sses", "shes", "ches", "xes"] {
        if lower.ends_with(ending) {
            return name[..name.len() - 2].to_owned();
        }
    }
    name.strip_suffix('s').unwrap_or(name).to_owned()
}

/// The English plural of a name, by the common rules only.
pub fn plural(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with('y')
        && !lower.ends_with("ay")
        && !lower.ends_with("ey")
        && !lower.ends_with("oy")
        && !lower.ends_with("uy")
    {
        return format!("{}ies", &name[..name.len() - 1]);
    }
    if ["s", "x", "ch", "sh"].iter().any(|e| lower.ends_with(e)) {
        return format!("{name}es");
    }
    format!("{name}s")
}

/// Hands out names not yet taken, numbering the later of two equal ones (`status2`).
#[derive(Debug, Default)]
pub struct Taken(Vec<String>);

impl Taken {
    /// Names that may not be handed out at all.
    pub fn with(reserved: &[&str]) -> Self {
        Self(reserved.iter().map(|&r| r.to_owned()).collect())
    }

    /// Whether `name` is still free.
    pub fn is_free(&self, name: &str) -> bool {
        !self.0.iter().any(|t| t.eq_ignore_ascii_case(name))
    }

    /// `wanted`, or `wanted2`, `wanted3`, ... when it is taken; then taken.
    pub fn claim(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while !self.is_free(&name) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        self.0.push(name.clone());
        name
    }
}

/// An index's name after `By` in a connection's name: `ByCategory` gives `Category`, as
/// `productsByCategory` reads better than `productsByByCategory`.
pub fn index_suffix(index: &str) -> String {
    let name = pascal(index, "Index");
    match name.strip_prefix("By") {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_uppercase()) => rest.to_owned(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_listed_as_a_sentence_lists_them() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(listed(&names(&["name"])), "`name`");
        assert_eq!(listed(&names(&["a", "b"])), "`a` and `b`");
        assert_eq!(listed(&names(&["a", "b", "c"])), "`a`, `b` and `c`");
    }

    #[test]
    fn attribute_names_become_graphql_names() {
        assert_eq!(field_name("status", "Order"), "status");
        assert_eq!(field_name("_ct", "Order"), "_ct");
        assert_eq!(field_name("status#createdAt", "Order"), "statusCreatedAt");
        assert_eq!(field_name("__edb_e__", "Loan"), "edbE");
        assert_eq!(field_name("first name", "User"), "firstName");
        assert_eq!(field_name("2fa", "User"), "_2fa");
        assert_eq!(field_name("id", "Project"), "projectId");
        assert_eq!(field_name("ünï", "User"), "n");
        assert_eq!(field_name("ü", "User"), "attribute");
        for name in ["status#createdAt", "__edb_e__", "2fa", "a-b.c", "x__y"] {
            assert!(is_graphql_name(&field_name(name, "E")), "{name}");
        }
    }

    #[test]
    fn table_names_give_entity_names() {
        assert_eq!(pascal(&singular("Purchases"), "Item"), "Purchase");
        assert_eq!(pascal(&singular("Categories"), "Item"), "Category");
        assert_eq!(pascal(&singular("Addresses"), "Item"), "Address");
        assert_eq!(pascal(&singular("ServiceLog"), "Item"), "ServiceLog");
        assert_eq!(pascal(&singular("Status"), "Item"), "Status");
        assert_eq!(pascal(&singular("order-items"), "Item"), "OrderItem");
        assert_eq!(pascal("2024_data", "Item"), "T2024Data");
        assert_eq!(plural("Category"), "Categories");
        assert_eq!(plural("Day"), "Days");
        assert_eq!(plural("Address"), "Addresses");
        assert_eq!(plural("Firmware"), "Firmwares");
    }

    #[test]
    fn equal_names_are_numbered() {
        let mut taken = Taken::with(&["id"]);
        assert_eq!(taken.claim("id"), "id2");
        assert_eq!(taken.claim("status"), "status");
        assert_eq!(taken.claim("Status"), "Status2");
        assert_eq!(taken.claim("status"), "status3");
    }
}
