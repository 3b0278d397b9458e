//! Fields: types, defaults, how each is stored, generated values and input checks.

use super::*;

impl Ctx<'_, '_> {
    pub(super) fn field(
        &self,
        name: &Spanned<String>,
        file: &FieldFile,
        out: &mut Problems,
    ) -> Option<Field> {
        let (ty, nullable) = self.field_type(file, out)?;
        let default = file
            .default
            .as_ref()
            .and_then(|d| self.default_value(&ty, d, out));
        let generated = file.generated.as_ref().and_then(|g| generated(&ty, g, out));
        if let (Some(d), Some(_)) = (&file.default, &file.generated) {
            out.error(
                d.span(),
                "a field cannot have both `default` and `generated`",
            )
            .hint("`generated` values are never in inputs, so a default is never used");
        }
        let checks = input_checks(&ty, file, out);
        Some(Field {
            name: name.get_ref().clone(),
            attribute: file.attribute.as_ref().unwrap_or(name).get_ref().clone(),
            description: file.description.clone(),
            input_description: file.input_description.clone(),
            ty,
            nullable,
            default,
            generated,
            checks,
            access: None,
        })
    }

    /// The field's type, with its storage.
    pub(super) fn field_type(
        &self,
        file: &FieldFile,
        out: &mut Problems,
    ) -> Option<(FieldType, bool)> {
        let span = file.ty.span();
        let written = match parse_type_ref(file.ty.get_ref()) {
            Ok(written) => written,
            Err(message) => {
                out.error(span, message)
                    .hint("a type is `T`, `T!`, `[T]`, `[T!]`, `[T]!` or `[T!]!`");
                return None;
            }
        };
        let scalar = match builtin_scalar(written.name) {
            Some(s) => s,
            None => match self.enum_ids.get(written.name) {
                Some(e) => Scalar::Enum(*e),
                None => {
                    let mut known: Vec<&str> = SCALAR_NAMES.to_vec();
                    known.extend(self.enum_ids.keys().copied());
                    out.error(span, format!("unknown type `{}`", written.name))
                        .hint(suggest(written.name, &known, "types"));
                    return None;
                }
            },
        };
        let stored_as = file.stored_as.as_ref();
        let ty = match written.list {
            None => FieldType::Scalar(scalar_storage(scalar, stored_as, out)?),
            Some(item_nullable) => list_storage(scalar, item_nullable, stored_as, out)?,
        };
        Some((ty, written.nullable))
    }

    pub(super) fn default_value(
        &self,
        ty: &FieldType,
        value: &Spanned<toml::Value>,
        out: &mut Problems,
    ) -> Option<DefaultValue> {
        let span = value.span();
        if value.get_ref().as_str() == Some("now") {
            if matches!(ty, FieldType::Scalar(Scalar::DateTime(_))) {
                return Some(DefaultValue::Now);
            }
            out.error(span, "`default = \"now\"` is for DateTime fields only");
            return None;
        }
        let literal = match ty {
            FieldType::Scalar(s) => self.literal(*s, value.get_ref()),
            FieldType::List { item, .. } => match value.get_ref() {
                toml::Value::Array(items) => items
                    .iter()
                    .map(|v| self.literal(*item, v))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Json::Array),
                other => Err(format!("a list default is a list, not {}", describe(other))),
            },
        };
        match literal {
            Ok(json) => Some(DefaultValue::Value(json)),
            Err(message) => {
                out.error(span, format!("bad default: {message}"));
                None
            }
        }
    }

    /// A literal of scalar `s`, as the GraphQL input parser accepts it.
    pub(super) fn literal(&self, s: Scalar, value: &toml::Value) -> Result<Json, String> {
        use toml::Value as V;
        let name = self.scalar_name(s);
        let wrong = || format!("{} is not a {name}", describe(value));
        match (s, value) {
            (Scalar::String | Scalar::Id, V::String(text)) => Ok(Json::String(text.clone())),
            (Scalar::Enum(e), V::String(text)) => {
                let Some(enum_type) = self.enums.get(e) else {
                    return Err(wrong());
                };
                if enum_type.values.iter().any(|(v, _)| v == text) {
                    Ok(Json::String(text.clone()))
                } else {
                    let values: Vec<&str> =
                        enum_type.values.iter().map(|(v, _)| v.as_str()).collect();
                    Err(format!(
                        "`{text}` is not a value of enum `{name}` ({})",
                        values.join(", ")
                    ))
                }
            }
            (Scalar::Int, V::Integer(i)) => i32::try_from(*i)
                .map(Json::from)
                .map_err(|_| format!("{i} is out of range for Int (32 bits)")),
            (Scalar::BigInt, V::Integer(i)) => Ok(Json::String(i.to_string())),
            (Scalar::Float, V::Integer(i)) => Ok(Json::from(*i)),
            (Scalar::Float, V::Float(f)) => serde_json::Number::from_f64(*f)
                .map(Json::Number)
                .ok_or_else(|| format!("{f} is not a finite number")),
            (Scalar::Decimal, V::Integer(_) | V::Float(_) | V::String(_)) => {
                decimal(value).map(|n| Json::String(n.into_string()))
            }
            (Scalar::Boolean, V::Boolean(b)) => Ok(Json::Bool(*b)),
            (Scalar::DateTime(_), V::String(text)) => chrono::DateTime::parse_from_rfc3339(text)
                .map(|_| Json::String(text.clone()))
                .map_err(|_| format!("`{text}` is not an RFC 3339 date-time, nor \"now\"")),
            (Scalar::DateTime(_), V::Datetime(d)) => {
                let text = d.to_string();
                chrono::DateTime::parse_from_rfc3339(&text)
                    .map(|_| Json::String(text.clone()))
                    .map_err(|_| format!("`{text}` has no time zone offset"))
            }
            (Scalar::Bytes, V::String(text)) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(|_| Json::String(text.clone()))
                .map_err(|_| format!("`{text}` is not base64")),
            (Scalar::Json, v) => serde_json::to_value(v).map_err(|e| e.to_string()),
            _ => Err(wrong()),
        }
    }
}

