//! One page of a Relay connection: plan it from the Relay arguments, open the cursor against the
//! connection's binding (rejecting foreign or forged cursors before any read), read, and seal
//! each edge's cursor.

use super::error::{ApiError, ApiResult};
use crate::{
    cursor::{Binding, CursorCodec, Key, KeyShape},
    dynamo::{Item, ReadPlan, ReadSpec, Row, Store},
    metrics::Metrics,
    model::EntityId,
    pagination::{Direction, Page, PageArgs, PageLimits, PagePlan},
    telemetry,
};
use tracing::Instrument;

/// A page as the `…Connection` object type resolves it.
#[derive(Debug, Clone)]
pub struct PageValue {
    /// The edges, in connection order.
    pub edges: Vec<EdgeValue>,
    /// `pageInfo`.
    pub page_info: PageInfo,
    /// What `totalCount` counts, for a connection that offers it.
    pub count: Option<Count>,
}

/// The read `totalCount` counts, and how many items it may evaluate.
#[derive(Debug, Clone)]
pub struct Count {
    /// The connection's read for its arguments, without cursor, page size or projection.
    pub spec: std::sync::Arc<ReadSpec<'static>>,
    /// Items DynamoDB may evaluate for the count.
    pub budget: u64,
}

/// An edge: a sealed cursor and its item.
#[derive(Debug, Clone)]
pub struct EdgeValue {
    /// The cursor of this item's position.
    pub cursor: String,
    /// The item.
    pub item: Item,
    /// The item's entity, when the read already told it apart from others in a shared table.
    pub entity: Option<EntityId>,
}

/// Where a page sits in its connection, and the cursors to continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageInfo {
    /// More items follow this page.
    pub has_next_page: bool,
    /// Items precede this page.
    pub has_previous_page: bool,
    /// The cursor to pass as `before` for the previous page.
    pub start_cursor: Option<String>,
    /// The cursor to pass as `after` for the next page.
    pub end_cursor: Option<String>,
}

/// What a connection needs to serve a page besides the request's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    /// Page sizes and the read budget for this connection.
    pub limits: &'a PageLimits,
    /// Seals and opens cursors.
    pub codec: &'a CursorCodec,
    /// Reads items.
    pub store: &'a Store,
}

/// A page whose arguments and cursor were accepted, ready to be read.
#[derive(Debug)]
pub struct Opened {
    plan: PagePlan,
    start: Option<Key>,
}

impl Opened {
    /// The key the page starts after, from its cursor.
    pub fn start(&self) -> Option<&Key> {
        self.start.as_ref()
    }
}

/// Why a page was refused before anything was read.
#[derive(Debug)]
pub enum Refused {
    /// The page arguments (sizes, both directions at once, ...).
    Args(ApiError),
    /// The cursor is malformed, forged, expired or from another connection.
    Cursor,
}

impl Refused {
    /// The error for the client, counting a rejected cursor on `connection` in `metrics`.
    pub fn into_error(self, metrics: &Metrics, connection: &'static str) -> ApiError {
        match self {
            Refused::Args(err) => err,
            Refused::Cursor => {
                metrics.cursor_rejected(connection);
                ApiError::invalid_cursor()
            }
        }
    }
}

impl Reader<'_> {
    /// Checks the page arguments and opens the cursor against the connection's binding, with
    /// no side effect: nothing is read or counted.
    pub fn open(
        &self,
        args: PageArgs,
        binding: &Binding,
        shape: KeyShape,
    ) -> Result<Opened, Refused> {
        let plan = self
            .limits
            .plan(args)
            .map_err(|err| Refused::Args(err.into()))?;
        let start = plan
            .cursor
            .as_deref()
            .map(|c| self.codec.decode(c, shape, binding))
            .transpose()
            .map_err(|_| Refused::Cursor)?;
        Ok(Opened { plan, start })
    }

    /// Reads an opened page and seals its cursors.
    pub async fn read(
        &self,
        opened: Opened,
        binding: &Binding,
        descending: bool,
        spec: ReadSpec<'_>,
    ) -> ApiResult<PageValue> {
        let Opened { plan, start } = opened;
        let span = telemetry::page_span(
            binding.connection(),
            spec.table,
            spec.index,
            plan.size.get(),
            plan.direction == Direction::Forward,
            plan.cursor.is_some(),
        );
        let fetched = self
            .store
            .read_page(
                spec,
                ReadPlan {
                    start,
                    ascending: descending != (plan.direction == Direction::Forward),
                    want: plan.size.fetch_count(),
                    budget: self.limits.read_budget(),
                },
            )
            .instrument(span.clone())
            .await?;
        let page = plan.finish(fetched);
        let value = seal(page, plan.cursor.as_deref(), self.codec, binding);
        telemetry::record_page(
            &span,
            value.edges.len(),
            value.page_info.has_next_page,
            value.page_info.has_previous_page,
        );
        Ok(value)
    }
}

/// Builds a page: each edge's cursor seals its own row's key, bound to the connection. When the
/// read budget ran out, the cursor on the reading side seals the position after everything
/// examined instead, so clients continue without re-reading or stalling.
///
/// `startCursor` and `endCursor` are computed here rather than derived from the first and last
/// edge (as async-graphql's own connection type does): a page that examined items but kept none
/// must still hand Relay and Apollo clients a position to continue from.
pub fn seal(
    page: Page<Row<Item>, Key>,
    given: Option<&str>,
    codec: &CursorCodec,
    binding: &Binding,
) -> PageValue {
    let edges: Vec<EdgeValue> = page
        .rows
        .into_iter()
        .map(|row| EdgeValue {
            cursor: codec.encode(&row.key, binding),
            item: row.record,
            entity: row.kind.map(|kind| kind as EntityId),
        })
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
    PageValue {
        count: None,
        edges,
        page_info: PageInfo {
            has_next_page: page.has_next_page,
            has_previous_page: page.has_previous_page,
            start_cursor,
            end_cursor,
        },
    }
}
