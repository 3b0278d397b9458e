// Seeds a table with ElectroDB 3 (service `lending`: entities `member` and `loan`), plus one
// item of no entity written with a plain PutCommand, then reads the ground truth back through
// ElectroDB's own scan/query APIs and prints it as one JSON object on stdout.
//
// With `--migration`, the table is in the middle of a migration of `loan` to version 2, whose
// keys differ: its sort key is `loanId` alone (`$loan_2#loanid_…`), and its `gsi1` sort key adds
// `memberId`. Version 2 holds a copy of every loan of two members (same ids, the title marked
// " (v2)", the status flipped) and three loans of a member who has no version-1 loan, and the
// ground truth adds `v2: { loansByMember, loansByStatus }`. ElectroDB tells the versions apart by
// `__edb_v__` as well as by the keys: each version's queries read its own items only.
//
//   node writers/electrodb.mjs <endpoint> <tableName> [--create] [--migration | --changes]
//   node writers/electrodb.mjs <endpoint> <tableName> --read   < request.json
//
// Read mode (request and answer: common.mjs) writes nothing. Gets: `member` {memberId}, `loan`
// {memberId, loanedAt, loanId}, `loanV2` {memberId, loanId}, through `entity.get(key).go()`.
// Queries, every page: `loansByMember` {memberId} (index primary), `loansByStatus` {status} (index
// byStatus), `loansV2ByMember`, `loansV2ByStatus` the same of version 2, and a member's loans in
// a range of `loanedAt` through ElectroDB's sort key conditions: `loansBetween` {memberId, from,
// until} (`between`), `loansFrom` {memberId, from} (`gte`), `loansUntil` {memberId, until}
// (`lte`). Items are
// ElectroDB's `data`, which holds only items whose `__edb_e__` / `__edb_v__` name the entity (no
// ignoreOwnership): an item another program wrote reads back only if ElectroDB owns it (a get of
// an item it does not own answers null). This model has no timestamp attributes.
//
// Table: pk (S) / sk (S), GSI gsi1: gsi1pk (S) / gsi1sk (S), projection ALL.
// Deterministic: no Math.random, no clock; variety comes from a seeded LCG.

import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { Entity } from "electrodb";
import { checkChildCounts, checkIndexTotal, children, cmpCodePoints, lcg, parents, pick, readOp, runWriter, sampleRaw } from "./common.mjs";

const LAYOUT = { hash: "pk", range: "sk", index: { name: "gsi1", hash: "gsi1pk", range: "gsi1sk" } };

// ---------------------------------------------------------------------------------------------
// The data set.

// Eight members (child counts: `parents` in common.mjs). No two ids are equal after lowercasing
// (ElectroDB lowercases key values). "M04 Ω" is a prefix of "M04 Ω#omega". Three members have no
// city; "m02 bob#1" (one loan) also gets the migration item.
const MEMBER_SPECS = parents("loans", `
  memberId       | name           | city
  M01 Alice      | Alice Ångström | Zürich
  m02 bob#1      | bob            |
  M03 Ünal       | Ünal Özdemir   | İzmir
  M04 Ω#omega    | Ωmega Reader   |
  M05 日本 Tanaka | 田中 太郎       | 東京
  M06 ZOE        | Zoë Zeta       | Köln
  M04 Ω          | Omega Prefix   | Αθήνα
  m08 ça va      | Ça Va          |
`);
const MIGRATION_MEMBER = "m02 bob#1";
// Version 2 of `loan`: copies of these members' loans, and new loans of a member with none.
const V2_COPIED = ["m02 bob#1", "M03 Ünal"];
const V2_NEW_MEMBER = "M01 Alice";
const V2_NEW_LOANS = 3;
const MEMBER_FIELDS = ["memberId", "name", "city"];
const LOAN_FIELDS = ["memberId", "loanId", "title", "loanedAt", "status"];

// Loan id tags: mixed case, spaces, unicode and `#`; distinct after lowercasing.
const TAGS = ["Zeta", "alpha", "Ω", "Über", "日本", "B#2", "c 3", "Échec"];
const TITLES = [
  "Der Zauberberg",
  "Ωmega Point",
  "日本の昔話",
  "Crime & Punishment #2",
  "Les Misérables",
  "Ελληνικά για αρχάριους",
  "Plain Title",
];

function buildData() {
  const rnd = lcg(20260501);
  const members = MEMBER_SPECS.map((spec) => pick(spec, MEMBER_FIELDS));
  // Tied times give ties on the sort key's first component.
  const loans = children(MEMBER_SPECS, "loans", rnd, TAGS, (spec, k, { at, id }) => ({
    memberId: spec.memberId,
    loanId: id,
    title: `${TITLES[rnd(TITLES.length)]} (${k})`,
    loanedAt: at,
    status: rnd(2) === 0 ? "OUT" : "RETURNED",
  }));
  // Version 2: the copies (same ids, another title and status) and the new loans.
  const loansV2 = loans
    .filter((l) => V2_COPIED.includes(l.memberId))
    .map((l) => ({
      ...l,
      title: `${l.title} (v2)`,
      status: l.status === "OUT" ? "RETURNED" : "OUT",
    }));
  for (let k = 0; k < V2_NEW_LOANS; k++) {
    loansV2.push({
      memberId: V2_NEW_MEMBER,
      loanId: `${TAGS[rnd(TAGS.length)]}-v2-${k}`,
      title: `${TITLES[rnd(TITLES.length)]} (v2 ${k})`,
      loanedAt: new Date(Date.UTC(2026, 6, 1, k, 30)).toISOString(),
      status: k % 2 === 0 ? "OUT" : "RETURNED",
    });
  }
  return { members, loans, loansV2 };
}

