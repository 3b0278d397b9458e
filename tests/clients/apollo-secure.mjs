// Apollo Client against the shop's secure model (examples/shop/secure.toml), as signed-in users
// of an application: each session has its own InMemoryCache (with `relayStylePagination` on
// `User.purchases`) and an auth link that sends its bearer token on every request
// (`SetContextLink`, Apollo Client 4's form of `setContext`).
//
// usage: node apollo-secure.mjs <graphql-url> <plan.json>
//
// The plan is { pageSize, owner: { userId, expected }, other: { userId, expected } }: two users
// and their purchases' ground truth in `purchasedAt` order, one identity string per purchase
// (`userId|purchasedAt in epoch ms|amount|status`). The tokens come from the environment:
// DYNARELAY_TEST_OWNER_TOKEN and DYNARELAY_TEST_OTHER_TOKEN (the two users' own tokens, `sub`
// their userId) and DYNARELAY_TEST_ADMIN_TOKEN (someone else, in the `admin` group).
//
// 1. The owner, then the other user, page through their own `user(userId: <self>) { purchases }`
//    with `fetchMore` to the end; each cache must end with exactly that user's purchases.
// 2. Requests the server must refuse, each surfacing in Apollo as CombinedGraphQLErrors:
//    - the other user continues their own list from the owner's first `endCursor` (fetchMore on
//      their walk): BAD_USER_INPUT, a cursor belongs to its user and its caller;
//    - the other user asks for the owner's purchases, without and with that cursor: FORBIDDEN;
//    - an admin, who may read the owner's purchases, continues them from the owner's cursor:
//      BAD_USER_INPUT, the cursor was given to another caller;
//    - no token at all: FORBIDDEN at `user`.
// 3. Every cache still holds exactly its user's list, and no purchase of anyone else.
//
// The last line on stdout is a summary: per walk its pages, page sizes and final list; per
// refusal the HTTP status and the first error's code and path. Walk failures stop the script at
// once; the refusals and rechecks are all run, and each failure is printed on stderr with its
// tag:
//   AUTH_HEADER: a request without the session's `Authorization` header (or one with it, for
//                the anonymous session)
//   FOREIGN:     a page or a cache holds a purchase of someone other than the session's user
//   DUPLICATE:   a page repeats a purchase the cache already has
//   CACHE:       after a fetchMore the cache's list is not the previous list plus the page
//   MISMATCH:    a final list differs from the ground truth
//   SHORT:       a page other than the last is not full
//   STALL:       more pages than the list's length allows; NO_CURSOR: more without a cursor
//   ACCEPTED:    a request that must be refused was answered without an error
//   CODE:        a refusal with another error code or path, or not as CombinedGraphQLErrors
//   LEAK:        a refused response still carries purchases
//   ADMIN:       the admin's first page of the owner's purchases is not the owner's first page
//   RECHECK:     at the end, a cache no longer holds exactly its user's list

import { readFileSync } from "node:fs";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { CombinedGraphQLErrors } from "@apollo/client/errors";
import { SetContextLink } from "@apollo/client/link/context";
import { relayStylePagination } from "@apollo/client/utilities";
import { describeDiff, fail, firstResult, recordingFetch, runMain } from "./lib/apollo-harness.mjs";

