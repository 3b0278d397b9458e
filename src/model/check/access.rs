//! `[auth]` and the `allow` rules: who may see and change what. Runs once the rest of the model
//! is checked, and fills in the model's [`Access`] values and [`AuthSpec`].
//!
//! What it makes sure of, besides each rule being well formed:
//! - rules other than `"public"` have an `[auth]` section to verify callers with;
//! - an owner rule names a non-null `String` or `ID` field of its entity;
//! - a field with rules is nullable (callers it is hidden from get null);
//! - a connection's rules admit no one its nodes' entity hides, and each of its owner rules is
//!   on the field the connection is partitioned by, so that only the caller's own items are
//!   ever read (never everyone's, filtered afterwards);
//! - the members of an item collection without rules of its own share one rule.

use std::ops::Range;

use toml::{
    Spanned,
    de::{DeTable, DeValue},
};

use super::{Problems, suggest};
use crate::model::{
    Access, AuthSpec, Connection, Entity, FieldId, FieldType, KeysSpec, Model, PartitionFrom, Read,
    Rule, Scalar,
    file::{AuthFile, ConnectionFile, ModelFile, MutationFile, RuleFile},
};

/// An `allow` list as written.
type AllowFile = Spanned<Vec<Spanned<RuleFile>>>;

/// The JOSE algorithm names a token may be signed with.
const ALGORITHMS: [&str; 9] = [
    "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "ES256", "ES384",
];

/// Checks `[auth]` and every `allow`, and records them in `model`.
pub(super) fn check(file: &ModelFile, doc: &DeTable<'_>, model: &mut Model, out: &mut Problems) {
    let auth = file.auth.as_ref();
    model.auth = auth.and_then(|a| auth_spec(a.get_ref(), a.span(), out));
    let rules = Rules {
        has_auth: auth.is_some(),
    };
    if let Some(list) = auth.and_then(|a| a.get_ref().introspection.as_ref()) {
        model.introspection = rules.access(list, None, "introspection", out);
    }
    if let Some(list) = auth.and_then(|a| a.get_ref().unlisted_documents.as_ref()) {
        model.unlisted_documents = rules.access(list, None, "unlisted_documents", out);
    }
    for (name, entity_file) in &file.entities {
        let Some(e) = model.entity_named(name.get_ref()) else {
            continue;
        };
        if let Some(list) = &entity_file.allow {
            let read = rules.access(list, Some(&model.entities[e]), "the entity", out);
            model.entities[e].read = read;
        }
        for (field_name, field_file) in &entity_file.fields {
            let Some(list) = &field_file.allow else {
                continue;
            };
            let entity = &model.entities[e];
            let Some(f) = entity
                .fields
                .iter()
                .position(|f| f.name == *field_name.get_ref())
            else {
                continue;
            };
            let access = rules.access(list, Some(entity), "the field", out);
            if !access.is_public() && !entity.fields[f].nullable {
                out.error(
                    list.span(),
                    format!(
                        "`{}.{}` is non-null, so it cannot be hidden from anyone",
                        entity.name,
                        field_name.get_ref()
                    ),
                )
                .hint(
                    "callers a field's rules leave out get null: make its type nullable (no `!`)",
                );
            }
            model.entities[e].fields[f].access = Some(access);
        }
        let mutations = &entity_file.mutations;
        let settings = |m: &Option<Spanned<MutationFile>>, which: &str| -> Option<AllowFile> {
            match m.as_ref().map(Spanned::get_ref) {
                Some(MutationFile::Settings(s)) => {
                    let rules = s.allow.as_ref()?;
                    let path = [
                        "entities",
                        name.get_ref().as_str(),
                        "mutations",
                        which,
                        "allow",
                    ];
                    Some(spanned_in(doc, &path, rules))
                }
                _ => None,
            }
        };
        if let Some(list) = settings(&mutations.create, "create") {
            let access = rules.access(&list, Some(&model.entities[e]), "the mutation", out);
            if let Some(create) = &mut model.entities[e].mutations.create {
                create.access = access;
            }
        }
        if let Some(list) = settings(&mutations.update, "update") {
            let access = rules.access(&list, Some(&model.entities[e]), "the mutation", out);
            if let Some(update) = &mut model.entities[e].mutations.update {
                update.access = access;
            }
        }
        if let Some(list) = settings(&mutations.delete, "delete") {
            let access = rules.access(&list, Some(&model.entities[e]), "the mutation", out);
            if let Some(delete) = &mut model.entities[e].mutations.delete {
                delete.access = access;
            }
        }
    }
    for (name, lookup_file) in &file.lookups {
        let Some(list) = &lookup_file.allow else {
            continue;
        };
        let Some(l) = model.lookups.iter().position(|l| l.name == *name.get_ref()) else {
            continue;
        };
        // A lookup's rules are about the caller; which items they see is the entity's `allow`.
        let access = rules.access(list, None, "a lookup", out);
        model.lookups[l].access = access;
    }
    // Connections last: they take their nodes' rules when they have none of their own.
    for (entity_name, entity_file) in &file.entities {
        let Some(e) = model.entity_named(entity_name.get_ref()) else {
            continue;
        };
        for (name, connection_file) in &entity_file.connections {
            let Some(c) = model.entities[e]
                .connections
                .iter()
                .position(|c| c.name == *name.get_ref())
            else {
                continue;
            };
            let access = rules.connection(
                model,
                &model.entities[e].connections[c],
                name,
                connection_file,
                out,
            );
            model.entities[e].connections[c].access = access;
        }
    }
    for (name, connection_file) in &file.connections {
        let Some(c) = model
            .connections
            .iter()
            .position(|c| c.name == *name.get_ref())
        else {
            continue;
        };
        let access = rules.connection(model, &model.connections[c], name, connection_file, out);
        model.connections[c].access = access;
    }
}

