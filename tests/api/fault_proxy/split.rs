//! A shard split, as DynamoDB makes them and DynamoDB Local never does (it keeps one shard per
//! stream): once [`FaultProxy::split_shard`](super::FaultProxy::split_shard) is called, the
//! proxy shows the stream's shard closed at a sequence number and two children after it.
//!
//! - `DescribeStream` lists the parent with its `EndingSequenceNumber` and two children whose
//!   `ParentShardId` is the parent.
//! - `GetRecords` on the parent returns its records up to the ending one; once a read reaches
//!   it (returns it, or a record after it), the answer has no `NextShardIterator`: the shard is
//!   closed and read to its end.
//! - While reads are held ([`Splits::hold`]), `GetRecords` on any shard but a child returns no
//!   record and the iterator it was given: the reader finds nothing new there, for as long as
//!   the test wants (to have it see the children while the parent still holds records).
//! - A child's iterator reads the parent shard of DynamoDB Local after the ending record (its
//!   `TRIM_HORIZON`), through an iterator of the form `split-<child>|<DynamoDB Local's>`; its
//!   `GetRecords` keep the records whose item hashes to that child (so one item's records stay
//!   in one child, in order, and the two children share the items between them).
//!
//! Requests and answers are rewritten as JSON; a rewritten answer loses its `x-amz-crc32`
//! checksum (the SDK checks it only when it is there).

use std::{collections::HashMap, sync::Mutex};

use serde_json::{Value, json};

/// The split in force, and every shard iterator seen, by the shard it reads.
#[derive(Debug, Default)]
pub(super) struct Splits {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// By stream ARN: the parent shard and its ending sequence number.
    split: HashMap<String, (String, String)>,
    /// DynamoDB Local's iterators, by the stream and shard they read.
    iterators: HashMap<String, (String, String)>,
    /// Records each child has given.
    given: [u64; 2],
    /// While true, reads of shards other than children return nothing new.
    held: bool,
    /// `DescribeStream` answers that showed a split.
    described: u64,
    /// Reads answered with nothing new because reads were held.
    held_reads: u64,
}

/// What to do with the answer to a request, decided from the request.
#[derive(Debug)]
pub(super) enum Answer {
    /// Relay it as it is (remembering the iterator it gives, if any, for `shard`).
    Relay(Option<(String, String)>),
    /// A `DescribeStream` of a split stream: show the split.
    Describe { parent: String, ending: String },
    /// A `GetRecords` of the parent shard: records up to `ending`, closed once it is reached.
    Parent {
        ending: String,
        shard: (String, String),
    },
    /// A `GetRecords` while reads are held: nothing new, the same `iterator` to read on with.
    Held { iterator: String },
    /// A `GetShardIterator` or `GetRecords` of child `child` of `shard` (the stream and the
    /// parent): its iterator wrapped, its records the child's after `ending`.
    Child {
        child: usize,
        ending: String,
        shard: (String, String),
    },
}

/// The two children's shard ids.
fn child_id(parent: &str, child: usize) -> String {
    format!("{parent}-split-{child}")
}

/// Whether sequence number `a` comes after `b` (decimal digits, no leading zeros).
fn after(a: &str, b: &str) -> bool {
    (a.len(), a) > (b.len(), b)
}

/// Which child a record's item goes to: a hash of its keys, so that each item stays in one.
fn child_of(record: &Value) -> usize {
    child_of_keys(&record["dynamodb"]["Keys"])
}

/// Which child the records of the item whose keys are `keys` (in DynamoDB's typed JSON) go to.
pub fn child_of_keys(keys: &Value) -> usize {
    let keys = keys.to_string();
    let hash = keys.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    usize::from(hash % 2 == 1)
}

impl Splits {
    /// Splits the shard `parent` of stream `arn` after sequence number `ending`.
    pub(super) fn split(&self, arn: &str, parent: &str, ending: &str) {
        self.state
            .lock()
            .unwrap()
            .split
            .insert(arn.to_owned(), (parent.to_owned(), ending.to_owned()));
    }

    /// How many records each child has given so far.
    pub(super) fn given(&self) -> [u64; 2] {
        self.state.lock().unwrap().given
    }

    /// Holds (or lets go) reads of every shard but the children: they return nothing new.
    pub(super) fn hold(&self, held: bool) {
        self.state.lock().unwrap().held = held;
    }

    /// How many `DescribeStream` answers have shown a split, and how many reads were held.
    pub(super) fn counts(&self) -> (u64, u64) {
        let state = self.state.lock().unwrap();
        (state.described, state.held_reads)
    }

