//! `GetRecords` answered with no records while the shard holds some, as AWS may answer ("it
//! might take multiple calls to get to a portion of the shard that contains stream records")
//! and DynamoDB Local never does. Once [`FaultProxy::empty_answers`](super::FaultProxy::empty_answers)
//! is called, the first calls made with each shard iterator (DynamoDB Local's, or one the
//! proxy gave) are answered with no records, before the call that reaches DynamoDB Local:
//!
//! - [`Empty::SameIterator`]: each empty answer gives back the iterator it was asked with;
//! - [`Empty::NewIterator`]: each gives a new iterator (`empty-<k>|<DynamoDB Local's>`), as AWS
//!   gives one further along; the proxy reads it back to DynamoDB Local's when it forwards it.
//!
//! Every iterator of every shard is concerned: the readers' first iterators, those each answer
//! gives, and those taken again after a record (`AFTER_SEQUENCE_NUMBER`), so a reader meets
//! empty answers before each page of records and at the end of what the shard holds alike.

use std::{collections::HashMap, sync::Mutex};

use serde_json::{Value, json};

/// How the first calls with each iterator are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// With no records and the same iterator, this many times in a row.
    SameIterator(u64),
    /// With no records and a new iterator, this many times in a row.
    NewIterator(u64),
}

/// The empty answers in force, and what they have done.
#[derive(Debug, Default)]
pub(super) struct Empties {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    mode: Option<Empty>,
    /// How many empty answers each iterator got (same-iterator answers).
    asked: HashMap<String, u64>,
    /// Empty answers given.
    given: u64,
}

/// The prefix of the iterators the proxy makes.
const PREFIX: &str = "empty-";

/// `(k, DynamoDB Local's iterator)` of an iterator the proxy made, `(0, it)` of any other.
fn unwrap(iterator: &str) -> (u64, &str) {
    iterator
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('|'))
        .and_then(|(k, real)| Some((k.parse().ok()?, real)))
        .unwrap_or((0, iterator))
}

impl Empties {
    pub(super) fn set(&self, mode: Option<Empty>) {
        let mut state = self.state.lock().unwrap();
        state.mode = mode;
        state.asked.clear();
    }

    pub(super) fn given(&self) -> u64 {
        self.state.lock().unwrap().given
    }

    /// For a `GetRecords` request: the empty answer to give it, or `None` to forward it (its
    /// iterator read back to DynamoDB Local's in `body` when the proxy made it).
    pub(super) fn request(&self, operation: &str, body: &mut Vec<u8>) -> Option<Vec<u8>> {
        if operation != "GetRecords" {
            return None;
        }
        let mut request: Value = serde_json::from_slice(body).ok()?;
        let iterator = request["ShardIterator"].as_str()?.to_owned();
        let mut state = self.state.lock().unwrap();
        let (k, real) = unwrap(&iterator);
        let real = real.to_owned();
        let next = match state.mode {
            None => None,
            Some(Empty::SameIterator(n)) => {
                let asked = state.asked.entry(iterator.clone()).or_default();
                (*asked < n).then(|| {
                    *asked += 1;
                    iterator.clone()
                })
            }
            Some(Empty::NewIterator(n)) => (k < n).then(|| format!("{PREFIX}{}|{real}", k + 1)),
        };
        if let Some(next) = next {
            state.given += 1;
            return Some(
                json!({ "Records": [], "NextShardIterator": next })
                    .to_string()
                    .into_bytes(),
            );
        }
        drop(state);
        if real != iterator {
            request["ShardIterator"] = Value::String(real);
            *body = request.to_string().into_bytes();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the proxy does with a `GetRecords` of `iterator`: `Ok(next iterator)` for an empty
    /// answer, `Err(iterator forwarded)` otherwise.
    fn ask(empties: &Empties, iterator: &str) -> Result<String, String> {
        let mut body = json!({ "ShardIterator": iterator, "Limit": 1000 })
            .to_string()
            .into_bytes();
        match empties.request("GetRecords", &mut body) {
            Some(answer) => {
                let answer: Value = serde_json::from_slice(&answer).unwrap();
                assert_eq!(answer["Records"], json!([]));
                Ok(answer["NextShardIterator"].as_str().unwrap().to_owned())
            }
            None => {
                let sent: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(sent["Limit"], 1000, "the rest of the request is kept");
                Err(sent["ShardIterator"].as_str().unwrap().to_owned())
            }
        }
    }

    #[test]
    fn each_iterator_gets_its_empty_answers_before_it_is_forwarded() {
        let empties = Empties::default();
        assert_eq!(ask(&empties, "a"), Err("a".to_owned()), "off: forwarded");
        empties.set(Some(Empty::SameIterator(2)));
        assert_eq!(ask(&empties, "a"), Ok("a".to_owned()));
        assert_eq!(ask(&empties, "a"), Ok("a".to_owned()));
        assert_eq!(ask(&empties, "a"), Err("a".to_owned()));
        assert_eq!(ask(&empties, "b"), Ok("b".to_owned()), "another iterator");
        let mut body = b"{}".to_vec();
        assert_eq!(empties.request("GetShardIterator", &mut body), None);
        empties.set(Some(Empty::NewIterator(2)));
        let first = ask(&empties, "a").unwrap();
        let second = ask(&empties, &first).unwrap();
        assert!(first != "a" && second != first, "{first} {second}");
        assert_eq!(ask(&empties, &second), Err("a".to_owned()), "read back");
        assert_eq!(empties.given(), 5);
        empties.set(None);
        assert_eq!(ask(&empties, &second), Err("a".to_owned()));
    }

    #[test]
    fn iterators_the_proxy_made_read_back_to_dynamodb_locals() {
        assert_eq!(unwrap("empty-2|arn:x|001|abc"), (2, "arn:x|001|abc"));
        assert_eq!(unwrap("arn:x|001|abc"), (0, "arn:x|001|abc"));
        assert_eq!(unwrap("empty-x|arn"), (0, "empty-x|arn"));
    }
}
