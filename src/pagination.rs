//! Relay paging arguments -> a page plan; fetched rows -> a page with exact `pageInfo` flags.
//!
//! Knows nothing of GraphQL or DynamoDB. The plan asks the store for one row more than the page
//! size: if that extra row exists, there is a next page. DynamoDB's `LastEvaluatedKey` alone
//! cannot tell, because DynamoDB returns one whenever it stops at `Limit`, even with nothing left.

/// The largest page size that can be configured at all.
pub const HARD_MAX_PAGE_SIZE: u32 = 1000;

/// The largest default page size: query complexity assumes at most this many items from a
/// connection that names no page size.
pub const MAX_DEFAULT_PAGE_SIZE: u32 = 100;

/// Page sizes: the default when `first` is omitted, and the largest a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    default: u32,
    max: u32,
    read_budget: u32,
    count_budget: u64,
}

/// Items DynamoDB may evaluate for one `totalCount` unless configured otherwise.
pub const DEFAULT_COUNT_BUDGET: u64 = 100_000;

/// A rejected page size configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "page sizes must satisfy 1 <= default ({default}) <= max ({max}) <= {HARD_MAX_PAGE_SIZE} \
     and default <= {MAX_DEFAULT_PAGE_SIZE}, and the read budget ({read_budget}) must exceed max"
)]
pub struct LimitsError {
    default: u32,
    max: u32,
    read_budget: u32,
}

impl PageLimits {
    /// Validates a default and maximum page size, and the read budget: how many items DynamoDB
    /// may evaluate for one page before the server stops and returns what it found.
    pub fn new(default: u32, max: u32, read_budget: u32) -> Result<Self, LimitsError> {
        if default >= 1
            && default <= max
            && default <= MAX_DEFAULT_PAGE_SIZE
            && max <= HARD_MAX_PAGE_SIZE
            && read_budget > max
        {
            Ok(Self {
                default,
                max,
                read_budget,
                count_budget: DEFAULT_COUNT_BUDGET,
            })
        } else {
            Err(LimitsError {
                default,
                max,
                read_budget,
            })
        }
    }

    /// Items DynamoDB may evaluate for one page.
    pub fn read_budget(&self) -> usize {
        self.read_budget as usize
    }

    /// These limits with `budget` items that DynamoDB may evaluate for one `totalCount`.
    pub fn with_count_budget(self, budget: u64) -> Self {
        Self {
            count_budget: budget,
            ..self
        }
    }

    /// Items DynamoDB may evaluate for one `totalCount`.
    pub fn count_budget(&self) -> u64 {
        self.count_budget
    }

    /// The default page size.
    pub fn default_size(&self) -> u32 {
        self.default
    }

    /// The largest allowed page size.
    pub fn max_size(&self) -> u32 {
        self.max
    }

    /// Turns a client's `first` into a page size, for connections that only page forward.
    pub fn forward(&self, first: Option<i32>) -> Result<PageSize, PageArgError> {
        self.size("first", first)
    }

    /// Turns Relay arguments into a plan: which way to read, how many edges, and from where.
    /// `first` goes with `after` and `last` with `before`; mixing directions is rejected.
    pub fn plan(&self, args: PageArgs) -> Result<PagePlan, PageArgError> {
        let PageArgs {
            first,
            after,
            last,
            before,
        } = args;
        if first.is_some() && last.is_some() {
            return Err(PageArgError::BothDirections);
        }
        if (first.is_some() || after.is_some()) && before.is_some()
            || (last.is_some() || before.is_some()) && after.is_some()
        {
            return Err(PageArgError::MixedCursors);
        }
        if last.is_some() || before.is_some() {
            Ok(PagePlan {
                direction: Direction::Backward,
                size: self.size("last", last)?,
                cursor: before,
            })
        } else {
            Ok(PagePlan {
                direction: Direction::Forward,
                size: self.size("first", first)?,
                cursor: after,
            })
        }
    }

    fn size(&self, arg: &'static str, n: Option<i32>) -> Result<PageSize, PageArgError> {
        match n {
            None => Ok(PageSize(self.default)),
            Some(n) if n < 0 => Err(PageArgError::Negative { arg }),
            Some(n) if n as u32 > self.max => Err(PageArgError::TooLarge { arg, max: self.max }),
            Some(n) => Ok(PageSize(n as u32)),
        }
    }
}

