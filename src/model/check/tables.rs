//! Tables and their indexes: key attributes and their types, global and local indexes,
//! projections.

use super::*;

/// A key attribute of a table, looked up in its `attributes`.
pub(super) fn key_attr(
    attributes: &HashMap<&str, KeyType>,
    leaked: &mut HashMap<String, &'static str>,
    table: &str,
    attr: &Spanned<String>,
    used: &mut HashSet<String>,
    out: &mut Problems,
) -> Option<KeyAttr> {
    let name = attr.get_ref();
    used.insert(name.clone());
    let Some(ty) = attributes.get(name.as_str()) else {
        let declared: Vec<&str> = attributes.keys().copied().collect();
        out.error(
            attr.span(),
            format!("key attribute `{name}` of table `{table}` is not declared in `attributes`"),
        )
        .hint(match did_you_mean(name, &declared) {
            Some(close) => format!("did you mean `{close}`?"),
            None => format!("add `{name} = \"S\"` (or \"N\", \"B\") to the table's `attributes`"),
        });
        return None;
    };
    let name = *leaked.entry(name.clone()).or_insert_with(|| leak_str(name));
    Some(KeyAttr { name, ty: *ty })
}

pub(super) fn check_table(
    name: &Spanned<String>,
    file: &TableFile,
    leaked: &mut HashMap<String, &'static str>,
    out: &mut Problems,
) -> TableInfo {
    let table_name = name.get_ref();
    if !is_dynamodb_name(table_name) {
        out.error(
            name.span(),
            format!("`{table_name}` is not a valid DynamoDB table name"),
        )
        .hint("table names are 3 to 255 letters, digits, `_`, `-` and `.`");
    }
    let attributes: HashMap<&str, KeyType> = file
        .attributes
        .iter()
        .map(|(k, v)| (k.get_ref().as_str(), key_type_of(*v.get_ref())))
        .collect();
    let mut used = HashSet::new();
    let partition = key_attr(
        &attributes,
        leaked,
        table_name,
        &file.partition_key,
        &mut used,
        out,
    );
    let sort = file
        .sort_key
        .as_ref()
        .map(|s| key_attr(&attributes, leaked, table_name, s, &mut used, out));
    let sound = partition.is_some() && !matches!(sort, Some(None));
    let key: Vec<KeyAttr> = partition.into_iter().chain(sort.flatten()).collect();
    let mut indexes = Vec::new();
    let mut broken_indexes = HashSet::new();
    for (index_name, index) in in_file_order(&file.indexes) {
        let parts = IndexParts {
            table: table_name,
            table_key: &key,
            table_sound: sound,
            attributes: &attributes,
        };
        match parts.check(index_name, index, leaked, &mut used, out) {
            Some(index) => indexes.push(index),
            None => {
                broken_indexes.insert(index_name.get_ref().clone());
            }
        }
    }
    for (attr, _) in in_file_order(&file.attributes) {
        if !used.contains(attr.get_ref()) {
            out.error(
                attr.span(),
                format!(
                    "attribute `{}` is no key of table `{table_name}` or of its indexes",
                    attr.get_ref()
                ),
            )
            .hint(
                "DynamoDB accepts only key attributes in a table's attribute definitions; \
                 other attributes need no declaration",
            );
        }
    }
    let mut all: Vec<KeyAttr> = key.clone();
    for index in &indexes {
        for attr in index.key {
            if !all.iter().any(|a| a.name == attr.name) {
                all.push(*attr);
            }
        }
    }
    let type_attribute = file.type_attribute.as_ref().and_then(|t| {
        if t.get_ref().is_empty() {
            out.error(t.span(), "an attribute name cannot be empty");
            return None;
        }
        if all.iter().any(|a| a.name == t.get_ref()) {
            out.error(
                t.span(),
                format!(
                    "type attribute `{}` is a key attribute of table `{table_name}`",
                    t.get_ref()
                ),
            )
            .hint("the type attribute holds each item's entity name; choose an attribute that is no key");
            return None;
        }
        Some(t.get_ref().clone())
    });
    TableInfo {
        table: Table {
            name: table_name.clone(),
            key: leak_shape(key),
            attributes: all,
            indexes,
            type_attribute,
            stream: file.stream.as_ref().map(|s| match s.get_ref() {
                StreamViewFile::NEW_AND_OLD_IMAGES => StreamView::NewAndOldImages,
                StreamViewFile::NEW_IMAGE => StreamView::NewImage,
                StreamViewFile::OLD_IMAGE => StreamView::OldImage,
                StreamViewFile::KEYS_ONLY => StreamView::KeysOnly,
            }),
            span: name.span(),
        },
        sound,
        broken_indexes,
    }
}

