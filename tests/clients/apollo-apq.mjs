// Apollo Automatic Persisted Queries against dynarelay, with Apollo's own PersistedQueryLink
// (SHA-256 from node:crypto) in front of HttpLink, and every HTTP exchange recorded.
//
// usage: node apollo-apq.mjs <graphql-url> [--fault <name>]
//        node apollo-apq.mjs <graphql-url> --turned-off
//
// For hashes over POST and over GET (`useGETForHashedQueries`), a connection query runs twice:
//   1. the first request carries only the hash, and the server answers PersistedQueryNotFound
//      (extensions.code PERSISTED_QUERY_NOT_FOUND);
//   2. Apollo retries with the full query and the hash, and gets data;
//   3. the second execution sends only the hash again, and gets the same data.
// The data must equal what a plain POST of the same document returns. With GET hashes, mutations
// must still go over POST (the server refuses mutations over GET), and a registered mutation
// must run from its hash alone.
//
// --turned-off is for a server started with persisted queries turned off: the first hash gets
// PersistedQueryNotSupported (code PERSISTED_QUERY_NOT_SUPPORTED), Apollo resends the full query
// and from then on sends full queries without hashes, and every execution gets its data.
//
// Every failed check prints a line starting with `APQ:` on stderr. --fault makes the responses
// look like those of a server that gets APQ wrong: forget (it never keeps a hash), unsupported
// (it answers hashes with PersistedQueryNotSupported), hash-error (once registered, a hash gets
// an error instead of data).

import { createHash, randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { print } from "graphql";
import { fail, recordingFetch, runMain } from "./lib/apollo-harness.mjs";

const sha256 = (text) => createHash("sha256").update(text).digest("hex");

const FAULTS = ["forget", "unsupported", "hash-error"];

function parseArgs(argv) {
  const [url, ...rest] = argv;
  let fault = null;
  let turnedOff = false;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--fault") fault = rest[++i];
    else if (rest[i] === "--turned-off") turnedOff = true;
    else fail(`USAGE: unknown argument ${rest[i]}`);
  }
  if (!url) fail("USAGE: node apollo-apq.mjs <graphql-url> [--fault <name> | --turned-off]");
  if (fault !== null && !FAULTS.includes(fault)) fail(`USAGE: unknown fault ${fault}; known: ${FAULTS}`);
  return { url, fault, turnedOff };
}

const hashOnly = (exchange) =>
  exchange.params.query === undefined && exchange.params.extensions?.persistedQuery !== undefined;

/** Responses as a server with the given APQ fault would send them. */
function faultInjector(fault) {
  const registered = new Set();
  return (exchange) => {
    const hash = exchange.params.extensions?.persistedQuery?.sha256Hash;
    if (!hashOnly(exchange)) {
      if (hash) registered.add(hash);
      return undefined;
    }
    switch (fault) {
      case "forget":
        return {
          errors: [
            { message: "PersistedQueryNotFound", extensions: { code: "PERSISTED_QUERY_NOT_FOUND" } },
          ],
        };
      case "unsupported":
        return {
          errors: [
            {
              message: "PersistedQueryNotSupported",
              extensions: { code: "PERSISTED_QUERY_NOT_SUPPORTED" },
            },
          ],
        };
      case "hash-error":
        return registered.has(hash)
          ? { errors: [{ message: "Internal error", extensions: { code: "INTERNAL_SERVER_ERROR" } }] }
          : undefined;
      default:
        return undefined;
    }
  };
}

function makeClient(url, fetch, useGETForHashedQueries) {
  const link = ApolloLink.from([
    new PersistedQueryLink({ sha256, useGETForHashedQueries }),
    new HttpLink({ uri: url, fetch }),
  ]);
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

/** The same document as a plain POST, without persisted queries: what the data must be. */
async function plainResult(url, query, variables) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
    body: JSON.stringify({ query: print(query), variables }),
  });
  const body = await response.json();
  if (body.errors) fail(`APQ: the plain request failed: ${JSON.stringify(body.errors)}`);
  return body.data;
}

