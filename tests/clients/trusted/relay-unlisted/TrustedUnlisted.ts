// A Relay document that is not among relay/src's, so in no persisted operations file the server
// is given: `trusted-manifests.mjs` compiles it with its text (which Relay's fetchFn then posts
// in full) and persisted apart (an id the server does not know).
import { graphql } from 'relay-runtime';

export const unlistedQuery = graphql`
  query TrustedUnlistedQuery($userId: String!) {
    user(userId: $userId) {
      id
      name
      email
    }
  }
`;

export const unlistedSubscription = graphql`
  subscription TrustedUnlistedSubscription($user: ID!) {
    purchasesChanged(user: $user) {
      kind
    }
  }
`;