/// Rules read without their places (inside an untagged enum), placed by the document: the list
/// at `path` and each of its rules.
fn spanned_in(doc: &DeTable<'_>, path: &[&str], rules: &[RuleFile]) -> AllowFile {
    let mut table = doc;
    let mut found = None;
    for (i, key) in path.iter().enumerate() {
        let Some(value) = table.get(*key) else {
            break;
        };
        match value.get_ref() {
            DeValue::Table(inner) if i + 1 < path.len() => table = inner,
            _ if i + 1 == path.len() => found = Some(value),
            _ => break,
        }
    }
    let span = found.map_or(0..0, Spanned::span);
    let items: Vec<Range<usize>> = match found.map(Spanned::get_ref) {
        Some(DeValue::Array(items)) => items.iter().map(Spanned::span).collect(),
        _ => Vec::new(),
    };
    let list = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| Spanned::new(items.get(i).cloned().unwrap_or(span.clone()), rule.clone()))
        .collect();
    Spanned::new(span, list)
}

/// `[auth]`, checked.
fn auth_spec(file: &AuthFile, span: Range<usize>, out: &mut Problems) -> Option<AuthSpec> {
    let sources: Vec<(&Spanned<String>, KeysSpec)> = [
        file.jwks_url
            .as_ref()
            .map(|u| (u, KeysSpec::JwksUrl(u.get_ref().clone()))),
        file.jwks_file
            .as_ref()
            .map(|f| (f, KeysSpec::JwksFile(f.get_ref().clone()))),
        file.secret_env
            .as_ref()
            .map(|v| (v, KeysSpec::SecretEnv(v.get_ref().clone()))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let keys = match sources.as_slice() {
        [] => {
            out.error(span, "`[auth]` needs keys to verify tokens with")
                .hint("set one of `jwks_url` (your identity provider's), `jwks_file`, or `secret_env` (the environment variable holding an HS256 secret, for local development)");
            return None;
        }
        [(value, keys)] => {
            let text = value.get_ref();
            match keys {
                KeysSpec::JwksUrl(url)
                    if !(url.starts_with("https://") || url.starts_with("http://")) =>
                {
                    out.error(value.span(), format!("`{text}` is not an http(s) URL"))
                        .hint("Cognito's is `https://cognito-idp.<region>.amazonaws.com/<user pool id>/.well-known/jwks.json`");
                    return None;
                }
                KeysSpec::SecretEnv(var)
                    if var.is_empty() || var.contains('=') || var.contains('\0') =>
                {
                    out.error(value.span(), "not an environment variable's name")
                        .hint("name the variable, such as `DYNARELAY_AUTH_SECRET`; the secret itself never goes in the file");
                    return None;
                }
                KeysSpec::JwksFile(_) if text.is_empty() => {
                    out.error(value.span(), "`jwks_file` is empty")
                        .hint("name a JWKS file, relative to the model file");
                    return None;
                }
                _ if text.is_empty() => {
                    out.error(value.span(), "`jwks_url` is empty");
                    return None;
                }
                _ => keys.clone(),
            }
        }
        [(first, _), rest @ ..] => {
            let problem = out.error(
                first.span(),
                "`[auth]` takes one of `jwks_url`, `jwks_file` and `secret_env`",
            );
            for (other, _) in rest {
                problem.also(other.span(), "also set here");
            }
            return None;
        }
    };
    let shared = matches!(keys, KeysSpec::SecretEnv(_));
    let algorithms: Vec<String> = match &file.algorithms {
        None if shared => vec!["HS256".to_owned()],
        None => vec!["RS256".to_owned()],
        Some(list) => {
            if list.get_ref().is_empty() {
                out.error(
                    list.span(),
                    "no algorithm is accepted, so no token would be",
                )
                .hint(
                    "list the algorithms your identity provider signs with, such as `[\"RS256\"]`",
                );
                return None;
            }
            let mut ok = true;
            for a in list.get_ref() {
                let name = a.get_ref().as_str();
                if !ALGORITHMS.contains(&name) {
                    out.error(a.span(), format!("unknown algorithm `{name}`"))
                        .hint(suggest(name, &ALGORITHMS, "algorithms"));
                    ok = false;
                } else if name.starts_with("HS") != shared {
                    out.error(
                        a.span(),
                        if shared {
                            format!("`{name}` needs a public key; `secret_env` gives a shared secret")
                        } else {
                            format!("`{name}` needs a shared secret; keys from a JWKS are public keys")
                        },
                    )
                    .hint("HS256 goes with `secret_env`; RS256, PS256 and ES256 with a JWKS. Mixing them would let a public key be used as a secret");
                    ok = false;
                }
            }
            if !ok {
                return None;
            }
            list.get_ref().iter().map(|a| a.get_ref().clone()).collect()
        }
    };
    let leeway = file.leeway_seconds.as_ref().map_or(30, |l| *l.get_ref());
    if let Some(l) = &file.leeway_seconds
        && leeway > 300
    {
        out.error(l.span(), "at most 300 seconds")
            .hint("leeway only absorbs clock skew; a long one keeps expired tokens working");
    }
    let refresh = file
        .jwks_refresh_seconds
        .as_ref()
        .map_or(60, |r| *r.get_ref());
    if let Some(r) = &file.jwks_refresh_seconds
        && !(1..=86_400).contains(&refresh)
    {
        out.error(r.span(), "from 1 to 86400 seconds")
            .hint("the shortest time between two JWKS fetches when tokens name unknown keys");
    }
    let timeout = file.jwks_timeout_ms.as_ref().map_or(3000, |t| *t.get_ref());
    if let Some(t) = &file.jwks_timeout_ms
        && !(1..=30_000).contains(&timeout)
    {
        out.error(t.span(), "from 1 to 30000 milliseconds");
    }
    if let Some(i) = &file.issuer
        && i.get_ref().is_empty()
    {
        out.error(i.span(), "`issuer` is empty")
            .hint("leave `issuer` out to accept any issuer");
    }
    Some(AuthSpec {
        keys,
        algorithms,
        issuer: file.issuer.as_ref().map(|i| i.get_ref().clone()),
        audience: file
            .audience
            .as_ref()
            .map(|a| a.get_ref().clone())
            .unwrap_or_default(),
        leeway_seconds: leeway.min(300),
        groups_claim: file
            .groups_claim
            .as_ref()
            .map_or_else(|| "groups".to_owned(), |g| g.get_ref().clone()),
        jwks_refresh_seconds: refresh.clamp(1, 86_400),
        jwks_timeout_ms: timeout.clamp(1, 30_000),
    })
}

struct Rules {
    /// The model has `[auth]`.
    has_auth: bool,
}

impl Rules {
    /// An `allow` list, checked; rules with problems are reported and left out. `entity` is
    /// the entity owner rules are about (none for introspection).
    fn access(
        &self,
        list: &AllowFile,
        entity: Option<&Entity>,
        what: &str,
        out: &mut Problems,
    ) -> Access {
        if list.get_ref().is_empty() {
            out.error(list.span(), "an empty `allow` admits no one")
                .hint("name who may, such as `[{ groups = [\"admin\"] }]`, or leave `allow` out for everyone");
        }
        let mut rules = Vec::new();
        for rule in list.get_ref() {
            let span = rule.span();
            let checked = match rule.get_ref() {
                RuleFile::Keyword(word) => match word.as_str() {
                    "public" => Some(Rule::Public),
                    "authenticated" => Some(Rule::Authenticated),
                    other => {
                        out.error(span.clone(), format!("unknown rule `\"{other}\"`"))
                            .hint(
                                suggest(other, &["public", "authenticated"], "word rules")
                                    .replace("the word rules are", "the words are")
                                    + "; or `{ groups = [...] }`, `{ owner = \"field\" }`",
                            );
                        None
                    }
                },
                RuleFile::Groups(g) => {
                    if g.groups.is_empty() || g.groups.iter().any(String::is_empty) {
                        out.error(span.clone(), "a group rule needs group names")
                            .hint("such as `{ groups = [\"admin\"] }`");
                        None
                    } else {
                        Some(Rule::Groups(g.groups.clone()))
                    }
                }
                RuleFile::Owner(o) => match entity {
                    None => {
                        out.error(
                            span.clone(),
                            format!("{what} has no item for an owner rule to look at"),
                        )
                        .hint("use `\"authenticated\"` or `{ groups = [...] }`; owner rules go on the entity's `allow`, which decides the items every lookup, id and connection shows");
                        None
                    }
                    Some(entity) => {
                        let claim = o.claim.clone().unwrap_or_else(|| "sub".to_owned());
                        if !claim_template_is_sound(&claim) {
                            out.error(
                                span.clone(),
                                format!("owner claim `{claim}` is not a claim name or a template of claims"),
                            )
                            .hint("name one claim, such as \"sub\", or claims in braces with text between them, such as \"{sub}::{username}\"");
                            None
                        } else {
                            owner_field(entity, &o.owner, span.clone(), out)
                                .map(|field| Rule::Owner { field, claim })
                        }
                    }
                },
            };
            if let Some(checked) = checked {
                if checked != Rule::Public && !self.has_auth {
                    out.error(span, "this rule needs callers with tokens, and the model has no `[auth]`")
                        .hint("add an `[auth]` section saying how tokens are verified (`jwks_url`, `jwks_file` or `secret_env`)");
                }
                rules.push(checked);
            }
        }
        Access(rules)
    }

    /// A connection's rules: its own, or its nodes' entity's.
    fn connection(
        &self,
        model: &Model,
        connection: &Connection,
        name: &Spanned<String>,
        file: &ConnectionFile,
        out: &mut Problems,
    ) -> Access {
        let members: Vec<usize> = match &connection.collection {
            Some(collection) => collection.members.clone(),
            None => vec![connection.entity],
        };
        let node = &model.entities[connection.entity];
        let access = match &file.allow {
            Some(list) => {
                let access = self.access(list, Some(node), "the connection", out);
                for &m in &members {
                    let member = &model.entities[m];
                    if let Some(rule) = access
                        .0
                        .iter()
                        .find(|r| !admits_no_more(r, &member.read, model, node, member))
                    {
                        out.error(
                            list.span(),
                            format!(
                                "`{}` would show `{}` items to callers that `{}`'s own `allow` hides from",
                                connection.label, member.name, member.name
                            ),
                        )
                        .hint(format!(
                            "a connection's rules can only narrow its nodes' rules; the rule {} admits more than `{}`'s",
                            describe(rule, node),
                            member.name
                        ));
                    }
                }
                access
            }
            None => {
                let first = &model.entities[members[0]].read;
                // Compared as written: owner rules name fields, whose positions differ.
                let written = |m: usize| {
                    let e = &model.entities[m];
                    let mut rules: Vec<String> = e.read.0.iter().map(|r| describe(r, e)).collect();
                    rules.sort();
                    rules.dedup();
                    rules
                };
                if let Some(&other) = members.iter().find(|&&m| written(m) != written(members[0])) {
                    out.error(
                        name.span(),
                        format!(
                            "the members of `{}` have different `allow` rules (`{}` and `{}`)",
                            connection.label,
                            model.entities[members[0]].name,
                            model.entities[other].name
                        ),
                    )
                    .hint(
                        "give the collection an `allow` of its own that each member's rules admit",
                    );
                }
                first.clone()
            }
        };
        let partition = partition_field(model, connection);
        for (field, _) in access.owners() {
            if partition != Some(field) {
                let owner = &node.fields[field].name;
                let how = match (&connection.read, partition) {
                    (Read::Scan, _) => "it scans the whole table".to_owned(),
                    (Read::Query { .. }, Some(p)) => {
                        format!("it is partitioned by `{}`", node.fields[p].name)
                    }
                    (Read::Query { .. }, None) => "its partition is fixed".to_owned(),
                };
                let span = file.allow.as_ref().map_or(name.span(), Spanned::span);
                out.error(
                    span,
                    format!(
                        "`{}` cannot keep to the caller's own items by its key: the owner rule on `{owner}` needs it partitioned by `{owner}`, but {how}",
                        connection.label
                    ),
                )
                .hint(format!(
                    "reading everyone's items and dropping others' would leak their cost and timing; give the connection an `allow` of groups only (such as `[{{ groups = [\"admin\"] }}]`), or page it under a partition of `{owner}`"
                ));
            }
        }
        access
    }
}

/// Whether `rule` admits no caller that `read` does not (for items of `member`, where owner
/// rules name fields of `node`).
fn admits_no_more(
    rule: &Rule,
    read: &Access,
    model: &Model,
    node: &Entity,
    member: &Entity,
) -> bool {
    let _ = model;
    read.0.iter().any(|r| match (r, rule) {
        (Rule::Public, _) => true,
        (Rule::Authenticated, Rule::Public) => false,
        (Rule::Authenticated, _) => true,
        (Rule::Groups(wide), Rule::Groups(narrow)) => narrow.iter().all(|g| wide.contains(g)),
        (Rule::Owner { field, claim }, Rule::Owner { field: f, claim: c }) => {
            claim == c && member.fields[*field].name == node.fields[*f].name
        }
        _ => false,
    })
}

/// A rule as written, for messages.
fn describe(rule: &Rule, entity: &Entity) -> String {
    match rule {
        Rule::Public => "`\"public\"`".to_owned(),
        Rule::Authenticated => "`\"authenticated\"`".to_owned(),
        Rule::Groups(groups) => format!("`{{ groups = {groups:?} }}`"),
        Rule::Owner { field, claim } => format!(
            "`{{ owner = \"{}\", claim = \"{claim}\" }}`",
            entity.fields[*field].name
        ),
    }
}

/// The field of the node entity a connection's partition is: what an owner rule must be on.
pub(crate) fn partition_field(model: &Model, connection: &Connection) -> Option<FieldId> {
    let Read::Query { partition, .. } = &connection.read else {
        return None;
    };
    let node = &model.entities[connection.entity];
    match &partition.from {
        PartitionFrom::Argument { field, .. } => Some(*field),
        PartitionFrom::Parent(_) => match node.template_on(partition.attribute.name) {
            Some(template) => match template.facets.as_slice() {
                [only] => Some(*only),
                _ => None,
            },
            None => node.field_on(partition.attribute.name),
        },
        PartitionFrom::Constant(_) => None,
    }
}

/// The field an owner rule names: a non-null `String` or `ID` of the entity.
fn owner_field(
    entity: &Entity,
    name: &str,
    span: Range<usize>,
    out: &mut Problems,
) -> Option<FieldId> {
    let Some(f) = entity.fields.iter().position(|f| f.name == name) else {
        let names: Vec<&str> = entity.fields.iter().map(|f| f.name.as_str()).collect();
        out.error(span, format!("`{}` has no field `{name}`", entity.name))
            .hint(suggest(name, &names, "fields"));
        return None;
    };
    let field = &entity.fields[f];
    let textual = matches!(
        field.ty,
        FieldType::Scalar(Scalar::String) | FieldType::Scalar(Scalar::Id)
    );
    if !textual || field.nullable {
        out.error(
            span,
            format!(
                "the owner field `{}.{name}` must be a `String!` or `ID!`",
                entity.name
            ),
        )
        .hint("it is compared with a claim of the caller's token, such as `sub`");
        return None;
    }
    Some(f)
}

/// Whether an owner rule's claim is one claim name, or claims in braces (each named, none
/// nested) with literal text between them.
fn claim_template_is_sound(claim: &str) -> bool {
    if !claim.contains(['{', '}']) {
        return !claim.is_empty();
    }
    let mut rest = claim;
    while let Some(open) = rest.find('{') {
        if rest[..open].contains('}') {
            return false;
        }
        let Some(close) = rest[open..].find('}').map(|c| c + open) else {
            return false;
        };
        let name = &rest[open + 1..close];
        if name.is_empty() || name.contains('{') {
            return false;
        }
        rest = &rest[close + 1..];
    }
    !rest.contains('}')
}
