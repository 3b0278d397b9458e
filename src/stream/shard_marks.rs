//! Where the relays stand in each shard of a table's stream, kept in Redis beside the table's
//! changes (the hash `dynarelay:shards:<table>`), so that places are told by records, never by
//! times:
//! - `<stream>|<shard>|last`: the newest record of the shard published (whichever relay
//!   published it), written by the same script as the entry, so that an instance reading the
//!   hash and the newest entry at once takes a place that names every shard published so far
//!   (what it reads after that entry is after its place, and nothing before it is);
//! - `<stream>|<shard>|from`: where the relays' news of the shard begins ([`NewsFrom`]), so that
//!   a replay of a shard a place does not name reads it from there: what came before was the
//!   table's history when the relays started, never news.
//!
//! `<stream>` is the stream's identity in hexadecimal ([`super::position::stream_identity`]).
//! A relay writes its shard's marks again on every connection and every few seconds while the
//! shard is quiet, so a Redis that came back empty has them again at once. Hand-written scripts:
//! the entry and its mark must be written in one step (Redis runs a script alone), and a mark
//! only ever moves forward, which no single command does for a number held as text.

use std::{collections::HashMap, sync::Arc};

use redis::{Script, aio::MultiplexedConnection, streams::StreamRangeReply};

/// The hash of `table`'s (its full name) shard marks.
pub fn key(table: &str) -> String {
    format!("dynarelay:shards:{table}")
}

/// Where the relays' news of a shard begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewsFrom {
    /// At the shard's oldest record: a shard that appeared after the relays first started,
    /// every record of which is news.
    Oldest,
    /// At this record: the first a relay read of a shard that was open when the relays first
    /// started, read from what was written after (`LATEST`).
    At(String),
    /// Not yet: the shard was open when the relays first started and no record came since.
    NotYet,
}

const OLDEST: &str = "TRIM_HORIZON";
const NOT_YET: &str = "-";

impl NewsFrom {
    /// As the hash and the lease table hold it.
    pub fn text(&self) -> &str {
        match self {
            Self::Oldest => OLDEST,
            Self::At(sequence) => sequence,
            Self::NotYet => NOT_YET,
        }
    }

    /// The inverse of [`NewsFrom::text`]; `None` for anything else.
    pub fn from_text(text: &str) -> Option<Self> {
        match text {
            OLDEST => Some(Self::Oldest),
            NOT_YET => Some(Self::NotYet),
            digits if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                Some(Self::At(digits.to_owned()))
            }
            _ => None,
        }
    }
}

/// What a relay says of one shard.
#[derive(Debug, Clone, Copy)]
pub struct Said<'a> {
    /// The stream's identity.
    pub stream: [u8; 8],
    pub shard: &'a str,
    /// The newest record published (or passed over), if any.
    pub last: Option<&'a str>,
    /// Where its news begins, when known.
    pub from: Option<&'a NewsFrom>,
}

/// Moves a shard's marks forward: `last` to the later record, `from` set once (over "not
/// yet"). Sequence numbers are decimal text, compared as numbers (leading zeros aside).
const MARK: &str = r"
local function later(a, b)
  a = (string.gsub(a, '^0+', ''))
  b = (string.gsub(b, '^0+', ''))
  if #a ~= #b then return #a > #b end
  return a > b
end
local function mark(hash, last_field, last, from_field, from)
  if last ~= '' then
    local held = redis.call('HGET', hash, last_field)
    if (not held) or later(last, held) then redis.call('HSET', hash, last_field, last) end
  end
  if from ~= '' then
    local held = redis.call('HGET', hash, from_field)
    if (not held) or (held == '-' and from ~= '-') then
      redis.call('HSET', hash, from_field, from)
    end
  end
end
";

/// Appends an entry (KEYS[1], `MAXLEN ~` ARGV[1], fields ARGV[6..]) and marks its shard in
/// KEYS[2] (ARGV[2..5]); the entry's id.
fn publish_script() -> &'static Script {
    static SCRIPT: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| {
        Script::new(&format!(
            "{MARK}
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, 6))
mark(KEYS[2], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return id"
        ))
    })
}

/// Marks a shard in KEYS[1] (ARGV[1..4]).
fn seed_script() -> &'static Script {
    static SCRIPT: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| {
        Script::new(&format!(
            "{MARK}
mark(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return 1"
        ))
    })
}

/// A shard's field in the hash.
fn field(stream: &[u8; 8], shard: &str, what: &str) -> String {
    format!("{}|{shard}|{what}", hex(stream))
}

/// The four arguments that mark a shard.
fn mark_args(said: &Said<'_>) -> [String; 4] {
    [
        field(&said.stream, said.shard, "last"),
        said.last.unwrap_or_default().to_owned(),
        field(&said.stream, said.shard, "from"),
        said.from.map(NewsFrom::text).unwrap_or_default().to_owned(),
    ]
}

