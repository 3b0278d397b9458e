// Seeds a table with dynamodb-onetable 2 (models `Project` and `Issue`, v3 SDK client), then reads
// the ground truth back through OneTable's own find/scan APIs and prints it as one JSON object on
// stdout.
//
//   node writers/onetable.mjs <endpoint> <tableName> [--create] [--changes]
//   node writers/onetable.mjs <endpoint> <tableName> --read   < request.json
//
// Table: pk (S) / sk (S), GSI gs1: gs1pk (S) / gs1sk (S), projection ALL.
// `Project.name` is unique, so OneTable also writes one `_unique#Project#name#<name>` item per
// project (in a transaction). Timestamps are on: `created` / `updated` are epoch milliseconds of
// the wall clock at write time, the only values here not fixed by this script.
//
// Padding: OneTable's value templates support `${name:length:padChar}` (Model.runTemplate in
// dist/mjs/Model.js: the value is left-padded with padChar, default '0', to `length`), so Issue keys
// use `${seq:8}`: seq 7 is stored in the key as `00000007`.
//
// Read mode (request and answer: common.mjs) writes nothing. Gets: `Project` {id}, `Issue`
// {projectId, seq}, through `Model.get`. Queries, every page, as the ground truth reads them:
// `issuesByProject` {projectId}, `issuesByState` {state}. Items are OneTable's, with its Date
// values (`created` / `updated`) printed as ISO strings (toISOString).

import { Table } from "dynamodb-onetable";
import { checkChildCounts, checkIndexTotal, cmpCodePoints, lcg, parents, readOp, runWriter, sampleRaw } from "./common.mjs";

const LAYOUT = { hash: "pk", range: "sk", index: { name: "gs1", hash: "gs1pk", range: "gs1sk" } };

// ---------------------------------------------------------------------------------------------
// The schema. Single-quoted strings: `${...}` here are OneTable templates, not JS ones.

const SCHEMA = {
  format: "onetable:1.1.0",
  version: "0.0.1",
  indexes: {
    primary: { hash: "pk", sort: "sk" },
    gs1: { hash: "gs1pk", sort: "gs1sk", project: "all" },
  },
  models: {
    Project: {
      pk: { type: String, value: "project#${id}" },
      sk: { type: String, value: "project#" },
      id: { type: String, required: true },
      name: { type: String, required: true, unique: true },
    },
    Issue: {
      pk: { type: String, value: "project#${projectId}" },
      sk: { type: String, value: "issue#${seq:8}" },
      projectId: { type: String, required: true },
      seq: { type: Number, required: true },
      title: { type: String },
      state: { type: String, enum: ["open", "closed"] },
      gs1pk: { type: String, value: "state#${state}" },
      gs1sk: { type: String, value: "issue#${projectId}#${seq:8}" },
    },
  },
  params: { isoDates: false, timestamps: true },
};

// ---------------------------------------------------------------------------------------------
// The data set.

// Eight projects (child counts: `parents` in common.mjs). "P04 Ω" is a prefix of "P04 Ω#Ωmega".
const PROJECT_SPECS = parents("issues", `
  id          | name
  P01 Apollo  | Apollo
  p02 beta#1  | beta #1
  P03 Ünlü    | Ünlü Çalışma
  P04 Ω#Ωmega | Ωmega
  P05 日本     | 日本 プロジェクト
  P06 BIG     | Big One
  P04 Ω       | Omega Prefix
  p08 ça      | ça marche
`);
const TITLES = [
  "Crash on start",
  "Ümlaut in path",
  "Ω not rendered",
  "日本語の入力",
  "Fix #42 again",
  "Slow query",
];

const WIDE_SEQS = [99999999, 100000000, 123456789, 999999999, 2000000000];

function buildData() {
  const rnd = lcg(777);
  const projects = PROJECT_SPECS.map(({ id, name }) => ({ id, name }));
  const issues = [];
  for (const spec of PROJECT_SPECS) {
    // Increasing but gappy sequence numbers that cross 1, 2 and 3 digits: the padded key sorts
    // them numerically, an unpadded one would not.
    let seq = 0;
    for (let k = 0; k < spec.issues; k++) {
      seq += 1 + rnd(5);
      // The largest project's last issues have numbers wider than the key's 8 digits, which
      // OneTable writes unpadded (`issue#123456789`): they sort by their first digits.
      const wide = WIDE_SEQS[k - (spec.issues - WIDE_SEQS.length)];
      if (spec.issues === 250 && wide !== undefined) seq = wide;
      issues.push({
        projectId: spec.id,
        seq,
        title: `${TITLES[rnd(TITLES.length)]} (${k})`,
        state: rnd(3) === 0 ? "closed" : "open",
      });
    }
  }
  return { projects, issues };
}

// ---------------------------------------------------------------------------------------------

