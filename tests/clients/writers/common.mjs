// What every writer shares: the command line, the DynamoDB Local client, the table, the seeded
// data, DynamoDB's string order, the read-back checks and the raw sample of stored items.
//
// A writer is `runWriter(tool, layout, seed)`: `node writers/<tool>.mjs <endpoint> <tableName>
// [--create]` then creates the table on `--create`, calls `seed` and prints what it returns as one
// JSON object on stdout; on any error it prints `[<tool>] ERROR: ...` and exits with code 1.
//
// `layout` names the table's keys: `{ hash, range, index: { name, hash, range } }`, all strings,
// with one global secondary index of projection ALL.

import { CreateTableCommand, DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";

function parseArgs(tool, argv) {
  const positional = argv.filter((a) => !a.startsWith("--"));
  const flags = argv.filter((a) => a.startsWith("--"));
  for (const f of flags) if (f !== "--create") throw new Error(`unknown flag ${f}`);
  if (positional.length !== 2) {
    throw new Error(`usage: node writers/${tool}.mjs <endpoint> <tableName> [--create]`);
  }
  return { endpoint: positional[0], tableName: positional[1], create: flags.includes("--create") };
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
 * Runs a writer from the command line. `seed({ ddb, tableName, log })` writes the data set and
 * returns the ground truth; `ddb` is the low-level DynamoDBClient, `log(...)` writes to stderr.
 */
export function runWriter(tool, layout, seed) {
  const log = (...args) => console.error(`[${tool}]`, ...args);
  const main = async () => {
    const { endpoint, tableName, create } = parseArgs(tool, process.argv.slice(2));
    const ddb = localClient(endpoint);
    try {
      if (create) {
        log(`creating table ${tableName}`);
        await createTable(ddb, tableName, layout);
      }
      const truth = await seed({ ddb, tableName, log });
      process.stdout.write(`${JSON.stringify(truth)}\n`);
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
