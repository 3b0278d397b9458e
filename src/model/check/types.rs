//! Field types as written (`String!`, `[Int!]`) and the scalars and key types they name.

use super::*;

/// A field type as written: `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TypeRef<'a> {
    /// The named type.
    pub(super) name: &'a str,
    /// Whether the value may be null.
    pub(super) nullable: bool,
    /// For a list, whether its items may be null.
    pub(super) list: Option<bool>,
}

/// Parses the field type grammar.
pub(super) fn parse_type_ref(text: &str) -> Result<TypeRef<'_>, String> {
    let text = text.trim();
    let (inner, nullable) = match text.strip_suffix('!') {
        Some(rest) => (rest.trim_end(), false),
        None => (text, true),
    };
    let named = |name: &'_ str| {
        if name.starts_with('[') {
            Err("lists of lists are not supported".to_owned())
        } else if is_graphql_name(name) {
            Ok(())
        } else {
            Err(format!(
                "`{text}` is not a type: write `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`"
            ))
        }
    };
    match inner.strip_prefix('[') {
        Some(rest) => {
            let Some(item) = rest.strip_suffix(']') else {
                return Err(format!("`{text}` is not a type: a list type ends with `]`"));
            };
            let item = item.trim();
            let (name, item_nullable) = match item.strip_suffix('!') {
                Some(name) => (name.trim_end(), false),
                None => (item, true),
            };
            named(name)?;
            Ok(TypeRef {
                name,
                nullable,
                list: Some(item_nullable),
            })
        }
        None => {
            named(inner)?;
            Ok(TypeRef {
                name: inner,
                nullable,
                list: None,
            })
        }
    }
}

/// The built-in scalar named `name` (a `DateTime` as stored by default).
pub(super) fn builtin_scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "String" => Scalar::String,
        "ID" => Scalar::Id,
        "Int" => Scalar::Int,
        "BigInt" => Scalar::BigInt,
        "Float" => Scalar::Float,
        "Decimal" => Scalar::Decimal,
        "Boolean" => Scalar::Boolean,
        "DateTime" => Scalar::DateTime(TimeFormat::EpochMillis),
        "Bytes" => Scalar::Bytes,
        "JSON" => Scalar::Json,
        _ => return None,
    })
}

pub(super) fn key_type_name(ty: KeyType) -> &'static str {
    match ty {
        KeyType::S => "S (string)",
        KeyType::N => "N (number)",
        KeyType::B => "B (binary)",
    }
}

/// The field types that can hold a key attribute of type `ty`.
pub(super) fn key_type_fits(ty: KeyType) -> &'static str {
    match ty {
        KeyType::S => "an S key takes String!, ID!, an enum, or a DateTime! stored as iso8601",
        KeyType::N => {
            "an N key takes Int!, BigInt!, Float!, Decimal!, or a DateTime! stored as \
             epoch_millis or epoch_seconds"
        }
        KeyType::B => "a B key takes Bytes!",
    }
}

pub(super) fn key_type_of(file: KeyTypeFile) -> KeyType {
    match file {
        KeyTypeFile::S => KeyType::S,
        KeyTypeFile::N => KeyType::N,
        KeyTypeFile::B => KeyType::B,
    }
}

pub(super) fn is_number(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::Int | Scalar::BigInt | Scalar::Float | Scalar::Decimal
    )
}

pub(super) fn is_text(s: Scalar) -> bool {
    matches!(s, Scalar::String | Scalar::Id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_grammar_accepts_the_six_forms() {
        let t = |s| parse_type_ref(s).ok();
        let r = |name, nullable, list| {
            Some(TypeRef {
                name,
                nullable,
                list,
            })
        };
        assert_eq!(t("String"), r("String", true, None));
        assert_eq!(t("String!"), r("String", false, None));
        assert_eq!(t("[Int]"), r("Int", true, Some(true)));
        assert_eq!(t("[Int!]"), r("Int", true, Some(false)));
        assert_eq!(t("[Int]!"), r("Int", false, Some(true)));
        assert_eq!(t("[Int!]!"), r("Int", false, Some(false)));
    }

    #[test]
    fn the_type_grammar_refuses_nested_lists_and_garbage() {
        for bad in [
            "[[Int]]", "String!!", "[Int", "", "!", "[]", "Str ing", "1Int",
        ] {
            assert!(parse_type_ref(bad).is_err(), "{bad}");
        }
        assert!(
            parse_type_ref("[[Int]]")
                .unwrap_err()
                .contains("lists of lists")
        );
    }
}
