//! The model's `allow` rules applied to a request's caller: what a rule list grants, whether an
//! item may be seen (decided from its key before reading it whenever the key says enough), and
//! the claim an owner rule binds a read or a write to.

use std::borrow::Cow;

use async_graphql::Context;

use super::{error::ApiError, values};
use crate::{
    auth::Caller,
    dynamo::Item,
    model::{Access, EntityId, FieldId, Model, Rule},
};

/// What a rule list grants a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Everything the rules cover.
    All,
    /// Only items whose field holds the caller's claim: any of these (field, claim value).
    Own(Vec<(FieldId, String)>),
    /// Nothing.
    Nothing,
}

/// The request's caller (anonymous when the server verifies no tokens).
pub fn caller<'a>(ctx: &'a Context<'_>) -> Cow<'a, Caller> {
    match ctx.data_opt::<Caller>() {
        Some(caller) => Cow::Borrowed(caller),
        None => Cow::Owned(Caller::Anonymous),
    }
}

/// What `access` grants `caller`.
pub fn grant(access: &Access, caller: &Caller) -> Grant {
    let principal = caller.principal();
    let mut own = Vec::new();
    for rule in &access.0 {
        match rule {
            Rule::Public => return Grant::All,
            Rule::Authenticated if principal.is_some() => return Grant::All,
            Rule::Groups(groups)
                if principal.is_some_and(|p| groups.iter().any(|g| p.in_group(g))) =>
            {
                return Grant::All;
            }
            Rule::Owner { field, claim } => {
                if let Some(value) = principal.and_then(|p| p.owner_value(claim)) {
                    own.push((*field, value.into_owned()));
                }
            }
            _ => {}
        }
    }
    if own.is_empty() {
        Grant::Nothing
    } else {
        Grant::Own(own)
    }
}

/// The error for a caller that `access` does not admit at all.
pub fn forbidden(what: &str) -> ApiError {
    ApiError::Forbidden(format!("You may not use {what}."))
}

/// Whether `caller` may see `item`, an item of `entity`.
pub fn may_see(model: &Model, entity: EntityId, item: &Item, caller: &Caller) -> bool {
    owns(
        model,
        entity,
        item,
        &grant(&model.entities[entity].read, caller),
    ) == Some(true)
}

/// Whether `grant` covers `item` of `entity`; `None` when the item (such as a bare key) does
/// not hold an owner field the grant needs.
pub fn owns(model: &Model, entity: EntityId, item: &Item, grant: &Grant) -> Option<bool> {
    match grant {
        Grant::All => Some(true),
        Grant::Nothing => Some(false),
        Grant::Own(claims) => {
            let mut unknown = false;
            for (field, value) in claims {
                match owner_holds(model, entity, *field, item, value) {
                    Some(true) => return Some(true),
                    Some(false) => {}
                    None => unknown = true,
                }
            }
            (!unknown).then_some(false)
        }
    }
}

/// Whether `caller` may see the item of `entity` at `key` (its key attributes), decided before
/// reading it: `Some(false)` when the key alone shows it is someone else's, `Some(true)` when
/// it shows it may be seen, `None` when only the item can tell.
pub fn may_see_key(model: &Model, entity: EntityId, key: &Item, caller: &Caller) -> Option<bool> {
    owns(
        model,
        entity,
        key,
        &grant(&model.entities[entity].read, caller),
    )
}

/// Whether owner field `field` of `item` holds `claim`; `None` when the item (such as a bare
/// key) shows neither the field's attribute nor a key it is a facet of. Where the item has both,
/// both must hold the claim (the key in its own case): an item whose attribute and key name
/// different owners is neither's, whichever of the two a reader trusts.
fn owner_holds(
    model: &Model,
    entity: EntityId,
    field: FieldId,
    item: &Item,
    claim: &str,
) -> Option<bool> {
    let e = &model.entities[entity];
    let own = item.get(&e.fields[field].attribute);
    let key = values::key_facet(model, entity, field, item);
    if own.is_none() && key.is_none() {
        return None;
    }
    let own_holds = own.is_none_or(|v| values::plain_text(v) == Some(claim));
    let key_holds = key.is_none_or(|v| {
        let case = e
            .facet_source(field)
            .map(|t| t.template.case())
            .unwrap_or_default();
        values::plain_text(&v) == Some(&*case.apply(claim))
    });
    Some(own_holds && key_holds)
}
