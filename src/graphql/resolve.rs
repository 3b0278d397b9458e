//! What the generated fields do: read a connection's page, look an item up, follow a relation,
//! refetch by global id. Each takes the model's declaration and the request's arguments; none
//! knows any particular entity.

use std::{
    borrow::Cow,
    cmp::Ordering,
    sync::{Arc, Mutex},
};

use async_graphql::{Context, Name, SelectionField, Value, indexmap::IndexMap};
use aws_sdk_dynamodb::types::AttributeValue;

use super::{
    access::{self, Grant},
    connection::{Count, Opened, PageValue, Reader, Refused},
    error::{ApiError, ApiResult, check_key_value},
    values::{self, canonical, key_value},
};
use crate::{
    auth::Caller,
    cursor::{Binding, CursorCodec, Key, KeyValue},
    dynamo::{FilterTest, Item, Keep, ReadSpec, SortKeyCondition, Store},
    model::{
        Connection, Entity, EntityId, Field, FieldId, FieldType, FilterOp, Model, PartitionFrom,
        Projection, Read, Scalar, TypeTest,
    },
    number::DynamoNumber,
    pagination::{PageArgs, PageLimits},
};

/// Arguments of one field, as resolved for the request (variables substituted).
pub type Args = IndexMap<Name, Value>;

/// A connection as declared, with where it hangs in the schema.
#[derive(Debug, Clone, Copy)]
pub struct Site {
    /// The model.
    pub model: &'static Model,
    /// The entity the field is on; `None` for a root connection.
    pub parent: Option<EntityId>,
    /// The declaration.
    pub connection: &'static Connection,
}

impl Site {
    /// `Type.field`, for cursor bindings and metrics.
    pub fn label(&self) -> &'static str {
        self.connection.label
    }

    fn node(&self) -> &'static Entity {
        &self.model.entities[self.connection.entity]
    }
}

/// What reading a page needs from the request: its store, the cursor codec, the page limits
/// and the caller.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    /// The request's store.
    pub store: &'a Store,
    /// Seals and opens cursors.
    pub codec: &'a CursorCodec,
    /// The server's page limits.
    pub limits: &'a PageLimits,
    /// Who asks.
    pub caller: &'a Caller,
}

/// A page of a connection, planned and with its cursor opened, not yet read.
#[derive(Debug)]
pub struct PreparedPage<'a> {
    limits: PageLimits,
    binding: Binding,
    descending: bool,
    spec: ReadSpec<'a>,
    opened: Opened,
    /// What `totalCount` counts, for a connection that offers it: the page's read without its
    /// cursor, page size or projection.
    count: Option<Arc<ReadSpec<'static>>>,
}

impl PreparedPage<'_> {
    /// The key the page starts after (its cursor, opened), and whether it reads in descending
    /// order.
    pub fn start(&self) -> (Option<&Key>, bool) {
        (self.opened.start(), self.descending)
    }

    /// The same page, read with strong consistency when `consistent` (see
    /// [`ReadSpec::consistent`]).
    pub fn consistent(mut self, consistent: bool) -> Self {
        self.spec.consistent = consistent;
        self
    }
}

/// Plans a page of `site` for a parent item (entity connections) with `args`, reading only the
/// attributes of `projection` (see [`projection`]) besides the keys, `None` reading whole
/// items; and opens its cursor. Nothing is read or counted: a refused page has no side effect.
pub fn prepare_page<'a>(
    env: Env<'a>,
    site: Site,
    parent: Option<&Item>,
    args: &Args,
    projection: Option<Vec<&'static str>>,
) -> Result<PreparedPage<'a>, Refused> {
    let limits = site
        .connection
        .page_size
        .and_then(|(default, max)| {
            PageLimits::new(default, max, (env.limits.read_budget() as u32).max(max + 1))
                .ok()
                .map(|limits| limits.with_count_budget(env.limits.count_budget()))
        })
        .unwrap_or(*env.limits);
    let mut plan = plan(site, parent, args, env.store, env.caller).map_err(Refused::Args)?;
    let count = site
        .connection
        .total_count
        .then(|| Arc::new(plan.spec.clone()));
    plan.spec.projection = projection;
    let reader = Reader {
        limits: &limits,
        codec: env.codec,
        store: env.store,
    };
    let opened = reader.open(plan.page, &plan.binding, plan.spec.shape)?;
    Ok(PreparedPage {
        limits,
        binding: plan.binding,
        descending: plan.descending,
        spec: plan.spec,
        opened,
        count,
    })
}

