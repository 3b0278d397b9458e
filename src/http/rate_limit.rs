//! Per-caller rate limits on `/graphql`: requests per second, and DynamoDB capacity units per
//! second, each with a burst, enforced with `governor`'s GCRA buckets before a request is parsed
//! or reads anything.
//!
//! - **Who is a caller:** the verified token's subject when the request has a valid bearer
//!   token, else the client's address (an IPv6 client by its /64, which one host usually holds
//!   whole). The address is the TCP peer's, unless that peer is a configured trusted proxy: then
//!   it is the rightmost address of `X-Forwarded-For` that is not itself a trusted proxy.
//! - **Addresses are limited only when asked** ([`RateLimitSettings::limit_addresses`]): behind a
//!   load balancer that is not a trusted proxy, every anonymous client has the balancer's address,
//!   and limiting that address would throttle all of them as one caller. The first request that
//!   arrives with `X-Forwarded-For` from a peer that is not trusted is logged, once, with the
//!   setting that would tell its clients apart.
//! - **Capacity units** are known only once a request has run. A request is admitted while its
//!   caller has at least one unit left, and takes that unit at once (so that concurrent requests
//!   cannot all pass on the same last unit); once it has run, the units DynamoDB reported it
//!   consumed, rounded up, are charged, counting the one already taken (and that one is given
//!   back when it consumed nothing). The charge is never refused: a request that consumed more
//!   than the bucket holds empties it, and the caller's next request is refused until it refills.
//! - **Bounded memory:** the buckets live in one least-recently-used table of at most
//!   `max_callers` callers (see [`CallerTable`]).

use std::{
    hash::Hash,
    net::{IpAddr, Ipv6Addr, SocketAddr},
    num::{NonZeroU32, NonZeroUsize},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use axum::http::{HeaderMap, HeaderName};
use governor::{Quota, clock::DefaultClock, nanos::Nanos, state::StateStore};
use ipnet::IpNet;
use lru::LruCache;
use prometheus_client::metrics::gauge::Gauge;
use sha2::{Digest, Sha256};

use crate::{
    auth::Caller,
    metrics::{Metrics, Usage},
};

/// One limit: a sustained rate per second, and the burst a caller may spend at once (the
/// bucket's size). Off when either is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    /// Refilled per second.
    pub per_second: u32,
    /// The most that may be spent at once.
    pub burst: u32,
}

impl Limit {
    /// No limit.
    pub const OFF: Self = Self {
        per_second: 0,
        burst: 0,
    };

    /// `per_second` with a burst of `burst`.
    pub const fn new(per_second: u32, burst: u32) -> Self {
        Self { per_second, burst }
    }

    /// Whether the limit is on.
    pub fn is_on(self) -> bool {
        self.per_second > 0 && self.burst > 0
    }

    /// Orders limits from the strictest to the most generous: off is the most generous, then by
    /// rate, then by burst.
    fn generosity(self) -> (bool, u32, u32) {
        (!self.is_on(), self.per_second, self.burst)
    }

    fn quota(self) -> Option<Quota> {
        let per_second = NonZeroU32::new(self.per_second)?;
        let burst = NonZeroU32::new(self.burst)?;
        Some(Quota::per_second(per_second).allow_burst(burst))
    }
}

/// The limits of one kind of caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallerLimits {
    /// GraphQL requests.
    pub requests: Limit,
    /// DynamoDB capacity units the caller's requests consume.
    pub read_units: Limit,
}

/// Who is limited, and how much. The default limits nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitSettings {
    /// The limits of anonymous callers and of callers in no listed group.
    pub default: CallerLimits,
    /// Limits by group (from the token's groups claim). A caller in several listed groups gets,
    /// for each limit, the most generous of its groups'.
    pub groups: Vec<(String, CallerLimits)>,
    /// Peers whose `X-Forwarded-For` is believed: load balancers and reverse proxies.
    pub trusted_proxies: Vec<IpNet>,
    /// Whether anonymous callers, told apart by address, are limited at all (callers with a
    /// verified token always are, by subject).
    pub limit_addresses: bool,
    /// The most callers whose buckets are kept; the least recently seen are forgotten first.
    pub max_callers: NonZeroUsize,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            default: CallerLimits::default(),
            groups: Vec::new(),
            trusted_proxies: Vec::new(),
            limit_addresses: false,
            max_callers: NonZeroUsize::new(100_000).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

impl RateLimitSettings {
    fn any_on(&self) -> bool {
        let on = |limits: &CallerLimits| limits.requests.is_on() || limits.read_units.is_on();
        on(&self.default) || self.groups.iter().any(|(_, limits)| on(limits))
    }
}