const PURCHASES = gql`
  query MyPurchases($userId: String!, $first: Int, $after: String) {
    user(userId: $userId) {
      id
      userId
      purchases(first: $first, after: $after) {
        edges { cursor node { id userId purchasedAt amount status } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

const identity = (n) => `${n.userId}|${Date.parse(n.purchasedAt)}|${n.amount}|${n.status}`;

function parseArgs(argv) {
  const [url, planPath, ...rest] = argv;
  if (!url || !planPath || rest.length) fail("USAGE: node apollo-secure.mjs <graphql-url> <plan.json>");
  const tokens = {};
  for (const who of ["OWNER", "OTHER", "ADMIN"]) {
    tokens[who.toLowerCase()] = process.env[`DYNARELAY_TEST_${who}_TOKEN`];
    if (!tokens[who.toLowerCase()]) fail(`USAGE: DYNARELAY_TEST_${who}_TOKEN is not set`);
  }
  return { url, plan: JSON.parse(readFileSync(planPath, "utf8")), tokens };
}

/**
 * One signed-in (or anonymous, with `token` null) session: its own cache, and a link chain of
 * an auth link in front of HttpLink. Every request's `Authorization` header is checked.
 */
function session(name, url, token, problems) {
  const { fetch: recording, exchanges } = recordingFetch();
  const fetch = (input, init = {}) => {
    const sent = new Headers(init.headers).get("authorization");
    const want = token ? `Bearer ${token}` : null;
    if (sent !== want) {
      problems.push(`AUTH_HEADER: ${name}: a request went with Authorization ${sent ? "set" : "missing"}`);
    }
    return recording(input, init);
  };
  const auth = new SetContextLink((prevContext) =>
    token ? { headers: { ...prevContext.headers, authorization: `Bearer ${token}` } } : {},
  );
  const cache = new InMemoryCache({
    typePolicies: {
      User: {
        fields: { purchases: relayStylePagination(["order", "since", "until", "status", "minAmount"]) },
      },
    },
  });
  const client = new ApolloClient({ link: auth.concat(new HttpLink({ uri: url, fetch })), cache });
  return { name, client, exchanges };
}

/** The merged `purchases` list the session's cache holds for `variables`. */
function cached(session, variables) {
  const data = session.client.readQuery({ query: PURCHASES, variables });
  const connection = data?.user?.purchases;
  if (!connection) fail(`CACHE: ${session.name}: the cache cannot answer ${JSON.stringify(variables)}`);
  return connection;
}

const ids = (connection) => connection.edges.map((edge) => identity(edge.node));

/** Fails with FOREIGN unless every purchase of `connection` is `userId`'s. */
function ownOnly(label, connection, userId) {
  const foreign = connection.edges.filter((edge) => edge.node.userId !== userId);
  if (foreign.length) {
    fail(`FOREIGN: ${label}: ${foreign.length} purchase(s) of others, first ${identity(foreign[0].node)}`);
  }
}


/**
 * Walks the session user's own purchases forward with `fetchMore` to the end. Returns the
 * watched query (still subscribed), the final list, the page sizes and the first page's
 * `endCursor`.
 */
async function walk(session, user, size) {
  const label = `${session.name}'s purchases`;
  const variables = { userId: user.userId, first: size };
  const maxPages = Math.max(1, Math.ceil(user.expected.length / size));
  const observable = session.client.watchQuery({
    query: PURCHASES,
    variables,
    fetchPolicy: "network-only",
    nextFetchPolicy: "cache-first",
  });
  const { result, subscription } = await firstResult(observable);
  const first = result.data.user.purchases;
  ownOnly(`${label}, page 1`, first, user.userId);
  let merged = cached(session, variables);
  let list = ids(merged);
  const firstEndCursor = merged.pageInfo.endCursor;
  const sizes = [first.edges.length];
  while (merged.pageInfo.hasNextPage) {
    if (sizes.length >= maxPages) {
      fail(`STALL: ${label}: still more after ${sizes.length} pages, ${list.length} items so far`);
    }
    const cursor = merged.pageInfo.endCursor;
    if (!cursor) fail(`NO_CURSOR: ${label}: page ${sizes.length} announces more without a cursor`);
    const fetched = await observable.fetchMore({ variables: { after: cursor } });
    const page = fetched.data.user.purchases;
    sizes.push(page.edges.length);
    ownOnly(`${label}, page ${sizes.length}`, page, user.userId);
    const had = new Set(list);
    const repeated = ids(page).filter((id) => had.has(id));
    if (repeated.length) {
      fail(`DUPLICATE: ${label}: page ${sizes.length} repeats ${repeated.length} item(s), first ${repeated[0]}`);
    }
    merged = cached(session, variables);
    const next = ids(merged);
    const want = [...list, ...ids(page)];
    if (next.join("\n") !== want.join("\n")) {
      fail(`CACHE: ${label}: after page ${sizes.length} the cache's list is not the previous list plus the page\n  ${describeDiff(next, want)}`);
    }
    list = next;
  }
  ownOnly(`${label}, the cache`, merged, user.userId);
  if (list.join("\n") !== user.expected.join("\n")) {
    fail(`MISMATCH: ${label}: the cache's final list differs from DynamoDB's\n  ${describeDiff(list, user.expected)}`);
  }
  if (sizes.slice(0, -1).some((n) => n !== size)) {
    fail(`SHORT: ${label}: a page before the last is not full: ${sizes.join(",")}`);
  }
  return { observable, subscription, variables, list, sizes, firstEndCursor };
}

/**
 * Runs `request` (a client.query or fetchMore), which the server must refuse with `code`, and
 * records what Apollo and the server said. Problems go to `problems`, never thrown.
 */
async function refusal(session, label, code, request, problems) {
  const before = session.exchanges.length;
  let error;
  try {
    const result = await request();
    error = result?.error;
  } catch (err) {
    error = err;
  }
  const exchange = session.exchanges[before];
  const edges = exchange?.body?.data?.user?.purchases?.edges ?? [];
  if (edges.length) problems.push(`LEAK: ${label}: the response carries ${edges.length} purchase(s), first ${identity(edges[0].node)}`);
  if (!error) {
    problems.push(`ACCEPTED: ${label}: answered without an error`);
    return { status: exchange?.status ?? null, code: null, path: null };
  }
  if (!CombinedGraphQLErrors.is(error)) {
    problems.push(`CODE: ${label}: not GraphQL errors but ${error?.stack ?? error}`);
    return { status: exchange?.status ?? null, code: null, path: null };
  }
  const [first] = error.errors;
  const got = { status: exchange?.status ?? null, code: first?.extensions?.code ?? null, path: first?.path ?? null };
  if (got.code !== code) {
    problems.push(`CODE: ${label}: expected ${code}, got ${JSON.stringify(error.errors)}`);
  }
  return got;
}