/** Drops Apollo's `__typename` additions so results compare with a plain request's data. */
function withoutTypename(value) {
  if (Array.isArray(value)) return value.map(withoutTypename);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => key !== "__typename")
        .map(([key, v]) => [key, withoutTypename(v)]),
    );
  }
  return value;
}

function describe(exchange) {
  const { method, params, status, body } = exchange;
  const sent = params.query === undefined ? "hash only" : "full query";
  return `${method} (${sent}) -> ${status} ${JSON.stringify(body)?.slice(0, 300)}`;
}

function expectExchange(label, exchange, { method, full, hash, outcome }) {
  if (!exchange) fail(`APQ: ${label}: no request was sent`);
  const where = `${label}: ${describe(exchange)}`;
  if (exchange.method !== method) fail(`APQ: ${label}: sent over ${exchange.method}, expected ${method}\n  ${where}`);
  const sentHash = exchange.params.extensions?.persistedQuery?.sha256Hash;
  if (exchange.params.extensions?.persistedQuery?.version !== 1 || sentHash !== hash) {
    fail(`APQ: ${label}: the persistedQuery extension is not version 1 with the document's hash\n  ${where}`);
  }
  if (full) {
    if (typeof exchange.params.query !== "string") fail(`APQ: ${label}: the retry did not carry the query\n  ${where}`);
    if (sha256(exchange.params.query) !== hash) fail(`APQ: ${label}: the hash is not the SHA-256 of the query sent\n  ${where}`);
  } else if (exchange.params.query !== undefined) {
    fail(`APQ: ${label}: sent the full query again instead of the hash alone\n  ${where}`);
  }
  const { body } = exchange;
  if (outcome === "not-found") {
    const error = body?.errors?.[0];
    if (
      body?.data != null ||
      error?.message !== "PersistedQueryNotFound" ||
      error?.extensions?.code !== "PERSISTED_QUERY_NOT_FOUND"
    ) {
      fail(`APQ: ${label}: an unknown hash must get PersistedQueryNotFound with code PERSISTED_QUERY_NOT_FOUND\n  ${where}`);
    }
  } else {
    if (exchange.status !== 200 || body?.errors || body?.data == null) {
      fail(`APQ: ${label}: expected 200 with data and no errors\n  ${where}`);
    }
  }
}

/** Runs `operation` twice through a fresh APQ client and checks the three exchanges. */
async function twice(url, fault, { useGET, label, run, document, hashMethod }) {
  const recorder = recordingFetch(fault ? faultInjector(fault) : undefined);
  const client = makeClient(url, recorder.fetch, useGET);
  const results = [];
  for (const attempt of ["first", "second"]) {
    try {
      results.push(await run(client, attempt));
    } catch (err) {
      const log = recorder.exchanges.map((e, i) => `  ${i + 1}. ${describe(e)}`).join("\n");
      fail(`APQ: ${label}: the ${attempt} execution failed: ${err?.message ?? err}\n${log}`);
    }
  }
  const exchanges = recorder.exchanges;
  const hash = exchanges[0]?.params.extensions?.persistedQuery?.sha256Hash;
  // The hash Apollo sends is that of the document it prints, __typename fields included; the
  // retry shows that text, so it is checked there (full query: its SHA-256 must match).
  expectExchange(`${label}, request 1`, exchanges[0], { method: hashMethod, full: false, hash, outcome: "not-found" });
  expectExchange(`${label}, request 2`, exchanges[1], { method: "POST", full: true, hash, outcome: "data" });
  expectExchange(`${label}, request 3`, exchanges[2], { method: hashMethod, full: false, hash, outcome: "data" });
  if (exchanges.length !== 3) {
    fail(`APQ: ${label}: ${exchanges.length} requests for two executions, expected 3\n${exchanges.map(describe).join("\n")}`);
  }
  if (document && !exchanges[1].params.query.includes(document)) {
    fail(`APQ: ${label}: the registered query is not the one run`);
  }
  return results;
}

/**
 * Against a server with persisted queries turned off: one hash-only request told
 * PersistedQueryNotSupported, then only full queries without hashes, all with data.
 */