/// The Relay paging arguments of one connection field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageArgs {
    /// Edges after `after`.
    pub first: Option<i32>,
    /// Cursor to read forward from.
    pub after: Option<String>,
    /// Edges before `before`.
    pub last: Option<i32>,
    /// Cursor to read backward from.
    pub before: Option<String>,
}

/// Which way a page is read, relative to the connection's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `first`/`after`: towards the end of the connection.
    Forward,
    /// `last`/`before`: towards its start.
    Backward,
}

/// What to read for one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagePlan {
    /// Which way to read.
    pub direction: Direction,
    /// How many edges.
    pub size: PageSize,
    /// The cursor to read from (`after` or `before`), still sealed.
    pub cursor: Option<String>,
}

/// Rows a store read for a plan, in read order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched<T, K> {
    /// Up to `size + 1` rows, in the order they were read.
    pub rows: Vec<T>,
    /// Set when the read budget ran out before `size + 1` rows were found and the data did not
    /// end: the position after everything examined, to continue from.
    pub resume: Option<K>,
}

impl PagePlan {
    /// Turns rows read for this plan into a page in connection order with its flags.
    pub fn finish<T, K>(&self, fetched: Fetched<T, K>) -> Page<T, K> {
        let Fetched { mut rows, resume } = fetched;
        let more = rows.len() > self.size.get();
        rows.truncate(self.size.get());
        // Only when the budget stopped the read short is the resume position needed.
        let resume = if more { None } else { resume };
        let more = more || resume.is_some();
        match self.direction {
            Direction::Forward => Page {
                rows,
                has_next_page: more,
                has_previous_page: false,
                direction: self.direction,
                resume,
            },
            Direction::Backward => {
                rows.reverse();
                Page {
                    rows,
                    has_next_page: false,
                    has_previous_page: more,
                    direction: self.direction,
                    resume,
                }
            }
        }
    }
}

/// A page in connection order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T, K> {
    /// The rows, in connection order.
    pub rows: Vec<T>,
    /// More rows follow the page. Exact when reading forward; false when reading backward.
    pub has_next_page: bool,
    /// More rows precede the page. Exact when reading backward; false when reading forward.
    pub has_previous_page: bool,
    /// Which way the page was read.
    pub direction: Direction,
    /// When the read budget ran out: the position after everything examined (in read order),
    /// which becomes `endCursor` (forward) or `startCursor` (backward).
    pub resume: Option<K>,
}

impl Default for PageLimits {
    fn default() -> Self {
        Self {
            default: 20,
            max: 100,
            read_budget: 5000,
            count_budget: DEFAULT_COUNT_BUDGET,
        }
    }
}

/// A client's paging argument that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageArgError {
    /// `first` or `last` below zero.
    #[error("`{arg}` must not be negative.")]
    Negative {
        /// The argument's name.
        arg: &'static str,
    },
    /// Both `first` and `last`.
    #[error("Pass either `first` or `last`, not both.")]
    BothDirections,
    /// `after` with `last` or `before`, or `before` with `first`.
    #[error("Use `after` only with `first`, and `before` only with `last`.")]
    MixedCursors,
    /// `first` or `last` above the configured maximum.
    #[error("`{arg}` must be at most {max}.")]
    TooLarge {
        /// The argument's name.
        arg: &'static str,
        /// The configured maximum.
        max: u32,
    },
}