/// Reads a prepared page.
pub async fn read_prepared(env: Env<'_>, page: PreparedPage<'_>) -> ApiResult<PageValue> {
    let reader = Reader {
        limits: &page.limits,
        codec: env.codec,
        store: env.store,
    };
    let mut value = reader
        .read(page.opened, &page.binding, page.descending, page.spec)
        .await?;
    value.count = page.count.map(|spec| Count {
        spec,
        budget: page.limits.count_budget(),
    });
    Ok(value)
}

/// Reads one page of `site` for a parent item (entity connections) with `args` (see
/// [`prepare_page`]); a refused cursor is counted.
pub async fn connection_page(
    ctx: &Context<'_>,
    site: Site,
    parent: Option<&Item>,
    args: &Args,
    projection: Option<Vec<&'static str>>,
) -> ApiResult<PageValue> {
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let limits = ctx.data::<PageLimits>().map_err(|_| ApiError::Internal)?;
    let caller = access::caller(ctx);
    let env = Env {
        store,
        codec,
        limits,
        caller: &caller,
    };
    match prepare_page(env, site, parent, args, projection) {
        Ok(page) => read_prepared(env, page).await,
        Err(refused) => Err(refused.into_error(store.metrics(), site.label())),
    }
}

/// The attributes a page of `site` needs for `selection`, the connection field as the query
/// selects it: those the selected fields are read from (see [`values::field_attributes`]), the
/// table's keys (for ids), and all that tells the connection's entities apart in a shared table
/// (the keys read and the type attribute). Sorted, so that equal selections give equal lists.
///
/// `None`, to read whole items, when the selection reaches past the nodes' own fields:
/// relations, nested connections, or anything else this does not know, whose resolvers look at
/// the item as a whole.
pub fn projection(site: Site, selection: &SelectionField<'_>) -> Option<Vec<&'static str>> {
    let mut nodes = Vec::new();
    for child in selection.selection_set() {
        match child.name() {
            "edges" => {
                for edge in child.selection_set() {
                    match edge.name() {
                        "node" => nodes.push(edge),
                        "cursor" | "__typename" => {}
                        _ => return None,
                    }
                }
            }
            "nodes" => nodes.push(child),
            "pageInfo" | "totalCount" | "__typename" => {}
            _ => return None,
        }
    }
    projection_of(
        site,
        nodes
            .iter()
            .flat_map(|node| node.selection_set().map(|field| field.name())),
    )
}

/// [`projection`] from the names of the fields selected on the connection's nodes (under
/// `edges { node }` and `nodes`, from every fragment).
pub fn projection_of<'n>(
    site: Site,
    node_fields: impl IntoIterator<Item = &'n str>,
) -> Option<Vec<&'static str>> {
    let model = site.model;
    let connection = site.connection;
    let members: &'static [EntityId] = match &connection.collection {
        Some(collection) => &collection.members,
        None => std::slice::from_ref(&connection.entity),
    };
    let table = model.table_of(connection.entity);
    let keys = || connection.start_key.iter().chain(table.key.iter());
    let mut wanted: Vec<&'static str> = keys().map(|k| k.name).collect();
    // Every attribute the members' rules require, which reads of a collection check in memory
    // (DynamoDB tests a single entity's: see `Connection::type_filters`).
    if connection.collection.is_some() {
        for &member in members {
            wanted.extend(
                model.entities[member]
                    .required_values(table)
                    .map(|(a, _)| a),
            );
        }
    }
    for name in node_fields {
        if name == "__typename" || name == "id" {
            continue;
        }
        let mut found = false;
        for &member in members {
            let e = &model.entities[member];
            if let Some(f) = e.fields.iter().position(|f| f.name == name) {
                found = true;
                wanted.extend(values::field_attributes(model, member, f));
                // The owner fields the field's own rules compare with the caller.
                for (owner, _) in e.fields[f].access.iter().flat_map(|a| a.owners()) {
                    wanted.extend(values::field_attributes(model, member, owner));
                }
            } else if e.relations.iter().any(|r| r.name == name)
                || e.connections.iter().any(|c| c.name == name)
            {
                return None;
            }
        }
        if !found {
            return None;
        }
    }
    // An index that projects a few attributes is asked for those it holds only (DynamoDB
    // refuses the rest); a field whose attribute it lacks is read back from a key it holds, as
    // `check` made sure.
    let held: Option<&[String]> = match connection.index.map(|i| &table.indexes[i].projection) {
        None | Some(Projection::All) => None,
        Some(Projection::KeysOnly) => Some(&[]),
        Some(Projection::Include(list)) => Some(list),
    };
    if let Some(included) = held {
        wanted.retain(|attribute| {
            keys().any(|k| k.name == *attribute) || included.iter().any(|a| a == attribute)
        });
    }
    wanted.sort_unstable();
    wanted.dedup();
    Some(wanted)
}