/// Who a request is charged to. Small and `Copy`, so that looking up a known caller allocates
/// nothing: a subject is kept as a 128-bit digest of itself rather than as its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum CallerKey {
    /// A verified token's subject.
    Subject([u8; 16]),
    /// A client address (an IPv6 address with its last 64 bits cleared).
    Address(IpAddr),
    /// A request without a peer address (a load balancer's Lambda event without
    /// `X-Forwarded-For`, or the router driven without a listener, as in tests that call it
    /// directly): all such requests are one caller.
    UnknownAddress,
}

impl CallerKey {
    fn subject(subject: &str) -> Self {
        let digest = Sha256::digest(subject.as_bytes());
        let mut key = [0; 16];
        key.copy_from_slice(&digest[..16]);
        Self::Subject(key)
    }

    fn address(ip: IpAddr) -> Self {
        Self::Address(match ip.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
            v4 => v4,
        })
    }
}

/// The buckets of both limits of one caller: each a GCRA "theoretical arrival time", `None`
/// until the caller is first checked against that limit.
type Cells = [Option<Nanos>; 2];
const REQUESTS: usize = 0;
const READ_UNITS: usize = 1;

/// governor's keyed state store, bounded: at most `max_callers` callers, in one LRU map behind
/// a mutex, the least recently seen evicted first.
///
/// governor's own keyed store (a `DashMap`) keeps every key it has seen until it is pruned, so
/// a client rotating addresses (or anyone with many tokens) could grow it without bound. Here a
/// new caller past the bound pushes out the one seen longest ago; an evicted caller that comes
/// back starts with full buckets, which is the price of the bound: it should be well above the
/// number of callers active within a bucket's refill time. Each check takes the lock once, and
/// looking up a known caller allocates nothing.
#[derive(Clone, Debug)]
struct CallerTable {
    cells: Arc<Mutex<LruCache<CallerKey, Cells>>>,
    /// How many callers are tracked, for `/metrics`.
    tracked: Gauge,
}

impl CallerTable {
    fn new(max_callers: NonZeroUsize, tracked: Gauge) -> Self {
        Self {
            cells: Arc::new(Mutex::new(LruCache::new(max_callers))),
            tracked,
        }
    }

    /// The store of one of the caller's buckets.
    fn slot(&self, slot: usize) -> Slot {
        Slot {
            table: self.clone(),
            slot,
        }
    }

    /// Changes a bucket's state in place, if the caller is tracked.
    fn update(&self, key: &CallerKey, slot: usize, change: impl FnOnce(Nanos) -> Nanos) {
        let mut cells = self.cells.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cell) = cells.get_mut(key).and_then(|cells| cells[slot].as_mut()) {
            *cell = change(*cell);
        }
    }
}

/// One of the two buckets of every caller in a [`CallerTable`], as governor's state store.
#[derive(Debug)]
struct Slot {
    table: CallerTable,
    slot: usize,
}

impl StateStore for Slot {
    type Key = CallerKey;

    fn measure_and_replace<T, F, E>(&self, key: &CallerKey, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        // A poisoned lock only means a panic elsewhere mid-update; the cells are plain numbers.
        let mut cells = self
            .table
            .cells
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cells) = cells.get_mut(key) {
            let (outcome, next) = f(cells[self.slot])?;
            cells[self.slot] = Some(next);
            return Ok(outcome);
        }
        let (outcome, next) = f(None)?;
        let mut new = [None; 2];
        new[self.slot] = Some(next);
        cells.push(*key, new);
        self.table
            .tracked
            .set(i64::try_from(cells.len()).unwrap_or(i64::MAX));
        Ok(outcome)
    }
}

type Bucket = governor::RateLimiter<CallerKey, Slot, DefaultClock>;

/// One limit's buckets, with the limit.
#[derive(Debug)]
struct Limiter {
    limit: Limit,
    buckets: Bucket,
}

impl Limiter {
    fn new(limit: Limit, table: &CallerTable, slot: usize) -> Option<Self> {
        Some(Self {
            limit,
            buckets: Bucket::new(limit.quota()?, table.slot(slot), DefaultClock::default()),
        })
    }

