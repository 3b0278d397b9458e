// Everyone's purchases of one product, newest first, paged forward.
import { graphql } from 'relay-runtime';

export const productPurchasesFragment = graphql`
  fragment ProductPurchases_product on Product
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 10 }
    cursor: { type: "String" }
  )
  @refetchable(queryName: "ProductPurchasesPaginationQuery") {
    sku
    name
    price
    purchases(first: $count, after: $cursor, order: DESC)
      @connection(key: "ProductPurchases_purchases") {
      edges {
        node {
          id
          purchasedAt
          quantity
          user {
            name
          }
        }
      }
    }
  }
`;

export const productPageQuery = graphql`
  query ProductPurchasesPageQuery($sku: String!, $count: Int) {
    product(sku: $sku) {
      ...ProductPurchases_product @arguments(count: $count)
    }
  }
`;
