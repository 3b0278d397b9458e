// Apollo Client and Relay against a server that enforces trusted documents, each sending the
// ids of the manifests their own tools wrote (trusted-manifests.mjs) instead of the documents:
//
//   Apollo Client 4: `createPersistedQueryLink(generatePersistedQueryIdsFromManifest(...))` from
//     @apollo/persisted-query-lists before an HttpLink (hashes over POST, then over GET), pages
//     through a user's purchases with `fetchMore` and `relayStylePagination`;
//   Relay: relay-runtime with the persisted artifacts and the network layer of Relay's docs (a
//     fetchFn posting `{ doc_id: params.id, variables }`, or the text when an artifact has no
//     id), pages through the same purchases as usePaginationFragment does (the page query, then
//     the pagination query through `node(id:)` from the connection's endCursor, merged by Relay's
//     connection handler) and follows `UserPurchasesChangedSubscription` over GraphQL over
//     WebSocket (subscribe payload `{ doc_id, variables }`) while purchases are written behind
//     the server's back with the AWS SDK.
//
// And documents the server's lists do not have, each of which must be refused:
//   - an Apollo query that the client's manifest (a newer build's, apollo-client.json) has and
//     the server's (apollo.json) has not: its id, then whatever the link sends on the answer;
//   - the same query with the server's manifest: the link cannot name it, nothing is sent;
//   - the same query in full, by a plain HttpLink;
//   - Relay's unlisted query posted in full by the fetchFn, and its persisted id;
//   - Relay's unlisted subscription over WebSocket, by id and in full.
// A listed document sent in full (Apollo's through a plain HttpLink, Relay's text artifact)
// shows whether the text the tools listed is the text the clients send.
//
// usage: node trusted-clients.mjs <graphql-url> <out-dir> <dynamodb-endpoint> <purchases-table>
//          <userId> <t0> [--refusals-only]
//
// <out-dir> is trusted-manifests.mjs's. Purchases are written at epoch milliseconds t0 + 1 (after
// Relay's pages, before subscribing: the resume from endCursor brings it) and t0 + 2 (once the
// first change arrived: the stream brings it). With --refusals-only, only the requests that must
// be refused are sent, and nothing is written.
//
// Prints one JSON line: what each client paged (page sizes, each item's `purchasedAt`) and sent,
// each refusal's `extensions.code`, the changes Relay received, and the keys of each subscribe
// message's payload as it went over the WebSocket; exits 1 with a tag on stderr
// (PAGING, SENT, CHANGES, TIMEOUT, ERROR) on a failed check.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { relayStylePagination } from '@apollo/client/utilities';
import { generatePersistedQueryIdsFromManifest } from '@apollo/persisted-query-lists';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { createClient } from 'graphql-ws';
import RelayRuntime from 'relay-runtime';
import WebSocket from 'ws';

import { firstResult, recordingFetch } from './lib/apollo-harness.mjs';
import { loadArtifact } from './lib/relay.mjs';
import { USER_PURCHASES } from './trusted/apollo/UserPurchases.js';
import { UNLISTED_USERS } from './trusted/apollo-unlisted/Users.js';

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

/** A failed check: `message` (starting with its tag) on stderr, and exit status 1. */
function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

const [url, outDir, endpoint, table, userId, t0, ...flags] = process.argv.slice(2);
if (!t0 || flags.some((flag) => flag !== '--refusals-only')) {
  fail(
    'USAGE: node trusted-clients.mjs <graphql-url> <out-dir> <dynamodb-endpoint> <purchases-table> <userId> <t0> [--refusals-only]',
  );
}
const refusalsOnly = flags.includes('--refusals-only');
const PAGE = 2;

/** The `extensions.code` of the first of `errors`, or null. */
const codeOf = (errors) => (Array.isArray(errors) ? (errors[0]?.extensions?.code ?? null) : null);

/** How a request named its document: by id, in full, or both. */
function sentAs(params) {
  const id = params.extensions?.persistedQuery?.sha256Hash ?? params.doc_id ?? params.documentId;
  if (id && typeof params.query === 'string') return 'id+text';
  if (id) return 'id';
  return typeof params.query === 'string' ? 'text' : 'nothing';
}

// --- Apollo Client ----------------------------------------------------------------------------

const manifestAt = (name) => JSON.parse(readFileSync(join(outDir, `${name}.json`), 'utf8'));

