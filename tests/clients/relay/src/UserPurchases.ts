// A user's purchase history, paged forward with `usePaginationFragment`: Relay refetches the
// next page through `node(id:)` and merges it into the `UserPurchases_purchases` connection,
// one connection per status filter.
import { graphql } from 'relay-runtime';

export const userPurchasesFragment = graphql`
  fragment UserPurchases_user on User
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 5 }
    cursor: { type: "String" }
    status: { type: "PurchaseStatus" }
  )
  @refetchable(queryName: "UserPurchasesPaginationQuery") {
    name
    purchases(first: $count, after: $cursor, status: $status)
      @connection(key: "UserPurchases_purchases", filters: ["status"]) {
      __id
      edges {
        node {
          id
          purchasedAt
          amount
          quantity
          status
          product {
            name
          }
        }
      }
    }
  }
`;

export const userPageQuery = graphql`
  query UserPurchasesPageQuery($userId: String!, $count: Int) {
    user(userId: $userId) {
      id
      ...UserPurchases_user @arguments(count: $count)
    }
  }
`;

// A new purchase goes to the end of the (oldest-first) connection through the payload's edge.
export const createPurchaseMutation = graphql`
  mutation UserPurchasesCreateMutation($input: CreatePurchaseInput!, $connections: [ID!]!) {
    createPurchase(input: $input) {
      purchaseEdge @appendEdge(connections: $connections) {
        cursor
        node {
          id
          purchasedAt
          amount
          quantity
          status
        }
      }
    }
  }
`;

// A deleted purchase leaves every connection it was in.
export const deletePurchaseMutation = graphql`
  mutation UserPurchasesDeleteMutation($input: DeletePurchaseInput!, $connections: [ID!]!) {
    deletePurchase(input: $input) {
      deletedPurchaseId @deleteEdge(connections: $connections)
    }
  }
`;

// A user's purchases as they change, whoever writes them: an added or updated purchase's edge
// goes in (an edge already there only has its node updated), a removed one leaves by its id.
export const purchasesChangedSubscription = graphql`
  subscription UserPurchasesChangedSubscription($user: ID!, $after: String, $connections: [ID!]!) {
    purchasesChanged(user: $user, after: $after) {
      kind
      removedId @deleteEdge(connections: $connections)
      edge @appendEdge(connections: $connections) {
        cursor
        node {
          id
          purchasedAt
          amount
          quantity
          status
        }
      }
    }
  }
`;