/// The binding of `site`'s connection for a parent item and arguments: what cursors of that
/// page are sealed against.
pub fn binding_for(
    site: Site,
    parent: Option<&Item>,
    args: &Args,
    store: &Store,
    caller: &Caller,
) -> ApiResult<Binding> {
    Ok(plan(site, parent, args, store, caller)?.binding)
}

/// What a connection of `site` reads for a parent item (entity connections) with `args`, and
/// the binding its cursors are sealed against: the same plan as a page's, for deciding in memory
/// which changed items the connection holds (see [`ReadSpec::holds`]).
pub fn read_spec(
    site: Site,
    parent: Option<&Item>,
    args: &Args,
    store: &Store,
    caller: &Caller,
) -> ApiResult<(ReadSpec<'static>, Binding)> {
    let plan = plan(site, parent, args, store, caller)?;
    Ok((plan.spec, plan.binding))
}

/// Everything a page read needs, from the declaration and the arguments.
struct ConnectionPlan<'a> {
    page: PageArgs,
    binding: Binding,
    descending: bool,
    spec: ReadSpec<'a>,
}

fn plan(
    site: Site,
    parent: Option<&Item>,
    args: &Args,
    store: &Store,
    caller: &Caller,
) -> ApiResult<ConnectionPlan<'static>> {
    let model = site.model;
    let connection = site.connection;
    let node = site.node();
    let table = node.table;
    let table_name = store.tables().name(table);
    let index = connection
        .index
        .map(|i| model.tables[table].indexes[i].name.as_str());
    let grant = access::grant(&connection.access, caller);
    if grant == Grant::Nothing {
        return Err(access::forbidden(&format!("`{}`", site.label())));
    }
    let mut binding = Binding::builder(site.label(), table_name, index);
    // Cursors of a page that depends on who asks belong to the caller who was given them.
    if connection.access.depends_on_caller() {
        binding = binding.argument(
            "$caller",
            Some(caller.principal().map_or("", |p| p.subject.as_str())),
        );
    }
    let int = |name: &str| -> ApiResult<Option<i32>> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(Some(
                n.as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| bad(format!("`{name}` must be a 32-bit integer.")))?,
            )),
            Some(_) => Err(bad(format!("`{name}` must be an integer."))),
        }
    };
    let string = |name: &str| -> Option<String> {
        match args.get(name) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        }
    };
    let page = PageArgs {
        first: int("first")?,
        after: string("after"),
        last: int("last")?,
        before: string("before"),
    };
    let descending = match (&connection.order, args.get("order")) {
        (None, _) => false,
        (Some(_), Some(Value::Enum(order))) => order.as_str() == "DESC",
        (Some(_), Some(Value::String(order))) => order == "DESC",
        (Some(order), _) => order.default_desc,
    };
    let mut spec = ReadSpec {
        table: table_name,
        index,
        shape: connection.start_key,
        partition: None,
        sort: None,
        filters: Vec::new(),
        expected: Vec::new(),
        keep: None,
        projection: None,
        consistent: false,
    };
    if let Read::Query {
        partition,
        sort,
        prefix,
    } = &connection.read
    {
        let value = match &partition.from {
            PartitionFrom::Argument { argument, field } => {
                let given = args.get(argument.name.as_str()).unwrap_or(&Value::Null);
                let value = argument_value(model, &node.fields[*field], &argument.name, given)?
                    .ok_or_else(|| bad(format!("`{}` must not be null.", argument.name)))?;
                if let Some(template) = &partition.template {
                    facet_fits(template, &node.fields[*field].name, &argument.name, &value)?;
                }
                value
            }
            PartitionFrom::Parent(field) => {
                let parent_entity = site.parent.ok_or(ApiError::Internal)?;
                parent
                    .and_then(|item| values::field_value(model, parent_entity, *field, item))
                    .map(Cow::into_owned)
                    .ok_or(ApiError::Internal)?
            }
            PartitionFrom::Constant(value) => value.to_attribute_value(),
        };
        // An owner rule is on the partition's field (the model makes sure of it): the caller's
        // own partition, or nothing, and never a read of anyone else's.
        if let Grant::Own(claims) = &grant {
            let text = values::plain_text(&value);
            if !claims.iter().any(|(_, claim)| text == Some(claim.as_str())) {
                return Err(ApiError::Forbidden(format!(
                    "You may see only your own items in `{}`.",
                    site.label()
                )));
            }
        }
        let value = match &partition.template {
            Some(template) => {
                let facet = template.facets().next().ok_or(ApiError::Internal)?;
                let text = values::facet_text(template, facet, &value).ok_or(ApiError::Internal)?;
                AttributeValue::S(
                    template
                        .render(|_| Some(text.as_str()))
                        .map_err(|_| ApiError::Internal)?,
                )
            }
            None => value,
        };
        let key = key_value(&value, partition.attribute.ty).ok_or(ApiError::Internal)?;
        if let KeyValue::S(_) | KeyValue::B(_) = &key {
            check_key_value_bytes(
                &key,
                partition_name(&partition.from, partition.attribute.name),
            )?;
        }
        binding = binding.fixed(partition.attribute.name, key);
        spec.partition = Some((partition.attribute.name, value));
        spec.sort = prefix.as_ref().map(|(attribute, start)| {
            (
                *attribute,
                SortKeyCondition::Prefix(AttributeValue::S(start.clone())),
            )
        });
        if let Some(sort) = sort {
            let field = &node.fields[sort.field];
            let mut bound: Vec<(&'static str, Option<String>)> = Vec::new();
            // The leading facets fixed exactly, as their text in the key.
            let mut fixed: Vec<(&str, String)> = Vec::with_capacity(sort.fixed.len());
            // The first optional `fixed` argument left out, if any: nothing after it may be given.
            let mut left_out: Option<&str> = None;
            if let Some(template) = &sort.template {
                for (at, (f, argument)) in sort.fixed.iter().enumerate() {
                    let facet = &node.fields[*f];
                    let given = args.get(argument.name.as_str()).unwrap_or(&Value::Null);
                    let value = argument_value(model, facet, &argument.name, given)?;
                    let value = match (value, left_out) {
                        (None, _) if at < sort.required_fixed => {
                            return Err(bad(format!("`{}` must not be null.", argument.name)));
                        }
                        (None, _) => {
                            left_out.get_or_insert(argument.name.as_str());
                            bound.push((argument.name.as_str(), None));
                            continue;
                        }
                        (Some(_), Some(missing)) => return Err(needs(&argument.name, missing)),
                        (Some(value), None) => value,
                    };
                    facet_fits(template, &facet.name, &argument.name, &value)?;
                    bound.push((argument.name.as_str(), Some(canonical(&value))));
                    let text = values::facet_text(template, &facet.name, &value)
                        .ok_or(ApiError::Internal)?;
                    fixed.push((facet.name.as_str(), text));
                }
            }
            let leading = |name: &str| {
                fixed
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| t.as_str())
            };
            let mut arg = |argument: &'static Option<crate::model::Argument>,
                           text: bool|
             -> ApiResult<Option<AttributeValue>> {
                let Some(argument) = argument else {
                    return Ok(None);
                };
                let given = args.get(argument.name.as_str()).unwrap_or(&Value::Null);
                let value = if text {
                    match given {
                        Value::Null => None,
                        Value::String(s) => Some(AttributeValue::S(s.clone())),
                        _ => return Err(bad(format!("`{}` must be a string.", argument.name))),
                    }
                } else if let Some(format) = field.sortable_id() {
                    // A time, as the smallest id of it (`min`) or the largest (`max`).
                    match given {
                        Value::Null => None,
                        given => {
                            let time = values::date_time(given)
                                .map_err(|m| bad(format!("`{}`: {m}", argument.name)))?;
                            let upper = sort.max.as_ref().is_some_and(|m| m.name == argument.name);
                            let id =
                                format
                                    .bound(time.timestamp_millis(), upper)
                                    .ok_or_else(|| {
                                        bad(format!(
                                            "`{}` is outside the times an id can hold.",
                                            argument.name
                                        ))
                                    })?;
                            Some(AttributeValue::S(id))
                        }
                    }
                } else {
                    argument_value(model, field, &argument.name, given)?
                };
                bound.push((argument.name.as_str(), value.as_ref().map(canonical)));
                Ok(value)
            };
            let facet = sort.template.is_some();
            let min = arg(&sort.min, false)?;
            let max = arg(&sort.max, false)?;
            let begins = arg(&sort.begins_with, facet)?;
            if let Some(missing) = left_out {
                for (a, given) in [
                    (&sort.min, &min),
                    (&sort.max, &max),
                    (&sort.begins_with, &begins),
                ] {
                    if let (Some(a), Some(_)) = (a, given) {
                        return Err(needs(&a.name, missing));
                    }
                }
            }
            if let (Some(template), Some(start)) = (&sort.template, &begins) {
                let name = sort.begins_with.as_ref().map_or("", |a| a.name.as_str());
                facet_fits(template, &field.name, name, start)?;
            }
            for (name, value) in bound {
                binding = binding.argument(name, value.as_deref());
            }
            // In a template's key a range is one of the keys' text, in DynamoDB's byte order:
            // the bounds are compared as they are written (a value wider than its facet's width
            // sorts by its first digits).
            let order = |lo: &AttributeValue, hi: &AttributeValue| match &sort.template {
                Some(template) => {
                    let text = |v| values::facet_text(template, &field.name, v);
                    match (text(lo), text(hi)) {
                        (Some(lo), Some(hi)) => {
                            let (lo, hi) = (template.written(&lo), template.written(&hi));
                            lo.as_bytes().cmp(hi.as_bytes())
                        }
                        _ => compare(lo, hi),
                    }
                }
                None => compare(lo, hi),
            };
            if let (Some(lo), Some(hi)) = (&min, &max)
                && order(lo, hi) == Ordering::Greater
            {
                let (lo, hi) = (
                    sort.min.as_ref().map_or("", |a| a.name.as_str()),
                    sort.max.as_ref().map_or("", |a| a.name.as_str()),
                );
                return Err(bad(
                    if matches!(field.ty, FieldType::Scalar(Scalar::DateTime(_))) {
                        format!("`{lo}` must not be later than `{hi}`.")
                    } else {
                        format!("`{lo}` must not exceed `{hi}`.")
                    },
                ));
            }
            let condition = match (min, max, begins) {
                (None, None, None) => match &sort.template {
                    Some(template) if !fixed.is_empty() => Some(SortKeyCondition::Prefix(
                        AttributeValue::S(template.prefix(leading)),
                    )),
                    _ => None,
                },
                (min, max, None) => Some(match &sort.template {
                    Some(template) => facet_range(template, &field.name, leading, min, max)?,
                    None => SortKeyCondition::Range(min, max),
                }),
                (None, None, Some(prefix)) => Some(match &sort.template {
                    Some(template) => {
                        let partial = values::facet_text(template, &field.name, &prefix)
                            .ok_or(ApiError::Internal)?;
                        SortKeyCondition::Prefix(AttributeValue::S(
                            template.partial(leading, &partial),
                        ))
                    }
                    None => SortKeyCondition::Prefix(prefix),
                }),
                _ => {
                    return Err(bad(format!(
                        "Pass either a range or `{}`, not both.",
                        sort.begins_with.as_ref().map_or("", |a| a.name.as_str())
                    )));
                }
            };
            if let Some(condition) = condition {
                spec.sort = Some((sort.attribute.name, condition));
            }
        }
    }
    if matches!(grant, Grant::Own(_)) && !matches!(connection.read, Read::Query { .. }) {
        return Err(access::forbidden(&format!("`{}`", site.label())));
    }
    for (attribute, test) in &connection.type_filters {
        let test = match test {
            TypeTest::Equals(value) => FilterTest::Compare("=", AttributeValue::S(value.clone())),
            TypeTest::BeginsWith(start) => FilterTest::BeginsWith(AttributeValue::S(start.clone())),
        };
        if connection.type_filters_expected {
            spec.expected.push((attribute, test));
        } else {
            spec.filters.push((attribute, test));
        }
    }
    if connection.shared {
        // The entity each item is, kept with its row so that nodes are typed once: by the one
        // rule every read applies (the required values and the table's keys), so that an item
        // is the same entity whether a table read, an index read, a lookup or a refetch finds
        // it. A connection of one entity has DynamoDB test the required values (its
        // `type_filters`), and tests the keys here.
        spec.keep = Some(Keep(match &connection.collection {
            Some(collection) => {
                let members: &'static [EntityId] = &collection.members;
                Arc::new(move |item: &Item| {
                    values::entity_of(model, members, item).and_then(|e| u32::try_from(e).ok())
                })
            }
            None => {
                let entity = connection.entity;
                let kind = u32::try_from(entity).map_err(|_| ApiError::Internal)?;
                Arc::new(move |item: &Item| values::keys_fit(model, entity, item).then_some(kind))
            }
        }));
    }
    for filter in &connection.filters {
        let field = &node.fields[filter.field];
        let name = filter.argument.name.as_str();
        let given = args.get(name).unwrap_or(&Value::Null);
        let test = match (filter.op, given) {
            (_, Value::Null) => None,
            (FilterOp::Exists, Value::Boolean(b)) => Some(FilterTest::Exists(*b)),
            (FilterOp::Exists, _) => return Err(bad(format!("`{name}` must be a Boolean."))),
            (FilterOp::In, Value::List(items)) => {
                let values = items
                    .iter()
                    .map(|item| {
                        argument_value(model, field, name, item)?
                            .ok_or_else(|| bad(format!("`{name}` must not hold null.")))
                    })
                    .collect::<ApiResult<Vec<_>>>()?;
                if values.is_empty() || values.len() > 100 {
                    return Err(bad(format!("`{name}` must hold 1 to 100 values.")));
                }
                Some(FilterTest::In(values))
            }
            (FilterOp::In, _) => return Err(bad(format!("`{name}` must be a list."))),
            (op, given) => {
                // For `contains` on a list or set this is one item: `argument_value` takes the
                // items' scalar.
                let value = argument_value(model, field, name, given)?;
                value.map(|value| match op {
                    FilterOp::BeginsWith => FilterTest::BeginsWith(value),
                    FilterOp::Contains => FilterTest::Contains(value),
                    FilterOp::Eq => FilterTest::Compare("=", value),
                    FilterOp::Ne => FilterTest::Compare("<>", value),
                    FilterOp::Lt => FilterTest::Compare("<", value),
                    FilterOp::Le => FilterTest::Compare("<=", value),
                    FilterOp::Gt => FilterTest::Compare(">", value),
                    FilterOp::Ge | FilterOp::In | FilterOp::Exists => {
                        FilterTest::Compare(">=", value)
                    }
                })
            }
        };
        binding = binding.argument(name, test.as_ref().map(filter_text).as_deref());
        if let Some(test) = test {
            spec.filters.push((field.attribute.as_str(), test));
        }
    }
    Ok(ConnectionPlan {
        page,
        binding: binding.finish(),
        descending,
        spec,
    })
}