/** An Apollo Client sending ids from the manifest `name`, or full documents without one. */
function apolloClient(manifest, useGETForHashedQueries = false) {
  const recorder = recordingFetch();
  const http = new HttpLink({ uri: url, fetch: recorder.fetch });
  const link = manifest
    ? ApolloLink.from([
        createPersistedQueryLink({
          ...generatePersistedQueryIdsFromManifest({ loadManifest: () => manifestAt(manifest) }),
          useGETForHashedQueries,
        }),
        http,
      ])
    : http;
  const cache = new InMemoryCache({
    typePolicies: { User: { fields: { purchases: relayStylePagination() } } },
  });
  return { client: new ApolloClient({ link, cache }), exchanges: recorder.exchanges };
}

/** Each exchange as `METHOD sent-as`, and its error code when it had one. */
const described = (exchanges) =>
  exchanges.map((e) => {
    const code = codeOf(e.body?.errors);
    return `${e.method} ${sentAs(e.params)}${code ? ` ${code}` : ''}`;
  });

/** Pages through the user's purchases with fetchMore; the merged list and what was sent. */
async function apolloPaging(useGET) {
  const { client, exchanges } = apolloClient('apollo-client', useGET);
  const variables = { userId, first: PAGE };
  const observable = client.watchQuery({ query: USER_PURCHASES, variables, fetchPolicy: 'network-only' });
  const { result, subscription } = await firstResult(observable);
  try {
    const pageSizes = [result.data.user.purchases.edges.length];
    let connection = result.data.user.purchases;
    while (connection.pageInfo.hasNextPage) {
      if (pageSizes.length > 50) fail('PAGING: Apollo: more than 50 pages');
      const fetched = await observable.fetchMore({ variables: { after: connection.pageInfo.endCursor } });
      pageSizes.push(fetched.data.user.purchases.edges.length);
      connection = client.readQuery({ query: USER_PURCHASES, variables }).user.purchases;
    }
    const ids = new Set(manifestAt('apollo').operations.map(({ id }) => id));
    const unknown = exchanges.filter((e) => !ids.has(e.params.extensions?.persistedQuery?.sha256Hash));
    if (unknown.length) fail(`SENT: Apollo sent ids that are not the manifest's: ${JSON.stringify(unknown)}`);
    return {
      pageSizes,
      items: connection.edges.map((edge) => edge.node.purchasedAt),
      sent: described(exchanges),
    };
  } finally {
    subscription.unsubscribe();
  }
}

/** Runs `query` once, expecting it to fail; its error and the exchanges it took. */
async function apolloRefused({ client, exchanges }, query, variables) {
  try {
    const { data } = await client.query({ query, variables, fetchPolicy: 'network-only' });
    fail(`SENT: Apollo ran an unlisted query: ${JSON.stringify(data)}`);
  } catch (err) {
    return {
      sent: described(exchanges),
      error: err?.errors ? codeOf(err.errors) : String(err?.message ?? err),
    };
  }
}

async function apollo() {
  const report = {};
  if (!refusalsOnly) {
    report.pagesOverPost = await apolloPaging(false);
    report.pagesOverGet = await apolloPaging(true);
    // The listed document in full, as a plain HttpLink sends it (`__typename`s added).
    const plain = apolloClient(null);
    const { data } = await plain.client.query({
      query: USER_PURCHASES,
      variables: { userId, first: PAGE },
      fetchPolicy: 'network-only',
    });
    report.listedInFull = { sent: described(plain.exchanges), edges: data.user.purchases.edges.length };
  }
  // A newer build's id, which the server's list lacks.
  report.unlistedById = await apolloRefused(apolloClient('apollo-client'), UNLISTED_USERS, { first: 2 });
  // The server's own manifest has no id for it: the link fails before sending.
  report.unlistedNotInManifest = await apolloRefused(apolloClient('apollo'), UNLISTED_USERS, { first: 2 });
  report.unlistedInFull = await apolloRefused(apolloClient(null), UNLISTED_USERS, { first: 2 });
  return report;
}

// --- Relay ------------------------------------------------------------------------------------

const artifact = (dir, name) => loadArtifact(readFileSync(join(outDir, dir, `${name}.js`), 'utf8'));

const relaySent = [];
// Relay's documented network layer: the persisted id when the artifact has one, else the text.
async function fetchFn(params, variables) {
  const body = params.id != null ? { doc_id: params.id, variables } : { query: params.text, variables };
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const json = await response.json();
  relaySent.push({ name: params.name, sent: sentAs(body), status: response.status, code: codeOf(json.errors) });
  return json;
}