/// A short description of a TOML value, for messages.
pub(super) fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("the string \"{s}\""),
        toml::Value::Integer(i) => format!("the integer {i}"),
        toml::Value::Float(f) => format!("the number {f}"),
        toml::Value::Boolean(b) => format!("the boolean {b}"),
        toml::Value::Datetime(d) => format!("the date-time {d}"),
        toml::Value::Array(_) => "a list".to_owned(),
        toml::Value::Table(_) => "a table".to_owned(),
    }
}

/// A number written as an integer, a float or a numeric string.
pub(super) fn decimal(value: &toml::Value) -> Result<DynamoNumber, String> {
    let text = match value {
        toml::Value::Integer(i) => return Ok(DynamoNumber::from_i64(*i)),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::String(s) => s.clone(),
        other => return Err(format!("{} is not a number", describe(other))),
    };
    DynamoNumber::normalize(&text).map_err(|e| format!("`{text}`: {e}"))
}

/// A scalar field's storage: only `DateTime` has a choice.
pub(super) fn scalar_storage(
    scalar: Scalar,
    stored_as: Option<&Spanned<StoredAsFile>>,
    out: &mut Problems,
) -> Option<Scalar> {
    let Some(stored_as) = stored_as else {
        return Some(scalar);
    };
    let format = match stored_as.get_ref() {
        StoredAsFile::EpochMillis => TimeFormat::EpochMillis,
        StoredAsFile::EpochSeconds => TimeFormat::EpochSeconds,
        StoredAsFile::Iso8601 => TimeFormat::Iso8601,
        StoredAsFile::Iso8601Seconds => TimeFormat::Iso8601Seconds,
        StoredAsFile::Date => TimeFormat::Date,
        StoredAsFile::List | StoredAsFile::Set => {
            out.error(
                stored_as.span(),
                "`list` and `set` storage is for list fields",
            )
            .hint("a DateTime is stored as epoch_millis, epoch_seconds, iso8601, iso8601_seconds or date");
            return None;
        }
    };
    if let Scalar::DateTime(_) = scalar {
        Some(Scalar::DateTime(format))
    } else {
        out.error(stored_as.span(), "`stored_as` with a time format is for DateTime fields")
            .hint("only DateTime fields (epoch_millis, epoch_seconds, iso8601, iso8601_seconds, date) and lists (list, set) choose their storage");
        None
    }
}

