// One purchase's status, refreshed on its own with `useRefetchableFragment` (through `node(id:)`).
import { graphql } from 'relay-runtime';

export const purchaseStatusFragment = graphql`
  fragment PurchaseStatus_purchase on Purchase
  @refetchable(queryName: "PurchaseStatusRefetchQuery") {
    id
    purchasedAt
    status
    amount
  }
`;
