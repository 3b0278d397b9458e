// Pages through dynarelay's connections with Apollo Client the way an application does: an
// InMemoryCache with `relayStylePagination` on every connection field, an initial query, then
// `fetchMore` with `after: endCursor` (or `before: startCursor`) until the connection says there
// is nothing more. After every `fetchMore` the merged list is read back from the cache (the
// query's own result still holds the previous page at that moment).
//
// usage: node apollo-paging.mjs <graphql-url> <plan.json> [--fault <name>]
//
// The plan names the model the server serves ("shop", the default, or "ecommerce", whose
// connections `Customer.activity` and `Order.contents` are of unions) and lists cases:
// { name, connection, variables, expected, maxPages, fullPages }. `expected` is the
// connection's ground truth in connection order, one identity string per item (see `identity`
// in CONNECTIONS; a union member's is `Typename|field`). Each case must end with exactly that
// list in the cache.
//
// The last line on stdout is a summary: per case its name, page count, item count, pages short
// of full or empty before the last, and the final list.
//
// Checks, each failing with its own tag on stderr:
//   DUPLICATE: a page holds an item the cache already had (a cursor that moved backwards)
//   STALL:     a page with no edges that hands back the cursor it was given, or more pages
//              than the plan allows
//   CACHE:     after a fetchMore the cache's list is not the previous list plus the page
//   MISMATCH:  the final list differs from the ground truth (with a diff)
//   SHORT:     a page other than the last is not full, where the plan says pages are full
//   RECHECK:   at the end, a case's list is no longer in the cache (its variants merged)
//   NO_CURSOR: more pages announced without a cursor to continue from
//   UNION:     a union member of a type the connection does not have, or read back from the
//              cache without its `id` (selected through `... on Node`) or its own field
//
// --fault corrupts responses on their way to Apollo, to show that the checks catch a server
// that gets paging wrong: stop-early (page 2 says there is nothing more), stale-cursor (page 2's
// continuing cursor is its other end), drop-edge (page 2 loses an edge), stall (from page 3,
// empty pages that hand back the cursor they were given), edge-cursors (page cursors always
// taken from the first and last edges, null on an empty page), merged-variants (the cache keys
// `User.purchases` and `Customer.activity` without their arguments), no-possible-types (the
// ecommerce cache is not told which types the unions and `Node` hold).

import { readFileSync } from "node:fs";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";
import { describeDiff, fail, firstResult, recordingFetch, runMain } from "./lib/apollo-harness.mjs";

const PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

const purchaseIdentity = (n) => `${n.userId}|${Date.parse(n.purchasedAt)}|${n.amount}|${n.status}`;

/**
 * The identity of a union member: its `__typename` and the field named for that type in
 * `fields`, which (with `id`, from `... on Node`) the cache must have answered.
 */
const memberIdentity = (fields) => (n) => {
  const field = fields[n.__typename];
  if (!field) fail(`UNION: a member of type ${n.__typename}, not one of ${Object.keys(fields)}`);
  if (typeof n.id !== "string" || typeof n[field] !== "string") {
    fail(`UNION: a ${n.__typename} without its id or ${field}: ${JSON.stringify(n)}`);
  }
  return `${n.__typename}|${n[field]}`;
};

