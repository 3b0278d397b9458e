//! A place in a table's changes that outlives the process, the Redis and the relay that read
//! them: for each shard of the table's stream, the last record passed on (DynamoDB Streams orders
//! records within a shard only, so one number cannot say it).
//!
//! A reader keeps one as it reads and gives each change the place just after it; a subscriber
//! that lost its subscription hands the last one it received back, and [`super::replay`] reads
//! the table's stream from there. A shard the reader passed nothing of yet is known by when the
//! reader took its place in it (records created from then on are after the place); a shard not
//! named at all appeared after the place (a child of a split or closed shard), unless it is an
//! ancestor of one named (read to its end before).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::sequence_after;

/// Where a place stands in one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// Just after this record (its sequence number).
    After(String),
    /// Before any record created at or after this time (milliseconds since the Unix epoch): a
    /// shard the reader passed nothing of yet, since it took its place there. 0: from the
    /// shard's oldest record.
    Since(u64),
}

impl Mark {
    /// Whether this mark is past `other` in the same shard: any record beats no record, a later
    /// record an earlier one.
    fn past(&self, other: &Mark) -> bool {
        match (self, other) {
            (Mark::After(a), Mark::After(b)) => sequence_after(a, b),
            (Mark::After(_), Mark::Since(_)) => true,
            (Mark::Since(_), Mark::After(_)) => false,
            (Mark::Since(a), Mark::Since(b)) => a > b,
        }
    }
}

/// A place in a table's changes: the stream's identity and a mark for each shard read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Position {
    /// The first bytes of the SHA-256 of the stream's ARN: a place in another stream of the
    /// table (disabled and enabled again) is no place in this one.
    stream: [u8; 8],
    /// By shard id.
    shards: Vec<(Arc<str>, Mark)>,
    /// Shards not named and not ancestors of one named: records created before this time
    /// (milliseconds since the Unix epoch) are before the place. 0: none is. A reader that
    /// knows every shard of the stream leaves it 0; one that learns of shards from what a relay
    /// publishes (through Redis) does not know shards nothing was published of.
    floor: u64,
    /// For an instance reading Redis: the id of the last entry of the table's Redis stream read
    /// (the entries after it are the changes after the place, while Redis holds it).
    entry: Option<String>,
}

/// The identity of a stream, from its ARN.
pub fn stream_identity(arn: &str) -> [u8; 8] {
    let digest = Sha256::digest(arn.as_bytes());
    let mut identity = [0; 8];
    identity.copy_from_slice(&digest[..8]);
    identity
}

/// The layout of [`Position::to_bytes`].
const LAYOUT: u8 = 1;

impl Position {
    /// A place in the stream `arn`, before anything of it, with shards not named read from
    /// `floor` (see the field).
    pub fn new(arn: &str, floor: u64) -> Self {
        Self {
            stream: stream_identity(arn),
            shards: Vec::new(),
            floor,
            entry: None,
        }
    }

    /// A place before anything of the stream whose identity is `stream` ([`Position::identity`]).
    pub fn of_identity(stream: [u8; 8], floor: u64) -> Self {
        Self {
            stream,
            shards: Vec::new(),
            floor,
            entry: None,
        }
    }

    /// The identity of the place's stream: the first bytes of the SHA-256 of its ARN.
    pub fn identity(&self) -> [u8; 8] {
        self.stream
    }

    /// Whether this is a place in the stream `arn`.
    pub fn in_stream(&self, arn: &str) -> bool {
        self.stream == stream_identity(arn)
    }

    /// The mark of `shard`, if it is named.
    pub fn mark(&self, shard: &str) -> Option<&Mark> {
        self.shards
            .iter()
            .find(|(id, _)| &**id == shard)
            .map(|(_, mark)| mark)
    }

    /// The shards named, with their marks.
    pub fn shards(&self) -> impl Iterator<Item = (&str, &Mark)> {
        self.shards.iter().map(|(id, mark)| (&**id, mark))
    }

    /// See the field.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The id of the last Redis entry read, for a place an instance reading Redis took.
    pub fn entry(&self) -> Option<&str> {
        self.entry.as_deref()
    }

    /// Sets (or, for a place found otherwise, clears) the last Redis entry read.
    pub fn set_entry(&mut self, entry: Option<String>) {
        self.entry = entry;
    }

    /// Moves `shard`'s mark to `mark`, unless it is already past it.
    pub fn set(&mut self, shard: &Arc<str>, mark: Mark) {
        match self.shards.iter_mut().find(|(id, _)| id == shard) {
            Some((_, held)) => {
                if mark.past(held) {
                    *held = mark;
                }
            }
            None => self.shards.push((Arc::clone(shard), mark)),
        }
    }