/** Runs `fn` over `items` with at most `width` calls in flight. */
async function forEachLimited(items, width, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/** All pages of a OneTable find/scan, following `next` cursors. */
async function allPages(call) {
  const out = [];
  let next;
  let pages = 0;
  do {
    const page = await call(next);
    out.push(...page);
    next = page.next;
    pages++;
    if (pages > 1000) throw new Error("too many pages");
  } while (next !== undefined);
  return out;
}

const PAGE = 40; // small pages, so `next` cursors are really followed

function open({ ddb: client, tableName }) {
  const table = new Table({ client, name: tableName, schema: SCHEMA, partial: false });
  return { Project: table.getModel("Project"), Issue: table.getModel("Issue") };
}

// What read mode may ask, by model and by access pattern (every page, OneTable's own order); seed
// mode reads its ground truth through the same access patterns.
const GETS = {
  Project: readOp(["id"], ({ Project }, key) => Project.get(key)),
  Issue: readOp(["projectId", "seq"], ({ Issue }, key) => Issue.get(key)),
};
const QUERIES = {
  issuesByProject: readOp(["projectId"], ({ Issue }, { projectId }) =>
    allPages((next) => Issue.find({ projectId }, { limit: PAGE, next }))),
  issuesByState: readOp(["state"], ({ Issue }, { state }) =>
    allPages((next) => Issue.find({ state }, { index: "gs1", limit: PAGE, next }))),
};

const projectView = (p) => ({ id: p.id, name: p.name });
const issueView = (i) => ({ projectId: i.projectId, seq: i.seq, title: i.title, state: i.state });

// `--changes`: instead of the data set, one project's issues changed through OneTable, in this
// order (for the subscriptions' test, tests/api/tools/onetable_live.rs): the project created
// (with OneTable's `_unique#` item, of no entity), issues 1 and 2 opened, 1 retitled, 1 closed
// (it moves from `state#open` to `state#closed` in `gs1`), 2 removed, 3 opened, the last.
// Prints the steps.
async function changes({ Project, Issue }) {
  const projectId = "P09 Live";
  const steps = [];
  await Project.create({ id: projectId, name: "Live" });
  steps.push("create the project");
  for (const seq of [1, 2]) {
    await Issue.create({ projectId, seq, title: `Issue ${seq}`, state: "open" });
    steps.push(`open ${seq}`);
  }
  await Issue.update({ projectId, seq: 1, title: "Issue 1, retitled" });
  steps.push("retitle 1");
  await Issue.update({ projectId, seq: 1, state: "closed" });
  steps.push("close 1");
  await Issue.remove({ projectId, seq: 2 });
  steps.push("remove 2");
  await Issue.create({ projectId, seq: 3, title: "Issue 3", state: "open" });
  steps.push("open 3");
  return { steps };
}

async function seed(model, { ddb: client, tableName, log, chosen }) {
  if (chosen.includes("--changes")) return changes(model);
  const { Project, Issue } = model;
  const { projects, issues } = buildData();

  // Projects one by one (each is a transaction with its `_unique#` item), issues 8 in flight.
  for (const p of projects) await Project.create(p);
  await forEachLimited(issues, 8, (it) => Issue.create(it));
  log(
    `wrote ${projects.length} projects (+${projects.length} unique items), ${issues.length} issues`,
  );

  // Ground truth, read back through OneTable.
  const scanned = await allPages((next) => Project.scan({}, { limit: PAGE, next }));
  const projectsOut = scanned.map(projectView).sort((a, b) => cmpCodePoints(a.id, b.id));
  if (projectsOut.length !== projects.length) {
    throw new Error(`project scan returned ${projectsOut.length}, wrote ${projects.length}`);
  }

  const issuesByProjectOut = {};
  for (const p of projectsOut) {
    const found = await QUERIES.issuesByProject.run(model, { projectId: p.id });
    issuesByProjectOut[p.id] = found.map(issueView);
  }
  const issuesByStateOut = {};
  for (const state of ["open", "closed"]) {
    issuesByStateOut[state] = (await QUERIES.issuesByState.run(model, { state })).map(issueView);
  }
  checkChildCounts(PROJECT_SPECS, "id", "issues", issuesByProjectOut);
  checkIndexTotal("gs1", issuesByStateOut, issues.length);

  const kindOf = (it) => (it.pk.S.startsWith("_unique#") ? "_unique" : it._type?.S);
  const raw = await sampleRaw(client, tableName, LAYOUT, ["Project", "Issue", "_unique"], kindOf);
  return {
    projects: projectsOut,
    issuesByProject: issuesByProjectOut,
    issuesByState: issuesByStateOut,
    raw,
  };
}

/** `item` with its Date values (`created`, `updated`) as ISO strings, for JSON. */
function isoDates(item) {
  const out = {};
  for (const [k, v] of Object.entries(item)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

runWriter("onetable", LAYOUT, {
  open,
  seed,
  gets: GETS,
  queries: QUERIES,
  present: isoDates,
  options: ["--changes"],
});
