// Seeds a table with dynamodb-toolbox v2 (entities `Customer` and `Order`), then reads the ground
// truth back through toolbox's own Scan/Query commands and prints it as one JSON object on stdout.
//
//   node writers/toolbox.mjs <endpoint> <tableName> [--create] [--changes]
//   node writers/toolbox.mjs <endpoint> <tableName> --read   < request.json
//
// Table: PK (S) / SK (S), GSI GSI1: GSI1PK (S) / GSI1SK (S), projection ALL.
// Toolbox defaults are kept: entity attribute `_et`, timestamps `_ct` / `_md` (ISO strings of the
// wall clock at write time: the only values here not fixed by this script).
//
// Read mode (request and answer: common.mjs) writes nothing. Gets: `Customer` {customerId},
// `Order` {customerId, orderId}, through GetItemCommand. Queries, every page, as the ground truth
// reads them: `ordersByCustomer` {customerId}, `ordersByStatus` {status}. Items are toolbox's
// formatted (and, by default, validated) output: every schema attribute, the linked table keys
// (PK, SK, GSI1PK, GSI1SK) included, plus the timestamps under their formatted names `created` /
// `modified` (saved as `_ct` / `_md`); the entity attribute (`entity`, saved as `_et`) is hidden.
// Deterministic otherwise: no Math.random, no clock; variety comes from a seeded LCG.

import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import {
  BatchPutRequest,
  BatchWriteCommand,
  DeleteItemCommand,
  Entity,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  Table,
  UpdateItemCommand,
  executeBatchWrite,
  item,
  number,
  string,
} from "dynamodb-toolbox";
import { checkChildCounts, checkIndexTotal, children, cmpCodePoints, lcg, parents, pick, readOp, runWriter, sampleRaw } from "./common.mjs";

const LAYOUT = { hash: "PK", range: "SK", index: { name: "GSI1", hash: "GSI1PK", range: "GSI1SK" } };

// ---------------------------------------------------------------------------------------------
// The data set.

const STATUSES = ["PAID", "PENDING", "SHIPPED"];

// Eight customers (child counts: `parents` in common.mjs); three have no email.
// "C04 Ω" is a prefix of "C04 Ω#Ωmega".
const CUSTOMER_SPECS = parents("orders", `
  customerId    | name         | email
  C01 Anna      | Anna Åberg   | anna@example.com
  c02 ben#x     | ben          |
  C03 Ünsal     | Ünsal Öz     | uensal@example.de
  C04 Ω#Ωmega   | Ωmega Shop   |
  C05 日本 Store | 日本 商店     | shop@example.jp
  C06 BIG       | Big Buyer    | big@example.com
  C04 Ω         | Omega Prefix | omega@example.gr
  c08 über      | über         |
`);

// Order id tags: mixed case, spaces, unicode and `#`.
const TAGS = ["Zulu", "alpha", "Ω", "Über", "日本", "B#2", "c 3", "Échec"];
const CUSTOMER_FIELDS = ["customerId", "name", "email"];
const ORDER_FIELDS = ["customerId", "orderId", "placedAt", "total", "status"];

function buildData() {
  const rnd = lcg(424242);
  const customers = CUSTOMER_SPECS.map((spec) => pick(spec, CUSTOMER_FIELDS));
  // Tied times give ties on GSI1SK's first component.
  const orders = children(CUSTOMER_SPECS, "orders", rnd, TAGS, (spec, k, { at, id }) => {
    // Cents: some whole amounts (e.g. 20), most with decimals (e.g. 19.99).
    const cents = rnd(5) === 0 ? 100 * (1 + rnd(300)) : 1 + rnd(50_000);
    return {
      customerId: spec.customerId,
      orderId: id,
      placedAt: at,
      total: cents / 100,
      status: STATUSES[rnd(STATUSES.length)],
    };
  });
  return { customers, orders };
}

// ---------------------------------------------------------------------------------------------
// The toolbox model.

function model(documentClient, tableName) {
  const table = new Table({
    name: tableName,
    documentClient,
    partitionKey: { name: "PK", type: "string" },
    sortKey: { name: "SK", type: "string" },
    indexes: {
      GSI1: {
        type: "global",
        partitionKey: { name: "GSI1PK", type: "string" },
        sortKey: { name: "GSI1SK", type: "string" },
      },
    },
  });

  // Key attributes are linked (`.key().link(...)`) to the plain `customerId` / `orderId`
  // attributes, which are stored as themselves too. Both entities share the customer's partition.
  const linkedKey = (fn) => string().key().link(fn);
  const customerPartition = () => linkedKey(({ customerId }) => `CUSTOMER#${customerId}`);
  const Customer = new Entity({
    name: "Customer",
    table,
    schema: item({
      customerId: string().key(),
      name: string(),
      email: string().optional(),
    }).and(() => ({
      PK: customerPartition(),
      SK: linkedKey(() => "#PROFILE"),
    })),
  });

  const Order = new Entity({
    name: "Order",
    table,
    schema: item({
      customerId: string().key(),
      orderId: string().key(),
      placedAt: string(),
      total: number(),
      status: string().enum(...STATUSES),
    }).and(() => ({
      PK: customerPartition(),
      SK: linkedKey(({ orderId }) => `ORDER#${orderId}`),
      GSI1PK: string().link(({ status }) => `STATUS#${status}`),
      GSI1SK: string().link(({ placedAt, orderId }) => `${placedAt}#${orderId}`),
    })),
  });
  return { documentClient, table, Customer, Order };
}