    /// Takes one unit, or says how long until one is there.
    fn take_one(&self, key: &CallerKey) -> Result<(), Duration> {
        self.buckets
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(Instant::now()))
    }

    /// Takes `units`, or as many as the bucket holds.
    fn take_up_to(&self, key: &CallerKey, mut units: u32) {
        // governor takes all of a batch or none of it; halving the batch on each refusal takes
        // what the bucket holds in a few steps.
        let mut batch = units.min(self.limit.burst);
        while let Some(n) = NonZeroU32::new(batch) {
            match self.buckets.check_key_n(key, n) {
                Ok(Ok(())) => {
                    units -= batch;
                    batch = batch.min(units);
                }
                _ => batch /= 2,
            }
        }
    }

    /// Gives one unit back.
    fn give_back_one(&self, table: &CallerTable, key: &CallerKey, slot: usize) {
        let t = Nanos::from(self.buckets_interval());
        table.update(key, slot, |tat| tat.saturating_sub(t));
    }

    fn buckets_interval(&self) -> Duration {
        self.limit
            .quota()
            .map_or(Duration::ZERO, |quota| quota.replenish_interval())
    }
}

/// Both limiters of one kind of caller; `None` where the limit is off.
#[derive(Debug)]
struct Limiters {
    requests: Option<Limiter>,
    read_units: Option<Limiter>,
}

impl Limiters {
    fn new(limits: CallerLimits, table: &CallerTable) -> Self {
        Self {
            requests: Limiter::new(limits.requests, table, REQUESTS),
            read_units: Limiter::new(limits.read_units, table, READ_UNITS),
        }
    }
}

/// Which limit refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    /// Too many requests.
    Requests,
    /// Too many capacity units consumed.
    ReadUnits,
}

impl Reason {
    /// The metric label.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::ReadUnits => "read_units",
        }
    }
}

/// A request refused by a limit, and when to try again.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) reason: Reason,
    pub(super) retry_after: Duration,
}

impl Refusal {
    /// `Retry-After`: whole seconds, rounded up, at least 1.
    pub(super) fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        secs.max(1)
    }
}

/// The per-caller limits of a server.
#[derive(Debug)]
pub(super) struct RateLimiter {
    table: CallerTable,
    default: Limiters,
    /// Listed groups, each with its limiters.
    groups: Vec<(String, CallerLimits, Limiters)>,
    trusted_proxies: Vec<IpNet>,
    /// Whether anonymous callers are limited, by address.
    limit_addresses: bool,
    /// Whether a request carrying `X-Forwarded-For` from an untrusted peer was logged.
    proxy_reported: AtomicBool,
    /// Nothing is limited: skip identifying callers at all.
    off: bool,
}

/// An admitted request. What its DynamoDB calls consume adds up in [`Admission::usage`], and is
/// charged to the caller when the admission is dropped: when the request is answered, or when it
/// is abandoned (timed out, or the client went away).
#[derive(Debug)]
pub(super) struct Admission<'a> {
    limiter: &'a RateLimiter,
    key: CallerKey,
    read_units: Option<&'a Limiter>,
    usage: Arc<Usage>,
}

impl Admission<'_> {
    /// Where the request's DynamoDB usage is to be added up.
    pub(super) fn usage(&self) -> Arc<Usage> {
        Arc::clone(&self.usage)
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.charge(self.usage.totals().consumed_capacity_units);
    }
}

impl Admission<'_> {
    /// Charges what the request consumed, rounded up (see the module's documentation).
    fn charge(&self, consumed_units: f64) {
        let Some(limiter) = self.read_units else {
            return;
        };
        // A float to u32: `as` saturates, and NaN becomes 0.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let units = consumed_units.max(0.0).ceil() as u32;
        match units {
            // The unit taken on admission is given back.
            0 => limiter.give_back_one(&self.limiter.table, &self.key, READ_UNITS),
            // One was taken on admission.
            units => limiter.take_up_to(&self.key, units - 1),
        }
    }
}

impl RateLimiter {
    pub(super) fn new(settings: &RateLimitSettings, metrics: &Metrics) -> Self {
        let table = CallerTable::new(settings.max_callers, metrics.rate_limit_callers());
        Self {
            default: Limiters::new(settings.default, &table),
            groups: settings
                .groups
                .iter()
                .map(|(name, limits)| (name.clone(), *limits, Limiters::new(*limits, &table)))
                .collect(),
            trusted_proxies: settings.trusted_proxies.clone(),
            limit_addresses: settings.limit_addresses,
            proxy_reported: AtomicBool::new(false),
            off: !settings.any_on(),
            table,
        }
    }