    /// Forgets shards no longer in the stream's description (read to their end and trimmed).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.shards.retain(|(id, _)| keep(id));
    }

    /// This place moved on by everything `other` (a place in the same stream) is past: for each
    /// shard, the later mark. Places of other streams leave it as it is.
    pub fn merged(&self, other: &Position) -> Position {
        let mut merged = self.clone();
        if other.stream != self.stream {
            return merged;
        }
        for (id, mark) in &other.shards {
            merged.set(id, mark.clone());
        }
        merged.floor = merged.floor.max(other.floor);
        merged.entry.clone_from(&other.entry);
        merged
    }

    /// The place as bytes, to seal into what a subscriber is sent.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = vec![LAYOUT];
        bytes.extend_from_slice(&self.stream);
        bytes.extend_from_slice(&self.floor.to_be_bytes());
        push_text(&mut bytes, self.entry.as_deref().unwrap_or(""));
        for (id, mark) in &self.shards {
            push_text(&mut bytes, id);
            match mark {
                Mark::After(sequence) => {
                    bytes.push(0);
                    push_text(&mut bytes, sequence);
                }
                Mark::Since(time) => {
                    bytes.push(1);
                    bytes.extend_from_slice(&time.to_be_bytes());
                }
            }
        }
        bytes
    }

    /// The inverse of [`Position::to_bytes`]; `None` for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (&layout, rest) = bytes.split_first()?;
        if layout != LAYOUT {
            return None;
        }
        let (stream, rest) = rest.split_first_chunk::<8>()?;
        let (floor, rest) = rest.split_first_chunk::<8>()?;
        let (entry, mut rest) = take_text(rest)?;
        let mut position = Self {
            stream: *stream,
            shards: Vec::new(),
            floor: u64::from_be_bytes(*floor),
            entry: (!entry.is_empty()).then(|| entry.to_owned()),
        };
        while !rest.is_empty() {
            let id;
            (id, rest) = take_text(rest)?;
            let (&kind, after) = rest.split_first()?;
            let mark = match kind {
                0 => {
                    let sequence;
                    (sequence, rest) = take_text(after)?;
                    if sequence.is_empty() || !sequence.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    Mark::After(sequence.to_owned())
                }
                1 => {
                    let (time, after) = after.split_first_chunk::<8>()?;
                    rest = after;
                    Mark::Since(u64::from_be_bytes(*time))
                }
                _ => return None,
            };
            position.shards.push((Arc::from(id), mark));
        }
        Some(position)
    }
}

/// Text of up to 255 bytes (shard ids are at most 65 characters, sequence numbers 40 digits),
/// length first.
fn push_text(bytes: &mut Vec<u8>, text: &str) {
    let text = &text.as_bytes()[..text.len().min(255)];
    bytes.push(text.len() as u8);
    bytes.extend_from_slice(text);
}

fn take_text(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let (&len, rest) = bytes.split_first()?;
    let (text, rest) = rest.split_at_checked(usize::from(len))?;
    Some((std::str::from_utf8(text).ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str) -> Arc<str> {
        Arc::from(id)
    }

    #[test]
    fn a_place_reads_back_as_written_and_nothing_else_reads() {
        let mut place = Position::new("arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/1", 0);
        place.set(
            &shard("shardId-00000001764658230011-a7b7e6f5"),
            Mark::After("000000000000000000042".to_owned()),
        );
        place.set(&shard("shardId-2"), Mark::Since(1_764_658_230_011));
        assert_eq!(Position::from_bytes(&place.to_bytes()), Some(place.clone()));
        place.set_entry(Some("1764658230011-3".to_owned()));
        let bytes = place.to_bytes();
        assert_eq!(Position::from_bytes(&bytes), Some(place.clone()));
        for cut in 0..bytes.len() {
            let read = Position::from_bytes(&bytes[..cut]);
            assert!(read.is_none() || read.as_ref() != Some(&place), "{cut}");
        }
        let mut other = bytes.clone();
        other[0] = 2;
        assert_eq!(Position::from_bytes(&other), None);
    }

    #[test]
    fn marks_only_move_on() {
        let one = shard("s1");
        let mut place = Position::new("arn", 0);
        place.set(&one, Mark::Since(5));
        place.set(&one, Mark::After("9".to_owned()));
        place.set(&one, Mark::After("10".to_owned()));
        place.set(&one, Mark::After("000000000000000000009".to_owned()));
        place.set(&one, Mark::Since(7));
        assert_eq!(place.mark("s1"), Some(&Mark::After("10".to_owned())));
        assert_eq!(place.mark("s2"), None);
    }

    #[test]
    fn a_merge_takes_each_shards_later_mark_within_one_stream() {
        let (one, two) = (shard("s1"), shard("s2"));
        let mut a = Position::new("arn", 0);
        a.set(&one, Mark::After("5".to_owned()));
        a.set(&two, Mark::Since(100));
        let mut b = Position::new("arn", 0);
        b.set(&one, Mark::After("3".to_owned()));
        b.set(&two, Mark::After("8".to_owned()));
        let merged = a.merged(&b);
        assert_eq!(merged.mark("s1"), Some(&Mark::After("5".to_owned())));
        assert_eq!(merged.mark("s2"), Some(&Mark::After("8".to_owned())));
        let elsewhere = Position::new("another arn", 0);
        assert_eq!(a.merged(&elsewhere), a);
        assert!(a.in_stream("arn") && !a.in_stream("another arn"));
    }
}