/** Batch-puts `items` of `entity` through toolbox's BatchWriteCommand, 25 per request. */
async function batchPut(table, entity, items) {
  for (let i = 0; i < items.length; i += 25) {
    const requests = items.slice(i, i + 25).map((it) => entity.build(BatchPutRequest).item(it));
    const command = table.build(BatchWriteCommand).requests(...requests);
    const { UnprocessedItems = {} } = await executeBatchWrite({ maxAttempts: 10 }, command);
    const left = Object.values(UnprocessedItems).reduce((n, reqs) => n + reqs.length, 0);
    if (left > 0) throw new Error(`${left} items still unprocessed after 10 attempts`);
  }
}

// What read mode may ask, by entity and by access pattern; seed mode reads its ground truth
// through the same access patterns.
const getItem = (entity) => async (model, key) =>
  (await model[entity].build(GetItemCommand).key(key).send()).Item;
const GETS = {
  Customer: readOp(["customerId"], getItem("Customer")),
  Order: readOp(["customerId", "orderId"], getItem("Order")),
};

/** All orders of one Query (every page), in toolbox's own order. */
async function queryOrders({ table, Order }, query) {
  const { Items } = await table
    .build(QueryCommand)
    .entities(Order)
    .query(query)
    .options({ maxPages: Infinity })
    .send();
  return Items;
}
const QUERIES = {
  ordersByCustomer: readOp(["customerId"], (model, { customerId }) =>
    queryOrders(model, { partition: `CUSTOMER#${customerId}`, range: { beginsWith: "ORDER#" } })),
  ordersByStatus: readOp(["status"], (model, { status }) =>
    queryOrders(model, { index: "GSI1", partition: `STATUS#${status}` })),
};

const customerView = (c) => pick(c, CUSTOMER_FIELDS);
const orderView = (o) => pick(o, ORDER_FIELDS);

// `--changes`: instead of the data set, one customer's orders changed through dynamodb-toolbox,
// in this order (for the subscriptions' test, tests/api/tools/toolbox_live.rs): the customer
// created, orders `O-1` and `O-2` placed (PENDING), `O-1`'s total changed (UpdateItemCommand),
// `O-1` put again as PAID (it moves from `STATUS#PENDING` to `STATUS#PAID` in `GSI1`), `O-2`
// deleted, an item of no entity put in the customer's partition (an `_et` the model does not
// know), and `O-3` placed (PENDING), the last. Prints the steps.
const CHANGES_CUSTOMER = "C09 Live";
async function changes({ documentClient, Customer, Order }, tableName) {
  const customerId = CHANGES_CUSTOMER;
  const order = (orderId, day, total, status) => ({
    customerId,
    orderId,
    placedAt: `2026-06-0${day}T10:00:00.000Z`,
    total,
    status,
  });
  const put = (item) => Order.build(PutItemCommand).item(item).send();
  const steps = [];
  await Customer.build(PutItemCommand).item({ customerId, name: "Live" }).send();
  steps.push("create the customer");
  await put(order("O-1", 1, 10.5, "PENDING"));
  steps.push("place O-1");
  await put(order("O-2", 2, 20, "PENDING"));
  steps.push("place O-2");
  await Order.build(UpdateItemCommand).item({ customerId, orderId: "O-1", total: 11.25 }).send();
  steps.push("change O-1's total");
  await put(order("O-1", 1, 11.25, "PAID"));
  steps.push("pay O-1");
  await Order.build(DeleteItemCommand).key({ customerId, orderId: "O-2" }).send();
  steps.push("delete O-2");
  await documentClient.send(
    new PutCommand({
      TableName: tableName,
      Item: { PK: `CUSTOMER#${customerId}`, SK: "INVOICE#1", _et: "Invoice", note: "no entity" },
    }),
  );
  steps.push("put an item of no entity");
  await put(order("O-3", 3, 30, "PENDING"));
  steps.push("place O-3");
  return { steps };
}

async function seed(model, { ddb, tableName, log, chosen }) {
  if (chosen.includes("--changes")) return changes(model, tableName);
  const { table, Customer, Order } = model;
  const { customers, orders } = buildData();

  await batchPut(table, Customer, customers);
  await batchPut(table, Order, orders);
  log(`wrote ${customers.length} customers, ${orders.length} orders`);

  // Ground truth, read back through toolbox.
  const { Items: scanned } = await table
    .build(ScanCommand)
    .entities(Customer)
    .options({ maxPages: Infinity })
    .send();
  const customersOut = scanned
    .map(customerView)
    .sort((a, b) => cmpCodePoints(a.customerId, b.customerId));
  if (customersOut.length !== customers.length) {
    throw new Error(`customer scan returned ${customersOut.length}, wrote ${customers.length}`);
  }

  const ordersByCustomerOut = {};
  for (const c of customersOut) {
    const found = await QUERIES.ordersByCustomer.run(model, { customerId: c.customerId });
    ordersByCustomerOut[c.customerId] = found.map(orderView);
  }
  const ordersByStatusOut = {};
  for (const status of STATUSES) {
    const found = await QUERIES.ordersByStatus.run(model, { status });
    ordersByStatusOut[status] = found.map(orderView);
  }
  checkChildCounts(CUSTOMER_SPECS, "customerId", "orders", ordersByCustomerOut);
  checkIndexTotal("GSI1", ordersByStatusOut, orders.length);

  const raw = await sampleRaw(ddb, tableName, LAYOUT, ["Customer", "Order"], (it) => it._et?.S);
  return {
    customers: customersOut,
    ordersByCustomer: ordersByCustomerOut,
    ordersByStatus: ordersByStatusOut,
    raw,
  };
}

const open = ({ ddb, tableName }) => model(DynamoDBDocumentClient.from(ddb), tableName);
runWriter("toolbox", LAYOUT, { open, seed, gets: GETS, queries: QUERIES, options: ["--changes"] });