/// Appends an entry of `fields` to `table`'s changes (the Redis stream `changes`) and marks its
/// shard as `said`, in one step; the entry's id.
pub async fn publish(
    connection: &mut MultiplexedConnection,
    (changes, table): (&str, &str),
    max_len: usize,
    fields: &[(&'static str, String)],
    said: &Said<'_>,
) -> redis::RedisResult<String> {
    let script = publish_script();
    let mut invocation = script.key(changes);
    invocation.key(key(table)).arg(max_len);
    for arg in mark_args(said) {
        invocation.arg(arg);
    }
    for (name, value) in fields {
        invocation.arg(*name).arg(value);
    }
    invocation.invoke_async(connection).await
}

/// Marks a shard of `table` as `said` (a relay's marks written again, for a Redis that lost them).
pub async fn seed(
    connection: &mut MultiplexedConnection,
    table: &str,
    said: &Said<'_>,
) -> redis::RedisResult<()> {
    let script = seed_script();
    let mut invocation = script.key(key(table));
    for arg in mark_args(said) {
        invocation.arg(arg);
    }
    invocation.invoke_async::<i64>(connection).await.map(|_| ())
}

/// Every shard's marks in a table's hash.
#[derive(Debug, Default)]
pub struct Marks {
    last: HashMap<([u8; 8], Arc<str>), String>,
    from: HashMap<([u8; 8], Arc<str>), NewsFrom>,
}

impl Marks {
    fn read(fields: HashMap<String, String>) -> Self {
        let mut marks = Self::default();
        for (name, value) in fields {
            let mut parts = name.rsplitn(2, '|');
            let (Some(what), Some(rest)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Some((stream, shard)) = rest.split_once('|') else {
                continue;
            };
            let Some(stream) = identity(stream) else {
                continue;
            };
            let at = (stream, Arc::from(shard));
            match what {
                "last"
                    if NewsFrom::from_text(&value)
                        .is_some_and(|v| matches!(v, NewsFrom::At(_))) =>
                {
                    marks.last.insert(at, value);
                }
                "from" => {
                    if let Some(from) = NewsFrom::from_text(&value) {
                        marks.from.insert(at, from);
                    }
                }
                _ => {}
            }
        }
        marks
    }

    /// The newest record published of each shard of the stream `stream`.
    pub fn last_of(&self, stream: [u8; 8]) -> impl Iterator<Item = (&Arc<str>, &str)> {
        self.last
            .iter()
            .filter(move |((s, _), _)| *s == stream)
            .map(|((_, shard), last)| (shard, last.as_str()))
    }

    /// The streams whose shards have a `last` mark.
    pub fn streams(&self) -> impl Iterator<Item = [u8; 8]> {
        let mut streams: Vec<[u8; 8]> = self.last.keys().map(|(stream, _)| *stream).collect();
        streams.sort_unstable();
        streams.dedup();
        streams.into_iter()
    }

    /// Where the news of `shard` of the stream `stream` begins, when a relay said.
    pub fn from(&self, stream: [u8; 8], shard: &str) -> Option<&NewsFrom> {
        self.from.get(&(stream, Arc::from(shard)))
    }
}

/// Every shard's marks of `table`.
pub async fn marks(
    connection: &mut MultiplexedConnection,
    table: &str,
) -> redis::RedisResult<Marks> {
    let fields: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(key(table))
        .query_async(connection)
        .await?;
    Ok(Marks::read(fields))
}

/// The newest `count` entries of `table`'s changes (the Redis stream `changes`) and every
/// shard's marks, read at one instant (`MULTI`): each shard's `last` is that of the entries up
/// to the newest.
pub async fn snapshot(
    connection: &mut MultiplexedConnection,
    (changes, table): (&str, &str),
    count: usize,
) -> redis::RedisResult<(StreamRangeReply, Marks)> {
    let (newest, fields): (StreamRangeReply, HashMap<String, String>) = redis::pipe()
        .atomic()
        .cmd("XREVRANGE")
        .arg(changes)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(count)
        .cmd("HGETALL")
        .arg(key(table))
        .query_async(connection)
        .await?;
    Ok((newest, Marks::read(fields)))
}

/// Bytes as lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A stream's identity from its hexadecimal form.
pub fn identity(text: &str) -> Option<[u8; 8]> {
    let mut identity = [0u8; 8];
    if text.len() != 16 {
        return None;
    }
    for (i, byte) in identity.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_from_reads_back_as_written() {
        for from in [
            NewsFrom::Oldest,
            NewsFrom::NotYet,
            NewsFrom::At("000000000000000000042".to_owned()),
        ] {
            assert_eq!(NewsFrom::from_text(from.text()), Some(from));
        }
        assert_eq!(NewsFrom::from_text(""), None);
        assert_eq!(NewsFrom::from_text("LATEST"), None);
    }

    #[test]
    fn marks_read_each_shard_of_each_stream_and_skip_what_is_not_one() {
        let stream = [1, 2, 3, 4, 5, 6, 7, 8];
        let other = [9; 8];
        let fields = HashMap::from([
            (field(&stream, "shardId-1|x", "last"), "0042".to_owned()),
            (field(&stream, "shardId-1|x", "from"), "0040".to_owned()),
            (field(&stream, "shardId-2", "from"), "-".to_owned()),
            (field(&other, "shardId-3", "last"), "7".to_owned()),
            (field(&other, "shardId-3", "from"), OLDEST.to_owned()),
            ("not|a field".to_owned(), "1".to_owned()),
            (field(&stream, "shardId-4", "last"), "-".to_owned()),
        ]);
        let marks = Marks::read(fields);
        let last: Vec<_> = marks.last_of(stream).collect();
        assert_eq!(last, [(&Arc::from("shardId-1|x"), "0042")]);
        assert_eq!(
            marks.from(stream, "shardId-1|x"),
            Some(&NewsFrom::At("0040".to_owned()))
        );
        assert_eq!(marks.from(stream, "shardId-2"), Some(&NewsFrom::NotYet));
        assert_eq!(marks.from(other, "shardId-3"), Some(&NewsFrom::Oldest));
        assert_eq!(marks.from(stream, "shardId-3"), None);
        assert_eq!(identity(&hex(&stream)), Some(stream));
        assert_eq!(identity("zz"), None);
    }
}
