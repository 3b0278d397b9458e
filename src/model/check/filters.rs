//! A connection's filters, order, projection and page sizes.

use super::*;

impl<'f> Ctx<'f, '_> {
    pub(super) fn filters(
        &self,
        file: &ConnectionFile,
        node: EntityId,
        target: &Target<'_>,
        scan: bool,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Vec<Filter>> {
        let mut filters = Vec::new();
        let mut ok = true;
        for (name, filter) in in_file_order(&file.filters) {
            arguments.add(name.get_ref(), name.span());
            let Some(field) = self.field_named(node, &filter.field, out) else {
                ok = false;
                continue;
            };
            let f = &self.entities[node].entity.fields[field];
            if !scan && target.key().iter().any(|a| a.name == f.attribute) {
                out.error(
                    filter.field.span(),
                    format!(
                        "field `{}` is on key attribute `{}` of {}, which a Query cannot filter on",
                        f.name,
                        f.attribute,
                        target.what()
                    ),
                )
                .hint("DynamoDB refuses key attributes in a Query's filter: use `sort` conditions for the sort key");
                ok = false;
                continue;
            }
            match self.filter_op(&filter.op, f, out) {
                Some(op) => filters.push(Filter {
                    argument: Argument {
                        name: name.get_ref().clone(),
                        description: filter.description.clone(),
                    },
                    field,
                    op,
                }),
                None => ok = false,
            }
        }
        ok.then_some(filters)
    }

    pub(super) fn filter_op(
        &self,
        op: &Spanned<String>,
        field: &Field,
        out: &mut Problems,
    ) -> Option<FilterOp> {
        let Some(parsed) = parse_filter_op(op.get_ref()) else {
            out.error(op.span(), format!("unknown filter operator `{}`", op.get_ref()))
                .hint("the operators are =, <>, <, <=, >, >=, begins_with, contains, IN and attribute_exists");
            return None;
        };
        let scalar = match field.ty {
            FieldType::Scalar(s) => Some(s),
            FieldType::List { .. } => None,
        };
        let fits = match parsed {
            FilterOp::BeginsWith => scalar.is_some_and(is_text),
            FilterOp::Contains => scalar.is_none_or(is_text),
            FilterOp::Lt | FilterOp::Le | FilterOp::Gt | FilterOp::Ge => {
                scalar.is_some_and(|s| !matches!(s, Scalar::Boolean | Scalar::Json))
            }
            FilterOp::In => scalar.is_some_and(|s| s != Scalar::Json),
            FilterOp::Eq | FilterOp::Ne => scalar != Some(Scalar::Json),
            FilterOp::Exists => true,
        };
        if !fits {
            out.error(
                op.span(),
                format!(
                    "operator `{}` does not apply to field `{}` of type `{}`",
                    op.get_ref(),
                    field.name,
                    self.type_text(&field.ty, field.nullable)
                ),
            )
            .hint(match parsed {
                FilterOp::BeginsWith => "`begins_with` needs a String or ID field",
                FilterOp::Contains => "`contains` needs a String or ID field, or a list",
                FilterOp::In => "`IN` needs a scalar field other than JSON",
                FilterOp::Eq | FilterOp::Ne => "JSON values cannot be compared",
                _ => "ordering needs a scalar field other than Boolean or JSON",
            });
            return None;
        }
        Some(parsed)
    }

    pub(super) fn order(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        scan: bool,
        out: &mut Problems,
    ) -> Option<Option<Order>> {
        let Some(order) = &file.order else {
            return Some((!scan).then_some(Order {
                default_desc: false,
                description: None,
            }));
        };
        if scan {
            out.error(
                self.connection_span(owner, name, "order"),
                "a Scan has no `order`",
            )
            .hint("Scans page forward only, in DynamoDB's order");
            return None;
        }
        let default_desc = match order.default.as_ref() {
            None => false,
            Some(d) if d.get_ref() == "ASC" => false,
            Some(d) if d.get_ref() == "DESC" => true,
            Some(d) => {
                out.error(d.span(), format!("unknown order `{}`", d.get_ref()))
                    .hint("the default order is \"ASC\" or \"DESC\"");
                return None;
            }
        };
        Some(Some(Order {
            default_desc,
            description: order.description.clone(),
        }))
    }

    /// Reads through a KEYS_ONLY or INCLUDE index return only what it holds.
    pub(super) fn check_projection(
        &self,
        node: EntityId,
        target: &Target<'_>,
        index: &Index,
        span: Range<usize>,
        out: &mut Problems,
    ) {
        let included: &[String] = match &index.projection {
            Projection::All => return,
            Projection::KeysOnly => &[],
            Projection::Include(list) => list,
        };
        // Every index holds the table's keys and its own.
        let a_key = |attribute: &str| {
            target.table.key.iter().any(|a| a.name == attribute)
                || index.key.iter().any(|a| a.name == attribute)
        };
        let holds = |attribute: &str| a_key(attribute) || included.iter().any(|a| a == attribute);
        let entity = &self.entities[node].entity;
        // A facet whose own attribute the index does not hold is read back from the key it is
        // read back from on the table too (see `values::field_value`), when the index holds that
        // key and the key keeps the values' case.
        let read_back = |field: FieldId| {
            entity.facet_source(field).is_some_and(|template| {
                a_key(template.attribute) && template.template.case() == KeyCase::AsStored
            })
        };
        // The fields, and the attributes the entity's rule requires (every read checks them).
        let read = entity
            .fields
            .iter()
            .enumerate()
            .filter(|&(field, _)| !read_back(field))
            .map(|(_, f)| f.attribute.as_str());
        let missing: Vec<String> = read
            .chain(entity.required_values(target.table).map(|(a, _)| a))
            .filter(|attribute| !holds(attribute))
            .map(|attribute| format!("`{attribute}`"))
            .collect();
        if !missing.is_empty() {
            out.error(
                span,
                format!(
                    "index `{}` does not hold attribute(s) {} that entity `{}` reads",
                    index.name,
                    missing.join(", "),
                    entity.name
                ),
            )
            .hint("set `projection = \"ALL\"` on the index, or include these attributes");
        }
    }
}

