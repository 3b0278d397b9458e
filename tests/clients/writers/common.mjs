// What every writer shares: the command line and its two modes, the DynamoDB Local client, the
// table, the seeded data, DynamoDB's string order, the read-back checks and the raw sample of
// stored items.
//
// A writer is `runWriter(tool, layout, { open, seed, gets, queries, present, options })`, run in
// one of two modes:
//
//   node writers/<tool>.mjs <endpoint> <tableName> [--create] [<option>...]
//     Seed: creates the table on `--create`, writes the data set, prints the ground truth. The
//     options are the writer's own (`options`: a list of `--flags`), which `seed` is given.
//   node writers/<tool>.mjs <endpoint> <tableName> --read
//     Read: writes nothing; reads one JSON request from stdin, answers it through the tool's own
//     APIs (items another program wrote must read back as the tool's own) and prints the answer.
//
// Both print one JSON object on stdout; on any error a writer prints `[<tool>] ERROR: ...` and
// exits with code 1.
//
// Read request and answer, in request order (all pages of every query, in the tool's order):
//   { "get":   [ { "entity": "<name>", "key": { ... } }, ... ],
//     "query": [ { "name": "<access pattern>", "params": { ... } }, ... ] }
//   { "get":   [ <item as the tool returns it, or null when it finds none>, ... ],
//     "query": [ [ <item>, ... ], ... ] }
// Either request list may be left out (it answers an empty list).
//
// `layout` names the table's keys: `{ hash, range, index: { name, hash, range } }`, all strings,
// with one global secondary index of projection ALL.

import { CreateTableCommand, DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";

const MODE_FLAGS = ["--create", "--read"];

function parseArgs(tool, argv, options) {
  const positional = argv.filter((a) => !a.startsWith("--"));
  const modes = argv.filter((a) => MODE_FLAGS.includes(a));
  const chosen = argv.filter((a) => a.startsWith("--") && !MODE_FLAGS.includes(a));
  for (const f of chosen) if (!options.includes(f)) throw new Error(`unknown flag ${f}`);
  const read = modes[0] === "--read";
  if (positional.length !== 2 || modes.length > 1 || (read && chosen.length > 0)) {
    const extra = options.map((o) => ` [${o}]`).join("");
    throw new Error(
      `usage: node writers/${tool}.mjs <endpoint> <tableName> [--create${extra} | --read]`,
    );
  }
  const [endpoint, tableName] = positional;
  return { endpoint, tableName, create: modes[0] === "--create", read, chosen };
}

/** A client for DynamoDB Local at `endpoint`, with dummy credentials. */
function localClient(endpoint) {
  return new DynamoDBClient({
    region: "us-east-1",
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

async function createTable(ddb, tableName, { hash, range, index }) {
  const keySchema = (h, r) => [
    { AttributeName: h, KeyType: "HASH" },
    { AttributeName: r, KeyType: "RANGE" },
  ];
  await ddb.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [hash, range, index.hash, index.range].map((AttributeName) => ({
        AttributeName,
        AttributeType: "S",
      })),
      KeySchema: keySchema(hash, range),
      GlobalSecondaryIndexes: [
        {
          IndexName: index.name,
          KeySchema: keySchema(index.hash, index.range),
          Projection: { ProjectionType: "ALL" },
        },
      ],
    }),
  );
}

/**
 * One thing a read request may name: `run(model, arg)` answers it (a get: the item, or
 * null/undefined for none; a query: the list of items), given an `arg` (a get's key, a query's
 * params) of exactly the fields `fields`. Call it as `op.run(model, arg)`.
 */
export function readOp(fields, run) {
  return { fields, run };
}

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

function checkFields(where, value, fields) {
  if (!isObject(value)) throw new Error(`${where} must be an object`);
  const keys = Object.keys(value);
  const missing = fields.filter((f) => !keys.includes(f));
  const extra = keys.filter((k) => !fields.includes(k));
  if (missing.length > 0 || extra.length > 0) {
    const want = `{${fields.join(", ")}}`;
    throw new Error(`${where} must have exactly ${want} (missing: [${missing}], extra: [${extra}])`);
  }
}

/** The requests of `list` (`request[field]`, may be left out), each checked against `ops`. */
function requests(request, field, [nameField, argField], ops) {
  const list = request[field] ?? [];
  if (!Array.isArray(list)) throw new Error(`request.${field} must be a list`);
  return list.map((entry, i) => {
    const where = `${field}[${i}]`;
    checkFields(where, entry, [nameField, argField]);
    const name = entry[nameField];
    if (typeof name !== "string" || !Object.hasOwn(ops, name)) {
      const known = Object.keys(ops).join(", ");
      throw new Error(`${where}.${nameField}: unknown ${JSON.stringify(name)} (known: ${known})`);
    }
    const op = ops[name];
    checkFields(`${where}.${argField}`, entry[argField], op.fields);
    return { op, arg: entry[argField] };
  });
}

/**
 * Answers a read request (see the top of this file) through the writer's `gets` and `queries`,
 * one call at a time; `present(item)` turns each item found into JSON.
 */
async function answer({ gets, queries, present = (item) => item }, model, request) {
  if (!isObject(request)) throw new Error("the request must be a JSON object");
  const unknown = Object.keys(request).filter((k) => k !== "get" && k !== "query");
  if (unknown.length > 0) throw new Error(`unknown request fields: ${unknown.join(", ")}`);
  const getList = requests(request, "get", ["entity", "key"], gets);
  const queryList = requests(request, "query", ["name", "params"], queries);
  const out = { get: [], query: [] };
  for (const { op, arg } of getList) {
    const item = await op.run(model, arg);
    out.get.push(item === undefined || item === null ? null : present(item));
  }
  for (const { op, arg } of queryList) out.query.push((await op.run(model, arg)).map(present));
  return out;
}

async function readStdin() {
  process.stdin.setEncoding("utf8");
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

/**
 * Runs a writer from the command line. `open({ ddb, tableName })` builds the tool's model (its
 * entities, over the low-level DynamoDBClient `ddb`), which both modes use. Seed mode:
 * `seed(model, { ddb, tableName, log, chosen })` writes the data set and returns the ground truth
 * (`chosen`: the writer's `options` given on the command line);
 * `log(...)` writes to stderr. Read mode: `gets` (by entity) and `queries` (by access pattern)
 * map the names a request may use to `readOp`s; `present(item)`, if given, turns each item found
 * into JSON.
 */
export function runWriter(tool, layout, { open, seed, options = [], ...reads }) {
  const log = (...args) => console.error(`[${tool}]`, ...args);
  const main = async () => {
    const args = parseArgs(tool, process.argv.slice(2), options);
    const { endpoint, tableName, create, read, chosen } = args;
    // The request first: a malformed one fails before any connection.
    const request = read ? JSON.parse(await readStdin()) : undefined;
    const ddb = localClient(endpoint);
    try {
      const model = open({ ddb, tableName });
      let out;
      if (read) {
        out = await answer(reads, model, request);
      } else {
        if (create) {
          log(`creating table ${tableName}`);
          await createTable(ddb, tableName, layout);
        }
        out = await seed(model, { ddb, tableName, log, chosen });
      }
      process.stdout.write(`${JSON.stringify(out)}\n`);
    } finally {
      ddb.destroy();
    }
  };
  main().catch((err) => {
    console.error(`[${tool}] ERROR:`, err?.stack ?? err);
    process.exitCode = 1;
  });
}

/** A small seeded LCG (Numerical Recipes constants); `next(n)` is an integer in [0, n). */
export function lcg(seed) {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s >>> 8) % n;
  };
}

