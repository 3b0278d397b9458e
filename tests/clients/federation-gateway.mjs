// A supergraph on loopback: dynarelay subgraphs beside a reviews subgraph written with
// @apollo/subgraph, composed with @apollo/composition and served by @apollo/gateway inside
// Apollo Server, as a team would run them.
//
// usage: node federation-gateway.mjs <reviews.json> <name>=<graphql-url> [<name>=<url> ...]
//
// Each dynarelay subgraph's schema is read from its `_service { sdl }` (with the bearer token of
// DYNARELAY_TEST_SDL_TOKEN when set: `_service` follows the model's introspection rule). The
// reviews subgraph is Relay-style, as another team's might be: `Review implements Node` with a
// connection of its own and a `@shareable` PageInfo. It refers to dynarelay's entities both ways:
// it adds `reviews` to dynarelay's `Product` (by its `sku` key) and returns dynarelay's `User`
// (by its `userId` key) as a review's author; and it resolves `ReviewSummary`, which a dynarelay
// model may refer to by `sku` (`[federation.types]`). reviews.json holds the reviews:
// [{ id, body, sku, userId }].
//
// Composition errors fail the script (exit 1, each printed on stderr). Once the gateway answers,
// the script prints one line of JSON, { gateway, reviews, supergraph } (the URLs and the composed
// supergraph SDL), and serves until its standard input closes. The gateway forwards each
// request's `Authorization` header to every subgraph.
//
// No traffic leaves loopback: the gateway's usage data collection (OpenTelemetry metrics to
// Apollo, which also probes cloud metadata addresses for resource attributes) is off by
// APOLLO_TELEMETRY_DISABLED, set here before the gateway loads; Apollo Server's usage and schema
// reporting run only with an APOLLO_KEY, which is removed, and are disabled explicitly too, as
// are the reviews subgraph's inline traces; the landing page, which would load from Apollo's
// CDN, is off.

process.env.APOLLO_TELEMETRY_DISABLED = "true";
delete process.env.APOLLO_KEY;
delete process.env.APOLLO_GRAPH_REF;

import { readFileSync } from "node:fs";
import { composeServices } from "@apollo/composition";
import { ApolloGateway, RemoteGraphQLDataSource } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import {
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from "@apollo/server/plugin/disabled";
import { startStandaloneServer } from "@apollo/server/standalone";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { parse } from "graphql";

const [reviewsFile, ...subgraphArgs] = process.argv.slice(2);
if (!reviewsFile || subgraphArgs.length === 0) {
  console.error("usage: node federation-gateway.mjs <reviews.json> <name>=<graphql-url> ...");
  process.exit(2);
}
const reviews = JSON.parse(readFileSync(reviewsFile, "utf8"));

const quiet = [
  ApolloServerPluginLandingPageDisabled(),
  ApolloServerPluginUsageReportingDisabled(),
  ApolloServerPluginSchemaReportingDisabled(),
];
const listen = { host: "127.0.0.1", port: 0 };

const REVIEWS_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@shareable"])

  interface Node { id: ID! }

  type PageInfo @shareable {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
  }

  type Review implements Node @key(fields: "id") {
    id: ID!
    body: String!
    product: Product!
    author: User!
  }

  type ReviewConnection { edges: [ReviewEdge!]! pageInfo: PageInfo! }
  type ReviewEdge { cursor: String! node: Review! }

  type Product @key(fields: "sku") {
    sku: String!
    reviews(first: Int, after: String): ReviewConnection!
  }

  type User @key(fields: "userId", resolvable: false) { userId: String! }

  type ReviewSummary @key(fields: "sku") { sku: String! count: Int! }

  type Query { review(id: ID!): Review }
`;

/// A page of `list` after the cursor `after` (a position), as Relay's connection spec has it.
function page(list, first, after) {
  const start = after === undefined || after === null ? 0 : Number(after) + 1;
  const size = first ?? list.length;
  const slice = list.slice(start, start + size);
  return {
    edges: slice.map((node, i) => ({ cursor: String(start + i), node })),
    pageInfo: {
      hasNextPage: start + size < list.length,
      hasPreviousPage: start > 0,
      startCursor: slice.length ? String(start) : null,
      endCursor: slice.length ? String(start + slice.length - 1) : null,
    },
  };
}

const reviewOf = (r) => r && { __typename: "Review", ...r };
const resolvers = {
  Query: { review: (_, { id }) => reviewOf(reviews.find((r) => r.id === id)) },
  Review: {
    __resolveReference: ({ id }) => reviewOf(reviews.find((r) => r.id === id)),
    product: (r) => ({ __typename: "Product", sku: r.sku }),
    author: (r) => ({ __typename: "User", userId: r.userId }),
  },
  ReviewSummary: {
    __resolveReference: ({ sku }) => ({
      sku,
      count: reviews.filter((r) => r.sku === sku).length,
    }),
  },
  Product: {
    reviews: ({ sku }, { first, after }) =>
      page(reviews.filter((r) => r.sku === sku).map(reviewOf), first, after),
  },
};

async function main() {
  const reviewsServer = new ApolloServer({
    schema: buildSubgraphSchema([{ typeDefs: parse(REVIEWS_SDL), resolvers }]),
    // A subgraph sends the gateway its traces (ftv1) only for Apollo's usage reporting.
    plugins: [...quiet, ApolloServerPluginInlineTraceDisabled()],
  });
  const { url: reviewsUrl } = await startStandaloneServer(reviewsServer, { listen });

  const token = process.env.DYNARELAY_TEST_SDL_TOKEN;
  const services = [{ name: "reviews", typeDefs: parse(REVIEWS_SDL), url: reviewsUrl }];
  for (const arg of subgraphArgs) {
    const [name, url] = arg.split(/=(.*)/s);
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ query: "{ _service { sdl } }" }),
    });
    const body = await response.json();
    const sdl = body?.data?._service?.sdl;
    if (!sdl) throw new Error(`${name}: no _service { sdl }: ${JSON.stringify(body)}`);
    services.push({ name, typeDefs: parse(sdl), url });
  }

  const composed = composeServices(services);
  if (composed.errors) {
    for (const error of composed.errors) {
      console.error(`COMPOSITION: ${error.extensions?.code ?? ""} ${error.message}`);
    }
    process.exit(1);
  }

  const gateway = new ApolloGateway({
    supergraphSdl: composed.supergraphSdl,
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource({
        url,
        willSendRequest({ request, context }) {
          for (const name of ["authorization", "traceparent", "tracestate"]) {
            if (context[name]) request.http.headers.set(name, context[name]);
          }
        },
      }),
  });
  const server = new ApolloServer({ gateway, plugins: quiet });
  const { url: gatewayUrl } = await startStandaloneServer(server, {
    listen,
    context: async ({ req }) => ({
      authorization: req.headers.authorization,
      traceparent: req.headers.traceparent,
      tracestate: req.headers.tracestate,
    }),
  });
  console.log(
    JSON.stringify({ gateway: gatewayUrl, reviews: reviewsUrl, supergraph: composed.supergraphSdl }),
  );
  // Serve until the test closes standard input.
  process.stdin.resume();
  process.stdin.on("end", async () => {
    await server.stop();
    await reviewsServer.stop();
    process.exit(0);
  });
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
