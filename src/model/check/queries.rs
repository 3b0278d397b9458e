//! A connection's Query: its partition (from the parent, an argument or a facet) and its sort
//! key condition.

use super::*;

impl<'f> Ctx<'f, '_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn query_read(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Read> {
        let node = members[0];
        let attribute = *target.key().first()?;
        let span = self.connection_span(owner, name, "partition");
        let entity = &self.entities[node].entity;
        let template = entity.template_on(attribute.name).map(|t| &t.template);
        for &m in &members[1..] {
            let other = &self.entities[m].entity;
            let same = match (template, other.template_on(attribute.name)) {
                (Some(a), Some(b)) => a.to_string() == b.template.to_string(),
                (None, None) => other.field_on(attribute.name).is_some(),
                _ => false,
            };
            if !same {
                out.error(
                    self.connection_span(owner, name, "members"),
                    format!(
                        "members `{}` and `{}` do not write partition key `{}` of {} alike",
                        entity.name,
                        other.name,
                        attribute.name,
                        target.what()
                    ),
                )
                .hint("an item collection's members share one partition: give them the same key template");
                return None;
            }
        }
        if let Some(template) = template
            && template.facets().count() == 0
        {
            if let Some(partition) = &file.partition {
                let at = partition
                    .field
                    .as_ref()
                    .or(partition.argument.as_ref())
                    .map_or(span, Spanned::span);
                out.error(
                    at,
                    format!(
                        "partition key `{}` of `{}` is always `{template}`: leave `partition` out",
                        attribute.name, entity.name
                    ),
                );
                return None;
            }
            let sort = self.query_sort(owner, name, file, members, target, arguments, out)?;
            return Some(Read::Query {
                partition: Partition {
                    attribute,
                    from: PartitionFrom::Constant(KeyValue::S(template.to_string())),
                    template: None,
                },
                sort: sort.0,
                prefix: sort.1,
            });
        }
        let Some(partition) = &file.partition else {
            out.error(
                name.span(),
                format!(
                    "connection `{}` has neither a `partition` nor `scan = true`",
                    name.get_ref()
                ),
            )
            .hint(
                "read one partition with `partition = { ... }`, or every item with `scan = true`",
            );
            return None;
        };
        let given = [
            partition.argument.is_some(),
            partition.field.is_some(),
            partition.value.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            out.error(
                span,
                "a partition has exactly one of `argument`, `field` and `value`",
            );
            return None;
        }
        let facet = match template {
            None => None,
            Some(template) => {
                let facets = &entity.template_on(attribute.name)?.facets;
                if facets.len() != 1 {
                    out.error(
                        span,
                        format!(
                            "partition key `{}` of `{}` is built from {} facets (`{template}`), but a \
                             connection's partition gives one value",
                            attribute.name,
                            entity.name,
                            facets.len()
                        ),
                    )
                    .hint("read an index whose partition key template has one facet");
                    return None;
                }
                Some(facets[0])
            }
        };
        let from = if let Some(argument) = &partition.argument {
            arguments.add(argument.get_ref(), argument.span());
            match (facet, owner) {
                // The argument takes the facet's type; `partition_argument` reports the rest.
                (Some(field), Owner::Root) => Some(PartitionFrom::Argument {
                    argument: Argument {
                        name: argument.get_ref().clone(),
                        description: partition.description.clone(),
                    },
                    field,
                }),
                _ => self.partition_argument(
                    owner,
                    argument,
                    partition.description.clone(),
                    node,
                    &attribute,
                    out,
                ),
            }
        } else if let Some(field) = &partition.field {
            match facet {
                Some(facet) => self.partition_facet_field(owner, field, node, facet, out),
                None => self.partition_field(owner, field, target, &attribute, out),
            }
        } else {
            let value = partition.value.as_ref()?;
            match (template, facet) {
                (Some(template), Some(facet)) => {
                    let f = &entity.fields[facet];
                    match value.get_ref() {
                        toml::Value::String(text) if matches!(f.ty, FieldType::Scalar(s) if is_text(s)) =>
                        {
                            let key = template.render(|_| Some(text.as_str())).ok()?;
                            Some(PartitionFrom::Constant(KeyValue::S(key)))
                        }
                        _ => {
                            out.error(
                                value.span(),
                                format!(
                                    "a constant partition of a key template takes a string for \
                                     facet `{}`",
                                    f.name
                                ),
                            );
                            None
                        }
                    }
                }
                _ => partition_value(value, &attribute, out),
            }
        };
        let sort = self.query_sort(owner, name, file, members, target, arguments, out);
        let (sort, prefix) = sort?;
        Some(Read::Query {
            partition: Partition {
                attribute,
                from: from?,
                template: facet.and(template.cloned()),
            },
            sort,
            prefix,
        })
    }

    /// A Query's sort-key conditions, and the node entity's sort-key prefix.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub(super) fn query_sort(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<(Option<SortCondition>, Option<(&'static str, String)>)> {
        let node = members[0];
        let sort_attr = target.key().get(1).copied();
        let template = sort_attr.and_then(|a| self.entities[node].entity.template_on(a.name));
        let prefix = match (members.len(), sort_attr, template) {
            (1, Some(attr), Some(t)) if !t.template.literal_prefix().is_empty() => {
                Some((attr.name, t.template.literal_prefix().to_owned()))
            }
            _ => None,
        };
        let sort = match (&file.sort, template) {
            (None, _) => None,
            (Some(sort), Some(template)) => {
                let span = self.connection_span(owner, name, "sort");
                Some(self.facet_condition(sort, span, node, template, arguments, out)?)
            }
            (Some(sort), None) => {
                let span = self.connection_span(owner, name, "sort");
                self.sort_condition(sort, span, node, target, arguments, out)?
            }
        };
        Some((sort, prefix))
    }

    /// The parent entity's field a `field` partition names; only connections on entities have
    /// one.
    pub(super) fn parent_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<(EntityId, FieldId)> {
        let Owner::Entity(parent, _) = owner else {
            out.error(
                field.span(),
                "`field` partitions are for connections on entities",
            )
            .hint("a root connection takes its partition from an `argument` or a `value`");
            return None;
        };
        Some((parent, self.field_named(parent, field, out)?))
    }

    /// A partition given by a parent's field into the node's one-facet partition template.
    pub(super) fn partition_facet_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        node: EntityId,
        facet: FieldId,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        let (parent, id) = self.parent_field(owner, field, out)?;
        let f = &self.entities[parent].entity.fields[id];
        let want = &self.entities[node].entity.fields[facet];
        let scalar = |ty: &FieldType| match ty {
            FieldType::Scalar(s) if is_text(*s) => Some(Scalar::String),
            FieldType::Scalar(s) => Some(*s),
            FieldType::List { .. } => None,
        };
        if scalar(&f.ty) != scalar(&want.ty) || f.nullable {
            out.error(
                field.span(),
                format!(
                    "field `{}` of type `{}` cannot give facet `{}` of `{}`, of type `{}`",
                    f.name,
                    self.type_text(&f.ty, f.nullable),
                    want.name,
                    self.entities[node].entity.name,
                    self.type_text(&want.ty, false)
                ),
            );
            return None;
        }
        Some(PartitionFrom::Parent(id))
    }

    /// Sort conditions over the first facet of a sort-key template. Ranges need the key's
    /// string order to be the facet's order: a type whose text sorts like its values (integers
    /// at fixed width, ISO 8601 times), and separators below every character of those values.
    pub(super) fn facet_condition(
        &self,
        sort: &crate::model::file::SortFile,
        span: Range<usize>,
        node: EntityId,
        template: &TemplateKey,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<SortCondition> {
        let entity = &self.entities[node].entity;
        let fixed_files: &[Spanned<ArgumentFile>] =
            sort.fixed.as_ref().map_or(&[], |f| f.get_ref());
        let Some(&field) = template.facets.get(fixed_files.len()) else {
            match (&sort.fixed, template.facets.len()) {
                (_, 0) => {
                    out.error(
                        span,
                        format!(
                            "sort key `{}` of `{}` is always `{}`: there is nothing to give \
                             conditions on",
                            template.attribute, entity.name, template.template
                        ),
                    );
                }
                (Some(fixed), n) => {
                    out.error(
                        fixed.span(),
                        format!(
                            "`fixed` names {} arguments, but sort key template `{}` has {n} \
                             facets: the last is left for `min`, `max` or `begins_with`",
                            fixed_files.len(),
                            template.template
                        ),
                    )
                    .hint("fix fewer facets, or use a lookup to read one item by its whole key");
                }
                (None, _) => {}
            }
            return None;
        };
        let fixed: Vec<(FieldId, Argument)> = fixed_files
            .iter()
            .zip(&template.facets)
            .map(|(a, &f)| {
                let arg = argument(a.get_ref());
                arguments.add(&arg.name, a.span());
                (f, arg)
            })
            .collect();
        // Optional `fixed` arguments come last: each may be left out only with those after it.
        let required_fixed = fixed_files
            .iter()
            .position(|a| is_optional(a.get_ref()))
            .unwrap_or(fixed_files.len());
        if let Some(late) = fixed_files[required_fixed..]
            .iter()
            .find(|a| !is_optional(a.get_ref()))
        {
            out.error(
                late.span(),
                format!(
                    "`fixed` argument `{}` is required, but follows an optional one",
                    argument(late.get_ref()).name
                ),
            )
            .hint("a key prefix can leave out only its last facets: mark it `optional = true` too, or move the optional ones last");
        }
        for a in [&sort.min, &sort.max, &sort.begins_with]
            .into_iter()
            .flatten()
        {
            refuse_optional(a, out);
        }
        let f = &entity.fields[field];
        let scalar = match f.ty {
            FieldType::Scalar(s) => s,
            FieldType::List { .. } => return None,
        };
        // Integers in keys other tools wrote are plain decimal text, which sorts as the numbers
        // only at one width: ranges need the facet padded (`{seq:08}`).
        let integer = match scalar {
            Scalar::Int | Scalar::BigInt => true,
            Scalar::DateTime(format) => format.is_number(),
            _ => false,
        };
        let plain =
            integer && !template.template.is_escaped() && template.template.pad(&f.name).is_none();
        // The characters the facet's text may hold, as the key writes it: `None` for any.
        let written = |text: &str| template.template.written(text);
        let alphabet: Option<String> = match scalar {
            _ if integer => Some(INTEGER_TEXT.to_owned()),
            Scalar::DateTime(TimeFormat::Date) => Some(written(DATE_TEXT)),
            Scalar::DateTime(_) => Some(written(TIME_TEXT)),
            Scalar::Enum(e) => Some(
                self.enums[e]
                    .values
                    .iter()
                    .map(|(value, _)| template.template.case().apply(value).into_owned())
                    .collect(),
            ),
            // Ids that sort by time: ranges of times are ranges of ids.
            Scalar::String | Scalar::Id => match f.sortable_id() {
                Some(SortableId::Ulid) => Some(written(
                    "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz",
                )),
                Some(SortableId::Ksuid) => Some(
                    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".to_owned(),
                ),
                None => None,
            },
            _ => None,
        };
        let text_facet = matches!(scalar, Scalar::String | Scalar::Id | Scalar::Enum(_));
        if f.sortable_id() == Some(SortableId::Ksuid)
            && template.template.case() != KeyCase::AsStored
            && (sort.min.is_some() || sort.max.is_some())
        {
            out.error(
                span.clone(),
                format!(
                    "KSUIDs sort by time only as written: key template `{}` changes their case",
                    template.template
                ),
            )
            .hint("leave `key_case` out, or give no `min` and `max`");
            return None;
        }
        let mut ok = true;
        if sort.min.is_some() || sort.max.is_some() {
            let at = sort
                .min
                .as_ref()
                .or(sort.max.as_ref())
                .map_or(span.clone(), Spanned::span);
            let next = template.template.text_after(&f.name).chars().next();
            if let Some(problem) = self.range_problem(
                template,
                f,
                plain,
                text_facet && f.sortable_id().is_none(),
                alphabet.as_deref(),
                next,
            ) {
                let (message, hint) = problem;
                out.error(at, message).hint(hint);
                ok = false;
            }
        }
        if let Some(begins_with) = &sort.begins_with
            && (integer
                || !matches!(
                    scalar,
                    Scalar::String | Scalar::Id | Scalar::Enum(_) | Scalar::DateTime(_)
                ))
        {
            out.error(
                begins_with.span(),
                format!(
                    "`begins_with` needs a text or enum facet, or a DateTime stored as text; `{}` is `{}`",
                    f.name,
                    self.type_text(&f.ty, f.nullable)
                ),
            );
            ok = false;
        }
        let [min, max, begins_with] = [&sort.min, &sort.max, &sort.begins_with].map(|a| {
            a.as_ref().map(|a| {
                let arg = argument(a.get_ref());
                arguments.add(&arg.name, a.span());
                arg
            })
        });
        ok.then(|| SortCondition {
            attribute: KeyAttr {
                name: template.attribute,
                ty: KeyType::S,
            },
            field,
            template: Some(template.template.clone()),
            fixed,
            required_fixed,
            min,
            max,
            begins_with,
        })
    }

    /// Why a range (`min`, `max`) on facet `f` of `template` would not select exactly the keys
    /// whose facet is in range, with a hint; `None` when it would. The keys' byte order is the
    /// range's order, so the facet's text must sort as its values (`plain` numbers do not; an
    /// escaped `\` or separator inside a value does not), and unless the facet ends the key,
    /// the character after it (`next`) must sort below every character its values may hold
    /// (`alphabet`, `None` for any): then `[start + min, start + max + the character after
    /// next]` holds exactly the keys in range. `text`: a String, ID or enum facet.
    fn range_problem(
        &self,
        template: &TemplateKey,
        f: &Field,
        plain: bool,
        text: bool,
        alphabet: Option<&str>,
        next: Option<char>,
    ) -> Option<(String, String)> {
        let t = &template.template;
        if plain {
            return Some((
                format!(
                    "`min` and `max` need a facet that sorts as its values: `{}` is written in \
                     key template `{t}` as plain decimal text, where 10 sorts before 9",
                    f.name
                ),
                format!(
                    "if the writer pads the numbers to a width, say so, such as `{{{}:08}}`",
                    f.name
                ),
            ));
        }
        if text {
            let escapes = |a: &str| a.chars().any(|c| c == '\\' || t.separators().contains(&c));
            if t.is_escaped() && alphabet.is_none_or(escapes) {
                return Some((
                    format!(
                        "`min` and `max` need keys that sort as the values: `{}` values may hold \
                         `\\` or a separator of key template `{t}`, which escaped keys write \
                         with a `\\` before it, out of the values' order",
                        f.name
                    ),
                    "keys other tools wrote are not escaped: say so with `escape_keys = false`; \
                     or give the facet an enum type whose values hold no separator"
                        .to_owned(),
                ));
            }
            let c = next?;
            return match alphabet {
                None => Some((
                    format!(
                        "`{}` is followed by `{c}` in key template `{t}`, and its values may hold \
                         characters that sort below or at `{c}` (a space, `!`, `{c}` itself), so \
                         a range could not be bounded exactly",
                        f.name
                    ),
                    "ranges on a String or ID facet work where it ends the key; or give it an \
                     enum type, or use `begins_with`"
                        .to_owned(),
                )),
                Some(a) => a.chars().filter(|&x| x <= c).min().map(|low| {
                    (
                        format!(
                            "`{}` is followed by `{c}` in key template `{t}`, and its values hold \
                             `{low}`, which does not sort above `{c}`, so a range could not be \
                             bounded exactly",
                            f.name
                        ),
                        "follow the facet with a character that sorts below its values, such as \
                         `#`"
                        .to_owned(),
                    )
                }),
            };
        }
        let Some(alphabet) = alphabet else {
            return Some((
                format!(
                    "`min` and `max` need a facet that sorts as its values: `{}` is `{}`",
                    f.name,
                    self.type_text(&f.ty, f.nullable)
                ),
                "ranges work on Int, BigInt, DateTime, String, ID and enum facets, and on ids \
                 that sort by time (`format = \"ulid\"` or `\"ksuid\"`)"
                    .to_owned(),
            ));
        };
        let lowest = alphabet.chars().min().unwrap_or('0');
        if let Some(c) = t.separator_among(alphabet) {
            return Some((
                format!(
                    "separator `{c}` of key template `{t}` appears in `{}` values, so the keys \
                     do not sort as the values",
                    f.name
                ),
                "separate facets with a character such as `#`".to_owned(),
            ));
        }
        let c = next?;
        (!t.bounds_after(&f.name, alphabet)).then(|| {
            (
                format!(
                    "`{c}` after facet `{}` in key template `{t}` does not sort at least two \
                     places below `{lowest}`, the lowest character `{}` values hold, so a range \
                     cannot be bounded exactly",
                    f.name, f.name
                ),
                "follow the facet with a character that sorts low, such as `#`".to_owned(),
            )
        })
    }

    pub(super) fn partition_argument(
        &self,
        owner: Owner<'_>,
        argument: &Spanned<String>,
        description: Option<String>,
        node: EntityId,
        attribute: &KeyAttr,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        if let Owner::Entity(..) = owner {
            out.error(
                argument.span(),
                "`argument` partitions are for root connections",
            )
            .hint("on an entity, take the partition from one of its fields: `field = \"...\"`");
            return None;
        }
        match self.field_on(node, attribute.name) {
            Ok(field) => Some(PartitionFrom::Argument {
                argument: Argument {
                    name: argument.get_ref().clone(),
                    description,
                },
                field,
            }),
            Err(true) => None,
            Err(false) => {
                let entity = &self.entities[node].entity.name;
                out.error(
                    argument.span(),
                    format!(
                        "entity `{entity}` has no field on partition key attribute `{}`, which \
                         would type argument `{}`",
                        attribute.name,
                        argument.get_ref()
                    ),
                )
                .hint(format!(
                    "add a field on `{}` to `[entities.{entity}.fields]`",
                    attribute.name
                ));
                None
            }
        }
    }

    pub(super) fn partition_field(
        &self,
        owner: Owner<'_>,
        field: &Spanned<String>,
        target: &Target<'_>,
        attribute: &KeyAttr,
        out: &mut Problems,
    ) -> Option<PartitionFrom> {
        let (parent, id) = self.parent_field(owner, field, out)?;
        let f = &self.entities[parent].entity.fields[id];
        let fits = matches!(f.ty, FieldType::Scalar(s) if s.key_type() == Some(attribute.ty));
        if !fits {
            out.error(
                field.span(),
                format!(
                    "field `{}` of type `{}` cannot hold partition key attribute `{}` of {}, of \
                     type {}",
                    f.name,
                    self.type_text(&f.ty, f.nullable),
                    attribute.name,
                    target.what(),
                    key_type_name(attribute.ty)
                ),
            )
            .hint(key_type_fits(attribute.ty));
            return None;
        }
        Some(PartitionFrom::Parent(id))
    }

    pub(super) fn sort_condition(
        &self,
        sort: &crate::model::file::SortFile,
        span: Range<usize>,
        node: EntityId,
        target: &Target<'_>,
        arguments: &mut ArgumentNames,
        out: &mut Problems,
    ) -> Option<Option<SortCondition>> {
        let Some(attribute) = target.key().get(1).copied() else {
            out.error(
                span,
                format!("{} has no sort key to give conditions on", target.what()),
            )
            .hint("remove `sort`, or read an index with a sort key");
            return None;
        };
        if let Some(fixed) = &sort.fixed {
            out.error(
                fixed.span(),
                format!(
                    "`fixed` fixes facets of a sort key template, and sort key attribute `{}` of \
                     {} has none here",
                    attribute.name,
                    target.what()
                ),
            )
            .hint("give the entity a template on the sort key, such as \"SEAT#{section}#{row}\"");
            return None;
        }
        let field = match self.field_on(node, attribute.name) {
            Ok(field) => field,
            Err(true) => return None,
            Err(false) => {
                let entity = &self.entities[node].entity.name;
                out.error(
                    span,
                    format!(
                        "entity `{entity}` has no field on sort key attribute `{}`",
                        attribute.name
                    ),
                )
                .hint("sort arguments take the type of the node entity's field on the sort key");
                return None;
            }
        };
        for a in [&sort.min, &sort.max, &sort.begins_with]
            .into_iter()
            .flatten()
        {
            refuse_optional(a, out);
        }
        let mut args = [&sort.min, &sort.max, &sort.begins_with].map(|a| {
            a.as_ref().map(|a| {
                let arg = argument(a.get_ref());
                arguments.add(&arg.name, a.span());
                arg
            })
        });
        if let Some(begins_with) = &sort.begins_with {
            let f = &self.entities[node].entity.fields[field];
            if !matches!(f.ty, FieldType::Scalar(s) if is_text(s)) {
                out.error(
                    begins_with.span(),
                    format!(
                        "`begins_with` needs a String or ID sort key field; `{}` is `{}`",
                        f.name,
                        self.type_text(&f.ty, f.nullable)
                    ),
                );
                return None;
            }
        }
        if args.iter().all(Option::is_none) {
            return Some(None);
        }
        let [min, max, begins_with] = std::mem::take(&mut args);
        Some(Some(SortCondition {
            attribute,
            field,
            template: None,
            fixed: Vec::new(),
            required_fixed: 0,
            min,
            max,
            begins_with,
        }))
    }
}