/// What checking an index needs from its table.
pub(super) struct IndexParts<'a> {
    pub(super) table: &'a str,
    pub(super) table_key: &'a [KeyAttr],
    pub(super) table_sound: bool,
    pub(super) attributes: &'a HashMap<&'a str, KeyType>,
}

impl IndexParts<'_> {
    pub(super) fn check(
        &self,
        name: &Spanned<String>,
        file: &IndexFile,
        leaked: &mut HashMap<String, &'static str>,
        used: &mut HashSet<String>,
        out: &mut Problems,
    ) -> Option<Index> {
        let index_name = name.get_ref();
        if !is_dynamodb_name(index_name) {
            out.error(
                name.span(),
                format!("`{index_name}` is not a valid DynamoDB index name"),
            )
            .hint("index names are 3 to 255 letters, digits, `_`, `-` and `.`");
        }
        let local = file
            .kind
            .as_ref()
            .is_some_and(|k| *k.get_ref() == IndexKindFile::Local);
        let mut attr = |a: &Spanned<String>, out: &mut Problems| {
            key_attr(self.attributes, leaked, self.table, a, used, out)
        };
        let partition = if local {
            self.local_partition(name, file, out)
        } else {
            match &file.partition_key {
                Some(p) => attr(p, out),
                None => {
                    out.error(
                        name.span(),
                        format!("global index `{index_name}` has no `partition_key`"),
                    )
                    .hint("add `partition_key`, or `kind = \"local\"` for a local index");
                    None
                }
            }
        };
        let sort = match &file.sort_key {
            Some(s) => Some(attr(s, out)?),
            None if local => {
                out.error(
                    name.span(),
                    format!("local index `{index_name}` has no `sort_key`"),
                )
                .hint("a local index differs from its table only by its sort key");
                return None;
            }
            None => None,
        };
        let key: Vec<KeyAttr> = vec![partition?].into_iter().chain(sort).collect();
        let mut start_key = key.clone();
        for attr in self.table_key {
            if !start_key.iter().any(|a| a.name == attr.name) {
                start_key.push(*attr);
            }
        }
        let projection = match file.projection.as_ref().map(Spanned::get_ref) {
            None | Some(ProjectionFile::Kind(ProjectionKindFile::All)) => Projection::All,
            Some(ProjectionFile::Kind(ProjectionKindFile::KeysOnly)) => Projection::KeysOnly,
            Some(ProjectionFile::Include(list)) => Projection::Include(list.clone()),
        };
        Some(Index {
            name: index_name.clone(),
            local,
            key: leak_shape(key),
            start_key: leak_shape(start_key),
            projection,
            span: name.span(),
        })
    }

    /// The partition key of a local index: the table's.
    pub(super) fn local_partition(
        &self,
        name: &Spanned<String>,
        file: &IndexFile,
        out: &mut Problems,
    ) -> Option<KeyAttr> {
        let kind_span = file.kind.as_ref().map_or(name.span(), Spanned::span);
        if self.table_key.len() < 2 && self.table_sound {
            out.error(
                kind_span,
                format!(
                    "local index `{}` on table `{}`, which has no sort key",
                    name.get_ref(),
                    self.table
                ),
            )
            .hint("DynamoDB allows local indexes only on tables with a sort key; use a global one");
            return None;
        }
        let partition = self.table_key.first().copied();
        if let (Some(given), Some(table)) = (&file.partition_key, partition)
            && given.get_ref() != table.name
        {
            out.error(
                given.span(),
                format!(
                    "local index `{}` has partition key `{}`, not its table's `{}`",
                    name.get_ref(),
                    given.get_ref(),
                    table.name
                ),
            )
            .hint("a local index shares its table's partition key: leave `partition_key` out");
            return None;
        }
        partition
    }
}
