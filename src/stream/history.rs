//! One table's stream as the replays of resumed subscriptions read it, shared: when many
//! subscribers resume at once (a fleet-wide Redis loss ends every subscription of every
//! instance), each instance describes the table's stream once and reads each stretch of a shard
//! once, whoever asked first, rather than once per subscriber. AWS allows about five
//! `GetRecords` calls a second per shard, shared with the relays: a read per resumer would be
//! throttled for minutes.
//!
//! A shard's records are kept as *runs*: contiguous stretches read from one start (just after a
//! record, or the shard's oldest), each with the iterator that continues it. A replay reading
//! from a mark inside a run reads the run's records from memory, and the one that reaches its
//! end reads the next page for every replay (the others wait for that call rather than making
//! their own). A replay whose mark no run holds starts a run there. Resumers arrive in no
//! particular order of their marks, so a shard has few runs (a run is started only by a mark
//! before every run's start: about the logarithm of the number of resumers). A run keeps its
//! newest [`KEPT`] records; a replay left behind its start goes on from a run of its own.
//! Everything is dropped once no replay of the table is left.
//!
//! Hand-written: no library caches DynamoDB Streams reads, and a generic cache keyed by call
//! would share nothing (every resumer's iterator differs).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use aws_sdk_dynamodbstreams::types::Record;

use super::{
    Change, StreamSettings,
    calls::{self, Calls, Failure, RECORDS_PER_CALL, ShardInfo},
    position::Position,
    sequence_after,
};

/// Most records a run keeps: past it, the oldest half goes.
const KEPT: usize = 2 * RECORDS_PER_CALL as usize;

/// Most runs a shard keeps findable (a replay holding one reads it on regardless).
const RUNS_PER_SHARD: usize = 8;

/// How long a table's history is kept once no replay reads it: resumers of one wave (clients
/// reconnecting with backoff) share it.
const IDLE: Duration = Duration::from_secs(60);

/// The histories of the tables that replays read now or read within [`IDLE`], by table.
#[derive(Default)]
pub(super) struct Histories(Mutex<HashMap<Arc<str>, Arc<History>>>);

impl Histories {
    /// `table`'s history, shared by every replay of it, kept until it is [`IDLE`].
    pub(super) fn of(self: &Arc<Self>, table: &Arc<str>, settings: StreamSettings) -> Arc<History> {
        let mut tables = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(history) = tables.get(table) {
            history.used();
            return Arc::clone(history);
        }
        let history = Arc::new(History {
            settings,
            used: Mutex::new(Instant::now()),
            listing: tokio::sync::Mutex::new(None),
            runs: Mutex::default(),
        });
        tables.insert(Arc::clone(table), Arc::clone(&history));
        // Let go once no replay holds it and none asked for it for a while.
        let (histories, table) = (Arc::downgrade(self), Arc::clone(table));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE).await;
                let Some(histories) = histories.upgrade() else {
                    return;
                };
                let mut tables = histories.0.lock().unwrap_or_else(|e| e.into_inner());
                let idle = tables.get(&table).is_none_or(|history| {
                    Arc::strong_count(history) == 1 && history.idle() >= IDLE
                });
                if idle {
                    tables.remove(&table);
                    return;
                }
            }
        });
        history
    }
}

/// Where a run starts in its shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Start {
    /// Just after this record.
    After(String),
    /// At this record: the first a relay passed on as news.
    At(String),
    /// At the oldest record kept.
    Oldest,
}

/// One record of a run: its sequence number, creation time and change.
#[derive(Debug, Clone)]
pub(super) struct Read {
    pub(super) sequence: String,
    pub(super) created: Option<SystemTime>,
    /// `None` for a record that is no item change.
    pub(super) change: Option<Change>,
}

/// How a run goes on.
#[derive(Debug)]
enum Next {
    /// With this iterator.
    Iterator(String),
    /// With a new iterator after the run's last record (none taken yet, or the last expired).
    Renew,
    /// Nowhere: the shard is closed and read to its end.
    End,
}

/// A contiguous stretch of a shard's records.
#[derive(Debug)]
struct Run {
    from: Start,
    state: tokio::sync::Mutex<RunState>,
}