pub(super) fn parse_filter_op(op: &str) -> Option<FilterOp> {
    Some(match op {
        "=" => FilterOp::Eq,
        "<>" => FilterOp::Ne,
        "<" => FilterOp::Lt,
        "<=" => FilterOp::Le,
        ">" => FilterOp::Gt,
        ">=" => FilterOp::Ge,
        "begins_with" => FilterOp::BeginsWith,
        "contains" => FilterOp::Contains,
        "IN" => FilterOp::In,
        "attribute_exists" => FilterOp::Exists,
        _ => return None,
    })
}

/// A constant partition key value.
pub(super) fn partition_value(
    value: &Spanned<toml::Value>,
    attribute: &KeyAttr,
    out: &mut Problems,
) -> Option<PartitionFrom> {
    let key = match (attribute.ty, value.get_ref()) {
        (KeyType::S, toml::Value::String(s)) if !s.is_empty() => Ok(KeyValue::S(s.clone())),
        (KeyType::S, toml::Value::String(_)) => Err("a key string cannot be empty".to_owned()),
        (KeyType::N, toml::Value::Integer(_) | toml::Value::String(_) | toml::Value::Float(_)) => {
            decimal(value.get_ref()).map(KeyValue::N)
        }
        (KeyType::B, _) => Err("a constant partition cannot be binary".to_owned()),
        (ty, other) => Err(format!(
            "{} does not fit partition key attribute `{}`, of type {}",
            describe(other),
            attribute.name,
            key_type_name(ty)
        )),
    };
    match key {
        Ok(key) => Some(PartitionFrom::Constant(key)),
        Err(message) => {
            out.error(value.span(), message);
            None
        }
    }
}

/// The connection's own page sizes: `1 <= default <= max <= 1000`, and `default <= 100`.
pub(super) fn page_size(
    file: &PageSizeFile,
    name: &Spanned<String>,
    out: &mut Problems,
) -> Option<(u32, u32)> {
    let (Some(default), Some(max)) = (&file.default, &file.max) else {
        let span = file
            .default
            .as_ref()
            .or(file.max.as_ref())
            .map_or(name.span(), Spanned::span);
        out.error(span, "`page_size` needs both `default` and `max`");
        return None;
    };
    let (d, m) = (*default.get_ref(), *max.get_ref());
    let mut ok = true;
    if d == 0 || d > MAX_DEFAULT_PAGE_SIZE {
        out.error(
            default.span(),
            format!("default page size {d} is not between 1 and {MAX_DEFAULT_PAGE_SIZE}"),
        );
        ok = false;
    }
    if m > HARD_MAX_PAGE_SIZE {
        out.error(
            max.span(),
            format!("largest page size {m} is above {HARD_MAX_PAGE_SIZE}"),
        );
        ok = false;
    } else if ok && d > m {
        out.error(
            max.span(),
            format!("largest page size {m} is below the default page size {d}"),
        );
        ok = false;
    }
    ok.then_some((d, m))
}
