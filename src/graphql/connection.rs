//! The Relay connection types shared by every paginated field.

use std::borrow::Cow;

use async_graphql::{
    Object, OutputType, SimpleObject, TypeName,
    connection::{Edge, EmptyFields},
};

use std::future::Future;

use async_graphql::Context;

use super::error::{ApiError, ApiResult};
use crate::{
    cursor::{Binding, CursorCodec, Key, KeyShape},
    dynamo::{ReadPlan, Row, Store, StoreError},
    pagination::{Direction, Fetched, Page, PageArgs, PageLimits},
};

/// Serves one page of a connection: plans it from the Relay arguments, opens the cursor against
/// `binding` (rejecting foreign or forged ones before any read), reads with `read`, and seals
/// the edges. `descending` is the connection's order; backward pages read the other way.
pub async fn resolve<T, N, Fut>(
    ctx: &Context<'_>,
    args: PageArgs,
    binding: Binding,
    shape: KeyShape,
    descending: bool,
    read: impl FnOnce(ReadPlan) -> Fut,
    node: impl Fn(T) -> N,
) -> ApiResult<Connection<N>>
where
    N: OutputType,
    Fut: Future<Output = Result<Fetched<Row<T>, Key>, StoreError>>,
{
    let limits = ctx.data::<PageLimits>().map_err(|_| ApiError::Internal)?;
    let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let plan = limits.plan(args)?;
    let start = plan
        .cursor
        .as_deref()
        .map(|c| {
            codec.decode(c, shape, &binding).map_err(|_| {
                if let Ok(store) = ctx.data::<Store>() {
                    store.metrics().cursor_rejected(binding.connection());
                }
                ApiError::invalid_cursor()
            })
        })
        .transpose()?;
    let fetched = read(ReadPlan {
        start,
        ascending: descending != (plan.direction == Direction::Forward),
        want: plan.size.fetch_count(),
        budget: limits.read_budget(),
    })
    .await?;
    let page = plan.finish(fetched);
    Ok(Connection::from_page(
        page,
        plan.cursor.as_deref(),
        codec,
        &binding,
        node,
    ))
}

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
    /// True when more items follow this page: pass `endCursor` as `after` to get them. Exact
    /// when paging with `first` (the server reads one item past the page). With `last` it is
    /// false: the server does not spend a read to find out.
    pub has_next_page: bool,
    /// True when items precede this page: pass `startCursor` as `before` to get them. Exact when
    /// paging with `last`; with `first` it is false.
    pub has_previous_page: bool,
    /// The cursor to pass as `before` for the previous page: the first edge's cursor, or, when a
    /// backward page ran out of its read budget, the position before everything examined.
    pub start_cursor: Option<String>,
    /// The cursor to pass as `after` for the next page: the last edge's cursor, or, when a
    /// forward page ran out of its read budget (its edges may then be few or none), the position
    /// after everything examined.
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

impl<N: OutputType> Connection<N> {
    /// The page's nodes, in order.
    pub fn page_nodes(&self) -> impl Iterator<Item = &N> {
        self.edges.iter().map(|edge| &edge.node)
    }
}

impl<N: OutputType> TypeName for Connection<N> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Connection", N::type_name()).into()
    }
}

impl<N: OutputType> Connection<N> {
    /// Builds a page: each edge's cursor seals its own row's key, bound to the connection. When
    /// the read budget ran out, the cursor on the reading side seals the position after
    /// everything examined instead, so clients continue without re-reading or stalling.
    pub fn from_page<T>(
        page: Page<Row<T>, Key>,
        given: Option<&str>,
        codec: &CursorCodec,
        binding: &Binding,
        node: impl Fn(T) -> N,
    ) -> Self {
        let edges: Vec<_> = page
            .rows
            .into_iter()
            .map(|row| Edge::new(codec.encode(&row.key, binding), node(row.record)))
            .collect();
        // With no edges and a full budget (`first: 0`), the position has not moved: the reading
        // side keeps the cursor the client sent.
        let resume = match page.resume {
            Some(key) => Some(codec.encode(&key, binding)),
            None if edges.is_empty() => given.map(str::to_owned),
            None => None,
        };
        let (start_cursor, end_cursor) = match page.direction {
            Direction::Forward => (
                edges.first().map(|e| e.cursor.clone()),
                resume.or_else(|| edges.last().map(|e| e.cursor.clone())),
            ),
            Direction::Backward => (
                resume.or_else(|| edges.first().map(|e| e.cursor.clone())),
                edges.last().map(|e| e.cursor.clone()),
            ),
        };
        let page_info = PageInfo {
            has_next_page: page.has_next_page,
            has_previous_page: page.has_previous_page,
            start_cursor,
            end_cursor,
        };
        Self { edges, page_info }
    }
}