#[derive(Debug)]
struct RunState {
    /// The index (counted from `from`) of `reads[0]`: how many records were let go.
    base: usize,
    reads: Vec<Read>,
    next: Next,
    /// When the last call that found nothing new in the open shard was made (by the monotonic
    /// clock, and by the wall clock replays compare with).
    polled: Option<(Instant, SystemTime)>,
}

impl RunState {
    /// The index just after `sequence` when this run holds what follows it.
    fn after(&self, from: &Start, sequence: &str) -> Option<usize> {
        let not_after = |s: &str| !sequence_after(s, sequence);
        let starts_by = match self.reads.first() {
            Some(first) if self.base > 0 => not_after(&first.sequence),
            _ => match from {
                Start::Oldest => true,
                // (A mark before the record `At` starts with cannot be told from one just
                // before it: what lies between is not known.)
                Start::After(start) | Start::At(start) => not_after(start),
            },
        };
        let reaches = match self.reads.last() {
            Some(last) => !sequence_after(sequence, &last.sequence),
            None => from == &Start::After(sequence.to_owned()),
        };
        (starts_by && reaches)
            .then(|| self.base + self.reads.partition_point(|r| not_after(&r.sequence)))
    }

    /// The index of record `first` when this run holds it (or starts at it).
    fn at(&self, from: &Start, first: &str) -> Option<usize> {
        if self.base == 0 && *from == Start::At(first.to_owned()) {
            return Some(0);
        }
        let held = self.reads.iter().position(|r| r.sequence == first)?;
        Some(self.base + held)
    }

    /// Where a new iterator continues this run.
    fn continues(&self, from: &Start) -> Start {
        match self.reads.last() {
            Some(last) => Start::After(last.sequence.clone()),
            None => from.clone(),
        }
    }
}

/// A replay's place in one run of a shard.
pub(super) struct Cursor {
    run: Arc<Run>,
    /// The index of the next record to pass on.
    index: usize,
    /// Where the replay stands: after the last record passed on, or the run's start.
    at: Start,
}

/// What a replay reads next of a shard.
pub(super) struct Page {
    pub(super) reads: Vec<Read>,
    /// The shard is closed and every record of it was passed.
    pub(super) ended: bool,
}

/// One table's stream description and runs, shared by the replays of the table.
pub(super) struct History {
    settings: StreamSettings,
    /// When a replay last asked for it.
    used: Mutex<Instant>,
    /// The stream's ARN and shards, and when they were described.
    listing: tokio::sync::Mutex<Option<(Instant, String, Vec<ShardInfo>)>>,
    runs: Mutex<HashMap<Arc<str>, Vec<Arc<Run>>>>,
}

/// The stream of a table, and its shards.
pub(super) type Listing = (String, Vec<ShardInfo>);

