// Compiles the Relay documents in relay/src with relay-compiler against a schema (by default the
// repository's schema.graphql), in a temporary directory so that no generated file stays behind.
// Then checks what Relay generated: every operation is valid against the schema, each
// @refetchable fragment on a Node type refetches through `node(id:)`, and each @connection asks
// for the paging fields Relay needs.
//
// With --endpoint, it then pages through the server the way Relay's usePaginationFragment does,
// sending the generated query texts: the page query first, then the generated pagination query
// with the previous page's cursor until the connection says there is no more. It prints what it
// collected as JSON on stdout, for the caller to compare with the data it wrote.
//
//   node relay-compile.mjs [--schema PATH] [--endpoint URL --user ID --sku SKU --category NAME]
//
// Exits non-zero, with relay-compiler's own diagnostics on stderr, when compilation fails.

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { buildSchema, parse, validate } from 'graphql';

import { compileRelay } from './lib/relay.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    schema: { type: 'string', default: join(here, '..', '..', 'schema.graphql') },
    endpoint: { type: 'string' },
    user: { type: 'string' },
    sku: { type: 'string' },
    category: { type: 'string' },
  },
});

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

// --- compile -----------------------------------------------------------------------------------

const schemaText = readFileSync(resolve(opts.schema), 'utf8');
const { artifacts, error: compileError } = compileRelay(schemaText);
if (compileError) fail(compileError);

// --- check what Relay generated ----------------------------------------------------------------

const expectedArtifacts = [
  'CategoryProductsPageQuery',
  'CategoryProductsPaginationQuery',
  'CategoryProducts_query',
  'ProductPurchasesPageQuery',
  'ProductPurchasesPaginationQuery',
  'ProductPurchases_product',
  'PurchaseStatusRefetchQuery',
  'PurchaseStatus_purchase',
  'UserPurchasesChangedSubscription',
  'UserPurchasesCreateMutation',
  'UserPurchasesDeleteMutation',
  'UserPurchasesPageQuery',
  'UserPurchasesPaginationQuery',
  'UserPurchases_user',
];
const generated = [...artifacts.keys()].sort();
if (JSON.stringify(generated) !== JSON.stringify(expectedArtifacts)) {
  fail(`relay-compiler generated ${JSON.stringify(generated)}, expected ${JSON.stringify(expectedArtifacts)}`);
}

// The operation text Relay sends for a generated query or mutation (`params.text`).
function operationText(name) {
  const match = artifacts.get(name).match(/"text": ("(?:[^"\\]|\\.)*")/);
  if (!match) fail(`the artifact of ${name} has no operation text`);
  return JSON.parse(match[1]);
}

const schema = buildSchema(schemaText);
const texts = {};
for (const name of expectedArtifacts.filter((n) => /(Query|Mutation|Subscription)$/.test(n))) {
  texts[name] = operationText(name);
  const errors = validate(schema, parse(texts[name]));
  if (errors.length > 0) {
    fail(`Relay's ${name} is not valid against the schema:\n${errors.map((e) => e.message).join('\n')}`);
  }
}

function expectIn(name, ...needles) {
  for (const needle of needles) {
    if (!texts[name].includes(needle)) fail(`${name} lacks \`${needle}\`:\n${texts[name]}`);
  }
}
// Fragments on Node types refetch through node(id:) (the one on Query refetches Query itself).
for (const name of ['UserPurchasesPaginationQuery', 'ProductPurchasesPaginationQuery', 'PurchaseStatusRefetchQuery']) {
  expectIn(name, 'node(id: $id) {', '__typename');
}
// Relay adds the fields it pages with to every @connection: forward ones read endCursor and
// hasNextPage, the backward one startCursor and hasPreviousPage.
for (const name of ['UserPurchasesPaginationQuery', 'ProductPurchasesPaginationQuery']) {
  expectIn(name, 'after: $cursor', 'endCursor', 'hasNextPage', '__typename');
}
expectIn('CategoryProductsPaginationQuery', 'before: $cursor', 'startCursor', 'hasPreviousPage');
// @appendEdge and @deleteEdge are client-side: the server sees plain mutations.
expectIn('UserPurchasesCreateMutation', 'purchaseEdge {', 'cursor');
expectIn('UserPurchasesDeleteMutation', 'deletedPurchaseId');
// So are they on a subscription: the server sees the change's fields.
expectIn('UserPurchasesChangedSubscription', 'purchasesChanged(user: $user, after: $after)', 'removedId', 'edge {', 'cursor');
for (const handle of ['deleteEdge', 'appendEdge']) {
  if (!artifacts.get('UserPurchasesChangedSubscription').includes(`"handle": "${handle}"`)) {
    fail(`UserPurchasesChangedSubscription has no ${handle} handle:\n${artifacts.get('UserPurchasesChangedSubscription')}`);
  }
}
// Custom scalars are typed as the strings the server sends.
if (!/readonly amount: string;/.test(artifacts.get('UserPurchases_user'))) {
  fail(`UserPurchases_user does not type amount as a string:\n${artifacts.get('UserPurchases_user')}`);
}