    /// Admits a request from `caller` (over a connection from `peer`, when known), taking one
    /// request and one capacity unit from its buckets; or refuses it.
    pub(super) fn admit(
        &self,
        caller: &Caller,
        headers: &HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Result<Admission<'_>, Refusal> {
        let admitted = |key, read_units| Admission {
            limiter: self,
            key,
            read_units,
            usage: Arc::default(),
        };
        if self.off {
            return Ok(admitted(CallerKey::UnknownAddress, None));
        }
        let (key, groups) = match caller.principal() {
            Some(principal) => (
                CallerKey::subject(&principal.subject),
                principal.groups.as_slice(),
            ),
            None => {
                let key = self.client_address(headers, peer);
                if !self.limit_addresses {
                    return Ok(admitted(key, None));
                }
                (key, &[][..])
            }
        };
        let requests = self.pick(groups, |limits| limits.requests, |l| l.requests.as_ref());
        let read_units = self.pick(
            groups,
            |limits| limits.read_units,
            |l| l.read_units.as_ref(),
        );
        if let Some(limiter) = requests {
            limiter.take_one(&key).map_err(|retry_after| Refusal {
                reason: Reason::Requests,
                retry_after,
            })?;
        }
        if let Some(limiter) = read_units {
            limiter.take_one(&key).map_err(|retry_after| Refusal {
                reason: Reason::ReadUnits,
                retry_after,
            })?;
        }
        Ok(admitted(key, read_units))
    }

    /// The limiter of one limit for a caller in `groups`: the most generous of its listed
    /// groups', or the default when it is in none.
    fn pick<'a>(
        &'a self,
        groups: &[String],
        limit: impl Fn(&CallerLimits) -> Limit,
        limiter: impl Fn(&'a Limiters) -> Option<&'a Limiter>,
    ) -> Option<&'a Limiter> {
        let listed = self
            .groups
            .iter()
            .filter(|(name, _, _)| groups.contains(name));
        match listed.max_by_key(|(_, limits, _)| limit(limits).generosity()) {
            Some((_, _, limiters)) => limiter(limiters),
            None => limiter(&self.default),
        }
    }

    /// The client's address: the peer's, or, from a trusted proxy, the rightmost address of
    /// `X-Forwarded-For` that is not a trusted proxy (the leftmost when all are).
    fn client_address(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> CallerKey {
        let Some(peer) = peer.map(|peer| peer.ip().to_canonical()) else {
            return CallerKey::UnknownAddress;
        };
        if !self.is_trusted(peer) {
            if headers.contains_key(&FORWARDED_FOR) {
                self.report_untrusted_proxy(peer);
            }
            return CallerKey::address(peer);
        }
        // Several headers are one list, in order; read from the right, each hop added by the
        // trusted proxy after it.
        let hops = headers
            .get_all(&FORWARDED_FOR)
            .iter()
            .rev()
            .flat_map(|value| value.to_str().unwrap_or_default().rsplit(','));
        let mut client = peer;
        for hop in hops {
            let hop = hop.trim();
            if hop.is_empty() {
                continue;
            }
            // An entry that is not an address stops the walk: the caller is the last hop known.
            let Some(ip) = parse_hop(hop) else {
                break;
            };
            client = ip;
            if !self.is_trusted(ip) {
                break;
            }
        }
        CallerKey::address(client)
    }

    /// Logs, once per process, that requests arrive through a proxy that is not trusted, and
    /// what that means for its clients' limits.
    fn report_untrusted_proxy(&self, peer: IpAddr) {
        if self.proxy_reported.swap(true, Ordering::Relaxed) {
            return;
        }
        if self.limit_addresses {
            tracing::warn!(
                %peer,
                "requests arrive with X-Forwarded-For from an address that is not a trusted \
                 proxy: every anonymous client behind it is rate-limited as one caller; name the \
                 load balancer in --trusted-proxies (DYNARELAY_TRUSTED_PROXIES)"
            );
        } else {
            tracing::info!(
                %peer,
                "requests arrive with X-Forwarded-For from an address that is not a trusted \
                 proxy: anonymous clients are not rate-limited by address; name the load \
                 balancer in --trusted-proxies (DYNARELAY_TRUSTED_PROXIES) to limit each client"
            );
        }
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }
}

