//! Apollo Federation 2: what a model with `[federation]` adds to its schema so that a gateway
//! (Apollo Router or Gateway) can compose it into a supergraph and fetch its entities.
//!
//! - Every entity type is an entity of the supergraph: `@key(fields: "id")`, and a `@key` on the
//!   arguments of each of its lookups (`@key(fields: "userId")`), so that another subgraph may
//!   refer to a user by the key it knows.
//! - `PageInfo` is `@shareable`, so that two dynarelay subgraphs, or dynarelay beside another
//!   Relay-style subgraph, both declare it.
//! - `Query._entities(representations:)` answers the gateway's references with the items, read
//!   as `node` reads them (one `BatchGetItem` path, the same rules), and `Query._service { sdl }`
//!   gives the subgraph's schema with the directives above.
//!
//! Hand-written rather than async-graphql's federation support, whose SDL always imports a fixed
//! list of eleven federation directives where a subgraph should import only those it uses, and
//! whose entity resolver is one function for every type.

use async_graphql::{
    Name, Value,
    dynamic::{
        Directive, Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, Scalar,
        SchemaBuilder, TypeRef, Union,
    },
    futures_util::future::join_all,
};
use async_graphql_value::ConstValue;

use super::{
    access::{self, Grant},
    error::ApiError,
    index_read::read_through_index,
    limits::FieldCosts,
    node, nullability,
    resolve::{self, Args},
    values,
};
use crate::{
    cursor::Key,
    model::{EntityId, ExternalType, Lookup, Model, Reference},
};

/// The version of the Federation spec the subgraph schema links.
const FEDERATION_SPEC: &str = "https://specs.apollo.dev/federation/v2.3";

/// Representations `_entities` resolves in one request at most.
pub const MAX_REPRESENTATIONS: usize = 1000;