/// The key condition for a range over a facet of a sort-key template, after the leading facets
/// `leading` fixes (none, for the first facet). The model makes sure the facet's text sorts as
/// its values and that the text after it sorts below every character they hold, so
/// `[start + min, start + max + the character after the separator]` holds exactly the keys
/// whose facet is in range: no key equals the upper end, whose last character no facet value or
/// separator writes. `start` is the template through the fixed facets up to this one; an open
/// end stays within it (up to the string right after all keys that begin with it).
fn facet_range<'v>(
    template: &crate::model::KeyTemplate,
    facet: &str,
    leading: impl Fn(&str) -> Option<&'v str> + Copy,
    min: Option<AttributeValue>,
    max: Option<AttributeValue>,
) -> ApiResult<SortKeyCondition> {
    let text = |value: &AttributeValue| {
        values::facet_text(template, facet, value).ok_or(ApiError::Internal)
    };
    let start = template.prefix(leading);
    let start = start.as_str();
    let lower = match &min {
        Some(min) => Some(template.partial(leading, &text(min)?)),
        None => (!start.is_empty()).then(|| start.to_owned()),
    };
    let upper = match &max {
        Some(max) => {
            let mut upper = template.partial(leading, &text(max)?);
            if let Some(next) = template.text_after(facet).chars().next() {
                upper.push(char::from_u32(next as u32 + 1).ok_or(ApiError::Internal)?);
            }
            Some(upper)
        }
        None => successor(start),
    };
    Ok(SortKeyCondition::Range(
        lower.map(AttributeValue::S),
        upper.map(AttributeValue::S),
    ))
}

