//! Connections and lookups: what each reads (a Scan or a Query of a table or index), the
//! entities of its nodes, and its arguments.

use super::*;

/// Where a connection is declared.
#[derive(Clone, Copy)]
pub(super) enum Owner<'a> {
    /// A root field.
    Root,
    /// A field of this entity.
    Entity(EntityId, &'a str),
}

/// Arguments of one connection, for checking their names together.
#[derive(Default)]
pub(super) struct ArgumentNames(pub(super) Vec<(String, Range<usize>)>);

impl ArgumentNames {
    pub(super) fn add(&mut self, name: &str, span: Range<usize>) {
        self.0.push((name.to_owned(), span));
    }

    pub(super) fn check(&self, out: &mut Problems) {
        let mut names = Vec::new();
        for (name, span) in &self.0 {
            if !check_name(span.clone(), name, "argument", out) {
                continue;
            }
            if RESERVED_ARGUMENTS.contains(&name.as_str()) {
                out.error(
                    span.clone(),
                    format!("argument `{name}` is a pagination argument"),
                )
                .hint("every connection has `first`, `after`, `last`, `before` and `order`");
                continue;
            }
            if name == "resumeFrom" {
                out.error(
                    span.clone(),
                    "argument `resumeFrom` is how a connection's subscription resumes from a change's position",
                )
                .hint("name the argument otherwise");
                continue;
            }
            names.push((name.clone(), span.clone(), "argument"));
        }
        check_unique(&names, out);
    }
}

pub(super) fn argument(file: &ArgumentFile) -> Argument {
    match file {
        ArgumentFile::Name(name) => Argument {
            name: name.clone(),
            description: None,
        },
        ArgumentFile::Described {
            name, description, ..
        } => Argument {
            name: name.clone(),
            description: description.clone(),
        },
    }
}

/// Whether an argument is marked `optional = true`.
pub(super) fn is_optional(file: &ArgumentFile) -> bool {
    matches!(
        file,
        ArgumentFile::Described {
            optional: Some(true),
            ..
        }
    )
}

/// Reports `optional` on an argument other than a `fixed` one, which are optional anyway.
pub(super) fn refuse_optional(file: &Spanned<ArgumentFile>, out: &mut Problems) {
    if let ArgumentFile::Described {
        optional: Some(_),
        name,
        ..
    } = file.get_ref()
    {
        out.error(
            file.span(),
            format!("`optional` is for `fixed` arguments; `{name}` may always be left out"),
        )
        .hint("remove `optional`");
    }
}

/// What a connection reads: the key of the table or index, and the key of its items.
pub(super) struct Target<'a> {
    pub(super) table: &'a Table,
    pub(super) index: Option<(usize, &'a Index)>,
}

impl Target<'_> {
    pub(super) fn key(&self) -> &'static [KeyAttr] {
        self.index.map_or(self.table.key, |(_, i)| i.key)
    }

    pub(super) fn start_key(&self) -> &'static [KeyAttr] {
        self.index.map_or(self.table.key, |(_, i)| i.start_key)
    }

    pub(super) fn what(&self) -> String {
        match self.index {
            Some((_, index)) => format!("index `{}` of table `{}`", index.name, self.table.name),
            None => format!("table `{}`", self.table.name),
        }
    }
}

