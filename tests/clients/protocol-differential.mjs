// The differential protocol suite: a generated corpus of GraphQL-over-HTTP requests sent both to
// dynarelay and to a reference, graphql-js 16 served by graphql-http's own handler on the same
// SDL, and the answers compared: status code, whether `data` is there, `data` itself, and the
// sorted paths of the errors.
//
//   node protocol-differential.mjs <dynarelay /graphql url> <schema.graphql> '<fixture json>'
//
// The fixture names what the test loaded: {"users": [u1, u2, u3], "userId": global id of u1,
// "category": a product category, "buyer": the user the corpus's mutations buy for}.
//
// The reference resolves every field from recorded dynarelay values, so that only the protocol
// and null propagation are compared: each document's operation is first sent to dynarelay with
// variables under which nothing fails, and its `data` is recorded; the reference's resolvers
// return the recorded value at the field's response path, and throw where an argument is bad by
// a rule of their own (a cursor or id starting `bad-`, a page size outside 0..100), never by
// looking at dynarelay's answer.
//
// The corpus: query documents with an error site at every nesting level (a root connection, a
// connection under a lookup, under a list under a list, in a fragment, in an inline fragment,
// under an alias, a nullable lookup), mutations, and request errors (syntax, validation,
// subscriptions); each in anonymous, named and several-operation documents; sent with good
// variables and with each kind of bad one; over POST, GET, and Apollo persisted queries by hash
// (POST and GET; the reference gets the full text); without `operationName`, with the right
// one, a wrong one and an empty one; under four `Accept` headers.
//
// Every difference must be one of DECISIONS, each a documented choice (the table under "Against
// graphql-js" in docs/src/reference/graphql-over-http.md). The last line on stdout is a JSON summary:
//   {"requests", "compared", "executedMutations", "decisions": {id: count},
//    "undocumented": [first few differences], "undocumentedCount"}
// The script exits 1 when a difference is undocumented or a recording failed.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { GraphQLError, buildSchema, execute, getOperationAST, parse } from 'graphql';
import { createHandler } from 'graphql-http/lib/use/http';

const [url, sdlPath, fixtureJson] = process.argv.slice(2);
if (!url || !sdlPath || !fixtureJson) {
  console.error("usage: node protocol-differential.mjs <url> <schema.graphql> '<fixture json>'");
  process.exit(2);
}
const fixture = JSON.parse(fixtureJson);
const schema = buildSchema(readFileSync(sdlPath, 'utf8'));

/** Differences that are decisions, each explained in docs/src/reference/graphql-over-http.md. */
const DECISIONS = [
  {
    id: 'variables-are-request-errors',
    // graphql-http hands graphql-js's execute() result on as it is, so a variable that cannot
    // be coerced answers 200 even under application/graphql-response+json; GraphQL over HTTP
    // makes every request error under that media type a 4xx, and dynarelay answers 400.
    matches: (c, ours, ref) =>
      c.badVariable &&
      c.media === 'graphql-response' &&
      ours.status === 400 &&
      ref.status === 200 &&
      !ours.hasData &&
      !ref.hasData &&
      ours.paths === '[]' &&
      ref.paths === '[]',
  },
  {
    id: 'empty-get-operation-name',
    // `operationName=` in a query string: dynarelay treats the empty parameter as absent (URL
    // builders that write every key send it so); graphql-http looks for an operation named ""
    // and finds none. Matched when dynarelay answered as the reference does without the name.
    matches: (c, ours, _ref, withoutName) =>
      c.method === 'GET' && c.name === '' && withoutName !== undefined && same(ours, withoutName),
  },
];

// ---------------------------------------------------------------- the reference server

/** Whether two answers agree: status; then, but for a 405, `data` and the error paths. */
function same(ours, ref) {
  return (
    ours.status === ref.status &&
    (ours.status === 405 ||
      (ours.hasData === ref.hasData && ours.data === ref.data && ours.paths === ref.paths))
  );
}

const recordings = new Map();
let executedMutations = 0;
const recordingKey = (query, operationName) => `${operationName ?? ''}\u0000${query}`;

/** An argument the reference fails on: a `bad-` cursor or id, a page size out of range. */
function isBad(args) {
  return Object.entries(args).some(([name, value]) => {
    if (typeof value === 'string') return value.startsWith('bad-');
    if ((name === 'first' || name === 'last') && typeof value === 'number') {
      return value < 0 || value > 100;
    }
    if (value && typeof value === 'object' && !Array.isArray(value)) return isBad(value);
    return false;
  });
}

