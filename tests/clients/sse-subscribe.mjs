// Follows a connection with the graphql-sse client (distinct connections mode, as its
// `createClient` defaults to), while the AWS SDK writes the table behind dynarelay's back: the
// changes must come through the real client as edges, in write order.
//
// usage: node sse-subscribe.mjs <graphql-url> <dynamodb-endpoint> <table>
//
// The table is the subscriptions test's `Notes` (owner S, at N). The script subscribes to
// `notesChanged(owner: "carol")`, writes a warm-up note (a new text each round: a write that
// changes nothing leaves no stream record) until a result arrives, deletes it and skips its
// events, then writes two notes and edits the first. It prints the three results that follow as
// one JSON line, and exits 1 with a tag on stderr when a result is missing or is an error.
import { createClient } from "graphql-sse";
import { fail, notesOf, sleep } from "./lib/notes.mjs";

const [url, endpoint, table] = process.argv.slice(2);
const notes = notesOf(endpoint, table, "carol");
const put = notes.put;

const client = createClient({ url, retryAttempts: 0 });
const results = client.iterate({
  query: `subscription($owner: String!) {
    notesChanged(owner: $owner) { kind id edge { cursor node { at text } } } }`,
  variables: { owner: "carol" },
});
let stage = "warm-up";
const next = async () => {
  const timer = setTimeout(() => fail("TIMEOUT", `no result within 60 s (${stage})`), 60_000);
  const { value, done } = await results.next();
  clearTimeout(timer);
  if (done) fail("ENDED", "the subscription ended");
  if (value.errors) fail("ERRORS", JSON.stringify(value.errors));
  return value.data.notesChanged;
};

// Warm up: the reader has reached the stream's end once a warm-up note comes through.
let first = results.next();
for (let round = 0; ; round++) {
  if (round === 200) fail("NO_START", "no warm-up note came through");
  await put(0, `warm-up ${round}`);
  const arrived = await Promise.race([first, sleep(300).then(() => null)]);
  if (arrived) break;
}
await notes.remove(0);
stage = "draining the warm-up note";
while ((await next()).kind !== "REMOVED");
stage = "the notes";

await put(1, "one");
await put(2, "two");
await put(1, "one, edited");
const got = [await next(), await next(), await next()];
await results.return();
client.dispose();
console.log(JSON.stringify(got));
process.exit(0);