const CONNECTIONS = {
  userPurchases: {
    query: gql`
      query UserPurchases(
        $userId: String!
        $first: Int
        $after: String
        $last: Int
        $before: String
        $order: SortOrder
        $since: DateTime
        $until: DateTime
        $status: PurchaseStatus
        $minAmount: Decimal
      ) {
        user(userId: $userId) {
          id
          userId
          purchases(
            first: $first
            after: $after
            last: $last
            before: $before
            order: $order
            since: $since
            until: $until
            status: $status
            minAmount: $minAmount
          ) {
            edges { cursor node { id userId purchasedAt amount status } }
            ${PAGE_INFO}
          }
        }
      }
    `,
    connection: (data) => data?.user?.purchases,
    identity: purchaseIdentity,
  },
  productPurchases: {
    query: gql`
      query ProductPurchases(
        $sku: String!
        $first: Int
        $after: String
        $last: Int
        $before: String
        $order: SortOrder
      ) {
        product(sku: $sku) {
          id
          sku
          purchases(first: $first, after: $after, last: $last, before: $before, order: $order) {
            edges { cursor node { id userId purchasedAt amount status } }
            ${PAGE_INFO}
          }
        }
      }
    `,
    connection: (data) => data?.product?.purchases,
    identity: purchaseIdentity,
  },
  products: {
    query: gql`
      query Products(
        $category: String!
        $minPrice: Decimal
        $maxPrice: Decimal
        $order: SortOrder
        $first: Int
        $after: String
        $last: Int
        $before: String
      ) {
        products(
          category: $category
          minPrice: $minPrice
          maxPrice: $maxPrice
          order: $order
          first: $first
          after: $after
          last: $last
          before: $before
        ) {
          edges { cursor node { id sku category price } }
          ${PAGE_INFO}
        }
      }
    `,
    connection: (data) => data?.products,
    identity: (n) => `${n.sku}|${n.category}|${n.price}`,
  },
  users: {
    query: gql`
      query Users($first: Int, $after: String) {
        users(first: $first, after: $after) {
          edges { cursor node { id userId email } }
          ${PAGE_INFO}
        }
      }
    `,
    connection: (data) => data?.users,
    identity: (n) => `${n.userId}|${n.email}`,
  },
  // The ecommerce model: item collections whose nodes are unions.
  customerActivity: {
    query: gql`
      query CustomerActivity(
        $username: String!
        $first: Int
        $after: String
        $last: Int
        $before: String
        $order: SortOrder
      ) {
        customer(username: $username) {
          id
          username
          activity(first: $first, after: $after, last: $last, before: $before, order: $order) {
            edges {
              cursor
              node {
                __typename
                ... on Node { id }
                ... on Customer { username }
                ... on Address { label }
                ... on Order { orderId }
              }
            }
            ${PAGE_INFO}
          }
        }
      }
    `,
    connection: (data) => data?.customer?.activity,
    identity: memberIdentity({ Customer: "username", Address: "label", Order: "orderId" }),
  },
  orderContents: {
    query: gql`
      query OrderContents(
        $id: ID!
        $first: Int
        $after: String
        $last: Int
        $before: String
        $order: SortOrder
      ) {
        node(id: $id) {
          __typename
          id
          ... on Order {
            orderId
            contents(first: $first, after: $after, last: $last, before: $before, order: $order) {
              edges {
                cursor
                node {
                  __typename
                  ... on Node { id }
                  ... on Order { orderId }
                  ... on OrderItem { itemId }
                }
              }
              ${PAGE_INFO}
            }
          }
        }
      }
    `,
    connection: (data) => data?.node?.contents,
    identity: memberIdentity({ Order: "orderId", OrderItem: "itemId" }),
  },
};

const FAULTS = [
  "stop-early",
  "stale-cursor",
  "drop-edge",
  "stall",
  "edge-cursors",
  "merged-variants",
  "no-possible-types",
];

function parseArgs(argv) {
  const [url, planPath, ...rest] = argv;
  let fault = null;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--fault") fault = rest[++i];
    else fail(`USAGE: unknown argument ${rest[i]}`);
  }
  if (!url || !planPath) fail("USAGE: node apollo-paging.mjs <graphql-url> <plan.json> [--fault <name>]");
  if (fault !== null && !FAULTS.includes(fault)) fail(`USAGE: unknown fault ${fault}; known: ${FAULTS}`);
  return { url, plan: JSON.parse(readFileSync(planPath, "utf8")), fault };
}