/// The header a proxy lists the addresses a request came through in, the client's first.
pub(crate) static FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:80`, `[::1]:80`).
pub(crate) fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|addr| addr.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(settings: RateLimitSettings) -> RateLimiter {
        RateLimiter::new(&settings, &Metrics::new())
    }

    fn peer(ip: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(ip.parse().unwrap(), 4000))
    }

    fn forwarded(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", value.parse().unwrap());
        headers
    }

    fn address(ip: &str) -> CallerKey {
        CallerKey::address(ip.parse().unwrap())
    }

    #[test]
    fn the_client_is_the_peer_unless_the_peer_is_a_trusted_proxy() {
        let limiter = limiter(RateLimitSettings {
            trusted_proxies: vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
            ..RateLimitSettings::default()
        });
        let client = |headers: &HeaderMap, from: &str| limiter.client_address(headers, peer(from));
        let spoofed = forwarded("1.1.1.1");
        assert_eq!(client(&spoofed, "8.8.8.8"), address("8.8.8.8"));
        assert_eq!(client(&spoofed, "10.1.2.3"), address("1.1.1.1"));
        assert_eq!(client(&HeaderMap::new(), "10.1.2.3"), address("10.1.2.3"));
        // The rightmost untrusted hop; what the client wrote further left is ignored.
        let chain = forwarded("9.9.9.9, 1.1.1.1, 10.0.0.7");
        assert_eq!(client(&chain, "10.1.2.3"), address("1.1.1.1"));
        assert_eq!(
            client(&forwarded("10.0.0.9, 10.0.0.7"), "::1"),
            address("10.0.0.9")
        );
        assert_eq!(
            client(&forwarded("garbage, 10.0.0.7"), "::1"),
            address("10.0.0.7")
        );
        assert_eq!(
            client(&forwarded("[2001:db8::1]:443"), "::1"),
            address("2001:db8::1")
        );
        assert_eq!(
            limiter.client_address(&spoofed, None),
            CallerKey::UnknownAddress
        );
        // IPv4-mapped peers are IPv4; IPv6 clients are their /64.
        assert_eq!(client(&spoofed, "::ffff:10.0.0.1"), address("1.1.1.1"));
        assert_eq!(address("2001:db8:0:1::5"), address("2001:db8:0:1:ffff::9"));
        assert_ne!(address("2001:db8:0:1::5"), address("2001:db8:0:2::5"));
    }

    #[test]
    fn anonymous_callers_are_limited_by_address_only_when_asked() {
        let settings = |limit_addresses| RateLimitSettings {
            default: CallerLimits {
                requests: Limit::new(1, 1),
                read_units: Limit::OFF,
            },
            limit_addresses,
            ..RateLimitSettings::default()
        };
        let from = peer("192.0.2.1");
        let unlimited = limiter(settings(false));
        for _ in 0..5 {
            unlimited
                .admit(&Caller::Anonymous, &HeaderMap::new(), from)
                .unwrap();
        }
        let limited = limiter(settings(true));
        limited
            .admit(&Caller::Anonymous, &HeaderMap::new(), from)
            .unwrap();
        let refusal = limited
            .admit(&Caller::Anonymous, &HeaderMap::new(), from)
            .unwrap_err();
        assert_eq!(refusal.reason, Reason::Requests);
    }

    #[test]
    fn the_table_never_holds_more_than_its_bound() {
        let metrics = Metrics::new();
        let limiter = RateLimiter::new(
            &RateLimitSettings {
                default: CallerLimits {
                    requests: Limit::new(1, 1),
                    read_units: Limit::new(1, 1),
                },
                max_callers: NonZeroUsize::new(10).unwrap(),
                limit_addresses: true,
                ..RateLimitSettings::default()
            },
            &metrics,
        );
        for i in 0..1000u32 {
            let ip = IpAddr::from(i.to_be_bytes());
            limiter
                .admit(&Caller::Anonymous, &HeaderMap::new(), Some((ip, 1).into()))
                .unwrap();
        }
        let cells = limiter.table.cells.lock().unwrap();
        assert_eq!(cells.len(), 10);
        assert!(
            metrics
                .render()
                .contains("dynarelay_rate_limit_callers 10\n")
        );
    }

    #[test]
    fn capacity_is_charged_once_the_request_has_run_up_to_what_the_bucket_holds() {
        let limiter = limiter(RateLimitSettings {
            default: CallerLimits {
                requests: Limit::OFF,
                read_units: Limit::new(1, 10),
            },
            limit_addresses: true,
            ..RateLimitSettings::default()
        });
        let from = peer("192.0.2.1");
        let admit = || limiter.admit(&Caller::Anonymous, &HeaderMap::new(), from);
        let consume = |capacity: f64| {
            admit().unwrap().usage().add(crate::metrics::CallCost {
                capacity,
                ..Default::default()
            });
        };
        // Requests that read nothing keep every unit.
        for _ in 0..20 {
            consume(0.0);
        }
        // 3.2 units take 4; then 6 are left: one costing 1000 empties the bucket.
        consume(3.2);
        consume(1000.0);
        let refusal = admit().unwrap_err();
        assert_eq!(refusal.reason, Reason::ReadUnits);
        assert_eq!(refusal.retry_after_secs(), 1);
    }
}