// A failing field fails asynchronously, as a resolver that reads a store does: graphql-js then
// completes every item of a list and reports each item's error (with synchronous resolvers it
// stops at the first error that nulls the list, and reports that one alone).
const fieldResolver = (source, args, _context, info) => {
  if (isBad(args)) return Promise.reject(new GraphQLError(`bad argument at ${info.fieldName}`));
  return source?.[info.path.key];
};

const handler = createHandler({
  schema,
  context: (_req, params) => ({ query: params.query }),
  execute: (args) => {
    const operation = getOperationAST(args.document, args.operationName);
    const recorded = recordings.get(recordingKey(args.contextValue.query, operation?.name?.value));
    return execute({ ...args, rootValue: recorded, fieldResolver });
  },
});
const reference = http.createServer((req, res) => handler(req, res));
await new Promise((resolve) => reference.listen(0, '127.0.0.1', resolve));
const referenceUrl = `http://127.0.0.1:${reference.address().port}/graphql`;

// ---------------------------------------------------------------- the corpus

const [u1, u2, u3] = fixture.users;
const PAGE = 'nodes { amount status }';

/**
 * Query selections, each with the variables it declares, good variables, and the bad variants
 * it can take. `$c` is a cursor, `$n` a page size, `$id` a global id.
 */
const SELECTIONS = [
  {
    name: 'connection under a lookup',
    vars: '$c: String, $n: Int',
    body: `user(userId: "${u1}") { name purchases(first: $n, after: $c) { edges { cursor node { amount } } pageInfo { hasNextPage endCursor } } }`,
  },
  {
    name: 'root connection (non-null to the root)',
    vars: '$c: String, $n: Int',
    body: `users(first: $n, after: $c) { nodes { userId } pageInfo { hasNextPage } }`,
  },
  {
    name: 'connection in a list in a list',
    vars: '$c: String, $n: Int',
    body: `user(userId: "${u1}") { purchases(first: 2) { nodes { user { name purchases(first: $n, after: $c) { ${PAGE} } } } } }`,
  },
  {
    name: 'connection under a nullable relation',
    vars: '$c: String, $n: Int',
    body: `user(userId: "${u2}") { purchases(first: 2) { edges { node { product { sku purchases(first: $n, after: $c, order: DESC) { nodes { userId } } } } } } }`,
  },
  {
    name: 'root connection of a lookup by index',
    vars: '$c: String, $n: Int',
    body: `products(category: "${fixture.category}", first: $n, after: $c) { edges { node { sku price } } }`,
  },
  {
    name: 'aliases, one failing',
    vars: '$c: String, $n: Int',
    body: `a: user(userId: "${u1}") { name } b: user(userId: "${u2}") { who: name p: purchases(first: $n, after: $c) { ${PAGE} } }`,
  },
  {
    name: 'a named fragment',
    vars: '$c: String, $n: Int',
    body: `user(userId: "${u1}") { ...UserPage }`,
    fragments: `fragment UserPage on User { name purchases(first: $n, after: $c) { ${PAGE} } }`,
  },
  {
    name: 'an inline fragment on node',
    vars: '$c: String, $n: Int, $id: ID!',
    body: `node(id: $id) { __typename id ... on User { purchases(first: $n, after: $c) { ${PAGE} } } }`,
  },
  {
    name: 'a nullable lookup by id',
    vars: '$id: ID!',
    body: `node(id: $id) { __typename id ... on User { name } } __typename`,
  },
  {
    name: 'several failing sites',
    vars: '$c: String, $n: Int',
    body: `x: user(userId: "${u1}") { purchases(first: $n, after: $c) { ${PAGE} } } y: user(userId: "${u3}") { name purchases(first: 1) { nodes { user { purchases(first: $n, after: $c) { ${PAGE} } } } } }`,
  },
];

/** Variables: good ones, and each kind of bad one a selection's declarations allow. */
function variants(vars) {
  const good = {};
  if (vars.includes('$c')) good.c = null;
  if (vars.includes('$n')) good.n = 2;
  if (vars.includes('$id')) good.id = fixture.userId;
  const out = [{ kind: 'good', variables: good }];
  if ('c' in good) out.push({ kind: 'bad cursor', variables: { ...good, c: 'bad-cursor' } });
  if ('n' in good) {
    out.push({ kind: 'negative size', variables: { ...good, n: -1 } });
    out.push({ kind: 'size past the maximum', variables: { ...good, n: 101 } });
    out.push({ kind: 'size of the wrong type', variables: { ...good, n: 'two' }, badVariable: true });
  }
  if ('id' in good) {
    out.push({ kind: 'bad id', variables: { ...good, id: 'bad-id' } });
    out.push({ kind: 'missing required id', variables: { ...good, id: undefined }, badVariable: true });
  }
  return out;
}