/// The first string after every string that starts with `start` (its last character raised by
/// one), or `None` when there is no such bound to give (`start` is empty).
fn successor(start: &str) -> Option<String> {
    let mut chars: Vec<char> = start.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn partition_name<'a>(from: &'a PartitionFrom, attribute: &'a str) -> &'a str {
    match from {
        PartitionFrom::Argument { argument, .. } => &argument.name,
        _ => attribute,
    }
}

fn filter_text(test: &FilterTest) -> String {
    match test {
        FilterTest::Compare(_, v) | FilterTest::BeginsWith(v) | FilterTest::Contains(v) => {
            canonical(v)
        }
        FilterTest::In(values) => values
            .iter()
            .map(canonical)
            .collect::<Vec<_>>()
            .join("\u{0}"),
        FilterTest::Exists(b) => b.to_string(),
    }
}

/// An argument typed as `field`'s scalar (its item type, for lists) as an attribute value.
fn argument_value(
    model: &Model,
    field: &Field,
    name: &str,
    value: &Value,
) -> ApiResult<Option<AttributeValue>> {
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    values::scalar_input(model, scalar_of(&field.ty), name, value)
        .map(Some)
        .map_err(ApiError::BadUserInput)
}

/// The scalar of a field: itself, or its lists' items.
pub fn scalar_of(ty: &FieldType) -> Scalar {
    match ty {
        FieldType::Scalar(s) | FieldType::List { item: s, .. } => *s,
    }
}

/// Orders two key-typed attribute values as DynamoDB does.
fn compare(a: &AttributeValue, b: &AttributeValue) -> Ordering {
    match (a, b) {
        (AttributeValue::N(a), AttributeValue::N(b)) => {
            match (DynamoNumber::parse(a), DynamoNumber::parse(b)) {
                (Ok(a), Ok(b)) => a.numeric_cmp(&b),
                _ => Ordering::Equal,
            }
        }
        (AttributeValue::S(a), AttributeValue::S(b)) => a.as_bytes().cmp(b.as_bytes()),
        (AttributeValue::B(a), AttributeValue::B(b)) => a.as_ref().cmp(b.as_ref()),
        _ => Ordering::Equal,
    }
}

fn check_key_value_bytes(key: &KeyValue, name: &str) -> ApiResult<()> {
    match key {
        KeyValue::S(_) | KeyValue::B(_) => check_key_value(key.bytes(), name),
        KeyValue::N(_) => Ok(()),
    }
}

fn bad(message: String) -> ApiError {
    ApiError::BadUserInput(message)
}

/// `argument` given without the optional `fixed` argument `missing` it narrows.
fn needs(argument: &str, missing: &str) -> ApiError {
    bad(format!(
        "`{argument}` narrows the keys `{missing}` selects: give `{missing}` too, or leave \
         `{argument}` out."
    ))
}

/// A value the key template would not read back as facet `facet`'s (see
/// [`crate::model::KeyTemplate::holds`]): it holds the text that follows the facet, so a key with
/// it would name other items.
fn reaches_next(template: &crate::model::KeyTemplate, facet: &str, argument: &str) -> ApiError {
    bad(format!(
        "`{argument}` cannot hold `{}`, the text that follows `{facet}` in its key \
         (`{template}`): a key with it would name other items.",
        template.text_after(facet)
    ))
}

/// Refuses a value of facet `facet` that the key template would not read back as given.
pub fn facet_fits(
    template: &crate::model::KeyTemplate,
    facet: &str,
    argument: &str,
    value: &AttributeValue,
) -> ApiResult<()> {
    match values::facet_text(template, facet, value) {
        Some(text) if !template.holds(facet, &text) => Err(reaches_next(template, facet, argument)),
        _ => Ok(()),
    }
}

/// The key of `entity` named by lookup arguments (its key fields, by GraphQL name).
pub fn key_from_args(model: &Model, entity: EntityId, args: &Args) -> ApiResult<Key> {
    let e = &model.entities[entity];
    let given = key_args(
        model,
        entity,
        &e.key_fields,
        model.table_of(entity).key,
        args,
    )?;
    let key = values::primary_key(model, entity, |f| {
        given.iter().find(|(g, _)| *g == f).map(|(_, v)| v.clone())
    })
    .ok_or(ApiError::Internal)?;
    if !key.fits_dynamodb() {
        return Err(bad("The key is too long.".to_owned()));
    }
    Ok(key)
}

/// The values of key fields `fields` of `entity` given as arguments, each checked as a key
/// value must be, and as the templates of the key attributes `keys` (those the read renders)
/// can hold it.
pub fn key_args(
    model: &Model,
    entity: EntityId,
    fields: &[FieldId],
    keys: &[crate::cursor::KeyAttr],
    args: &Args,
) -> ApiResult<Vec<(FieldId, AttributeValue)>> {
    let e = &model.entities[entity];
    let mut given = Vec::with_capacity(fields.len());
    for &f in fields {
        let field = &e.fields[f];
        let value = args.get(field.name.as_str()).unwrap_or(&Value::Null);
        let value = argument_value(model, field, &field.name, value)?
            .ok_or_else(|| bad(format!("`{}` must not be null.", field.name)))?;
        if let AttributeValue::S(s) = &value {
            check_key_value(s.as_bytes(), &field.name)?;
        } else if let AttributeValue::B(b) = &value {
            check_key_value(b.as_ref(), &field.name)?;
        }
        let rendered = e
            .templates
            .iter()
            .filter(|t| t.facets.contains(&f) && keys.iter().any(|k| k.name == t.attribute));
        for t in rendered {
            facet_fits(&t.template, &field.name, &field.name, &value)?;
        }
        given.push((f, value));
    }
    Ok(given)
}

/// The global id of an item of `entity`.
pub fn item_id(model: &Model, entity: EntityId, item: &Item) -> ApiResult<String> {
    let key = Key::from_item(item, model.table_of(entity).key).map_err(|_| {
        tracing::error!(
            entity = model.entities[entity].name,
            "an item lacks its key"
        );
        ApiError::Internal
    })?;
    Ok(super::node::node_id(model, entity, &key))
}

/// Logs an item that does not fit its field's declaration (table, key attribute names and the
/// field; never the values) and masks it for the client.
pub fn misfit(model: &Model, entity: EntityId, field: &Field) -> ApiError {
    let table = model.table_of(entity);
    let key: Vec<&str> = table.key.iter().map(|a| a.name).collect();
    tracing::error!(
        table = table.name,
        key = ?key,
        entity = model.entities[entity].name,
        field = field.name,
        attribute = field.attribute,
        "an item does not fit the model"
    );
    ApiError::Internal
}

mod pages_ahead;

pub use pages_ahead::{PagesAhead, parent_text};

#[cfg(test)]
mod tests;