/** The connection object inside any response body of the queries in CONNECTIONS. */
function connectionIn(body) {
  const data = body?.data;
  return (
    data?.user?.purchases ??
    data?.product?.purchases ??
    data?.products ??
    data?.users ??
    data?.customer?.activity ??
    data?.node?.contents
  );
}

/** Response corruption for `fault`; `state.page` counts the pages of the running case. */
function faultInjector(fault, state) {
  return (exchange, body) => {
    const connection = connectionIn(body);
    if (!connection) return undefined;
    state.page += 1;
    const page = state.page;
    const info = connection.pageInfo;
    switch (fault) {
      case "stop-early":
        if (page !== 2) return undefined;
        info.hasNextPage = false;
        info.hasPreviousPage = false;
        return body;
      case "stale-cursor":
        if (page !== 2 || connection.edges.length === 0) return undefined;
        if (exchange.params.variables?.before) info.startCursor = info.endCursor;
        else info.endCursor = info.startCursor;
        return body;
      case "drop-edge":
        if (page !== 2 || connection.edges.length < 2) return undefined;
        connection.edges.splice(1, 1);
        return body;
      case "stall": {
        if (page < 3) return undefined;
        const vars = exchange.params.variables ?? {};
        connection.edges = [];
        if (vars.before) {
          info.startCursor = vars.before;
          info.hasPreviousPage = true;
        } else {
          info.endCursor = vars.after ?? null;
          info.hasNextPage = true;
        }
        return body;
      }
      case "edge-cursors":
        // A connection type that always takes its cursors from its first and last edges: a
        // page that spent its read budget without a match then has no cursor to continue from.
        info.startCursor = connection.edges[0]?.cursor ?? null;
        info.endCursor = connection.edges.at(-1)?.cursor ?? null;
        return body;
      default:
        return undefined;
    }
  };
}

/** The cache an application over `model` would configure. */
function makeCache(model, fault) {
  const merged = fault === "merged-variants";
  if (model === "shop") {
    const purchaseKeys = merged ? false : ["since", "until", "status", "minAmount", "order"];
    return new InMemoryCache({
      typePolicies: {
        Query: {
          fields: {
            users: relayStylePagination(),
            products: relayStylePagination(["category", "minPrice", "maxPrice", "order"]),
          },
        },
        User: { fields: { purchases: relayStylePagination(purchaseKeys) } },
        Product: { fields: { purchases: relayStylePagination(["order"]) } },
      },
    });
  }
  if (model === "ecommerce") {
    // Without possibleTypes the cache cannot tell that an Address is a Node, so it cannot
    // answer `... on Node { id }` from what it stored.
    const possibleTypes =
      fault === "no-possible-types"
        ? {}
        : {
            CustomerActivity: ["Customer", "Address", "Order"],
            OrderContent: ["Order", "OrderItem"],
            Node: ["Customer", "Address", "Order", "OrderItem"],
          };
    return new InMemoryCache({
      possibleTypes,
      typePolicies: {
        Customer: { fields: { activity: relayStylePagination(merged ? false : ["order"]) } },
        Order: { fields: { contents: relayStylePagination(["order"]) } },
      },
    });
  }
  fail(`USAGE: unknown model ${model}`);
}

function makeClient(url, fetch, model, fault) {
  const cache = makeCache(model, fault);
  return new ApolloClient({ link: new HttpLink({ uri: url, fetch }), cache });
}

function readConnection(client, spec, variables) {
  const data = client.readQuery({ query: spec.query, variables });
  const connection = spec.connection(data);
  if (!connection) fail(`CACHE: the cache cannot answer the query with ${JSON.stringify(variables)}`);
  return connection;
}

const ids = (spec, connection) => connection.edges.map((edge) => spec.identity(edge.node));


