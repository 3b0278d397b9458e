//! Caps on subscriptions: how many run in the process, and how many one caller runs. Each
//! running subscription holds a [`Seat`], given back when it ends (dropped).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use crate::metrics::Metrics;

/// Why a subscription was refused a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The process runs its most subscriptions.
    Server,
    /// The caller runs its most subscriptions.
    Caller,
}

/// The seats of one process.
#[derive(Debug, Clone)]
pub struct Seats {
    max: usize,
    max_per_caller: usize,
    taken: Arc<Mutex<Taken>>,
    metrics: Arc<Metrics>,
}

#[derive(Debug, Default)]
struct Taken {
    total: usize,
    by_caller: HashMap<String, usize>,
}

/// One running subscription's seat; dropping it gives the seat back.
#[derive(Debug)]
pub struct Seat {
    caller: Option<String>,
    taken: Arc<Mutex<Taken>>,
    metrics: Arc<Metrics>,
}

impl Seats {
    /// At most `max` subscriptions in the process, `max_per_caller` for one verified caller.
    pub fn new(max: usize, max_per_caller: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            max,
            max_per_caller,
            taken: Arc::default(),
            metrics,
        }
    }

    /// A seat for a subscription of `caller` (a token's subject; `None` for an anonymous
    /// caller, who is held to the process's cap only), or why there is none.
    pub fn take(&self, caller: Option<&str>) -> Result<Seat, Full> {
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        let refused = if taken.total >= self.max {
            Some(Full::Server)
        } else if caller
            .is_some_and(|c| taken.by_caller.get(c).copied().unwrap_or(0) >= self.max_per_caller)
        {
            Some(Full::Caller)
        } else {
            None
        };
        if let Some(full) = refused {
            self.metrics.subscription_refused(match full {
                Full::Server => "server",
                Full::Caller => "caller",
            });
            return Err(full);
        }
        taken.total += 1;
        if let Some(caller) = caller {
            *taken.by_caller.entry(caller.to_owned()).or_default() += 1;
        }
        self.metrics.subscriptions_running(1);
        Ok(Seat {
            caller: caller.map(str::to_owned),
            taken: Arc::clone(&self.taken),
            metrics: Arc::clone(&self.metrics),
        })
    }
}

impl Seat {
    /// Records a change sent to this subscriber.
    pub fn sent(&self) {
        self.metrics.subscription_event();
    }

    /// Records that this subscription ends because changes were lost.
    pub fn lost(&self) {
        self.metrics.subscription_lost();
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        taken.total = taken.total.saturating_sub(1);
        if let Some(caller) = &self.caller
            && let Some(count) = taken.by_caller.get_mut(caller)
        {
            *count -= 1;
            if *count == 0 {
                taken.by_caller.remove(caller);
            }
        }
        self.metrics.subscriptions_running(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_are_capped_per_caller_and_in_all_and_given_back() {
        let metrics = Arc::new(Metrics::new());
        let seats = Seats::new(3, 2, Arc::clone(&metrics));
        let a1 = seats.take(Some("a")).unwrap();
        let _a2 = seats.take(Some("a")).unwrap();
        assert_eq!(seats.take(Some("a")).unwrap_err(), Full::Caller);
        let _b = seats.take(Some("b")).unwrap();
        assert_eq!(seats.take(None).unwrap_err(), Full::Server);
        assert_eq!(metrics.subscriptions(), 3);
        drop(a1);
        assert_eq!(metrics.subscriptions(), 2);
        let _anonymous = seats.take(None).unwrap();
        assert_eq!(seats.take(Some("c")).unwrap_err(), Full::Server);
        assert!(
            metrics
                .render()
                .contains("dynarelay_subscriptions_refused_total{reason=\"caller\"} 1")
        );
    }
}