// ---------------------------------------------------------------------------------------------
// The ElectroDB model.

function entities(client, table) {
  const member = new Entity(
    {
      model: { entity: "member", version: "1", service: "lending" },
      attributes: {
        memberId: { type: "string", required: true },
        name: { type: "string", required: true },
        city: { type: "string" },
      },
      indexes: {
        primary: {
          pk: { field: "pk", composite: ["memberId"] },
          sk: { field: "sk", composite: [] },
        },
      },
    },
    { client, table },
  );
  const loanAttributes = {
    memberId: { type: "string", required: true },
    loanId: { type: "string", required: true },
    title: { type: "string", required: true },
    loanedAt: { type: "string", required: true },
    status: { type: ["OUT", "RETURNED"], required: true },
  };
  const loan = new Entity(
    {
      model: { entity: "loan", version: "1", service: "lending" },
      attributes: loanAttributes,
      indexes: {
        primary: {
          pk: { field: "pk", composite: ["memberId"] },
          sk: { field: "sk", composite: ["loanedAt", "loanId"] },
        },
        byStatus: {
          index: "gsi1",
          pk: { field: "gsi1pk", composite: ["status"] },
          sk: { field: "gsi1sk", composite: ["loanedAt", "loanId"] },
        },
      },
    },
    { client, table },
  );
  // The same entity, version 2, with other keys.
  const loanV2 = new Entity(
    {
      model: { entity: "loan", version: "2", service: "lending" },
      attributes: loanAttributes,
      indexes: {
        primary: {
          pk: { field: "pk", composite: ["memberId"] },
          sk: { field: "sk", composite: ["loanId"] },
        },
        byStatus: {
          index: "gsi1",
          pk: { field: "gsi1pk", composite: ["status"] },
          sk: { field: "gsi1sk", composite: ["loanedAt", "memberId", "loanId"] },
        },
      },
    },
    { client, table },
  );
  return { member, loan, loanV2 };
}

/** Batch-puts `items` through the entity, 25 at a time; a chunk with leftovers is re-put singly. */
async function batchPut(entity, items, log) {
  for (let i = 0; i < items.length; i += 25) {
    const chunk = items.slice(i, i + 25);
    const { unprocessed } = await entity.put(chunk).go();
    if (unprocessed.length > 0) {
      log(`${unprocessed.length} unprocessed; re-putting the chunk one by one`);
      for (const item of chunk) await entity.put(item).go();
    }
  }
}

// What read mode may ask, by entity and by access pattern (every page, ElectroDB's own order);
// seed mode reads its ground truth through the same access patterns.
const getData = (entity) => async (model, key) => (await model[entity].get(key).go()).data;
const GETS = {
  member: readOp(["memberId"], getData("member")),
  loan: readOp(["memberId", "loanedAt", "loanId"], getData("loan")),
  loanV2: readOp(["memberId", "loanId"], getData("loanV2")),
};
const QUERIES = {
  loansByMember: readOp(["memberId"], async ({ loan }, { memberId }) =>
    (await loan.query.primary({ memberId }).go({ pages: "all" })).data),
  loansByStatus: readOp(["status"], async ({ loan }, { status }) =>
    (await loan.query.byStatus({ status }).go({ pages: "all" })).data),
  // Ranges on the sort key's first composite, as ElectroDB's own sort key conditions.
  loansBetween: readOp(["memberId", "from", "until"], async ({ loan }, { memberId, from, until }) =>
    (await loan.query.primary({ memberId }).between({ loanedAt: from }, { loanedAt: until })
      .go({ pages: "all" })).data),
  loansFrom: readOp(["memberId", "from"], async ({ loan }, { memberId, from }) =>
    (await loan.query.primary({ memberId }).gte({ loanedAt: from }).go({ pages: "all" })).data),
  loansUntil: readOp(["memberId", "until"], async ({ loan }, { memberId, until }) =>
    (await loan.query.primary({ memberId }).lte({ loanedAt: until }).go({ pages: "all" })).data),
  loansV2ByMember: readOp(["memberId"], async ({ loanV2 }, { memberId }) =>
    (await loanV2.query.primary({ memberId }).go({ pages: "all" })).data),
  loansV2ByStatus: readOp(["status"], async ({ loanV2 }, { status }) =>
    (await loanV2.query.byStatus({ status }).go({ pages: "all" })).data),
};