/// A list field's storage: a list, or a set of strings, numbers or binaries.
pub(super) fn list_storage(
    item: Scalar,
    item_nullable: bool,
    stored_as: Option<&Spanned<StoredAsFile>>,
    out: &mut Problems,
) -> Option<FieldType> {
    let set = match stored_as.map(|s| (s, s.get_ref())) {
        None | Some((_, StoredAsFile::List)) => false,
        Some((_, StoredAsFile::Set)) => true,
        Some((s, _)) => {
            out.error(s.span(), "a list field is stored as `list` or `set`")
                .hint("its items are stored as their type's default");
            return None;
        }
    };
    if set {
        let span = stored_as.map_or(0..0, Spanned::span);
        let settable =
            is_text(item) || is_number(item) || matches!(item, Scalar::Enum(_) | Scalar::Bytes);
        if !settable {
            out.error(span, "sets hold strings, numbers or binaries only")
                .hint("set items are String, ID, an enum (SS), Int, BigInt, Float, Decimal (NS) or Bytes (BS)");
            return None;
        }
        if item_nullable {
            out.error(span, "set items cannot be null")
                .hint("make the items non-null, as in `[String!]`");
            return None;
        }
    }
    Some(FieldType::List {
        item,
        item_nullable,
        set,
    })
}

pub(super) fn generated(
    ty: &FieldType,
    value: &Spanned<String>,
    out: &mut Problems,
) -> Option<Generated> {
    let generated = match value.get_ref().as_str() {
        "now" => Generated::Now,
        "now_on_write" => Generated::NowOnWrite,
        other => {
            out.error(value.span(), format!("unknown generated value `{other}`"))
                .hint("`generated` is `\"now\"` (set on create) or `\"now_on_write\"` (set on create and on every update)");
            return None;
        }
    };
    if !matches!(ty, FieldType::Scalar(Scalar::DateTime(_))) {
        out.error(
            value.span(),
            format!(
                "`generated = \"{}\"` is for DateTime fields only",
                value.get_ref()
            ),
        );
        return None;
    }
    Some(generated)
}

pub(super) fn input_checks(ty: &FieldType, file: &FieldFile, out: &mut Problems) -> InputChecks {
    let scalar = match ty {
        FieldType::Scalar(s) => Some(*s),
        FieldType::List { .. } => None,
    };
    let numeric = scalar.is_some_and(is_number);
    let bound = |value: &Spanned<toml::Value>, out: &mut Problems| {
        if !numeric {
            out.error(
                value.span(),
                "`min` and `max` are for Int, BigInt, Float and Decimal fields",
            );
            return None;
        }
        decimal(value.get_ref())
            .map_err(|message| out.error(value.span(), format!("bad bound: {message}")))
            .ok()
    };
    let min = file.min.as_ref().and_then(|v| bound(v, out));
    let max = file.max.as_ref().and_then(|v| bound(v, out));
    if let (Some(lo), Some(hi), Some(span)) = (&min, &max, file.max.as_ref().map(Spanned::span))
        && lo.numeric_cmp(hi) == std::cmp::Ordering::Greater
    {
        out.error(
            span,
            format!("`max` {} is below `min` {}", hi.as_str(), lo.as_str()),
        );
    }
    let textual = scalar.is_some_and(is_text);
    let length = |value: &Spanned<u32>, out: &mut Problems| {
        if textual {
            Some(*value.get_ref())
        } else {
            out.error(
                value.span(),
                "`min_length` and `max_length` are for String and ID fields",
            );
            None
        }
    };
    let min_length = file.min_length.as_ref().and_then(|v| length(v, out));
    let max_length = file.max_length.as_ref().and_then(|v| length(v, out));
    if let (Some(lo), Some(hi), Some(span)) = (
        min_length,
        max_length,
        file.max_length.as_ref().map(Spanned::span),
    ) && lo > hi
    {
        out.error(
            span,
            format!("`max_length` {hi} is below `min_length` {lo}"),
        );
    }
    let format = match &file.format {
        None => None,
        Some(format) => {
            let parsed = match format.get_ref().as_str() {
                "email" => Some(TextFormat::Email),
                "ulid" => Some(TextFormat::Id(SortableId::Ulid)),
                "ksuid" => Some(TextFormat::Id(SortableId::Ksuid)),
                _ => None,
            };
            match parsed {
                None => {
                    out.error(
                        format.span(),
                        format!("unknown format `{}`", format.get_ref()),
                    )
                    .hint("`format` is \"email\", \"ulid\" or \"ksuid\"");
                    None
                }
                Some(TextFormat::Email) if scalar != Some(Scalar::String) => {
                    out.error(
                        format.span(),
                        "`format = \"email\"` is for String fields only",
                    );
                    None
                }
                Some(TextFormat::Id(_)) if !matches!(scalar, Some(Scalar::String | Scalar::Id)) => {
                    out.error(
                        format.span(),
                        "`ulid` and `ksuid` are for String and ID fields only",
                    );
                    None
                }
                parsed => parsed,
            }
        }
    };
    InputChecks {
        min,
        max,
        min_length,
        max_length,
        format,
    }
}