impl<'f> Ctx<'f, '_> {
    pub(super) fn entity_connections(
        &self,
        e: EntityId,
        out: &mut Problems,
    ) -> Vec<(&'f str, Option<Connection>)> {
        let draft = &self.entities[e];
        in_file_order(&draft.file.connections)
            .into_iter()
            .map(|(name, file)| {
                let owner = Owner::Entity(e, draft.name.get_ref());
                (
                    name.get_ref().as_str(),
                    self.connection(owner, name, file, out),
                )
            })
            .collect()
    }

    pub(super) fn root_connections(&self, file: &ModelFile, out: &mut Problems) -> Vec<Connection> {
        in_file_order(&file.connections)
            .into_iter()
            .filter_map(|(name, c)| self.connection(Owner::Root, name, c, out))
            .collect()
    }

    pub(super) fn lookups(&self, file: &ModelFile, out: &mut Problems) -> Vec<Lookup> {
        in_file_order(&file.lookups)
            .into_iter()
            .filter_map(|(name, lookup)| {
                let entity =
                    self.entity_named(lookup.entity.get_ref(), lookup.entity.span(), out)?;
                let index = match &lookup.index {
                    None => None,
                    Some(index) => Some(self.lookup_index(entity, index, out)?),
                };
                Some(Lookup {
                    name: name.get_ref().clone(),
                    description: lookup.description.clone(),
                    entity,
                    access: Access::default(),
                    index,
                })
            })
            .collect()
    }

    /// A lookup's index: one of the entity's table, whose every key attribute the entity builds
    /// from its fields (a template, or a field on it).
    pub(super) fn lookup_index(
        &self,
        entity: EntityId,
        index: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<LookupIndex> {
        let e = &self.entities[entity].entity;
        let table = &self.tables[self.entities[entity].table?].table;
        let Some(at) = table
            .indexes
            .iter()
            .position(|i| i.name == *index.get_ref())
        else {
            let names: Vec<&str> = table.indexes.iter().map(|i| i.name.as_str()).collect();
            out.error(
                index.span(),
                format!("table `{}` has no index `{}`", table.name, index.get_ref()),
            )
            .hint(suggest(index.get_ref(), &names, "indexes"));
            return None;
        };
        let mut arguments = Vec::new();
        for attr in table.indexes[at].key {
            let fields: Vec<FieldId> = match (e.template_on(attr.name), e.field_on(attr.name)) {
                (Some(template), _) => template.facets.clone(),
                (None, Some(field)) => vec![field],
                (None, None) => {
                    out.error(
                        index.span(),
                        format!(
                            "entity `{}` has no template or field for `{}`, a key of index `{}`, \
                             so its lookup cannot say which item to read",
                            e.name,
                            attr.name,
                            index.get_ref()
                        ),
                    )
                    .hint(format!(
                        "give `{}` a template in the entity's `keys`, or a field",
                        attr.name
                    ));
                    return None;
                }
            };
            for f in fields {
                if !arguments.contains(&f) {
                    arguments.push(f);
                }
            }
        }
        Some(LookupIndex {
            index: at,
            arguments,
        })
    }

    /// The place of `key` in a connection's table, or of the connection's name.
    pub(super) fn connection_span(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        key: &str,
    ) -> Range<usize> {
        let found = match owner {
            Owner::Root => self.key_span(&["connections", name.get_ref(), key]),
            Owner::Entity(_, entity) => {
                self.key_span(&["entities", entity, "connections", name.get_ref(), key])
            }
        };
        found.unwrap_or(name.span())
    }

    pub(super) fn connection(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<Connection> {
        let (node, collection) = self.connection_nodes(owner, name, file, out)?;
        let table_id = self.entities[node].table?;
        let info = &self.tables[table_id];
        if !info.sound {
            return None;
        }
        let index = match &file.index {
            None => None,
            Some(index) => Some(self.index_named(info, index, out)?),
        };
        let target = Target {
            table: &info.table,
            index,
        };
        let scan = file.scan.as_ref().is_some_and(|s| *s.get_ref());
        let mut arguments = ArgumentNames::default();
        let single = [node];
        let members = collection.as_ref().map_or(&single[..], |c| &c.members[..]);
        let read = if scan {
            self.scan_read(owner, name, file, out)
        } else {
            self.query_read(owner, name, file, members, &target, &mut arguments, out)
        };
        let tellable = match &collection {
            Some(_) => self.check_members(owner, name, file, members, &target, out),
            None => Some(()),
        };
        let filters = self.filters(file, node, &target, scan, &mut arguments, out);
        arguments.check(out);
        let order = self.order(owner, name, file, scan, out);
        let page_size = file
            .page_size
            .as_ref()
            .and_then(|p| page_size(p, name, out));
        if let (Some(p), Some((_, index))) = (&file.index, target.index) {
            self.check_projection(node, &target, index, p.span(), out);
        }
        let parent = match owner {
            Owner::Root => "Query",
            Owner::Entity(_, entity) => entity,
        };
        // Items carrying required values say the table holds others too (an ElectroDB table's
        // other entities and versions), whatever the model declares of it.
        let shared = self
            .entities
            .iter()
            .filter(|d| d.table == Some(table_id))
            .count()
            > 1
            || members.iter().any(|&m| {
                self.entities[m]
                    .entity
                    .required_values(target.table)
                    .next()
                    .is_some()
            });
        let total_count = match &file.total_count {
            Some(flag) if *flag.get_ref() && shared => {
                out.error(
                    flag.span(),
                    format!(
                        "`{parent}.{}` cannot offer `totalCount`: table `{}` holds other items \
                         than its nodes, told apart by reading them, which DynamoDB's \
                         `Select: COUNT` cannot do, so a count would include them",
                        name.get_ref(),
                        info.table.name
                    ),
                )
                .hint("leave `total_count` out here; count a connection of a table that holds one entity");
                false
            }
            Some(flag) => *flag.get_ref(),
            None => false,
        };
        let (type_filters, type_filters_expected) = match (&collection, tellable) {
            (_, None) => return None,
            (Some(_), _) => (Vec::new(), false),
            (None, _) => self.type_filters(node, &target, scan),
        };
        Some(Connection {
            name: name.get_ref().clone(),
            label: super::leak_str(&format!("{parent}.{}", name.get_ref())),
            description: file.description.clone(),
            entity: node,
            index: target.index.map(|(i, _)| i),
            read: read?,
            filters: filters?,
            order: order?,
            page_size: match (&file.page_size, page_size) {
                (Some(_), None) => return None,
                (_, sizes) => sizes,
            },
            start_key: target.start_key(),
            type_filters,
            type_filters_expected,
            shared,
            collection,
            access: Access::default(),
            subscription: self.subscription(file, &info.table, out),
            total_count,
        })
    }

    /// A connection's subscription: its table must have a stream of old and new images.
    fn subscription(
        &self,
        file: &ConnectionFile,
        table: &Table,
        out: &mut Problems,
    ) -> Option<Argument> {
        let declared = file.subscription.as_ref()?;
        let subscription = argument(declared.get_ref());
        let table_name = &table.name;
        match table.stream {
            Some(StreamView::NewAndOldImages) => return Some(subscription),
            Some(view) => out
                .error(
                    declared.span(),
                    format!(
                        "subscription `{}` needs table `{table_name}`'s stream to hold old and new images; it holds {}",
                        subscription.name,
                        view.name()
                    ),
                )
                .hint(format!(
                    "write `stream = \"NEW_AND_OLD_IMAGES\"` in `[tables.{table_name}]` and change the table's stream to match: \
                     with `NEW_IMAGE` a removal or a move out of the connection cannot be told, with `OLD_IMAGE` \
                     no new item, and `KEYS_ONLY` would need a read per change"
                )),
            None => out
                .error(
                    declared.span(),
                    format!(
                        "subscription `{}` reads table `{table_name}`'s stream, and the table declares none",
                        subscription.name
                    ),
                )
                .hint(format!(
                    "add `stream = \"NEW_AND_OLD_IMAGES\"` to `[tables.{table_name}]`, and enable that stream on the table"
                )),
        };
        None
    }

    /// The node entity of a connection, or the members of an item collection (the first then
    /// standing as the node entity).
    pub(super) fn connection_nodes(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<(EntityId, Option<Collection>)> {
        match (&file.entity, &file.members, &file.union) {
            (Some(entity), None, None) => Some((
                self.entity_named(entity.get_ref(), entity.span(), out)?,
                None,
            )),
            (None, Some(members), Some(union)) => {
                let mut ids = Vec::new();
                for member in members.get_ref() {
                    let id = self.entity_named(member.get_ref(), member.span(), out)?;
                    if ids.contains(&id) {
                        out.error(
                            member.span(),
                            format!("`{}` is listed twice in `members`", member.get_ref()),
                        );
                        return None;
                    }
                    ids.push(id);
                }
                let Some(&first) = ids.first() else {
                    out.error(
                        members.span(),
                        "an item collection needs at least one member",
                    );
                    return None;
                };
                let table = self.entities[first].table?;
                for (&id, member) in ids.iter().zip(members.get_ref()).skip(1) {
                    if self.entities[id].table? != table {
                        out.error(
                            member.span(),
                            format!(
                                "member `{}` is stored in table `{}`, not in `{}` like `{}`",
                                member.get_ref(),
                                self.tables[self.entities[id].table?].table.name,
                                self.tables[table].table.name,
                                self.entities[first].entity.name
                            ),
                        )
                        .hint("an item collection reads one partition of one table");
                        return None;
                    }
                }
                Some((
                    first,
                    Some(Collection {
                        union: union.get_ref().clone(),
                        members: ids,
                    }),
                ))
            }
            (Some(entity), Some(_), _) => {
                out.error(
                    entity.span(),
                    "a connection has an `entity`, or `members` and a `union`, not both",
                );
                None
            }
            (None, Some(members), None) => {
                out.error(
                    members.span(),
                    "an item collection needs a `union`: the name of its nodes' type",
                )
                .hint("add for example `union = \"CustomerActivity\"`");
                None
            }
            (_, None, Some(union)) => {
                out.error(
                    union.span(),
                    "`union` names the type of an item collection's `members`",
                )
                .hint("list the collection's entities in `members`, or remove `union`");
                None
            }
            (None, None, None) => {
                out.error(
                    self.connection_span(owner, name, "entity").start..name.span().end,
                    format!("connection `{}` has no `entity`", name.get_ref()),
                )
                .hint("name the nodes' entity with `entity = \"...\"`, or list an item collection's `members`");
                None
            }
        }
    }

    /// Two members of a collection that write the sort key of `target` differently (another
    /// template, or facets or a field of another type), if any: a sort condition on the
    /// collection is one condition on that key, so it must mean the same for every member.
    fn sort_keys_differ(
        &self,
        members: &[EntityId],
        target: &Target<'_>,
    ) -> Option<(EntityId, EntityId)> {
        // (A key without a sort attribute is reported by the sort condition itself.)
        let attribute = target.key().get(1)?.name;
        let shape = |m: EntityId| {
            let entity = &self.entities[m].entity;
            match entity.template_on(attribute) {
                Some(t) => Some((
                    Some(&t.template),
                    t.facets
                        .iter()
                        .map(|&f| &entity.fields[f].ty)
                        .collect::<Vec<_>>(),
                )),
                None => entity
                    .field_on(attribute)
                    .map(|f| (None, vec![&entity.fields[f].ty])),
            }
        };
        let (&first, rest) = members.split_first()?;
        let expected = shape(first);
        rest.iter()
            .find(|&&m| shape(m) != expected)
            .map(|&m| (first, m))
    }

    /// An item collection reads every item of its partition: its members must each have the
    /// partition key (with the same template), and be told apart.
    pub(super) fn check_members(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        members: &[EntityId],
        target: &Target<'_>,
        out: &mut Problems,
    ) -> Option<()> {
        let span = self.connection_span(owner, name, "members");
        let mut ok = true;
        if let Some((key, _)) = file.filters.iter().next() {
            out.error(
                key.span(),
                "an item collection has no filters: its members have different fields",
            );
            ok = false;
        }
        if file.sort.is_some()
            && let Some((a, b)) = self.sort_keys_differ(members, target)
        {
            let attribute = target.key().get(1).map_or("", |k| k.name);
            out.error(
                self.connection_span(owner, name, "sort"),
                format!(
                    "an item collection takes sort conditions only when its members write the \
                     sort key alike: `{}` and `{}` write `{attribute}` differently",
                    self.entities[a].entity.name, self.entities[b].entity.name
                ),
            )
            .hint(
                "give every member the same template (or a field of the same type) on the sort \
                 key, or remove `sort`",
            );
            ok = false;
        }
        let table = target.table;
        for (i, &a) in members.iter().enumerate() {
            let ea = &self.entities[a].entity;
            for &b in &members[i + 1..] {
                let eb = &self.entities[b].entity;
                if table.type_attribute.is_none() && self.overlap(a, b, target.key()) {
                    out.error(
                        span.clone(),
                        format!(
                            "members `{}` and `{}` cannot be told apart in {}: their keys start alike",
                            ea.name,
                            eb.name,
                            target.what()
                        ),
                    )
                    .hint(format!(
                        "give their sort keys templates with distinct literal starts, or add a \
                         `type_attribute` to table `{}`",
                        table.name
                    ));
                    ok = false;
                }
            }
        }
        ok.then_some(())
    }

    /// The literal start of entity `e`'s key attribute `attribute`: its template's text before
    /// the first facet, `""` for a field (any value), `None` when the entity has neither.
    pub(super) fn key_start(&self, e: EntityId, attribute: &str) -> Option<&str> {
        let entity = &self.entities[e].entity;
        match entity.template_on(attribute) {
            Some(t) => Some(t.template.literal_prefix()),
            None if self.entities[e]
                .file
                .keys
                .keys()
                .any(|k| k.get_ref() == attribute) =>
            {
                None
            }
            None => entity.field_on(attribute).map(|_| ""),
        }
    }

    /// Whether items of `a` and `b` could share a key of `key` (a table's or an index's key),
    /// so that a read of one could take the other's items for its own. For each key attribute
    /// both build from a template, whether some key reads under both templates, with what each
    /// facet's type lets it hold (literal text before, between or after facets tells kinds
    /// apart: `u#{userId}#follower` and `u#{userId}#following`; a date-time's text never starts
    /// `Join:`); otherwise whether their literal starts are alike (a plain key field's value may
    /// be anything). Reads of a table several entities share test each item's keys against its
    /// entity's templates, so items of another kind that a Query or Scan meets are skipped.
    pub(super) fn overlap(&self, a: EntityId, b: EntityId, key: &[KeyAttr]) -> bool {
        let alike = |x: &str, y: &str| x.starts_with(y) || y.starts_with(x);
        let (ea, eb) = (&self.entities[a].entity, &self.entities[b].entity);
        key.iter().all(|attr| {
            if let (Some(ta), Some(tb)) = (ea.template_on(attr.name), eb.template_on(attr.name)) {
                return ta.template.may_share_a_key_holding(
                    &tb.template,
                    |facet| facet_text(&self.enums, ea, facet),
                    |facet| facet_text(&self.enums, eb, facet),
                );
            }
            match (self.key_start(a, attr.name), self.key_start(b, attr.name)) {
                (Some(x), Some(y)) => alike(x, y),
                _ => false,
            }
        })
    }

    /// The tests DynamoDB applies to tell `node`'s items from others on a connection of that
    /// entity alone, and whether every item the key condition selects is expected to pass them.
    /// They select its items where key conditions cannot: in a Scan of a table that holds
    /// other items (other entities of the model, or, where items carry required values,
    /// anyone's: ElectroDB's other versions), or a Query whose partition other entities share
    /// with the same sort-key prefix (only possible with a type attribute, which then tells
    /// them apart). The entity's whole rule goes in: every required value (the type attribute,
    /// the constants), and in a Scan of a table without a type attribute the literal starts of
    /// its keys. Elsewhere, a Query whose key condition already selects the entity's keys, the
    /// required values alone go in, expected to pass: DynamoDB tests them rather than
    /// dynarelay, so their attributes are not read back.
    pub(super) fn type_filters(
        &self,
        node: EntityId,
        target: &Target<'_>,
        scan: bool,
    ) -> (Vec<(&'static str, TypeTest)>, bool) {
        let table = self.entities[node].table;
        let others: Vec<EntityId> = (0..self.entities.len())
            .filter(|&e| e != node && self.entities[e].table == table)
            .collect();
        let entity = &self.entities[node].entity;
        let mut rule: Vec<(&'static str, TypeTest)> = entity
            .required_values(target.table)
            .map(|(attribute, value)| (leak_str(attribute), TypeTest::Equals(value.to_owned())))
            .collect();
        if others.is_empty() && rule.is_empty() {
            return (Vec::new(), false);
        }
        if target.table.type_attribute.is_some() && entity.type_value.is_some() {
            let select = scan || others.iter().any(|&o| self.overlap(node, o, target.key()));
            return (rule, !select);
        }
        if !scan {
            return (rule, true);
        }
        rule.extend(target.key().iter().filter_map(|attr| {
            let start = entity.template_on(attr.name)?.template.literal_prefix();
            (!start.is_empty()).then(|| (attr.name, TypeTest::BeginsWith(start.to_owned())))
        }));
        (rule, false)
    }

    pub(super) fn index_named<'t>(
        &self,
        info: &'t TableInfo,
        name: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<(usize, &'t Index)> {
        let found = info
            .table
            .indexes
            .iter()
            .enumerate()
            .find(|(_, i)| &i.name == name.get_ref());
        if found.is_none() && !info.broken_indexes.contains(name.get_ref()) {
            let indexes: Vec<&str> = info.table.indexes.iter().map(|i| i.name.as_str()).collect();
            out.error(
                name.span(),
                format!(
                    "table `{}` has no index `{}`",
                    info.table.name,
                    name.get_ref()
                ),
            )
            .hint(suggest(name.get_ref(), &indexes, "indexes of the table"));
        }
        found
    }

    pub(super) fn scan_read(
        &self,
        owner: Owner<'_>,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Option<Read> {
        let mut ok = true;
        if file.partition.is_some() {
            out.error(
                self.connection_span(owner, name, "partition"),
                "a connection scans (`scan = true`) or reads one `partition`, not both",
            );
            ok = false;
        }
        if file.sort.is_some() {
            out.error(
                self.connection_span(owner, name, "sort"),
                "a Scan has no sort-key conditions",
            )
            .hint("`sort` needs a Query on one partition: give a `partition` instead of `scan`");
            ok = false;
        }
        ok.then_some(Read::Scan)
    }
}

/// What facet `facet` of `entity`'s key templates can hold: what its field's type lets a key
/// write (see `Model::facet_fits`, which reads apply): a number's digits, a time's text, an
/// enum's values' characters.
fn facet_text(enums: &[EnumType], entity: &Entity, facet: &str) -> FacetText {
    let Some(field) = entity.fields.iter().find(|f| f.name == facet) else {
        return FacetText::Any;
    };
    match field.ty {
        FieldType::Scalar(Scalar::Int | Scalar::BigInt) => FacetText::NUMBER,
        FieldType::Scalar(Scalar::DateTime(format)) if format.is_number() => FacetText::NUMBER,
        FieldType::Scalar(Scalar::DateTime(_)) => FacetText::TIME,
        FieldType::Scalar(Scalar::Enum(e)) => enums.get(e).map_or(FacetText::Any, |e| {
            FacetText::of_values(e.values.iter().map(|(v, _)| v.as_str()))
        }),
        _ => FacetText::Any,
    }
}