const memberView = (m) => pick(m, MEMBER_FIELDS);
const loanView = (l) => pick(l, LOAN_FIELDS);

function open({ ddb, tableName }) {
  const doc = DynamoDBDocumentClient.from(ddb);
  return { doc, ...entities(doc, tableName) };
}

// `--changes`: instead of the data set, one member's loans changed through ElectroDB, in this
// order (for the subscriptions' test, tests/api/tools/electrodb/live.rs): loans `L-1` and
// `L-2` created (OUT), `L-1` retitled, `L-1` returned (it moves from `OUT` to `RETURNED` in
// `byStatus`), `L-2` deleted, an item of no entity put in the member's partition, and `L-3`
// created (OUT), the last. Prints the steps.
const CHANGES_MEMBER = "M09 Live";
async function changes(model, tableName) {
  const { doc, loan } = model;
  const key = (loanId, loanedAt) => ({ memberId: CHANGES_MEMBER, loanId, loanedAt });
  const at = (day) => `2026-06-0${day}T10:00:00.000Z`;
  const create = (loanId, day, title) =>
    loan.create({ ...key(loanId, at(day)), title, status: "OUT" }).go();
  const steps = [];
  await create("L-1", 1, "First");
  steps.push("create L-1");
  await create("L-2", 2, "Second");
  steps.push("create L-2");
  await loan.patch(key("L-1", at(1))).set({ title: "First, retitled" }).go();
  steps.push("retitle L-1");
  await loan.patch(key("L-1", at(1))).set({ status: "RETURNED" }).go();
  steps.push("return L-1");
  await loan.delete(key("L-2", at(2))).go();
  steps.push("delete L-2");
  const pk = loan.create({ ...key("X", at(3)), title: "x", status: "OUT" }).params().Item.pk;
  await doc.send(
    new PutCommand({ TableName: tableName, Item: { pk, sk: "$loan_1#not-electrodb", note: "no entity" } }),
  );
  steps.push("put an item of no entity");
  await create("L-3", 4, "Last");
  steps.push("create L-3");
  return { steps };
}

async function seed(model, { ddb, tableName, log, chosen }) {
  if (chosen.includes("--changes")) return changes(model, tableName);
  const { doc, member, loan, loanV2 } = model;
  const { members, loans, ...data } = buildData();
  const loansV2 = chosen.includes("--migration") ? data.loansV2 : [];

  await batchPut(member, members, log);
  await batchPut(loan, loans, log);
  await batchPut(loanV2, loansV2, log);

  // The item of no entity, in the partition ElectroDB wrote for the member with one loan.
  const migrationMember = members.find((m) => m.memberId === MIGRATION_MEMBER);
  const pk = member.put(migrationMember).params().Item.pk;
  await doc.send(
    new PutCommand({
      TableName: tableName,
      Item: { pk, sk: "migration#1", note: "legacy import Ü#1", batch: 1 },
    }),
  );
  log(
    `wrote ${members.length} members, ${loans.length} loans, ${loansV2.length} loans of ` +
      "version 2, 1 migration item",
  );

  // Ground truth, read back through ElectroDB.
  const scanned = await member.scan.go({ pages: "all" });
  const membersOut = scanned.data
    .map(memberView)
    .sort((a, b) => cmpCodePoints(a.memberId, b.memberId));
  if (membersOut.length !== members.length) {
    throw new Error(`member scan returned ${membersOut.length}, wrote ${members.length}`);
  }

  // Each version's loans, by member and by status, through that version's own queries.
  const loansOf = async (byMember, byStatus) => {
    const out = { loansByMember: {}, loansByStatus: {} };
    for (const m of membersOut) {
      const got = await QUERIES[byMember].run(model, { memberId: m.memberId });
      out.loansByMember[m.memberId] = got.map(loanView);
    }
    for (const status of ["OUT", "RETURNED"]) {
      out.loansByStatus[status] = (await QUERIES[byStatus].run(model, { status })).map(loanView);
    }
    return out;
  };
  const v1 = await loansOf("loansByMember", "loansByStatus");
  const v2 = await loansOf("loansV2ByMember", "loansV2ByStatus");
  checkChildCounts(MEMBER_SPECS, "memberId", "loans", v1.loansByMember);
  checkIndexTotal("byStatus", v1.loansByStatus, loans.length);
  checkIndexTotal("byStatus of version 2", v2.loansByStatus, loansV2.length);
  checkIndexTotal("loans of version 2 by member", v2.loansByMember, loansV2.length);

  const kindOf = (it) =>
    it.__edb_e__ ? `${it.__edb_e__.S}_${it.__edb_v__.S}` : "migration";
  const kinds = ["member_1", "loan_1", "loan_2", "migration"];
  const raw = await sampleRaw(ddb, tableName, LAYOUT, kinds, kindOf);
  return { members: membersOut, ...v1, ...(loansV2.length > 0 ? { v2 } : {}), raw };
}

runWriter("electrodb", LAYOUT, {
  open,
  seed,
  gets: GETS,
  queries: QUERIES,
  options: ["--migration", "--changes"],
});