async function runCase(client, testCase, state) {
  const spec = CONNECTIONS[testCase.connection];
  if (!spec) fail(`USAGE: unknown connection ${testCase.connection}`);
  const { name, variables, expected } = testCase;
  const backward = variables.last !== undefined;
  const size = backward ? variables.last : variables.first;
  const maxPages = testCase.maxPages ?? 1000;
  state.page = 0;

  // network-only: a list another case left under the same cache key must not answer this one.
  const observable = client.watchQuery({
    query: spec.query,
    variables,
    fetchPolicy: "network-only",
    nextFetchPolicy: "cache-first",
  });
  const { result, subscription } = await firstResult(observable);
  try {
    const firstPage = ids(spec, spec.connection(result.data));
    let merged = readConnection(client, spec, variables);
    let list = ids(spec, merged);
    const pageSizes = [firstPage.length];
    let pages = 1;
    const more = (c) => (backward ? c.pageInfo.hasPreviousPage : c.pageInfo.hasNextPage);
    const cursorOf = (c) => (backward ? c.pageInfo.startCursor : c.pageInfo.endCursor);
    while (more(merged)) {
      if (pages >= maxPages) {
        fail(`STALL: ${name}: still more after ${pages} pages (at most ${maxPages} expected), ${list.length} items so far`);
      }
      const cursor = cursorOf(merged);
      if (!cursor) fail(`NO_CURSOR: ${name}: page ${pages} announces more but has no cursor`);
      const fetched = await observable.fetchMore({
        variables: backward ? { before: cursor } : { after: cursor },
      });
      pages += 1;
      const page = ids(spec, spec.connection(fetched.data));
      pageSizes.push(page.length);
      const had = new Set(list);
      const repeated = page.filter((id) => had.has(id));
      if (repeated.length) {
        fail(`DUPLICATE: ${name}: page ${pages} repeats ${repeated.length} item(s) already in the cache, first ${repeated[0]}`);
      }
      merged = readConnection(client, spec, variables);
      const next = ids(spec, merged);
      const want = backward ? [...page, ...list] : [...list, ...page];
      if (next.join("\n") !== want.join("\n")) {
        fail(`CACHE: ${name}: after page ${pages} the cache's list is not the previous list plus the page\n  ${describeDiff(next, want)}`);
      }
      if (page.length === 0 && cursorOf(merged) === cursor && more(merged)) {
        fail(`STALL: ${name}: page ${pages} has no edges and hands back the cursor it was given`);
      }
      list = next;
    }
    if (list.join("\n") !== expected.join("\n")) {
      fail(`MISMATCH: ${name}: the cache's final list differs from DynamoDB's\n  ${describeDiff(list, expected)}`);
    }
    const nonFinal = pageSizes.slice(0, -1);
    const shortPages = nonFinal.filter((n) => n < size).length;
    const emptyPages = nonFinal.filter((n) => n === 0).length;
    if (testCase.fullPages && shortPages > 0) {
      fail(`SHORT: ${name}: ${shortPages} page(s) before the last are not full: ${pageSizes.join(",")}`);
    }
    return { name, pages, items: list.length, shortPages, emptyPages, list };
  } finally {
    subscription.unsubscribe();
  }
}

await runMain(async () => {
  const { url, plan, fault } = parseArgs(process.argv.slice(2));
  const state = { page: 0 };
  const { fetch } = recordingFetch(fault ? faultInjector(fault, state) : undefined);
  const client = makeClient(url, fetch, plan.model ?? "shop", fault);
  const cases = [];
  for (const testCase of plan.cases) {
    cases.push(await runCase(client, testCase, state));
  }
  // Every case's list must still be in the cache under its own key: filtered, DESC and plain
  // variants of one connection never merge into one another.
  for (const testCase of plan.cases) {
    const spec = CONNECTIONS[testCase.connection];
    const list = ids(spec, readConnection(client, spec, testCase.variables));
    if (list.join("\n") !== testCase.expected.join("\n")) {
      fail(`RECHECK: ${testCase.name}: the cache no longer holds this case's list\n  ${describeDiff(list, testCase.expected)}`);
    }
  }
  process.stdout.write(`${JSON.stringify({ cases })}\n`);
});
