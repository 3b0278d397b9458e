// Starts GraphiQL against this server's /graphql endpoint. Served from a file (not inline) so the
// page's Content-Security-Policy can forbid inline scripts.
(function () {
  var defaultQuery = [
    '# Next page: set "after" to pageInfo.endCursor.',
    'query Purchases($userId: String!, $after: String) {',
    '  user(userId: $userId) {',
    '    name',
    '    purchases(first: 5, after: $after) {',
    '      edges { cursor node { purchasedAt amount status } }',
    '      pageInfo { hasNextPage endCursor }',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
  // A user of the quick start's demo data (seed 1) with 21 purchases: five pages of five.
  var defaultVariables = JSON.stringify({ userId: '069ff468-add7-47d9-9c2a-bc4a234c6702', after: null }, null, 2);
  // Queries and mutations over HTTP; subscriptions over a WebSocket to the same endpoint
  // (`graphql-transport-ws`), whose `connection_init` carries the Headers tab (a token in
  // `Authorization`).
  var socketUrl = (window.location.protocol === 'https:' ? 'wss://' : 'ws://') + window.location.host + '/graphql';
  var fetcher = GraphiQL.createFetcher({
    url: window.location.origin + '/graphql',
    subscriptionUrl: socketUrl,
  });
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: defaultQuery,
      variables: defaultVariables,
      defaultEditorToolsVisibility: 'variables',
      // The Headers tab, where a user sets `Authorization: Bearer <token>` when the server
      // checks tokens. (GraphiQL 4 enables it by default; named so that it stays on.) Headers
      // are not persisted to localStorage, so a token does not outlive the tab.
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    }),
  );
})();
