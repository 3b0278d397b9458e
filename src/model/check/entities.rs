//! Entities: their table, key fields, key templates, type attribute, version field and id tag,
//! and the rules between entities that share a table.

use super::*;

impl<'f> Ctx<'f, '_> {
    pub(super) fn entity(
        &self,
        name: &'f Spanned<String>,
        file: &'f EntityFile,
        out: &mut Problems,
    ) -> EntityDraft<'f> {
        let table = self.table_named(&file.table, out);
        let mut draft = EntityDraft {
            name,
            file,
            table,
            entity: Entity {
                name: name.get_ref().clone(),
                description: file.description.clone(),
                table: table.unwrap_or(0),
                id_tag: String::new(),
                fields: Vec::new(),
                key_fields: Vec::new(),
                relations: Vec::new(),
                references: Vec::new(),
                connections: Vec::new(),
                mutations: Mutations::default(),
                version_field: None,
                templates: Vec::new(),
                type_value: None,
                constants: Vec::new(),
                read: Access::default(),
            },
            field_spans: Vec::new(),
            broken: HashSet::new(),
            broken_attributes: HashSet::new(),
        };
        for (field_name, field) in in_file_order(&file.fields) {
            let attribute = field.attribute.as_ref().unwrap_or(field_name).get_ref();
            match self.field(field_name, field, out) {
                Some(checked) => {
                    draft.entity.fields.push(checked);
                    draft.field_spans.push((field_name.span(), field.ty.span()));
                }
                None => {
                    draft.broken.insert(field_name.get_ref().clone());
                    draft.broken_attributes.insert(attribute.clone());
                }
            }
        }
        check_member_names(name.get_ref(), file, out);
        check_shared_attributes(file, out);
        if let Some(t) = table
            && self.tables[t].sound
        {
            draft.entity.templates = self.templates(&draft, out);
            draft.entity.key_fields = self.key_fields(&draft, out);
            self.index_key_fields(&draft, out);
            draft.entity.type_value = self.type_value(&draft, out);
            draft.entity.constants = self.constants(&draft, out);
        }
        draft.entity.version_field = self.version_field(&draft, out);
        draft.entity.id_tag = check_id_tag(name, file, out);
        draft
    }

    pub(super) fn table_named(
        &self,
        name: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<TableId> {
        let found = self.table_ids.get(name.get_ref().as_str()).copied();
        if found.is_none() {
            let tables: Vec<&str> = self.table_ids.keys().copied().collect();
            out.error(name.span(), format!("unknown table `{}`", name.get_ref()))
                .hint(suggest(name.get_ref(), &tables, "tables declared"));
        }
        found
    }

    pub(super) fn entity_named(
        &self,
        name: &str,
        span: Range<usize>,
        out: &mut Problems,
    ) -> Option<EntityId> {
        let found = self.entity_ids.get(name).copied();
        if found.is_none() {
            let entities: Vec<&str> = self.entity_ids.keys().copied().collect();
            out.error(span, format!("unknown entity `{name}`"))
                .hint(suggest(name, &entities, "entities declared"));
        }
        found
    }

    /// The field of entity `e` named `name`; reported unless it is missing because of a problem
    /// already reported.
    pub(super) fn field_named(
        &self,
        e: EntityId,
        name: &Spanned<String>,
        out: &mut Problems,
    ) -> Option<FieldId> {
        let draft = &self.entities[e];
        let found = draft
            .entity
            .fields
            .iter()
            .position(|f| &f.name == name.get_ref());
        if found.is_none() && !draft.broken.contains(name.get_ref()) {
            let fields: Vec<&str> = draft
                .entity
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            out.error(
                name.span(),
                format!(
                    "entity `{}` has no field `{}`",
                    draft.entity.name,
                    name.get_ref()
                ),
            )
            .hint(suggest(name.get_ref(), &fields, "fields of the entity"));
        }
        found
    }

    /// Whether entity `e` has a field on `attribute`, or had one that could not be built.
    pub(super) fn field_on(&self, e: EntityId, attribute: &str) -> Result<FieldId, bool> {
        let draft = &self.entities[e];
        draft
            .entity
            .field_on(attribute)
            .ok_or_else(|| draft.broken_attributes.contains(attribute))
    }

    pub(super) fn type_text(&self, ty: &FieldType, nullable: bool) -> String {
        let bang = if nullable { "" } else { "!" };
        match ty {
            FieldType::Scalar(s) => format!("{}{bang}", self.scalar_name(*s)),
            FieldType::List {
                item,
                item_nullable,
                ..
            } => {
                let item_bang = if *item_nullable { "" } else { "!" };
                format!("[{}{item_bang}]{bang}", self.scalar_name(*item))
            }
        }
    }

    pub(super) fn scalar_name(&self, s: Scalar) -> &str {
        match s {
            Scalar::String => "String",
            Scalar::Id => "ID",
            Scalar::Int => "Int",
            Scalar::BigInt => "BigInt",
            Scalar::Float => "Float",
            Scalar::Decimal => "Decimal",
            Scalar::Boolean => "Boolean",
            Scalar::DateTime(_) => "DateTime",
            Scalar::Bytes => "Bytes",
            Scalar::Json => "JSON",
            Scalar::Enum(i) => self.enums.get(i).map_or("enum", |e| e.name.as_str()),
        }
    }

    /// Checks that field `field` of entity `e` can hold key attribute `attr`; `key` says whether
    /// it must be non-null (a table key) or may be absent (an index key).
    pub(super) fn check_key_field(
        &self,
        draft: &EntityDraft<'_>,
        field: FieldId,
        attr: &KeyAttr,
        table_key: bool,
        out: &mut Problems,
    ) -> bool {
        let f = &draft.entity.fields[field];
        let span = draft.field_spans[field].1.clone();
        let ty = self.type_text(&f.ty, f.nullable);
        let fits = match f.ty {
            FieldType::Scalar(s) => s.key_type() == Some(attr.ty),
            FieldType::List { .. } => false,
        };
        if !fits {
            out.error(
                span,
                format!(
                    "field `{}` of type `{ty}` cannot hold key attribute `{}`, of type {}",
                    f.name,
                    attr.name,
                    key_type_name(attr.ty)
                ),
            )
            .hint(key_type_fits(attr.ty));
            return false;
        }
        if table_key && f.nullable {
            out.error(
                span,
                format!("key field `{}` is nullable: write `{ty}!`", f.name),
            )
            .hint("every item has its key attributes, so their fields are non-null");
            return false;
        }
        true
    }

    pub(super) fn key_fields(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Vec<FieldId> {
        let Some(t) = draft.table else {
            return Vec::new();
        };
        let table = &self.tables[t].table;
        let mut key_fields = Vec::new();
        for attr in table.key {
            if let Some(template) = draft.entity.template_on(attr.name) {
                for &facet in &template.facets {
                    if !key_fields.contains(&facet) {
                        key_fields.push(facet);
                    }
                }
                continue;
            }
            if draft.file.keys.keys().any(|k| k.get_ref() == attr.name) {
                // Its template has a problem, already reported.
                continue;
            }
            match draft.entity.field_on(attr.name) {
                Some(field) => {
                    self.check_key_field(draft, field, attr, true, out);
                    key_fields.push(field);
                }
                None if draft.broken_attributes.contains(attr.name) => {}
                None => {
                    let example = match attr.ty {
                        KeyType::S => "String!",
                        KeyType::N => "Int!",
                        KeyType::B => "Bytes!",
                    };
                    out.error(
                        draft.name.span(),
                        format!(
                            "entity `{}` has no field on key attribute `{}` of table `{}`",
                            draft.entity.name, attr.name, table.name
                        ),
                    )
                    .hint(format!(
                        "add a field such as `{} = {{ type = \"{example}\" }}` to \
                         `[entities.{}.fields]`",
                        attr.name, draft.entity.name
                    ));
                }
            }
        }
        key_fields
    }

    /// Fields on index key attributes must be able to hold them.
    pub(super) fn index_key_fields(&self, draft: &EntityDraft<'_>, out: &mut Problems) {
        let Some(t) = draft.table else {
            return;
        };
        let table = &self.tables[t].table;
        for attr in table.attributes.iter().skip(table.key.len()) {
            if draft.entity.template_on(attr.name).is_some() {
                continue;
            }
            if let Some(field) = draft.entity.field_on(attr.name) {
                self.check_key_field(draft, field, attr, false, out);
            }
        }
    }

    /// The entity's key templates (`keys = { ... }`), the table's keys first.
    pub(super) fn templates(
        &self,
        draft: &EntityDraft<'_>,
        out: &mut Problems,
    ) -> Vec<TemplateKey> {
        let Some(t) = draft.table else {
            return Vec::new();
        };
        let table = &self.tables[t].table;
        let entity = &draft.entity.name;
        let mut templates = Vec::new();
        for (attr, text) in in_file_order(&draft.file.keys) {
            let Some(key_attr) = table.attributes.iter().find(|a| a.name == attr.get_ref()) else {
                let names: Vec<&str> = table.attributes.iter().map(|a| a.name).collect();
                out.error(
                    attr.span(),
                    format!(
                        "`{}` is no key attribute of table `{}` or of its indexes",
                        attr.get_ref(),
                        table.name
                    ),
                )
                .hint(suggest(attr.get_ref(), &names, "key attributes"));
                continue;
            };
            if key_attr.ty != KeyType::S {
                out.error(
                    text.span(),
                    format!(
                        "key attribute `{}` has type {}, but a template writes a string",
                        key_attr.name,
                        key_type_name(key_attr.ty)
                    ),
                )
                .hint("declare the attribute as \"S\", or give it a field instead of a template");
                continue;
            }
            if let Some(field) = draft.entity.field_on(key_attr.name) {
                out.error(
                    draft.field_spans[field].0.clone(),
                    format!(
                        "field `{}` reads attribute `{}`, which `keys` builds from a template",
                        draft.entity.fields[field].name, key_attr.name
                    ),
                )
                .also(text.span(), "the template")
                .hint("the template's facets are the fields: remove this field, or the template");
                continue;
            }
            let escaped = draft.file.escape_keys.as_ref().is_none_or(|e| *e.get_ref());
            let parsed = if escaped {
                KeyTemplate::parse(text.get_ref())
            } else {
                KeyTemplate::parse_unescaped(text.get_ref())
            };
            let case = match draft.file.key_case.as_ref().map(|c| *c.get_ref()) {
                None | Some(KeyCaseFile::AsStored) => KeyCase::AsStored,
                Some(KeyCaseFile::Lower) => KeyCase::Lower,
                Some(KeyCaseFile::Upper) => KeyCase::Upper,
            };
            let template = match parsed {
                Ok(template) => template.with_case(case),
                Err(err) => {
                    // The span of the string's value starts at its opening quote.
                    let span = text.span();
                    let span = match err.at() {
                        Some(at) if span.len() > at + 1 => span.start + 1 + at..span.start + 2 + at,
                        _ => span,
                    };
                    out.error(
                        span,
                        format!("key template `{}`: {err}", text.get_ref()),
                    )
                    .hint("a template is literal text and `{facet}`s, such as \"ORDER#{placedAt}#{orderId}\"");
                    continue;
                }
            };
            let mut facets = Vec::new();
            let mut ok = true;
            for facet in template.facets() {
                let found = draft.entity.fields.iter().position(|f| f.name == facet);
                let Some(field) = found else {
                    ok = false;
                    if !draft.broken.contains(facet) {
                        let names: Vec<&str> = draft
                            .entity
                            .fields
                            .iter()
                            .map(|f| f.name.as_str())
                            .collect();
                        out.error(
                            text.span(),
                            format!(
                                "facet `{facet}` of key template `{}` is no field of entity `{entity}`",
                                text.get_ref()
                            ),
                        )
                        .hint(suggest(facet, &names, "fields of the entity"));
                    }
                    continue;
                };
                let f = &draft.entity.fields[field];
                let facet_type = matches!(
                    f.ty,
                    FieldType::Scalar(
                        Scalar::String
                            | Scalar::Id
                            | Scalar::Enum(_)
                            | Scalar::Int
                            | Scalar::BigInt
                            | Scalar::DateTime(_)
                    )
                );
                let primary = table.key.iter().any(|a| a.name == key_attr.name);
                // A nullable facet makes a sparse index: an item without the value has no such
                // key and is not in the index. The table's keys are never sparse.
                if !facet_type || (f.nullable && primary) {
                    ok = false;
                    out.error(
                        draft.field_spans[field].1.clone(),
                        format!(
                            "field `{}` of type `{}` cannot be a facet of key `{}`",
                            f.name,
                            self.type_text(&f.ty, f.nullable),
                            key_attr.name
                        ),
                    )
                    .also(text.span(), "the template")
                    .hint(
                        "facets are String, ID, enum, Int, BigInt or DateTime, non-null in the \
                         table's keys (nullable only in an index's, which items without the value \
                         are then not in)",
                    );
                    continue;
                }
                if let Some(width) = template.pad(facet) {
                    let integer = match f.ty {
                        FieldType::Scalar(Scalar::Int | Scalar::BigInt) => true,
                        FieldType::Scalar(Scalar::DateTime(format)) => format.is_number(),
                        _ => false,
                    };
                    if !integer {
                        ok = false;
                        out.error(
                            text.span(),
                            format!(
                                "facet `{facet}` of key template `{}` is padded to {width} digits, \
                                 but `{facet}` is `{}`, not an integer or a time stored as one",
                                text.get_ref(),
                                self.type_text(&f.ty, f.nullable)
                            ),
                        )
                        .hint("pad only Int, BigInt and epoch-stored DateTime facets");
                        continue;
                    }
                }
                facets.push(field);
            }
            if ok {
                templates.push(TemplateKey {
                    attribute: key_attr.name,
                    template,
                    facets,
                    primary: table.key.iter().any(|a| a.name == key_attr.name),
                });
            }
        }
        templates.sort_by_key(|t| !t.primary);
        templates
    }

    /// The entity's value of its table's type attribute.
    pub(super) fn type_value(&self, draft: &EntityDraft<'_>, out: &mut Problems) -> Option<String> {
        let table = &self.tables[draft.table?].table;
        match (&table.type_attribute, &draft.file.type_value) {
            (Some(_), None) => Some(draft.entity.name.clone()),
            (Some(_), Some(value)) if value.get_ref().is_empty() => {
                out.error(value.span(), "a type value cannot be empty");
                None
            }
            (Some(_), Some(value)) => Some(value.get_ref().clone()),
            (None, Some(value)) => {
                out.error(
                    value.span(),
                    format!(
                        "table `{}` has no `type_attribute` to hold `type_value`",
                        table.name
                    ),
                )
                .hint(format!(
                    "add `type_attribute = \"_type\"` (or another name) to `[tables.{}]`",
                    table.name
                ));
                None
            }
            (None, None) => None,
        }
    }

    /// The entity's constant attributes: none of them a key attribute, a field's attribute or
    /// the type attribute, which are written otherwise.
    pub(super) fn constants(
        &self,
        draft: &EntityDraft<'_>,
        out: &mut Problems,
    ) -> Vec<(String, String)> {
        let Some(t) = draft.table else {
            return Vec::new();
        };
        let table = &self.tables[t].table;
        let mut constants = Vec::new();
        for (name, value) in &draft.file.constants {
            let taken = if table.attributes.iter().any(|a| a.name == name.get_ref()) {
                Some("a key attribute of the table or an index")
            } else if table.type_attribute.as_deref() == Some(name.get_ref().as_str()) {
                Some("the table's type attribute")
            } else if draft.entity.field_on(name.get_ref()).is_some() {
                Some("a field's attribute")
            } else {
                None
            };
            if let Some(what) = taken {
                out.error(
                    name.span(),
                    format!("constant `{}` is {what}, which is written otherwise", name.get_ref()),
                )
                .hint("constants are for other attributes the table's owner expects, such as `__edb_v__`");
                continue;
            }
            constants.push((name.get_ref().clone(), value.get_ref().clone()));
        }
        constants
    }

    pub(super) fn version_field(
        &self,
        draft: &EntityDraft<'_>,
        out: &mut Problems,
    ) -> Option<FieldId> {
        let name = draft.file.version_field.as_ref()?;
        let fields = &draft.entity.fields;
        let Some(id) = fields.iter().position(|f| &f.name == name.get_ref()) else {
            if !draft.broken.contains(name.get_ref()) {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                out.error(
                    name.span(),
                    format!(
                        "entity `{}` has no field `{}`",
                        draft.entity.name,
                        name.get_ref()
                    ),
                )
                .hint(suggest(name.get_ref(), &names, "fields of the entity"));
            }
            return None;
        };
        let field = &fields[id];
        let ok =
            matches!(field.ty, FieldType::Scalar(Scalar::Int | Scalar::BigInt)) && !field.nullable;
        if !ok {
            out.error(
                name.span(),
                format!(
                    "version field `{}` has type `{}`, not `Int!` or `BigInt!`",
                    field.name,
                    self.type_text(&field.ty, field.nullable)
                ),
            );
            return None;
        }
        if draft.entity.key_fields.contains(&id) {
            out.error(
                name.span(),
                format!("version field `{}` is a key field", field.name),
            )
            .hint("a version changes on every update, and a key never does");
            return None;
        }
        Some(id)
    }

    /// The entities of a table without a type attribute must be told apart by their keys, in
    /// the table and in each index: for every two of them, some key attribute's templates must
    /// start with literal texts neither of which begins the other, or a page of one would read
    /// the other's items. Escaped or not: a key of a template starts with its literal text, so
    /// a key cannot read back under two templates whose starts differ so (see
    /// [`crate::model::Entity::matches`], the rule every read applies), even when nobody escaped
    /// the separators inside its values, as hand-rolled code and *The DynamoDB Book* write keys.
    /// The entities of a table with a type attribute must be told apart by their required
    /// values instead: a type value of its own, or a constant both have with different values.
    pub(super) fn check_shared_tables(&self, out: &mut Problems) {
        for (t, info) in self.tables.iter().enumerate() {
            let ids: Vec<EntityId> = (0..self.entities.len())
                .filter(|&e| self.entities[e].table == Some(t))
                .collect();
            if ids.len() < 2 || !info.sound {
                continue;
            }
            if info.table.type_attribute.is_some() {
                for (i, &a) in ids.iter().enumerate() {
                    for &b in &ids[i + 1..] {
                        let (da, db) = (&self.entities[a], &self.entities[b]);
                        // Two rules tell items apart when some attribute both require holds
                        // different values: the type value, or a constant (ElectroDB's
                        // `__edb_v__` for two versions of one entity).
                        let apart = da.entity.required_values(&info.table).any(|(name, value)| {
                            db.entity
                                .required_values(&info.table)
                                .any(|(other, v)| other == name && v != value)
                        });
                        if da.entity.type_value.is_some() && !apart {
                            let span = |d: &EntityDraft<'_>| {
                                d.file
                                    .type_value
                                    .as_ref()
                                    .map_or(d.name.span(), Spanned::span)
                            };
                            out.error(
                                span(db),
                                format!(
                                    "entities `{}` and `{}` have the same type value `{}`",
                                    da.entity.name,
                                    db.entity.name,
                                    db.entity.type_value.as_deref().unwrap_or_default()
                                ),
                            )
                            .also(span(da), format!("`{}`'s type value", da.entity.name))
                            .hint(
                                "the type attribute tells the entities of a table apart: give each \
                                 its own value, or a constant of its own with another value (such \
                                 as ElectroDB's `__edb_v__`)",
                            );
                        }
                    }
                }
                continue;
            }
            let mut spaces: Vec<(&[KeyAttr], String)> =
                vec![(info.table.key, format!("table `{}`", info.table.name))];
            for index in &info.table.indexes {
                spaces.push((index.key, format!("index `{}`", index.name)));
            }
            for (i, &a) in ids.iter().enumerate() {
                for &b in &ids[i + 1..] {
                    let Some((key, what)) = spaces.iter().find(|(key, _)| self.overlap(a, b, key))
                    else {
                        continue;
                    };
                    self.report_overlap(a, b, key, what, out);
                }
            }
        }
    }

    pub(super) fn report_overlap(
        &self,
        a: EntityId,
        b: EntityId,
        key: &[KeyAttr],
        what: &str,
        out: &mut Problems,
    ) {
        let (da, db) = (&self.entities[a], &self.entities[b]);
        let (na, nb) = (&da.entity.name, &db.entity.name);
        let span_of = |d: &EntityDraft<'_>| {
            key.iter()
                .rev()
                .find_map(|attr| {
                    self.value_span(&["entities", d.name.get_ref(), "keys", attr.name])
                })
                .unwrap_or(d.name.span())
        };
        let table = self.tables[da.table.unwrap_or(0)].table.name.as_str();
        let hint = format!(
            "give one of them key templates with a distinct literal start, or add \
             `type_attribute = \"_type\"` to `[tables.{table}]`"
        );
        let templates = |d: &EntityDraft<'_>| {
            key.iter()
                .filter_map(|attr| d.entity.template_on(attr.name))
                .map(|t| format!("`{}`", t.template))
                .collect::<Vec<_>>()
        };
        let (ta, tb) = (templates(da), templates(db));
        if ta.len() < key.len() && tb.len() < key.len() {
            out.error(
                span_of(db),
                format!(
                    "entities `{na}` and `{nb}` share {what}, and nothing tells their items apart"
                ),
            )
            .also(span_of(da), format!("`{na}` is declared here"))
            .hint(hint);
            return;
        }
        let starts = |e: EntityId| {
            key.iter()
                .map(|attr| self.key_start(e, attr.name).unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let (sa, sb) = (starts(a), starts(b));
        if sa == sb {
            let shared = sa
                .iter()
                .zip(key)
                .map(|(start, attr)| format!("`{start}` on `{}`", attr.name))
                .collect::<Vec<_>>();
            out.error(
                span_of(db),
                format!(
                    "entities `{na}` and `{nb}` could both match the same keys of {what}: their \
                     templates ({} and {}) share the start {}",
                    ta.join(", "),
                    tb.join(", "),
                    shared.join(" and ")
                ),
            )
            .also(span_of(da), format!("`{na}`'s template"))
            .hint(hint);
        } else {
            let (short, long, ns, nl) = if sa.iter().zip(&sb).all(|(x, y)| y.starts_with(*x)) {
                (&sa, &sb, na, nb)
            } else {
                (&sb, &sa, nb, na)
            };
            // The attribute whose starts differ (the others start alike).
            let at = (0..key.len())
                .find(|&i| short[i] != long[i])
                .unwrap_or(key.len() - 1);
            if short[at].is_empty() {
                // No literal start at all: nothing to quote as a prefix.
                let (ds, dl) = if ns == na { (da, db) } else { (db, da) };
                // A key with no template is a field's whole value.
                let template = |d: &EntityDraft<'_>| {
                    d.entity.template_on(key[at].name).map_or_else(
                        || "(a field's whole value)".to_owned(),
                        |t| format!("template `{}`", t.template),
                    )
                };
                out.error(
                    span_of(db),
                    format!(
                        "`{ns}`'s `{}` {} begins with a value, not with literal text, in \
                         {what}: it also matches `{nl}`'s keys ({}), so a page of `{ns}` would \
                         read `{nl}`'s items",
                        key[at].name,
                        template(ds),
                        template(dl),
                    ),
                )
                .also(span_of(da), format!("`{na}`'s template"))
                .hint(format!(
                    "start `{ns}`'s template with literal text that `{nl}`'s keys do not begin \
                     with (such as `{}#{{...}}`), or add `type_attribute = \"_type\"` to \
                     `[tables.{table}]`",
                    ns.to_uppercase()
                ));
                return;
            }
            out.error(
                span_of(db),
                format!(
                    "the key prefix `{}` of `{ns}` shadows `{}` of `{nl}` on `{}` in {what}: \
                     templates {} and {} share the start `{}`, so a page of `{ns}` would read \
                     `{nl}`'s items",
                    short[at],
                    long[at],
                    key[at].name,
                    ta.join(", "),
                    tb.join(", "),
                    short[at]
                ),
            )
            .also(span_of(da), format!("`{na}`'s template"))
            .hint(hint);
        }
    }

    /// No entity's id tag may begin another's.
    pub(super) fn check_id_tags(&self, out: &mut Problems) {
        let tag_span =
            |d: &EntityDraft<'_>| d.file.id_tag.as_ref().map_or(d.name.span(), Spanned::span);
        for (i, a) in self.entities.iter().enumerate() {
            for b in self.entities.iter().skip(i + 1) {
                let (ta, tb) = (&a.entity.id_tag, &b.entity.id_tag);
                if ta.is_empty() || tb.is_empty() {
                    continue;
                }
                let (first, second) = if tb.starts_with(ta.as_str()) {
                    (a, b)
                } else if ta.starts_with(tb.as_str()) {
                    (b, a)
                } else {
                    continue;
                };
                out.error(
                    tag_span(second),
                    format!(
                        "the id tag `{}` of entity `{}` begins with the id tag `{}` of entity `{}`",
                        second.entity.id_tag,
                        second.entity.name,
                        first.entity.id_tag,
                        first.entity.name
                    ),
                )
                .also(
                    tag_span(first),
                    format!("the id tag of `{}`", first.entity.name),
                )
                .hint(
                    "global ids start with the tag: no tag may begin another; change one of them",
                );
            }
        }
    }
}