impl History {
    fn used(&self) {
        *self.used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle(&self) -> Duration {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// The table's stream and its shards: described anew unless the last description names
    /// every shard that `at` and `until` (the live reader's place) name, in `until`'s stream
    /// (shards made since that nobody names yet are the live reader's to read from their
    /// start); with no `until`, unless it is younger than four poll intervals. `Ok(None)` when
    /// the table has no stream.
    pub(super) async fn listing(
        &self,
        calls: &Calls<'_>,
        at: &Position,
        until: Option<&Position>,
    ) -> Result<Option<Listing>, Failure> {
        let mut listing = self.listing.lock().await;
        if let Some((when, arn, shards)) = &*listing {
            let named = |id: &str| shards.iter().any(|s| s.id == id);
            let knows = |place: &Position| place.shards().all(|(id, _)| named(id));
            let current = match until {
                Some(until) => until.in_stream(arn) && knows(until),
                None => when.elapsed() < 4 * self.settings.poll_interval,
            };
            if current && knows(at) {
                return Ok(Some((arn.clone(), shards.clone())));
            }
        }
        let arn = match calls.find_stream().await {
            Ok(Some(arn)) => arn,
            Ok(None) => return Ok(None),
            Err(()) => return Err(Failure::Retry),
        };
        let shards = calls.describe(&arn).await?;
        *listing = Some((Instant::now(), arn.clone(), shards.clone()));
        Ok(Some((arn, shards)))
    }

    /// A cursor at `from` in `shard`: in a run that holds what follows it, or a new one.
    pub(super) async fn cursor(&self, shard: &Arc<str>, from: Start) -> Cursor {
        let runs = self
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(shard)
            .cloned()
            .unwrap_or_default();
        for run in runs {
            let state = run.state.lock().await;
            let index = match &from {
                Start::After(sequence) => state.after(&run.from, sequence),
                Start::Oldest => (run.from == Start::Oldest && state.base == 0).then_some(0),
                Start::At(first) => state.at(&run.from, first),
            };
            drop(state);
            if let Some(index) = index {
                return Cursor {
                    run,
                    index,
                    at: from,
                };
            }
        }
        let run = Arc::new(Run {
            from: from.clone(),
            state: tokio::sync::Mutex::new(RunState {
                base: 0,
                reads: Vec::new(),
                next: Next::Renew,
                polled: None,
            }),
        });
        let mut all = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let runs = all.entry(Arc::clone(shard)).or_default();
        if runs.len() >= RUNS_PER_SHARD {
            runs.remove(0);
        }
        runs.push(Arc::clone(&run));
        Cursor {
            run,
            index: 0,
            at: from,
        }
    }

    /// The next records of `shard` after `cursor` (at most a page's worth), moving it on: from
    /// memory where its run holds them, else by one `GetRecords` call that extends the run for
    /// every replay in it. Empty while the open shard holds nothing newer: a call found nothing
    /// within the last poll interval, and after `fresh` (a replay that stops at the shard's end
    /// must not take an end found before the live reader's place there for it).
    pub(super) async fn read(
        &self,
        calls: &Calls<'_>,
        arn: &str,
        shard: &Arc<str>,
        cursor: &mut Cursor,
        fresh: SystemTime,
    ) -> Result<Page, Failure> {
        loop {
            let mut state = cursor.run.state.lock().await;
            if cursor.index < state.base {
                // Left behind what the run keeps: on from a run that holds its place.
                drop(state);
                *cursor = self.cursor(shard, cursor.at.clone()).await;
                continue;
            }
            let held = state.base + state.reads.len();
            if cursor.index < held {
                let from = cursor.index - state.base;
                let until = held.min(cursor.index + RECORDS_PER_CALL as usize) - state.base;
                let reads = state.reads[from..until].to_vec();
                cursor.index += reads.len();
                if let Some(last) = reads.last() {
                    cursor.at = Start::After(last.sequence.clone());
                }
                return Ok(Page {
                    reads,
                    ended: false,
                });
            }
            let iterator = match &state.next {
                Next::End => {
                    return Ok(Page {
                        reads: Vec::new(),
                        ended: true,
                    });
                }
                _ if found_nothing_lately(state.polled, self.settings.poll_interval, fresh) => {
                    return Ok(Page {
                        reads: Vec::new(),
                        ended: false,
                    });
                }
                Next::Iterator(iterator) => iterator.clone(),
                Next::Renew => {
                    let start = state.continues(&cursor.run.from);
                    let position = match &start {
                        Start::After(sequence) => calls::Position::After(sequence),
                        Start::At(first) => calls::Position::At(first),
                        Start::Oldest => calls::Position::Oldest,
                    };
                    match calls.iterator(arn, shard, position).await? {
                        Some(iterator) => iterator,
                        None => {
                            state.next = Next::End;
                            continue;
                        }
                    }
                }
            };
            // (When it was asked, not answered: what it found holds from then on.)
            let asked = (Instant::now(), SystemTime::now());
            let page = match calls.records(&iterator, RECORDS_PER_CALL).await {
                Ok(page) => page,
                Err(Failure::Expired) => {
                    state.next = Next::Renew;
                    continue;
                }
                Err(failure) => {
                    // The same iterator serves for the next try.
                    state.next = Next::Iterator(iterator);
                    return Err(failure);
                }
            };
            state.next = page.next.map_or(Next::End, Next::Iterator);
            state.polled = page.records.is_empty().then_some(asked);
            state
                .reads
                .extend(page.records.iter().filter_map(read_of(calls)));
            if state.reads.len() > KEPT {
                let gone = state.reads.len() - KEPT / 2;
                state.reads.drain(..gone);
                state.base += gone;
            }
        }
    }
}

/// Whether a call that found nothing new, made at `polled`, still answers for a replay: made
/// within the last `interval`, and after `fresh`.
fn found_nothing_lately(
    polled: Option<(Instant, SystemTime)>,
    interval: Duration,
    fresh: SystemTime,
) -> bool {
    polled.is_some_and(|(at, wall)| at.elapsed() < interval && wall >= fresh)
}

/// A stream record as a run keeps it.
fn read_of(calls: &Calls<'_>) -> impl Fn(&Record) -> Option<Read> {
    let table: Arc<str> = Arc::from(calls.table);
    move |record| {
        Some(Read {
            sequence: calls::sequence(record)?.to_owned(),
            created: calls::created(record),
            change: calls::change(&table, record),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sequence: &str) -> Read {
        Read {
            sequence: sequence.to_owned(),
            created: None,
            change: None,
        }
    }

    fn state(base: usize, sequences: &[&str]) -> RunState {
        RunState {
            base,
            reads: sequences.iter().map(|s| read(s)).collect(),
            next: Next::Renew,
            polled: None,
        }
    }

    #[test]
    fn a_run_holds_what_follows_a_mark_between_its_start_and_its_last_record() {
        let from = Start::After("100".to_owned());
        let run = state(0, &["105", "110", "1000"]);
        assert_eq!(run.after(&from, "100"), Some(0), "its start");
        assert_eq!(run.after(&from, "105"), Some(1));
        assert_eq!(run.after(&from, "107"), Some(1), "between two records");
        assert_eq!(
            run.after(&from, "1000"),
            Some(3),
            "its last: what comes next"
        );
        assert_eq!(run.after(&from, "99"), None, "before its start");
        assert_eq!(run.after(&from, "1001"), None, "past what it read");
        // Numbers, not text: "99" < "100".
        assert_eq!(
            state(0, &[]).after(&from, "100"),
            Some(0),
            "nothing read yet"
        );
        assert_eq!(state(0, &[]).after(&from, "101"), None);
    }

    #[test]
    fn an_empty_call_answers_only_for_replays_that_began_before_it_and_only_for_a_while() {
        let interval = Duration::from_secs(3600);
        let now = SystemTime::now();
        let asked = Some((Instant::now(), now));
        assert!(found_nothing_lately(
            asked,
            interval,
            now - Duration::from_millis(1)
        ));
        assert!(found_nothing_lately(asked, interval, now));
        assert!(
            !found_nothing_lately(asked, interval, now + Duration::from_millis(1)),
            "asked before the replay began"
        );
        assert!(!found_nothing_lately(
            None,
            interval,
            SystemTime::UNIX_EPOCH
        ));
        assert!(
            !found_nothing_lately(asked, Duration::ZERO, SystemTime::UNIX_EPOCH),
            "asked longer ago than the poll interval"
        );
    }

    #[test]
    fn a_run_that_let_records_go_holds_only_from_its_first_kept() {
        let run = state(5, &["200", "300"]);
        assert_eq!(run.after(&Start::Oldest, "150"), None);
        assert_eq!(run.after(&Start::Oldest, "200"), Some(6));
        assert_eq!(run.after(&Start::Oldest, "300"), Some(7));
        let oldest = state(0, &["7", "8"]);
        assert_eq!(oldest.after(&Start::Oldest, "1"), Some(0));
        assert_eq!(
            oldest.continues(&Start::Oldest),
            Start::After("8".to_owned())
        );
        assert_eq!(state(0, &[]).continues(&Start::Oldest), Start::Oldest);
    }

    #[test]
    fn a_run_at_a_record_holds_it_and_what_follows_and_nothing_before() {
        let from = Start::At("100".to_owned());
        let run = state(0, &["100", "110"]);
        assert_eq!(run.at(&from, "100"), Some(0));
        assert_eq!(run.at(&Start::Oldest, "110"), Some(1), "a record it read");
        assert_eq!(run.at(&Start::Oldest, "105"), None, "one it did not");
        assert_eq!(run.after(&from, "100"), Some(1));
        assert_eq!(
            run.after(&from, "99"),
            None,
            "what lies between 99 and 100 is not known"
        );
        assert_eq!(state(0, &[]).at(&from, "100"), Some(0), "nothing read yet");
        assert_eq!(state(0, &[]).after(&from, "100"), None);
        assert_eq!(state(0, &[]).continues(&from), from);
    }
}