const report = { artifacts: generated };

// --- page through the server with the generated queries -----------------------------------------

if (opts.endpoint) {
  for (const required of ['user', 'sku', 'category']) {
    if (!opts[required]) fail(`--endpoint needs --${required}`);
  }

  async function send(name, variables) {
    const response = await fetch(opts.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      body: JSON.stringify({ query: texts[name], variables }),
      signal: AbortSignal.timeout(20_000),
    });
    const body = await response.text();
    let json;
    try {
      json = JSON.parse(body);
    } catch {
      fail(`${name}: HTTP ${response.status} with a body that is not JSON: ${body}`);
    }
    if (!response.ok || json.errors) fail(`${name}: HTTP ${response.status}: ${body}`);
    return json.data;
  }

  // usePaginationFragment's loadNext (or loadPrevious, going backward) until the end, keeping
  // every page in the order Relay's connection handler would show them.
  async function walk({ first, next, connection, backward }) {
    let data = await first();
    const items = [];
    const pageSizes = [];
    let owner;
    for (;;) {
      const { owner: at, conn } = connection(data);
      owner ??= at;
      if (!conn) fail(`no connection in ${JSON.stringify(data)}`);
      const nodes = conn.edges.map((edge) => {
        if (typeof edge.cursor !== 'string') fail(`an edge without a cursor: ${JSON.stringify(edge)}`);
        return edge.node;
      });
      pageSizes.push(nodes.length);
      if (backward) items.unshift(...nodes);
      else items.push(...nodes);
      const more = backward ? conn.pageInfo.hasPreviousPage : conn.pageInfo.hasNextPage;
      if (!more) break;
      if (pageSizes.length > 100) fail('more than 100 pages: the connection does not end');
      data = await next(owner, backward ? conn.pageInfo.startCursor : conn.pageInfo.endCursor);
    }
    return { items, pageSizes };
  }

  const count = 2;
  const userPurchases = await walk({
    first: () => send('UserPurchasesPageQuery', { userId: opts.user, count }),
    next: (id, cursor) => send('UserPurchasesPaginationQuery', { id, count, cursor }),
    connection: (data) => {
      const user = data.user ?? data.node;
      if (data.node && data.node.__typename !== 'User') fail(`node(id:) gave ${JSON.stringify(data.node)}`);
      return { owner: user.id, conn: user.purchases };
    },
  });
  const productPurchases = await walk({
    first: () => send('ProductPurchasesPageQuery', { sku: opts.sku, count }),
    next: (id, cursor) => send('ProductPurchasesPaginationQuery', { id, count, cursor }),
    connection: (data) => {
      const product = data.product ?? data.node;
      return { owner: product.id, conn: product.purchases };
    },
  });
  const categoryProducts = await walk({
    first: () => send('CategoryProductsPageQuery', { category: opts.category, count }),
    next: (_, cursor) => send('CategoryProductsPaginationQuery', { category: opts.category, count, cursor }),
    connection: (data) => ({ owner: null, conn: data.products }),
    backward: true,
  });
  const purchaseId = userPurchases.items[0].id;
  const refetched = (await send('PurchaseStatusRefetchQuery', { id: purchaseId })).node;
  if (refetched?.id !== purchaseId) fail(`node(id:) refetched ${JSON.stringify(refetched)} for ${purchaseId}`);

  Object.assign(report, {
    userPurchases: {
      pageSizes: userPurchases.pageSizes,
      items: userPurchases.items.map(({ purchasedAt, amount, status, product }) => ({
        purchasedAt,
        amount,
        status,
        product: product?.name ?? null,
      })),
    },
    productPurchases: {
      pageSizes: productPurchases.pageSizes,
      items: productPurchases.items.map(({ purchasedAt, user }) => ({ purchasedAt, user: user.name })),
    },
    categoryProducts: {
      pageSizes: categoryProducts.pageSizes,
      items: categoryProducts.items.map(({ sku, price }) => ({ sku, price })),
    },
    refetchedPurchase: { __typename: refetched.__typename, purchasedAt: refetched.purchasedAt, status: refetched.status },
  });
}

process.stdout.write(`${JSON.stringify(report)}\n`);
