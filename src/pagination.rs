//! Relay paging arguments -> a page plan; fetched rows -> a page with exact `pageInfo` flags.
//!
//! Knows nothing of GraphQL or DynamoDB. The plan asks the store for one row more than the page
//! size: if that extra row exists, there is a next page. DynamoDB's `LastEvaluatedKey` alone
//! cannot tell, because DynamoDB returns one whenever it stops at `Limit`, even with nothing left.

/// The largest page size that can be configured at all.
pub const HARD_MAX_PAGE_SIZE: u32 = 1000;

/// Page sizes: the default when `first` is omitted, and the largest a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    default: u32,
    max: u32,
}

/// A rejected page size configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("page sizes must satisfy 1 <= default ({default}) <= max ({max}) <= {HARD_MAX_PAGE_SIZE}")]
pub struct LimitsError {
    default: u32,
    max: u32,
}

impl PageLimits {
    /// Validates a default and maximum page size.
    pub fn new(default: u32, max: u32) -> Result<Self, LimitsError> {
        if default >= 1 && default <= max && max <= HARD_MAX_PAGE_SIZE {
            Ok(Self { default, max })
        } else {
            Err(LimitsError { default, max })
        }
    }

    /// The default page size.
    pub fn default_size(&self) -> u32 {
        self.default
    }

    /// The largest allowed page size.
    pub fn max_size(&self) -> u32 {
        self.max
    }

    /// Turns a client's `first` into a page size.
    pub fn forward(&self, first: Option<i32>) -> Result<PageSize, PageArgError> {
        match first {
            None => Ok(PageSize(self.default)),
            Some(n) if n < 0 => Err(PageArgError::Negative { arg: "first" }),
            Some(n) if n as u32 > self.max => Err(PageArgError::TooLarge {
                arg: "first",
                max: self.max,
            }),
            Some(n) => Ok(PageSize(n as u32)),
        }
    }
}

impl Default for PageLimits {
    fn default() -> Self {
        Self {
            default: 20,
            max: 100,
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

    /// Splits rows read in connection order into the page and whether more rows follow it.
    pub fn finish<T>(self, mut rows: Vec<T>) -> ForwardPage<T> {
        let has_next_page = rows.len() > self.get();
        rows.truncate(self.get());
        ForwardPage {
            rows,
            has_next_page,
        }
    }
}

/// A page read forwards (`first`/`after`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardPage<T> {
    /// The rows of the page, in connection order.
    pub rows: Vec<T>,
    /// Whether rows follow the page: exact, because one extra row was asked for.
    pub has_next_page: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_defaults_and_is_bounded() {
        let limits = PageLimits::new(20, 100).unwrap();
        assert_eq!(limits.forward(None), Ok(PageSize(20)));
        assert_eq!(limits.forward(Some(0)), Ok(PageSize(0)));
        assert_eq!(limits.forward(Some(100)), Ok(PageSize(100)));
        assert_eq!(
            limits.forward(Some(101)),
            Err(PageArgError::TooLarge {
                arg: "first",
                max: 100
            })
        );
        assert_eq!(
            limits.forward(Some(-1)),
            Err(PageArgError::Negative { arg: "first" })
        );
        assert_eq!(
            limits.forward(Some(i32::MIN)),
            Err(PageArgError::Negative { arg: "first" })
        );
    }

    #[test]
    fn limits_must_be_ordered() {
        assert!(PageLimits::new(0, 10).is_err());
        assert!(PageLimits::new(11, 10).is_err());
        assert!(PageLimits::new(10, HARD_MAX_PAGE_SIZE + 1).is_err());
        assert!(PageLimits::new(1, 1).is_ok());
    }

    #[test]
    fn the_extra_row_decides_has_next_page() {
        let size = PageSize(3);
        assert_eq!(size.fetch_count(), 4);
        for (fetched, rows, has_next) in [(0, 0, false), (1, 1, false), (3, 3, false), (4, 3, true)]
        {
            let page = size.finish((0..fetched).collect::<Vec<_>>());
            assert_eq!(
                (page.rows.len(), page.has_next_page),
                (rows, has_next),
                "fetched {fetched}"
            );
        }
        let empty = PageSize(0).finish(vec![1]);
        assert!(empty.rows.is_empty() && empty.has_next_page);
    }
}