/// The entity's id tag; reports an empty or too long one.
pub(super) fn check_id_tag(
    name: &Spanned<String>,
    file: &EntityFile,
    out: &mut Problems,
) -> String {
    let Some(tag) = &file.id_tag else {
        return format!("{}:", name.get_ref());
    };
    let text = tag.get_ref();
    if text.is_empty() {
        out.error(tag.span(), "an id tag cannot be empty")
            .hint("global ids start with the tag, which tells their type");
        return String::new();
    }
    if text.len() > 16 {
        out.error(
            tag.span(),
            format!("id tag `{text}` is longer than 16 bytes"),
        )
        .hint("a short tag such as \"U\" keeps global ids compact");
        return String::new();
    }
    text.clone()
}

/// Field, relation and connection names: valid, not `id`, unique within the entity.
pub(super) fn check_member_names(entity: &str, file: &EntityFile, out: &mut Problems) {
    let mut names = Vec::new();
    let groups = [
        (file.fields.keys().collect::<Vec<_>>(), "field"),
        (file.relations.keys().collect(), "relation"),
        (file.connections.keys().collect(), "connection"),
    ];
    for (keys, what) in groups {
        for name in keys {
            if !check_name(name.span(), name.get_ref(), what, out) {
                continue;
            }
            if name.get_ref() == "id" {
                let hint = if what == "field" {
                    "name it for example `itemId`, with `attribute = \"id\"` to keep reading the \
                     `id` attribute"
                        .to_owned()
                } else {
                    "choose another name".to_owned()
                };
                out.error(
                    name.span(),
                    format!(
                        "{what} `id` of entity `{entity}`: `id` is the global id of every entity"
                    ),
                )
                .hint(hint);
                continue;
            }
            names.push((name.get_ref().clone(), name.span(), what));
        }
    }
    check_unique(&names, out);
}

/// Two fields may not read the same attribute.
pub(super) fn check_shared_attributes(file: &EntityFile, out: &mut Problems) {
    let mut seen: HashMap<&str, (&str, Range<usize>)> = HashMap::new();
    for (name, field) in in_file_order(&file.fields) {
        let (attribute, span) = match &field.attribute {
            Some(a) => (a.get_ref().as_str(), a.span()),
            None => (name.get_ref().as_str(), name.span()),
        };
        if attribute.is_empty() {
            out.error(span, "an attribute name cannot be empty");
            continue;
        }
        if let Some((other, other_span)) = seen.get(attribute) {
            out.error(
                span,
                format!(
                    "fields `{other}` and `{}` both read attribute `{attribute}`",
                    name.get_ref()
                ),
            )
            .also(other_span.clone(), format!("`{other}` reads it here"))
            .hint("each attribute has at most one field");
        } else {
            seen.insert(attribute, (name.get_ref(), span));
        }
    }
}