/** Child counts of the eight parents of every data set. */
const CHILD_COUNTS = [0, 1, 20, 21, 100, 250, 0, 0];

/**
 * The eight parent specs of a data set, from a text table: a line of field names, then a line a
 * parent, cells split at `|` and trimmed (an empty cell leaves its field out). Parent i also gets
 * its child count, CHILD_COUNTS[i], as field `countKey`.
 */
export function parents(countKey, table) {
  const [fields, ...rows] = table
    .trim()
    .split("\n")
    .map((line) => line.split("|").map((cell) => cell.trim()));
  if (rows.length !== CHILD_COUNTS.length) throw new Error(`${rows.length} parents, not 8`);
  return rows.map((cells, i) => {
    const spec = {};
    fields.forEach((field, j) => {
      if (cells[j]) spec[field] = cells[j];
    });
    spec[countKey] = CHILD_COUNTS[i];
    return spec;
  });
}

/** The fields `keys` of `obj`, in that order, leaving out those that are undefined. */
export function pick(obj, keys) {
  const out = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}

const BASE_MS = Date.UTC(2026, 4, 1, 0, 0, 0, 0); // 2026-05-01T00:00:00.000Z

/**
 * The children of `specs`, `spec[countKey]` each, in spec order: `make(spec, k, { at, id })` builds
 * child k of spec i. Drawn from `rnd` first: the time `at`, an ISO string 1 to 3 minutes after the
 * previous new time of the data set (about 1 in 4 times: the same as the spec's previous child, for
 * ties), and the id `<tag from tags>-<i><k in 3 digits>`.
 */
export function children(specs, countKey, rnd, tags, make) {
  let minute = 0;
  const out = [];
  specs.forEach((spec, i) => {
    let at = null;
    for (let k = 0; k < spec[countKey]; k++) {
      if (at === null || rnd(4) !== 0) {
        minute += 1 + rnd(3);
        at = new Date(BASE_MS + minute * 60_000).toISOString();
      }
      const id = `${tags[rnd(tags.length)]}-${i}${String(k).padStart(3, "0")}`;
      out.push(make(spec, k, { at, id }));
    }
  });
  return out;
}

/** Compares strings by Unicode code point, which is DynamoDB's (UTF-8 byte) order. */
export function cmpCodePoints(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** Throws unless `byParent[spec[idKey]]` holds `spec[countKey]` children for every spec. */
export function checkChildCounts(specs, idKey, countKey, byParent) {
  for (const spec of specs) {
    const got = byParent[spec[idKey]].length;
    if (got !== spec[countKey]) {
      throw new Error(`${spec[idKey]}: ${got} ${countKey}, wrote ${spec[countKey]}`);
    }
  }
}

/** Throws unless the groups read through index `name` hold `wrote` items together. */
export function checkIndexTotal(name, groups, wrote) {
  const total = Object.values(groups).reduce((n, l) => n + l.length, 0);
  if (total !== wrote) throw new Error(`${name} saw ${total} of ${wrote}`);
}

async function scanAllRaw(ddb, tableName) {
  const items = [];
  let ExclusiveStartKey;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey }));
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey !== undefined);
  return items;
}

/**
 * Up to three raw items (AttributeValue JSON, as stored) of each of `kinds`, in that order, each
 * kind's picked in (hash, range) key order; `kindOf(item)` names an item's kind.
 */
export async function sampleRaw(ddb, tableName, { hash, range }, kinds, kindOf) {
  const all = (await scanAllRaw(ddb, tableName)).sort(
    (a, b) => cmpCodePoints(a[hash].S, b[hash].S) || cmpCodePoints(a[range].S, b[range].S),
  );
  return kinds.flatMap((kind) => all.filter((it) => kindOf(it) === kind).slice(0, 3));
}
