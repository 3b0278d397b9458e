//! Mutations: create, update and delete, and the edges they hand back.

use super::*;

impl<'f> Ctx<'f, '_> {
    pub(super) fn mutations(
        &self,
        e: EntityId,
        connections: &[Vec<(&'f str, Option<Connection>)>],
        out: &mut Problems,
    ) -> Mutations {
        let draft = &self.entities[e];
        let file = &draft.file.mutations;
        let settings = |m: &Spanned<MutationFile>| match m.get_ref() {
            MutationFile::Enabled(false) => None,
            MutationFile::Enabled(true) => Some((None, None)),
            MutationFile::Settings(s) => Some((s.description.clone(), s.edge.clone())),
        };
        let name = draft.name.get_ref();
        let create = file.create.as_ref().and_then(|m| {
            let (description, edge) = settings(m)?;
            let edge = edge.and_then(|edge| {
                let span = self
                    .value_span(&["entities", name, "mutations", "create", "edge"])
                    .unwrap_or(m.span());
                self.edge(e, &edge, span, connections, out)
            });
            Some(CreateMutation {
                description,
                edge,
                access: Access::default(),
            })
        });
        let mut other = |m: &Option<Spanned<MutationFile>>, which: &str| {
            let m = m.as_ref()?;
            let (description, edge) = settings(m)?;
            if edge.is_some() {
                let span = self
                    .value_span(&["entities", name, "mutations", which, "edge"])
                    .unwrap_or(m.span());
                out.error(span, format!("`edge` is for create mutations, not {which}"))
                    .hint("only a created item is new to a connection");
            }
            Some(Mutation {
                description,
                access: Access::default(),
            })
        };
        let update = other(&file.update, "update");
        let delete = other(&file.delete, "delete");
        Mutations {
            create,
            update,
            delete,
        }
    }

    /// A create mutation's `edge`: `Entity.connection`, a connection of `Entity` whose nodes are
    /// entity `e` and whose partition is a field of `Entity`.
    pub(super) fn edge(
        &self,
        e: EntityId,
        edge: &str,
        span: Range<usize>,
        connections: &[Vec<(&'f str, Option<Connection>)>],
        out: &mut Problems,
    ) -> Option<(EntityId, usize)> {
        let Some((owner_name, connection_name)) = edge.split_once('.') else {
            out.error(
                span,
                format!("`edge = \"{edge}\"` is not `Entity.connection`"),
            )
            .hint("name a connection of an entity, such as \"Customer.orders\"");
            return None;
        };
        let owner = self.entity_named(owner_name, span.clone(), out)?;
        let Some(position) = connections[owner]
            .iter()
            .position(|(n, _)| *n == connection_name)
        else {
            let names: Vec<&str> = connections[owner].iter().map(|(n, _)| *n).collect();
            out.error(
                span,
                format!("entity `{owner_name}` has no connection `{connection_name}`"),
            )
            .hint(suggest(
                connection_name,
                &names,
                "connections of the entity",
            ));
            return None;
        };
        let connection = connections[owner][position].1.as_ref()?;
        let entity = &self.entities[e].entity.name;
        if connection.entity != e {
            out.error(
                span,
                format!("the nodes of `{edge}` are not `{entity}` items"),
            )
            .hint("the edge of a create mutation is in a connection of the created entity");
            return None;
        }
        let from_parent = matches!(
            connection.read,
            Read::Query {
                partition: Partition {
                    from: PartitionFrom::Parent(_),
                    ..
                },
                ..
            }
        );
        if !from_parent {
            out.error(
                span,
                format!("the partition of `{edge}` is not a field of `{owner_name}`"),
            )
            .hint("an edge needs a connection whose partition comes from `field = ...`");
            return None;
        }
        Some((owner, position))
    }
}
