// The dearest end of a category's price list first: `last`/`before` pages backward from the
// most expensive product towards the cheapest, with `loadPrevious`.
import { graphql } from 'relay-runtime';

export const categoryProductsFragment = graphql`
  fragment CategoryProducts_query on Query
  @argumentDefinitions(
    category: { type: "String!" }
    count: { type: "Int", defaultValue: 10 }
    cursor: { type: "String" }
    maxPrice: { type: "Decimal" }
  )
  @refetchable(queryName: "CategoryProductsPaginationQuery") {
    products(category: $category, last: $count, before: $cursor, maxPrice: $maxPrice)
      @connection(key: "CategoryProducts_products", filters: ["category", "maxPrice"]) {
      edges {
        node {
          id
          sku
          name
          price
        }
      }
    }
  }
`;

export const categoryPageQuery = graphql`
  query CategoryProductsPageQuery($category: String!, $count: Int) {
    ...CategoryProducts_query @arguments(category: $category, count: $count)
  }
`;