/** Checks that the session's cache holds exactly `user`'s list, and no one else's purchase. */
function recheck(session, walked, user, problems) {
  const list = ids(cached(session, walked.variables));
  if (list.join("\n") !== user.expected.join("\n")) {
    problems.push(`RECHECK: ${session.name}'s purchases: the cache no longer holds the list\n  ${describeDiff(list, user.expected)}`);
  }
  const purchases = Object.entries(session.client.cache.extract()).filter(([key]) => key.startsWith("Purchase:"));
  const foreign = purchases.filter(([, value]) => value.userId !== user.userId);
  if (foreign.length) {
    problems.push(`FOREIGN: ${session.name}'s cache holds ${foreign.length} purchase(s) of others, first ${identity(foreign[0][1])}`);
  }
  if (purchases.length !== user.expected.length) {
    problems.push(`RECHECK: ${session.name}'s cache holds ${purchases.length} purchases, not ${user.expected.length}`);
  }
}

await runMain(async () => {
  const { url, plan, tokens } = parseArgs(process.argv.slice(2));
  const size = plan.pageSize;
  const { owner, other } = plan;
  const problems = [];
  const ownerSession = session("owner", url, tokens.owner, problems);
  const otherSession = session("other user", url, tokens.other, problems);
  const adminSession = session("admin", url, tokens.admin, problems);
  const anonymous = session("anonymous", url, null, problems);

  const ownerWalk = await walk(ownerSession, owner, size);
  const otherWalk = await walk(otherSession, other, size);
  const cursor = ownerWalk.firstEndCursor;
  if (!cursor || ownerWalk.sizes.length < 2) fail(`USAGE: the owner's list must take more than one page`);

  const query = (s, variables) => () =>
    s.client.query({ query: PURCHASES, variables, fetchPolicy: "network-only" });
  const refusals = {};
  refusals.otherContinuesFromOwnersCursor = await refusal(
    otherSession,
    "the other user's purchases after the owner's cursor",
    "BAD_USER_INPUT",
    () => otherWalk.observable.fetchMore({ variables: { after: cursor } }),
    problems,
  );
  refusals.otherReadsOwners = await refusal(
    otherSession,
    "the owner's purchases with the other user's token",
    "FORBIDDEN",
    query(otherSession, { userId: owner.userId, first: size }),
    problems,
  );
  refusals.otherReadsOwnersFromCursor = await refusal(
    otherSession,
    "the owner's purchases after the owner's cursor with the other user's token",
    "FORBIDDEN",
    query(otherSession, { userId: owner.userId, first: size, after: cursor }),
    problems,
  );
  // The admin may read the owner's purchases: the refusal below is the cursor's alone.
  try {
    const { data } = await adminSession.client.query({
      query: PURCHASES,
      variables: { userId: owner.userId, first: size },
      fetchPolicy: "network-only",
    });
    const page = ids(data.user.purchases);
    if (page.join("\n") !== owner.expected.slice(0, size).join("\n")) {
      problems.push(`ADMIN: the admin's first page of the owner's purchases\n  ${describeDiff(page, owner.expected.slice(0, size))}`);
    }
  } catch (err) {
    problems.push(`ADMIN: the admin cannot read the owner's purchases: ${err?.stack ?? err}`);
  }
  refusals.adminContinuesFromOwnersCursor = await refusal(
    adminSession,
    "the owner's purchases after the owner's cursor with an admin's token",
    "BAD_USER_INPUT",
    query(adminSession, { userId: owner.userId, first: size, after: cursor }),
    problems,
  );
  refusals.anonymousReadsOwners = await refusal(
    anonymous,
    "the owner's purchases without a token",
    "FORBIDDEN",
    query(anonymous, { userId: owner.userId, first: size }),
    problems,
  );

  recheck(ownerSession, ownerWalk, owner, problems);
  recheck(otherSession, otherWalk, other, problems);
  if (Object.keys(anonymous.client.cache.extract()).some((key) => key.startsWith("Purchase:"))) {
    problems.push("FOREIGN: the anonymous session's cache holds purchases");
  }
  ownerWalk.subscription.unsubscribe();
  otherWalk.subscription.unsubscribe();

  const summary = (w) => ({ pages: w.sizes.length, sizes: w.sizes, list: w.list });
  process.stdout.write(
    `${JSON.stringify({ walks: { owner: summary(ownerWalk), other: summary(otherWalk) }, refusals })}\n`,
  );
  if (problems.length) fail(problems.join("\n"));
});