/** Documents: each selection as an anonymous, a named and a several-operation document. */
function documents() {
  const docs = [];
  for (const s of SELECTIONS) {
    const fragments = s.fragments ? ` ${s.fragments}` : '';
    docs.push({ label: `${s.name}, anonymous`, query: `query(${s.vars}) { ${s.body} }${fragments}`, op: null, vars: s.vars });
    docs.push({ label: `${s.name}, named`, query: `query Q(${s.vars}) { ${s.body} }${fragments}`, op: 'Q', vars: s.vars, lone: true });
    docs.push({
      label: `${s.name}, one of several`,
      query: `query Other { __typename } query Q(${s.vars}) { ${s.body} } mutation Never { deletePurchase(input: { id: "bad-id" }) { deletedPurchaseId } }${fragments}`,
      op: 'Q',
      vars: s.vars,
    });
  }
  // Mutations: one that runs (and only ever buys SKU-00003 for the fixture's buyer, which no
  // query of the corpus reads, so that what they read stays the same), one that fails at its
  // non-null root field.
  const buy = `createPurchase(input: { userId: "${fixture.buyer}", sku: "SKU-00003", amount: "1.5", quantity: $q }) { purchase { sku quantity status user { name } } }`;
  docs.push({ label: 'mutation, anonymous', query: `mutation($q: Int!) { ${buy} }`, op: null, vars: '$q', mutation: true });
  docs.push({ label: 'mutation, named', query: `mutation Buy($q: Int!) { ${buy} }`, op: 'Buy', vars: '$q', mutation: true, lone: true });
  docs.push({
    label: 'mutation, one of several',
    query: `query Q { __typename } mutation Buy($q: Int!) { ${buy} }`,
    op: 'Buy',
    vars: '$q',
    mutation: true,
  });
  const del = 'deletePurchase(input: { id: $id }) { deletedPurchaseId }';
  docs.push({ label: 'failing mutation, named', query: `mutation Del($id: ID!) { ${del} }`, op: 'Del', vars: '$id', mutation: true, lone: true, failOnly: true });
  // Request errors, before any execution.
  const errors = [
    ['syntax error', `{ user(userId: "${u1}") { name }`],
    ['unknown field', '{ nope }'],
    ['unknown argument', `{ user(userId: "${u1}", extra: 1) { name } }`],
    ['subscription', 'subscription S { __typename }'],
    ['two operations named alike', 'query A { __typename } query A { __typename }'],
    ['an unused variable', 'query A($x: Int) { __typename }'],
    ['an undefined variable', `query A { users(first: $n) { nodes { userId } } }`],
  ];
  for (const [label, query] of errors) {
    docs.push({ label: `request error: ${label}`, query, op: 'A', vars: '', requestError: true });
  }
  return docs;
}

/** The variable sets one document is sent with. */
function variableSets(doc) {
  if (doc.requestError) return [{ kind: 'none', variables: {} }];
  if (doc.mutation && doc.vars === '$q') {
    return [
      { kind: 'good', variables: { q: 1 } },
      { kind: 'missing required quantity', variables: {}, badVariable: true },
    ];
  }
  if (doc.failOnly) return [{ kind: 'bad id', variables: { id: 'bad-id' } }];
  return variants(doc.vars);
}

/** The `operationName`s one document is sent with: absent, right, wrong, empty. */
function names(doc) {
  const out = [{ kind: 'no operationName', name: undefined }];
  if (doc.op) out.push({ kind: 'its operationName', name: doc.op });
  out.push({ kind: 'a wrong operationName', name: 'Nope' });
  out.push({ kind: 'an empty operationName', name: '' });
  return out;
}

const ACCEPTS = [
  ['graphql-response', 'application/graphql-response+json'],
  ['json', 'application/json'],
  ['graphql-response', 'application/graphql-response+json,application/json;q=0.9'],
  ['json', undefined],
];
const TRANSPORTS = ['POST', 'GET', 'persisted POST', 'persisted GET'];

