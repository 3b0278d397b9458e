// The Apollo Client application's documents, listed: `trusted-manifests.mjs` runs
// @apollo/generate-persisted-query-manifest over this directory, and `trusted-clients.mjs` runs
// the same documents through Apollo Client with the ids of the manifest it wrote.
import { gql } from "@apollo/client";

// A user's purchases, oldest first, paged forward with `fetchMore` and `relayStylePagination`.
export const USER_PURCHASES = gql`
  query TrustedUserPurchases($userId: String!, $first: Int, $after: String) {
    user(userId: $userId) {
      id
      userId
      purchases(first: $first, after: $after) {
        edges {
          cursor
          node {
            id
            purchasedAt
            amount
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
      }
    }
  }
`;