async function turnedOff(url) {
  const query = gql(`
    query ApqTurnedOff($first: Int) {
      users(first: $first) { edges { node { userId } } }
    }
  `);
  const variables = { first: 2 };
  const expected = await plainResult(url, query, variables);
  const recorder = recordingFetch();
  const client = makeClient(url, recorder.fetch, false);
  for (const attempt of ["first", "second", "third"]) {
    let data;
    try {
      ({ data } = await client.query({ query, variables, fetchPolicy: "network-only" }));
    } catch (err) {
      fail(`APQ: turned off: the ${attempt} execution failed: ${err?.message ?? err}\n${recorder.exchanges.map(describe).join("\n")}`);
    }
    if (!isDeepStrictEqual(withoutTypename(data), expected)) {
      fail(`APQ: turned off: the ${attempt} execution's data differs from a plain request's`);
    }
  }
  const [first, ...rest] = recorder.exchanges;
  const error = first?.body?.errors?.[0];
  if (!first || !hashOnly(first) || error?.extensions?.code !== "PERSISTED_QUERY_NOT_SUPPORTED") {
    fail(`APQ: turned off: the first request must send a hash and get PERSISTED_QUERY_NOT_SUPPORTED\n  ${first && describe(first)}`);
  }
  if (rest.length !== 3 || rest.some((e) => typeof e.params.query !== "string" || e.params.extensions?.persistedQuery)) {
    fail(`APQ: turned off: after PersistedQueryNotSupported Apollo must send three full queries without hashes\n${rest.map(describe).join("\n")}`);
  }
  return { "turned off": recorder.exchanges.length };
}

await runMain(async () => {
  const { url, fault, turnedOff: off } = parseArgs(process.argv.slice(2));
  if (off) {
    process.stdout.write(`${JSON.stringify(await turnedOff(url))}\n`);
    return;
  }
  const summary = {};
  // Documents no earlier run can have registered: the server keeps hashes while it runs.
  const nonce = randomUUID().replaceAll("-", "");

  for (const [useGET, name] of [
    [false, `ApqUsersOverPost${nonce}`],
    [true, `ApqUsersOverGet${nonce}`],
  ]) {
    const query = gql(`
      query ${name}($first: Int) {
        users(first: $first) {
          edges { cursor node { id userId name } }
          pageInfo { hasNextPage endCursor }
        }
      }
    `);
    const variables = { first: 3 };
    const expected = await plainResult(url, query, variables);
    if (!expected?.users?.edges?.length) fail("APQ: the plain request returned no users to compare with");
    const label = useGET ? "query, hashes over GET" : "query, hashes over POST";
    const [first, second] = await twice(url, fault, {
      useGET,
      label,
      document: name,
      hashMethod: useGET ? "GET" : "POST",
      run: async (client) => {
        const { data } = await client.query({ query, variables, fetchPolicy: "network-only" });
        return withoutTypename(data);
      },
    });
    for (const [which, data] of [["first", first], ["second", second]]) {
      if (!isDeepStrictEqual(data, expected)) {
        fail(`APQ: ${label}: the ${which} execution's data differs from a plain request's\n  got ${JSON.stringify(data)}\n  expected ${JSON.stringify(expected)}`);
      }
    }
    summary[label] = first.users.edges.length;
  }

  // With hashes over GET, mutations still go over POST, hash first.
  const mutation = gql(`
    mutation ApqCreateUser${nonce}($input: CreateUserInput!) {
      createUser(input: $input) { user { id userId email } }
    }
  `);
  const created = await twice(url, fault, {
    useGET: true,
    label: "mutation with GET hashes enabled",
    document: `ApqCreateUser${nonce}`,
    hashMethod: "POST",
    run: async (client) => {
      const userId = `apq-${randomUUID()}`;
      const input = { userId, name: "APQ", email: `${userId}@example.com` };
      const { data } = await client.mutate({ mutation, variables: { input } });
      if (data?.createUser?.user?.userId !== userId) {
        fail(`APQ: mutation: created ${JSON.stringify(data)}, expected user ${userId}`);
      }
      return userId;
    },
  });
  summary.mutations = created.length;
  process.stdout.write(`${JSON.stringify(summary)}\n`);
});
