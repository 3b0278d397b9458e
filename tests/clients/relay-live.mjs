// Relay follows a user's purchases as an application does: relay-runtime's Environment with a
// network layer that fetches queries over HTTP and subscribes over GraphQL over WebSocket (the
// graphql-ws client), the artifacts relay-compiler makes from relay/src. The page query fills
// the `UserPurchases_purchases` connection in Relay's store; a purchase is written behind
// dynarelay's back; then `UserPurchasesChangedSubscription` resumes from the connection's
// `endCursor` and its changes go into the store's connection through `@appendEdge` and
// `@deleteEdge`, as Relay applies them. Meanwhile purchases are written, changed and deleted
// behind dynarelay's back with the AWS SDK, and a last one closes.
//
// usage: node relay-live.mjs <graphql-url> <dynamodb-endpoint> <purchases-table> <userId> <t0>
//
// Writes, at epoch milliseconds t0 + 1..4: 1 before subscribing (after the page was read); once
// 1 has arrived, 2 and 3, 2 again with a new amount, 3 deleted, and 4, the last. Prints, as one JSON line, the
// kinds of the changes received and the store's connection (each edge's `purchasedAt`, `amount`
// and whether it has a cursor) once purchase 4 is in it; exits 1 with a tag on stderr on a
// missing or failed result.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { DeleteItemCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { createClient } from 'graphql-ws';
import RelayRuntime from 'relay-runtime';
import WebSocket from 'ws';

import { fail } from './lib/notes.mjs';
import { compileRelay, loadArtifact } from './lib/relay.mjs';

const {
  ConnectionHandler,
  Environment,
  Network,
  Observable,
  RecordSource,
  Store,
  commitLocalUpdate,
  createOperationDescriptor,
  fetchQuery,
  requestSubscription,
} = RelayRuntime;

const [url, endpoint, table, userId, t0] = process.argv.slice(2);
const at = (n) => String(BigInt(t0) + BigInt(n));

// --- the artifacts ------------------------------------------------------------------------------

const here = dirname(fileURLToPath(import.meta.url));
const schemaText = readFileSync(join(here, '..', '..', 'schema.graphql'), 'utf8');
const { artifacts, error } = compileRelay(schemaText, 'javascript');
if (error) fail('COMPILE', error);
const PageQuery = await loadArtifact(artifacts.get('UserPurchasesPageQuery'));
const Changed = await loadArtifact(artifacts.get('UserPurchasesChangedSubscription'));

// --- the environment ----------------------------------------------------------------------------

const ws = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
async function fetchFn(params, variables) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: params.text, variables }),
    signal: AbortSignal.timeout(60_000),
  });
  return response.json();
}
function subscribeFn(params, variables) {
  return Observable.create((sink) =>
    ws.subscribe({ operationName: params.name, query: params.text, variables }, sink),
  );
}
const environment = new Environment({
  network: Network.create(fetchFn, subscribeFn),
  store: new Store(new RecordSource()),
});

// --- behind dynarelay's back --------------------------------------------------------------------

// DynamoDB Local: dummy credentials, given, so that no credential source is ever looked for.
const dynamodb = new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
const key = (n) => ({ userId: { S: userId }, purchasedAt: { N: at(n) } });
const put = (n, amount) =>
  dynamodb.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        ...key(n),
        sku: { S: 'SKU-00001' },
        quantity: { N: '1' },
        amount: { N: amount },
        status: { S: 'PAID' },
      },
    }),
  );
const remove = (n) => dynamodb.send(new DeleteItemCommand({ TableName: table, Key: key(n) }));

// --- the page, then the changes -----------------------------------------------------------------

const variables = { userId, count: 100 };
const operation = createOperationDescriptor(PageQuery, variables);
environment.retain(operation);
await fetchQuery(environment, PageQuery, variables).toPromise();
const user = environment.lookup(operation.fragment).data?.user;
if (!user?.id) fail('NO_USER', JSON.stringify(user));

// The connection as Relay keyed it (filters: `status`, not given), read from the store.
function connection(read) {
  let out;
  commitLocalUpdate(environment, (store) => {
    const record = ConnectionHandler.getConnection(store.get(user.id), 'UserPurchases_purchases');
    if (!record) fail('NO_CONNECTION', 'the store holds no UserPurchases_purchases connection');
    out = read(record);
  });
  return out;
}
const connectionId = connection((record) => record.getDataID());
const endCursor = connection((record) => record.getLinkedRecord('pageInfo').getValue('endCursor'));
const edges = () =>
  connection((record) =>
    record.getLinkedRecords('edges').map((edge) => {
      const node = edge.getLinkedRecord('node');
      return {
        purchasedAt: node.getValue('purchasedAt'),
        amount: node.getValue('amount'),
        cursor: typeof edge.getValue('cursor') === 'string',
      };
    }),
  );

// Written after the page was read and before the subscription: the resume must bring it.
await put(1, '1.5');

const kinds = [];
const waiting = [];
requestSubscription(environment, {
  subscription: Changed,
  variables: { user: user.id, after: endCursor, connections: [connectionId] },
  onNext: (response) => {
    kinds.push(response?.purchasesChanged?.kind ?? 'NONE');
    for (const done of waiting.splice(0)) done();
  },
  onError: (err) => fail('ERROR', err?.message ?? String(err)),
});

// Purchase 1 arrives first, sent by the resume after the subscription took its place in the
// stream: everything written from now on comes through the stream.
const arrival = () => new Promise((done) => waiting.push(done));
const timer = setTimeout(() => fail('TIMEOUT', `${JSON.stringify(kinds)} ${JSON.stringify(edges())}`), 60_000);
while (kinds.length === 0) await arrival();

await put(2, '2.5');
await put(3, '3.5');
await put(2, '2.25');
await remove(3);
await put(4, '4.5');

const last = at(4);
const lastIn = () => edges().some((edge) => new Date(edge.purchasedAt).getTime() === Number(last));
while (!lastIn()) await arrival();
clearTimeout(timer);

console.log(JSON.stringify({ kinds, edges: edges() }));
await ws.dispose();
dynamodb.destroy();
process.exit(0);
