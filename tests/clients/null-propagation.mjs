// The reference for null propagation: executes a query with graphql-js over a given schema and
// data, with resolvers that throw at the given paths, and prints `{"data", "errors": [path]}`.
//
//   node null-propagation.mjs '<json>'
//
// where <json> is {"schema": "<SDL file>", "query", "variables", "data", "throwAt": [[path]]}:
// `data` is the response to the same query when nothing fails, so that every field resolves to
// what dynarelay would answer, and `throwAt` holds the paths (response keys and list indices) of
// the fields to fail. Abstract types resolve through `__typename`, which `data` must carry.
import { readFileSync } from 'node:fs';
import { buildSchema, execute, parse, validate } from 'graphql';

const input = JSON.parse(process.argv[2] ?? 'null');
if (!input) {
  console.error("usage: node null-propagation.mjs '<json>'");
  process.exit(2);
}
const schema = buildSchema(readFileSync(input.schema, 'utf8'));
const document = parse(input.query);
const invalid = validate(schema, document);
if (invalid.length > 0) {
  console.error(invalid.map(String).join('\n'));
  process.exit(1);
}

const pathOf = (path) => {
  const keys = [];
  for (let node = path; node; node = node.prev) keys.unshift(node.key);
  return JSON.stringify(keys);
};
const throwAt = new Set(input.throwAt.map((path) => JSON.stringify(path)));

const result = await execute({
  schema,
  document,
  rootValue: input.data,
  variableValues: input.variables,
  fieldResolver: (source, _args, _context, info) => {
    if (throwAt.has(pathOf(info.path))) throw new Error(`thrown at ${pathOf(info.path)}`);
    return source[info.path.key];
  },
});
console.log(
  JSON.stringify({
    data: result.data ?? null,
    errors: (result.errors ?? []).map((error) => error.path),
  }),
);