// graphql-ws's client sends no subscribe message without a `query` string: a payload that names
// its document by id carries an empty one, which the replacer leaves out of the message.
const sockets = [];
const subscribePayloads = [];
/** A WebSocket that notes the keys of each subscribe message's payload as it goes out. */
class NotingWebSocket extends WebSocket {
  send(data, ...rest) {
    const message = JSON.parse(data);
    if (message.type === 'subscribe') subscribePayloads.push(Object.keys(message.payload).sort());
    return super.send(data, ...rest);
  }
}
function webSocketClient() {
  const client = createClient({
    url: url.replace(/^http/, 'ws'),
    webSocketImpl: NotingWebSocket,
    retryAttempts: 0,
    jsonMessageReplacer(key, value) {
      return key === 'query' && value === '' && this.doc_id ? undefined : value;
    },
  });
  sockets.push(client);
  return client;
}
const wsRefusals = [];
/** What a subscription's error was: its code, or how the socket closed. */
function wsError(err) {
  if (Array.isArray(err)) return codeOf(err);
  if (typeof err?.code === 'number') return `closed ${err.code} ${err.reason ?? ''}`.trim();
  return String(err?.message ?? JSON.stringify(err));
}
// Relay's subscribeFn over graphql-ws, each subscription on a socket of its own.
function subscribeFn(params, variables) {
  const payload =
    params.id != null ? { doc_id: params.id, query: '', variables } : { operationName: params.name, query: params.text, variables };
  const sent = sentAs(params.id != null ? { doc_id: params.id } : payload);
  return Observable.create((sink) =>
    webSocketClient().subscribe(payload, {
      next: (value) => {
        if (value?.errors && value.data == null) {
          wsRefusals.push({ name: params.name, sent, code: codeOf(value.errors) });
        }
        sink.next(value);
      },
      error: (err) => {
        wsRefusals.push({ name: params.name, sent, code: wsError(err) });
        sink.error(err instanceof Error ? err : new Error(JSON.stringify(err)));
      },
      complete: () => sink.complete(),
    }),
  );
}

const environment = new Environment({
  network: Network.create(fetchFn, subscribeFn),
  store: new Store(new RecordSource()),
});

/** Fetches `request` with `variables`, expecting a refusal: the exchange it took. */
async function relayRefused(request, variables) {
  const before = relaySent.length;
  let ran = true;
  try {
    await fetchQuery(environment, request, variables).toPromise();
  } catch {
    ran = false;
  }
  if (ran) fail(`SENT: Relay ran ${request.params.name}, which no list has`);
  return relaySent.slice(before);
}

/** Subscribes with `request`, expecting a refusal; what the WebSocket answered. */
function relaySubscriptionRefused(request, variables) {
  return new Promise((done) => {
    const timer = setTimeout(() => fail(`TIMEOUT: ${request.params.name} was neither refused nor answered`), 60_000);
    const before = wsRefusals.length;
    const disposable = requestSubscription(environment, {
      subscription: request,
      variables,
      onNext: () => fail(`SENT: Relay's ${request.params.name}, which no list has, sent a change`),
      onError: () => {
        clearTimeout(timer);
        disposable?.dispose();
        done(wsRefusals.slice(before));
      },
      onCompleted: () => {
        clearTimeout(timer);
        done(wsRefusals.slice(before));
      },
    });
  });
}