/// A page size within the configured limits. Zero is allowed, as in the Relay specification: it
/// returns no edges but still answers `hasNextPage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    /// The number of edges the page may hold.
    pub fn get(self) -> usize {
        self.0 as usize
    }

    /// How many rows to read: one beyond the page, to learn whether another page follows.
    pub fn fetch_count(self) -> usize {
        self.get() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(
        first: Option<i32>,
        after: Option<&str>,
        last: Option<i32>,
        before: Option<&str>,
    ) -> PageArgs {
        PageArgs {
            first,
            after: after.map(str::to_owned),
            last,
            before: before.map(str::to_owned),
        }
    }

    #[test]
    fn first_and_last_default_and_are_bounded() {
        let limits = PageLimits::new(20, 100, 1000).unwrap();
        assert_eq!(limits.forward(None), Ok(PageSize(20)));
        assert_eq!(limits.forward(Some(0)), Ok(PageSize(0)));
        assert_eq!(limits.forward(Some(100)), Ok(PageSize(100)));
        for (arg, a) in [
            ("first", args(Some(101), None, None, None)),
            ("last", args(None, None, Some(101), None)),
        ] {
            assert_eq!(
                limits.plan(a),
                Err(PageArgError::TooLarge { arg, max: 100 }),
                "{arg}"
            );
        }
        for (arg, a) in [
            ("first", args(Some(-1), None, None, None)),
            ("last", args(None, None, Some(i32::MIN), None)),
        ] {
            assert_eq!(limits.plan(a), Err(PageArgError::Negative { arg }), "{arg}");
        }
    }

    #[test]
    fn plans_pick_the_direction_and_reject_mixtures() {
        let limits = PageLimits::default();
        let plan = limits.plan(args(Some(5), Some("a"), None, None)).unwrap();
        assert_eq!(
            (plan.direction, plan.size, plan.cursor.as_deref()),
            (Direction::Forward, PageSize(5), Some("a"))
        );
        let plan = limits.plan(args(None, None, None, Some("b"))).unwrap();
        assert_eq!(
            (plan.direction, plan.size, plan.cursor.as_deref()),
            (Direction::Backward, PageSize(20), Some("b"))
        );
        assert_eq!(
            limits.plan(PageArgs::default()).unwrap().direction,
            Direction::Forward
        );
        assert_eq!(
            limits.plan(args(Some(1), None, Some(1), None)),
            Err(PageArgError::BothDirections)
        );
        for bad in [
            args(Some(1), None, None, Some("b")),
            args(None, Some("a"), Some(1), None),
            args(None, Some("a"), None, Some("b")),
        ] {
            assert_eq!(
                limits.plan(bad.clone()),
                Err(PageArgError::MixedCursors),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn limits_must_be_ordered() {
        assert!(PageLimits::new(0, 10, 100).is_err());
        assert!(PageLimits::new(11, 10, 100).is_err());
        assert!(PageLimits::new(10, HARD_MAX_PAGE_SIZE + 1, 5000).is_err());
        assert!(
            PageLimits::new(5, 10, 10).is_err(),
            "the budget must exceed the largest page"
        );
        assert!(PageLimits::new(1, 1, 2).is_ok());
    }

    fn plan(direction: Direction, size: u32) -> PagePlan {
        PagePlan {
            direction,
            size: PageSize(size),
            cursor: None,
        }
    }

    #[test]
    fn the_extra_row_decides_the_flag_in_the_read_direction() {
        assert_eq!(PageSize(3).fetch_count(), 4);
        for (fetched, rows, more) in [(0, 0, false), (1, 1, false), (3, 3, false), (4, 3, true)] {
            let fetched_rows: Vec<i32> = (0..fetched).collect();
            let forward = plan(Direction::Forward, 3).finish(Fetched::<_, ()> {
                rows: fetched_rows.clone(),
                resume: None,
            });
            assert_eq!(
                (
                    forward.rows.len(),
                    forward.has_next_page,
                    forward.has_previous_page
                ),
                (rows, more, false)
            );
            let backward = plan(Direction::Backward, 3).finish(Fetched::<_, ()> {
                rows: fetched_rows,
                resume: None,
            });
            assert_eq!(
                (
                    backward.rows.len(),
                    backward.has_next_page,
                    backward.has_previous_page
                ),
                (rows, false, more)
            );
        }
        let empty = plan(Direction::Forward, 0).finish(Fetched::<_, ()> {
            rows: vec![1],
            resume: None,
        });
        assert!(empty.rows.is_empty() && empty.has_next_page);
    }

    #[test]
    fn backward_pages_come_in_connection_order() {
        let page = plan(Direction::Backward, 2).finish(Fetched::<_, ()> {
            rows: vec![9, 8, 7],
            resume: None,
        });
        assert_eq!(page.rows, [8, 9]);
    }

    #[test]
    fn a_spent_budget_reports_more_and_keeps_the_resume_position() {
        let short = plan(Direction::Forward, 3).finish(Fetched {
            rows: vec![1],
            resume: Some("k"),
        });
        assert_eq!(
            (short.rows.len(), short.has_next_page, short.resume),
            (1, true, Some("k"))
        );
        let empty = plan(Direction::Backward, 3).finish(Fetched::<i32, _> {
            rows: vec![],
            resume: Some("k"),
        });
        assert_eq!((empty.has_previous_page, empty.resume), (true, Some("k")));
        // A full page does not need the resume position: the last edge is exact.
        let full = plan(Direction::Forward, 1).finish(Fetched {
            rows: vec![1, 2],
            resume: Some("k"),
        });
        assert_eq!((full.has_next_page, full.resume), (true, None));
    }
}
