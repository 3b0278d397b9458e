// A document of a newer build of the Apollo Client application than the server's list: its
// manifest (`apollo-client.json`, written by `trusted-manifests.mjs`) has an id for it, the
// server's (`apollo.json`) has not.
import { gql } from "@apollo/client";

export const UNLISTED_USERS = gql`
  query TrustedUnlistedUsers($first: Int) {
    users(first: $first) {
      edges {
        node {
          id
          userId
        }
      }
    }
  }
`;