    /// Looks at a request of `operation` (rewriting it for a child) and says what to do with
    /// its answer.
    pub(super) fn request(&self, operation: &str, body: &mut Vec<u8>) -> Answer {
        if !matches!(
            operation,
            "DescribeStream" | "GetShardIterator" | "GetRecords"
        ) {
            return Answer::Relay(None);
        }
        let Ok(mut request) = serde_json::from_slice::<Value>(body) else {
            return Answer::Relay(None);
        };
        let state = self.state.lock().unwrap();
        let arn = request["StreamArn"].as_str().unwrap_or_default().to_owned();
        let answer = match operation {
            "DescribeStream" => match state.split.get(&arn) {
                Some((parent, ending)) => Answer::Describe {
                    parent: parent.clone(),
                    ending: ending.clone(),
                },
                None => Answer::Relay(None),
            },
            "GetShardIterator" => {
                let shard = request["ShardId"].as_str().unwrap_or_default().to_owned();
                let Some((parent, ending)) = state.split.get(&arn) else {
                    return Answer::Relay(Some((arn, shard)));
                };
                let Some(child) = (0..2).find(|&c| child_id(parent, c) == shard) else {
                    return Answer::Relay(Some((arn, shard)));
                };
                // The child's start is the parent's records after the ending one.
                request["ShardId"] = json!(parent);
                if request["ShardIteratorType"] == "TRIM_HORIZON" {
                    request["ShardIteratorType"] = json!("AFTER_SEQUENCE_NUMBER");
                    request["SequenceNumber"] = json!(ending);
                }
                Answer::Child {
                    child,
                    ending: ending.clone(),
                    shard: (arn, parent.clone()),
                }
            }
            "GetRecords" => {
                let iterator = request["ShardIterator"].as_str().unwrap_or_default();
                if let Some((child, real)) = iterator
                    .strip_prefix("split-")
                    .and_then(|rest| rest.split_once('|'))
                {
                    let child: usize = child.parse().unwrap();
                    let real = real.to_owned();
                    let shard = state.iterators[&real].clone();
                    request["ShardIterator"] = json!(real);
                    Answer::Child {
                        child,
                        ending: state.split[&shard.0].1.clone(),
                        shard,
                    }
                } else if state.held {
                    Answer::Held {
                        iterator: iterator.to_owned(),
                    }
                } else {
                    match state.iterators.get(iterator) {
                        Some((arn, shard)) => match state.split.get(arn) {
                            Some((parent, ending)) if parent == shard => Answer::Parent {
                                ending: ending.clone(),
                                shard: (arn.clone(), shard.clone()),
                            },
                            _ => Answer::Relay(Some((arn.clone(), shard.clone()))),
                        },
                        None => Answer::Relay(None),
                    }
                }
            }
            _ => Answer::Relay(None),
        };
        if matches!(answer, Answer::Child { .. }) {
            *body = serde_json::to_vec(&request).unwrap();
        }
        answer
    }

    /// The answer to relay, given what [`Self::request`] decided; `None` to relay it unchanged.
    pub(super) fn answer(&self, answer: Answer, body: &[u8]) -> Option<Vec<u8>> {
        let mut out: Value = serde_json::from_slice(body).ok()?;
        if out.get("__type").is_some() {
            return None; // an error: relayed as it is
        }
        let mut state = self.state.lock().unwrap();
        let sequence = |r: &Value| r["dynamodb"]["SequenceNumber"].as_str().map(str::to_owned);
        match answer {
            Answer::Relay(None) => return None,
            Answer::Relay(Some(shard)) => {
                for field in ["ShardIterator", "NextShardIterator"] {
                    state.remember(&out[field], &shard);
                }
                return None;
            }
            Answer::Held { iterator } => {
                state.held_reads += 1;
                out["Records"] = json!([]);
                out["NextShardIterator"] = json!(iterator);
            }
            Answer::Describe { parent, ending } => {
                state.described += 1;
                let shards = out["StreamDescription"]["Shards"].as_array_mut()?;
                for shard in shards.iter_mut() {
                    if shard["ShardId"] == parent.as_str() {
                        shard["SequenceNumberRange"]["EndingSequenceNumber"] = json!(ending);
                    }
                }
                for child in 0..2 {
                    shards.push(json!({
                        "ShardId": child_id(&parent, child),
                        "ParentShardId": parent,
                        "SequenceNumberRange": { "StartingSequenceNumber": ending },
                    }));
                }
            }
            Answer::Parent { ending, shard } => {
                let records = out["Records"].as_array_mut()?;
                let reached = records
                    .iter()
                    .any(|r| sequence(r).is_some_and(|s| !after(&ending, &s)));
                records.retain(|r| sequence(r).is_some_and(|s| !after(&s, &ending)));
                if reached {
                    out.as_object_mut()?.remove("NextShardIterator");
                } else {
                    state.remember(&out["NextShardIterator"], &shard);
                }
            }
            Answer::Child {
                child,
                ending,
                shard,
            } => {
                if let Some(records) = out["Records"].as_array_mut() {
                    records.retain(|r| {
                        child_of(r) == child && sequence(r).is_some_and(|s| after(&s, &ending))
                    });
                    state.given[child] += records.len() as u64;
                }
                for field in ["ShardIterator", "NextShardIterator"] {
                    if let Some(real) = out[field].as_str().map(str::to_owned) {
                        // The child's iterators are DynamoDB Local's of the parent, wrapped.
                        state.remember(&out[field], &shard);
                        out[field] = json!(format!("split-{child}|{real}"));
                    }
                }
            }
        }
        Some(serde_json::to_vec(&out).unwrap())
    }
}

impl State {
    /// Remembers which stream and shard `iterator` (if it is one) reads.
    fn remember(&mut self, iterator: &Value, shard: &(String, String)) {
        if let Some(iterator) = iterator.as_str() {
            self.iterators.insert(iterator.to_owned(), shard.clone());
        }
    }
}