async function relayPagingAndChanges(report) {
  const PageQuery = await artifact('relay', 'UserPurchasesPageQuery');
  const PaginationQuery = await artifact('relay', 'UserPurchasesPaginationQuery');
  const Changed = await artifact('relay', 'UserPurchasesChangedSubscription');

  const variables = { userId, count: PAGE };
  const operation = createOperationDescriptor(PageQuery, variables);
  environment.retain(operation);
  await fetchQuery(environment, PageQuery, variables).toPromise();
  const user = environment.lookup(operation.fragment).data?.user;
  if (!user?.id) fail(`PAGING: Relay: no user in ${JSON.stringify(user)}`);

  // The connection as Relay's handler keeps it in the store.
  function connection(read) {
    let out;
    commitLocalUpdate(environment, (store) => {
      const record = ConnectionHandler.getConnection(store.get(user.id), 'UserPurchases_purchases');
      if (!record) fail('PAGING: the store holds no UserPurchases_purchases connection');
      out = read(record);
    });
    return out;
  }
  const items = () =>
    connection((record) => record.getLinkedRecords('edges').map((edge) => edge.getLinkedRecord('node').getValue('purchasedAt')));
  const pageInfo = () =>
    connection((record) => {
      const info = record.getLinkedRecord('pageInfo');
      return { hasNextPage: info.getValue('hasNextPage'), endCursor: info.getValue('endCursor') };
    });

  const pageSizes = [items().length];
  while (pageInfo().hasNextPage) {
    if (pageSizes.length > 50) fail('PAGING: Relay: more than 50 pages');
    const had = items().length;
    const next = { id: user.id, count: PAGE, cursor: pageInfo().endCursor };
    environment.retain(createOperationDescriptor(PaginationQuery, next));
    await fetchQuery(environment, PaginationQuery, next).toPromise();
    pageSizes.push(items().length - had);
  }
  report.pages = { pageSizes, items: items(), sent: relaySent.map(({ name, sent }) => `${name} ${sent}`) };

  // The listed page query's text, as relay-compiler writes it when it does not persist.
  const PageText = await artifact('relay-text', 'UserPurchasesPageQuery');
  // In a store of its own: a first page again would reset the paged connection.
  const apart = new Environment({ network: Network.create(fetchFn), store: new Store(new RecordSource()) });
  const before = relaySent.length;
  const listed = await fetchQuery(apart, PageText, variables).toPromise();
  report.listedInFull = { sent: relaySent.slice(before), user: listed?.user?.id === user.id };

  // Changes: purchase t0 + 1 written before subscribing, brought by the resume from endCursor;
  // t0 + 2 written once it arrived, brought by the stream.
  const dynamodb = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const put = (n) =>
    dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          userId: { S: userId },
          purchasedAt: { N: String(BigInt(t0) + BigInt(n)) },
          sku: { S: 'SKU-00001' },
          quantity: { N: '1' },
          amount: { N: `${n}.5` },
          status: { S: 'PAID' },
        },
      }),
    );
  const connectionId = connection((record) => record.getDataID());
  await put(1);
  const kinds = [];
  const waiting = [];
  const arrival = () => new Promise((done) => waiting.push(done));
  const subscription = requestSubscription(environment, {
    subscription: Changed,
    variables: { user: user.id, after: pageInfo().endCursor, connections: [connectionId] },
    onNext: (response) => {
      kinds.push(response?.purchasesChanged?.kind ?? 'NONE');
      for (const done of waiting.splice(0)) done();
    },
    onError: (err) => fail(`CHANGES: ${err?.message ?? err} ${JSON.stringify(wsRefusals)}`),
  });
  const timer = setTimeout(() => fail(`TIMEOUT: changes ${JSON.stringify(kinds)}, ${JSON.stringify(items())}`), 60_000);
  while (kinds.length < 1) await arrival();
  await put(2);
  while (kinds.length < 2) await arrival();
  clearTimeout(timer);
  subscription.dispose();
  dynamodb.destroy();
  report.changes = { kinds, items: items() };
}

async function relay() {
  const report = {};
  if (!refusalsOnly) await relayPagingAndChanges(report);
  const unlistedVariables = { userId };
  report.unlistedInFull = await relayRefused(await artifact('relay-unlisted-text', 'TrustedUnlistedQuery'), unlistedVariables);
  report.unlistedById = await relayRefused(await artifact('relay-unlisted', 'TrustedUnlistedQuery'), unlistedVariables);
  const someone = { user: 'VXNlcjpub2JvZHk' };
  report.subscriptionUnlistedById = await relaySubscriptionRefused(
    await artifact('relay-unlisted', 'TrustedUnlistedSubscription'),
    someone,
  );
  report.subscriptionUnlistedInFull = await relaySubscriptionRefused(
    await artifact('relay-unlisted-text', 'TrustedUnlistedSubscription'),
    someone,
  );
  report.subscribePayloads = subscribePayloads;
  return report;
}

try {
  const summary = { apollo: await apollo(), relay: await relay() };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
} catch (err) {
  fail(`ERROR: ${err?.stack ?? err}${err?.errors ? `\n${JSON.stringify(err.errors)}` : ''}`);
}
await Promise.all(sockets.map((socket) => socket.dispose()));
process.exit(0);