// ---------------------------------------------------------------- sending

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/** One request to `target`; `persisted` sends the hash without the text. */
async function send(target, { method, query, variables, name, accept, persisted }) {
  const extensions = persisted ? { persistedQuery: { version: 1, sha256Hash: sha256(query) } } : undefined;
  const headers = {};
  if (accept) headers.accept = accept;
  let response;
  if (method === 'GET') {
    const params = new URLSearchParams();
    if (!persisted) params.set('query', query);
    params.set('variables', JSON.stringify(variables));
    if (name !== undefined) params.set('operationName', name);
    if (extensions) params.set('extensions', JSON.stringify(extensions));
    response = await fetch(`${target}?${params}`, { headers });
  } else {
    headers['content-type'] = 'application/json';
    const body = { variables };
    if (!persisted) body.query = query;
    if (name !== undefined) body.operationName = name;
    if (extensions) body.extensions = extensions;
    response = await fetch(target, { method: 'POST', headers, body: JSON.stringify(body) });
  }
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = { unparsable: text };
  }
  const paths = (body.errors ?? []).map((error) => JSON.stringify(error.path ?? null)).sort();
  return {
    status: response.status,
    hasData: Object.hasOwn(body, 'data'),
    data: JSON.stringify(body.data ?? null),
    paths: JSON.stringify(paths.filter((path) => path !== 'null')),
    body,
  };
}

/** Records `doc`'s `data` under good variables, and registers its hash for persisted queries. */
async function record(doc) {
  if (doc.requestError) return;
  const [first] = variableSets(doc);
  const answer = await send(url, {
    method: 'POST',
    query: doc.query,
    variables: first.variables,
    name: doc.op ?? undefined,
    accept: 'application/json',
    persisted: false,
  });
  // Register the hash (a second request, also executed).
  const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(doc.query) } };
  const registered = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: doc.query, operationName: doc.op ?? undefined, variables: first.variables, extensions }),
  });
  if (registered.status !== 200) throw new Error(`registering ${doc.label}: ${registered.status}`);
  const again = await registered.json();
  for (const executed of [answer.body, again]) {
    if (executed.data?.createPurchase) executedMutations += 1;
  }
  if (doc.failOnly) return;
  if (answer.status !== 200 || answer.body.errors || !answer.body.data) {
    throw new Error(`recording ${doc.label} failed: ${JSON.stringify(answer.body)}`);
  }
  recordings.set(recordingKey(doc.query, doc.op ?? undefined), answer.body.data);
}

async function pool(items, width, run) {
  let next = 0;
  const workers = Array.from({ length: width }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await run(item);
    }
  });
  await Promise.all(workers);
}

// ---------------------------------------------------------------- main

const docs = documents();
const cases = [];
// Every document with every variable set, name and transport; the Accept header rotates
// through the four, so that each of them meets every kind of request across the corpus.
let rotation = 0;
for (const doc of docs) {
  for (const vars of variableSets(doc)) {
    for (const { kind: nameKind, name } of names(doc)) {
      for (const transport of TRANSPORTS) {
        // A document that never parsed or validated cannot be registered for persisting.
        if (doc.requestError && transport.startsWith('persisted')) continue;
        const [media, accept] = ACCEPTS[rotation++ % ACCEPTS.length];
        cases.push({
          doc,
          label: `${doc.label} | ${vars.kind} | ${nameKind} | ${transport} | Accept: ${accept ?? '(none)'}`,
          method: transport.endsWith('GET') ? 'GET' : 'POST',
          persisted: transport.startsWith('persisted'),
          query: doc.query,
          variables: vars.variables,
          badVariable: Boolean(vars.badVariable),
          name,
          accept,
          media,
        });
      }
    }
  }
}

const decisions = Object.fromEntries(DECISIONS.map((d) => [d.id, 0]));
const undocumented = [];
let compared = 0;
let requests = 0;
try {
  for (const doc of docs) {
    await record(doc);
    requests += doc.requestError ? 0 : 2;
  }
  // Four requests in flight at once; each case's two answers are compared when both are in.
  await pool(cases, 4, async (c) => {
    const ours = await send(url, c);
    const ref = await send(referenceUrl, { ...c, persisted: false });
    requests += 1;
    compared += 1;
    if (c.doc.mutation && ours.status === 200 && ours.body.data?.createPurchase) executedMutations += 1;
    if (same(ours, ref)) return;
    // The reference's answer to the same request without `operationName`, for the decision on
    // empty names in query strings.
    const withoutName =
      c.method === 'GET' && c.name === ''
        ? await send(referenceUrl, { ...c, name: undefined, persisted: false })
        : undefined;
    const decision = DECISIONS.find((d) => d.matches(c, ours, ref, withoutName));
    if (decision) {
      decisions[decision.id] += 1;
      return;
    }
    undocumented.push({
      case: c.label,
      dynarelay: { status: ours.status, body: ours.body },
      reference: { status: ref.status, body: ref.body },
    });
  });
} finally {
  reference.close();
}
console.log(
  JSON.stringify({
    requests,
    compared,
    executedMutations,
    decisions,
    undocumentedCount: undocumented.length,
    undocumented: undocumented.slice(0, 10),
  }),
);
if (undocumented.length > 0) process.exitCode = 1;
