//! The Relay connection types shared by every paginated field.

use std::borrow::Cow;

use async_graphql::{
    Object, OutputType, SimpleObject, TypeName,
    connection::{Edge, EmptyFields},
};

use crate::{
    cursor::{Binding, CursorCodec},
    dynamo::Row,
    pagination::ForwardPage,
};

/// A page of a Relay connection.
///
/// Our own type rather than async-graphql's `Connection`, which always derives `startCursor` and
/// `endCursor` from the first and last edge. Relay and Apollo clients continue from `endCursor`,
/// and a page that examined items but kept none (its read budget ran out under a filter) must
/// still hand them a position to continue from; this type carries `PageInfo` as computed.
pub struct Connection<N: OutputType> {
    edges: Vec<Edge<String, N, EmptyFields>>,
    page_info: PageInfo,
}

/// Where a page sits in its connection, and the cursors to continue from.
#[derive(Debug, Clone, PartialEq, Eq, SimpleObject)]
pub struct PageInfo {
    /// True when more items follow this page. Exact when paging forward with `first`: the server
    /// reads one item past the page to know. Pass `endCursor` as `after` to get them.
    pub has_next_page: bool,
    /// True when items precede this page. Paging forward, this is false: the server does not
    /// spend a read to find out.
    pub has_previous_page: bool,
    /// The cursor of the first edge, or null when there are no edges.
    pub start_cursor: Option<String>,
    /// The cursor to pass as `after` for the next page: the cursor of the last edge.
    pub end_cursor: Option<String>,
}

#[Object(name_type)]
impl<N: OutputType> Connection<N> {
    /// The items of this page with their cursors, in connection order.
    async fn edges(&self) -> &[Edge<String, N, EmptyFields>] {
        &self.edges
    }

    /// The items of this page without cursors: a shortcut for `edges { node }`.
    async fn nodes(&self) -> Vec<&N> {
        self.edges.iter().map(|edge| &edge.node).collect()
    }

    /// Paging state and the cursors to continue from.
    async fn page_info(&self) -> &PageInfo {
        &self.page_info
    }
}

impl<N: OutputType> std::fmt::Debug for Connection<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("edges", &self.edges.len())
            .field("page_info", &self.page_info)
            .finish()
    }
}

impl<N: OutputType> TypeName for Connection<N> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Connection", N::type_name()).into()
    }
}

impl<N: OutputType> Connection<N> {
    /// Builds a forward page: each edge's cursor seals its own row's key, bound to the
    /// connection.
    pub fn forward<T>(
        page: ForwardPage<Row<T>>,
        codec: &CursorCodec,
        binding: &Binding,
        node: impl Fn(T) -> N,
    ) -> Self {
        let edges: Vec<_> = page
            .rows
            .into_iter()
            .map(|row| Edge::new(codec.encode(&row.key, binding), node(row.record)))
            .collect();
        let page_info = PageInfo {
            has_next_page: page.has_next_page,
            has_previous_page: false,
            start_cursor: edges.first().map(|e| e.cursor.clone()),
            end_cursor: edges.last().map(|e| e.cursor.clone()),
        };
        Self { edges, page_info }
    }
}
