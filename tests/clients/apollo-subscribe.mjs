// Apollo Client follows a connection over GraphQL over WebSocket as an application does:
// GraphQLWsLink (the graphql-ws client, over the `ws` package) for subscriptions beside HttpLink
// for the rest, a cache with `relayStylePagination` on `notes`, the first page queried, then
// every pushed change merged into that cached connection: `ADDED` and `UPDATED` edges put in
// place by their node's sort key, `REMOVED` ids taken out. The table is written behind
// dynarelay's back with the AWS SDK.
//
// usage: node apollo-subscribe.mjs <graphql-url> <dynamodb-endpoint> <table>
//
// Writes warm-up notes (a new text each round: a write that changes nothing leaves no stream
// record) until a change arrives, deletes the warm-up note and waits for its removal, then
// writes notes 1 and 2, edits 1 and deletes 2. Prints the cached connection's texts and the
// kinds of the changes received as one JSON line; exits 1 with a tag on stderr on a missing or
// failed result.
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition, relayStylePagination } from "@apollo/client/utilities";
import { createClient } from "graphql-ws";
import WebSocket from "ws";
import { fail, notesOf, sleep } from "./lib/notes.mjs";

const [url, endpoint, table] = process.argv.slice(2);
const owner = "erin";
const { put, remove } = notesOf(endpoint, table, owner);

const ws = createClient({
  url: url.replace(/^http/, "ws"),
  webSocketImpl: WebSocket,
  retryAttempts: 0,
});
const link = ApolloLink.split(
  ({ query }) => {
    const definition = getMainDefinition(query);
    return definition.kind === "OperationDefinition" && definition.operation === "subscription";
  },
  new GraphQLWsLink(ws),
  new HttpLink({ uri: url }),
);
const client = new ApolloClient({
  link,
  cache: new InMemoryCache({
    typePolicies: { Query: { fields: { notes: relayStylePagination(["owner"]) } } },
  }),
});

const PAGE = gql`
  query Notes($owner: String!) {
    notes(owner: $owner, first: 10) {
      edges { cursor node { id at text } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;
const FOLLOW = gql`
  subscription Follow($owner: String!) {
    notesChanged(owner: $owner) { kind id edge { cursor node { id at text } } }
  }
`;
const variables = { owner };
await client.query({ query: PAGE, variables });

// Each change merged into the cached connection, as an application's handler does.
const merge = (change) =>
  client.cache.updateQuery({ query: PAGE, variables }, (data) => {
    let edges = data.notes.edges.filter((edge) => edge.node.id !== change.id);
    if (change.kind !== "REMOVED") edges = [...edges, change.edge];
    edges.sort((a, b) => a.node.at - b.node.at);
    return { ...data, notes: { ...data.notes, edges } };
  });
const received = [];
const waiting = [];
client.subscribe({ query: FOLLOW, variables }).subscribe({
  next({ data, error }) {
    if (error || !data) fail("ERROR", JSON.stringify(error));
    const change = data.notesChanged;
    merge(change);
    received.push(change);
    for (const done of waiting.splice(0)) done();
  },
  error: (err) => fail("ERROR", err?.message ?? String(err)),
});
const arrival = () => new Promise((done) => waiting.push(done));
const changes = async (n) => {
  const timer = setTimeout(() => fail("TIMEOUT", `${received.length} changes of ${n}`), 60_000);
  while (received.length < n) await arrival();
  clearTimeout(timer);
};

for (let round = 0; received.length === 0; round++) {
  if (round === 200) fail("NO_START", "no warm-up note came through");
  await put(0, `warm-up ${round}`);
  await Promise.race([arrival(), sleep(300)]);
}
await remove(0);
while (received.at(-1)?.kind !== "REMOVED") await changes(received.length + 1);
const start = received.length;

await put(1, "one");
await put(2, "two");
await put(1, "one, edited");
await remove(2);
await changes(start + 4);
const cached = client.readQuery({ query: PAGE, variables });
console.log(
  JSON.stringify({
    kinds: received.slice(start).map((c) => c.kind),
    cached: cached.notes.edges.map((edge) => edge.node.text),
  }),
);
await ws.dispose();
process.exit(0);