/// The `@key` field sets of `entity`: `id`, then each of its lookups' arguments, once each.
pub fn keys(model: &Model, entity: EntityId) -> Vec<String> {
    let e = &model.entities[entity];
    let mut keys = vec!["id".to_owned()];
    for lookup in model.lookups.iter().filter(|l| l.entity == entity) {
        let fields: Vec<&str> = lookup
            .arguments(model)
            .iter()
            .map(|&f| e.fields[f].name.as_str())
            .collect();
        let key = fields.join(" ");
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// `object`, the type of `entity`, with its `@key` directives.
pub fn entity_keys(model: &Model, entity: EntityId, mut object: Object) -> Object {
    for key in keys(model, entity) {
        object = object.directive(Directive::new("key").argument("fields", Value::String(key)));
    }
    object
}

/// `object` marked `@shareable`: a value type several subgraphs declare alike.
pub fn shareable(object: Object) -> Object {
    object.directive(Directive::new("shareable"))
}

/// The subgraph schema for `_service { sdl }`, from the SDL of the schema with the federation
/// directives and without the federation entry points.
pub fn subgraph_sdl(sdl: &str) -> String {
    format!(
        "extend schema\n  @link(url: \"{FEDERATION_SPEC}\", import: [\"@key\", \"@shareable\"])\n\n{}",
        sdl.trim_start()
    )
}

/// `schema` with the types federation adds (`_Any`, `_Entity`, `_Service`), and `query` with
/// its root fields (`_service`, `_entities`).
pub fn entry_points(
    model: &'static Model,
    schema: SchemaBuilder,
    query: Object,
    costs: &mut FieldCosts,
    sdl: String,
) -> (SchemaBuilder, Object) {
    let mut entity = Union::new("_Entity")
        .description("Any type another subgraph may refer to by its `@key` (Apollo Federation).");
    for e in &model.entities {
        entity = entity.possible_type(&e.name);
    }
    let any = Scalar::new("_Any").description(
        "A reference to an entity, as the gateway sends it: `__typename` and the fields of one \
         of the type's `@key`s (Apollo Federation).",
    );
    let service = Object::new("_Service")
        .description("This subgraph, for the gateway (Apollo Federation).")
        .field(
            Field::new("sdl", TypeRef::named(TypeRef::STRING), move |_| {
                let sdl = sdl.clone();
                FieldFuture::new(async move { Ok(Some(FieldValue::value(sdl))) })
            })
            .description("The subgraph's schema, with its federation directives."),
        );
    costs.object("Query", "_service", "_Service");
    costs.list("Query", "_entities", "_Entity", "representations");
    let query = query
        .field(
            Field::new("_service", TypeRef::named_nn("_Service"), |_| {
                FieldFuture::new(async { Ok(Some(FieldValue::NULL)) })
            })
            .description("This subgraph's schema, for the gateway (Apollo Federation)."),
        )
        .field(
            nullability::field("_entities", TypeRef::named_list_nn("_Entity"), move |ctx| {
                FieldFuture::new(async move { entities(&ctx, model).await })
            })
            .argument(InputValue::new(
                "representations",
                TypeRef::named_nn_list_nn("_Any"),
            ))
            .description(
                "The entities the gateway refers to, in the order given: null for one that does \
                 not exist or that you may not see (Apollo Federation).",
            ),
        );
    (
        schema.register(entity).register(any).register(service),
        query,
    )
}

/// What a representation names.
enum Representation {
    /// By the key its global id holds.
    Key(EntityId, Key),
    /// By the arguments of a lookup through an index.
    Index(&'static Lookup, Args),
    /// By nothing that exists: null.
    Nothing,
}

/// Resolves `_entities`.
async fn entities<'a>(
    ctx: &ResolverContext<'a>,
    model: &'static Model,
) -> async_graphql::Result<Option<FieldValue<'a>>> {
    let representations = ctx.args.try_get("representations")?.list()?;
    if representations.len() > MAX_REPRESENTATIONS {
        return Err(ApiError::BadUserInput(format!(
            "`representations` may hold at most {MAX_REPRESENTATIONS} references."
        ))
        .into());
    }
    let caller = access::caller(ctx);
    let mut references = Vec::with_capacity(representations.len());
    for (i, representation) in representations.iter().enumerate() {
        let object = match representation.as_value() {
            Value::Object(object) => object,
            _ => return Err(bad(i, "is not an object").into()),
        };
        references.push(reference(model, object, &caller).map_err(|why| bad(i, &why))?);
    }
    // By key: one batch through the request's loader, as `node` and `nodes` read.
    let keyed: Vec<Option<(EntityId, Key)>> = references
        .iter()
        .map(|r| match r {
            Representation::Key(entity, key) => Some((*entity, key.clone())),
            _ => None,
        })
        .collect();
    let mut found = node::load(ctx, model, keyed).await?;
    // Through an index: a Query each, all at once.
    let store = ctx
        .data::<crate::dynamo::Store>()
        .map_err(|_| ApiError::Internal)?;
    let caller = &caller;
    let through = join_all(references.iter().enumerate().filter_map(|(i, r)| match r {
        Representation::Index(lookup, args) => Some(async move {
            let via = lookup.index.as_ref().ok_or(ApiError::Internal)?;
            let index = &model.table_of(lookup.entity).indexes[via.index];
            let given = resolve::key_args(model, lookup.entity, &via.arguments, index.key, args)?;
            let item =
                read_through_index(store, model, lookup.entity, via, &given, &lookup.name).await?;
            Ok::<_, ApiError>((
                i,
                item.filter(|item| access::may_see(model, lookup.entity, item, caller))
                    .map(|item| {
                        FieldValue::owned_any(item)
                            .with_type(model.entities[lookup.entity].name.as_str())
                    }),
            ))
        }),
        _ => None,
    }))
    .await;
    for result in through {
        let (i, value) = result?;
        found[i] = value;
    }
    Ok(Some(nullability::list_with_nulls(ctx, found)))
}

/// The error for representation `i`.
fn bad(i: usize, why: &str) -> ApiError {
    ApiError::BadUserInput(format!("Representation {i} {why}."))
}

/// What a representation refers to, or why it refers to nothing a gateway could have meant.
fn reference(
    model: &'static Model,
    object: &async_graphql::indexmap::IndexMap<Name, ConstValue>,
    caller: &crate::auth::Caller,
) -> Result<Representation, String> {
    let typename = match object.get("__typename") {
        Some(Value::String(name)) => name,
        _ => return Err("has no `__typename`".to_owned()),
    };
    let Some(entity) = model.entities.iter().position(|e| &e.name == typename) else {
        return Err(format!(
            "names `{typename}`, which is not an entity of this subgraph"
        ));
    };
    let fields: Vec<&str> = object
        .keys()
        .map(Name::as_str)
        .filter(|name| *name != "__typename")
        .collect();
    if fields == ["id"] {
        let Some(Value::String(id)) = object.get("id") else {
            return Err("has an `id` that is not a string".to_owned());
        };
        // An id that is not one of this type's is nothing a gateway could have got from here.
        return Ok(match node::parse_node_id(model, id) {
            Some((e, key)) if e == entity => Representation::Key(e, key),
            _ => Representation::Nothing,
        });
    }
    let e = &model.entities[entity];
    let lookup = model.lookups.iter().find(|l| {
        let arguments = l.arguments(model);
        l.entity == entity
            && arguments.len() == fields.len()
            && arguments
                .iter()
                .all(|&f| fields.contains(&e.fields[f].name.as_str()))
    });
    let Some(lookup) = lookup else {
        return Err(format!(
            "names none of the keys of `{typename}`: {}",
            keys(model, entity).join(", ")
        ));
    };
    // The lookup's own rule: a caller it admits to nothing gets null, as from `node`.
    if access::grant(&lookup.access, caller) == Grant::Nothing {
        return Ok(Representation::Nothing);
    }
    let args: Args = object
        .iter()
        .filter(|(name, _)| name.as_str() != "__typename")
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    match &lookup.index {
        Some(_) => Ok(Representation::Index(lookup, args)),
        None => match resolve::key_from_args(model, entity, &args) {
            Ok(key) => Ok(Representation::Key(entity, key)),
            Err(ApiError::BadUserInput(why)) => Err(format!("has a key that is not valid: {why}")),
            Err(_) => Err("has a key that is not valid".to_owned()),
        },
    }
}

/// A reference to another subgraph's entity: the values of its key fields, in order.
struct ExternalRef(Vec<Value>);

/// The object type of another subgraph's entity, as this subgraph knows it: its key fields,
/// and (in the subgraph schema) `@key(fields: …, resolvable: false)`, since only the owning
/// subgraph resolves the rest.
pub fn external_type(ty: &'static ExternalType, directives: bool) -> Object {
    let mut object = Object::new(&ty.name);
    if let Some(d) = &ty.description {
        object = object.description(d);
    }
    for (i, (name, written)) in ty.key.iter().enumerate() {
        let type_ref = match written.strip_suffix('!') {
            Some(base) => TypeRef::named_nn(base),
            None => TypeRef::named(written),
        };
        object = object.field(Field::new(name, type_ref, move |ctx| {
            let value = ctx
                .parent_value
                .try_downcast_ref::<ExternalRef>()
                .ok()
                .and_then(|r| r.0.get(i).cloned());
            FieldFuture::Value(value.map(FieldValue::value))
        }));
    }
    if directives {
        let fields: Vec<&str> = ty.key.iter().map(|(name, _)| name.as_str()).collect();
        object = object.directive(
            Directive::new("key")
                .argument("fields", Value::String(fields.join(" ")))
                .argument("resolvable", Value::Boolean(false)),
        );
    }
    object
}

/// The field of `entity` that refers to another subgraph's entity: the key its item holds, or
/// null when the item holds none; under the rules of the fields that hold it.
pub fn reference_field(
    model: &'static Model,
    entity: EntityId,
    reference: &'static Reference,
    costs: &mut FieldCosts,
) -> Field {
    let e = &model.entities[entity];
    let target = &model
        .federation
        .as_ref()
        .expect("references exist only with [federation]")
        .types[reference.target];
    costs.object(&e.name, &reference.name, &target.name);
    let ty = match reference.nullable {
        true => TypeRef::named(&target.name),
        false => TypeRef::named_nn(&target.name),
    };
    let mut field = nullability::field(&reference.name, ty, move |ctx| {
        FieldFuture::new(async move {
            let item = ctx
                .parent_value
                .try_downcast_ref::<crate::dynamo::Item>()
                .map_err(|_| ApiError::Internal)?;
            let e = &model.entities[entity];
            let mut key = Vec::with_capacity(reference.key.len());
            for &f in &reference.key {
                let field = &e.fields[f];
                if let Some(rules) = &field.access {
                    let grant = access::grant(rules, &access::caller(&ctx));
                    if access::owns(model, entity, item, &grant) != Some(true) {
                        return Err(ApiError::Forbidden(format!(
                            "You may not see `{}.{}`.",
                            e.name, reference.name
                        ))
                        .into());
                    }
                }
                let stored = values::field_value(model, entity, f, item);
                match values::output(model, field, stored.as_deref())
                    .map_err(|_| resolve::misfit(model, entity, field))?
                {
                    Some(value) if value != Value::Null => key.push(value),
                    _ => return Ok(None),
                }
            }
            Ok(Some(FieldValue::owned_any(ExternalRef(key))))
        })
    });
    if let Some(d) = &reference.description {
        field = field.description(d);
    }
    field
}
