// Drives dynarelay's GraphiQL playground in headless Chromium (Debian's `chromium` package, or
// $CHROMIUM), the way a person would: loads the page, replaces the query and the variables in
// the editors, clicks the run button and waits for the result pane. Prints a JSON report on
// stdout: the text the result pane rendered, every GraphQL response the page received (with the
// Authorization header its request carried) and every request it made.
//
// Fails, with the reason on stderr, when the page or the query takes longer than 30 s each, when
// the page requests anything from another origin (such requests are aborted, never sent), when
// it logs a console error or an uncaught exception, or when it violates its
// Content-Security-Policy.
//
//   node graphiql.mjs --url http://127.0.0.1:PORT/ --query Q --variables JSON
//                     [--schema-headers TEXT] [--headers TEXT]... [--subscription]
//                     [--screenshot PATH] [--sabotage bundle|foreign-image|foreign-image-no-csp]
//
// --headers (repeatable) types TEXT into GraphiQL's Headers editor (an empty TEXT clears it) and
// runs the query, once per --headers, in order; each run is reported in `runs`, and the first is
// also `rendered`. Without it the query runs once and the Headers editor is left alone.
// --schema-headers types TEXT into the Headers editor first and clicks "Re-fetch GraphQL schema",
// as someone whose token may introspect would; the answer is reported as `schemaRefetch`.
// A run ends when the result pane shows exactly the JSON the server answered.
//
// --subscription runs Q as a subscription: GraphiQL sends it over its WebSocket fetcher, and the
// run ends when the result pane shows a change (`data` with a `kind`); the report adds the
// page's `websockets` (url, frames sent and received). Something must write meanwhile.
//
// --sabotage breaks the page on purpose, to show that the checks notice: `bundle` aborts the
// download of GraphiQL's script; `foreign-image` adds an image from another host to the page,
// which its Content-Security-Policy refuses; `foreign-image-no-csp` does the same and also drops
// the policy, so that the browser tries to fetch the image.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    query: { type: 'string' },
    variables: { type: 'string', default: '{}' },
    headers: { type: 'string', multiple: true },
    'schema-headers': { type: 'string' },
    screenshot: { type: 'string' },
    sabotage: { type: 'string' },
    subscription: { type: 'boolean', default: false },
  },
});
if (!opts.url || !opts.query) {
  process.stderr.write(
    'usage: node graphiql.mjs --url URL --query QUERY [--variables JSON] [--schema-headers TEXT] [--headers TEXT]... [--screenshot PATH]\n',
  );
  process.exit(2);
}
if (opts.sabotage && !['bundle', 'foreign-image', 'foreign-image-no-csp'].includes(opts.sabotage)) {
  process.stderr.write(`unknown --sabotage ${opts.sabotage}\n`);
  process.exit(2);
}

const STEP_TIMEOUT_MS = 30_000;
// The result must fit on the screen: the editors only draw the lines in view.
const VIEWPORT = { width: 1280, height: 1400 };
const origin = new URL(opts.url).origin;

class Failure extends Error {}

const problems = [];
const requests = [];
const foreignRequests = [];
const graphqlResponses = [];
const websockets = [];
// Reading a response's headers and body is asynchronous: the report waits for all of them.
const responseDetails = [];

const userDataDir = mkdtempSync(join(tmpdir(), 'dynarelay-chromium-'));
let context;
let exitCode = 0;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: VIEWPORT,
    timeout: STEP_TIMEOUT_MS,
  });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);

  // Nothing may leave the server's origin: record and abort anything else.
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    requests.push(`${route.request().method()} ${url}`);
    if (url.startsWith('data:') || new URL(url).origin === origin) {
      if (opts.sabotage === 'bundle' && new URL(url).pathname === '/graphiql/graphiql.min.js') {
        await route.abort('failed');
      } else if (opts.sabotage?.startsWith('foreign-image') && new URL(url).pathname === '/') {
        const response = await route.fetch();
        const html = (await response.text()).replace(
          '<div id="graphiql">',
          '<img src="http://198.51.100.7/pixel.png" alt="" /><div id="graphiql">',
        );
        const headers = response.headers();
        if (opts.sabotage === 'foreign-image-no-csp') delete headers['content-security-policy'];
        await route.fulfill({ response, headers, body: html });
      } else {
        await route.continue();
      }
    } else {
      foreignRequests.push(`${route.request().method()} ${url}`);
      await route.abort('blockedbyclient');
    }
  });
  // Content-Security-Policy violations, as the page itself sees them.
  await context.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || 'inline code'}`);
    });
  });

  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  let pageError;
  const pageErrored = new Promise((resolve) => {
    page.on('pageerror', (error) => {
      problems.push(`uncaught exception: ${error.message}`);
      pageError ??= error;
      resolve();
    });
  });
  page.on('websocket', (socket) => {
    const entry = { url: socket.url(), sent: [], received: [] };
    websockets.push(entry);
    socket.on('framesent', (frame) => entry.sent.push(String(frame.payload)));
    socket.on('framereceived', (frame) => entry.received.push(String(frame.payload)));
  });
  page.on('response', async (response) => {
    if (new URL(response.url()).pathname !== '/graphql') return;
    const body = JSON.parse(response.request().postData() ?? '{}');
    const entry = {
      operationName: body.operationName ?? null,
      introspection: /__schema/.test(body.query ?? ''),
      status: response.status(),
      contentType: response.headers()['content-type'] ?? null,
    };
    graphqlResponses.push(entry);
    responseDetails.push(
      (async () => {
        // The header as Chromium sent it on the wire (null when the request had none).
        entry.authorization = (await response.request().allHeaders()).authorization ?? null;
        // Whether the server answered an introspection query with the schema, and its errors.
        if (entry.introspection) {
          const answer = await response.json().catch(() => null);
          entry.schema = answer?.data?.__schema != null;
          entry.errors = errorsOf(answer);
        }
      })(),
    );
  });

  // Load the page; GraphiQL renders its query editor once its scripts ran.
  const loadStarted = Date.now();
  await page.goto(opts.url, { waitUntil: 'load', timeout: STEP_TIMEOUT_MS });
  const queryEditor = page.locator('.graphiql-query-editor .CodeMirror');
  const started = await Promise.race([
    queryEditor.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS }).then(() => true),
    pageErrored.then(() => false),
  ]).catch((error) => {
    throw new Failure(`GraphiQL did not start within ${STEP_TIMEOUT_MS / 1000} s: ${error.message}`);
  });
  if (!started) throw new Failure(`GraphiQL did not start: ${pageError.message}`);
  const loadMs = Date.now() - loadStarted;
  // The query the playground opens with (the quick start's sample query).
  const defaultQuery = await editorValue(page, '.graphiql-query-editor .CodeMirror');

  // Replace the query, and the variables in the (open) variables editor, like typing them.
  await replaceEditorText(page, queryEditor, opts.query);
  const variablesEditor = page.locator('.graphiql-editor-tool .CodeMirror').filter({ visible: true });
  await replaceEditorText(page, variablesEditor, opts.variables);
  const enteredQuery = await editorValue(page, '.graphiql-query-editor .CodeMirror');
  if (enteredQuery !== opts.query) {
    throw new Failure(`the query editor holds ${JSON.stringify(enteredQuery)}, not the query entered`);
  }

  // Fetch the schema again with --schema-headers (an admin's token, where introspection is
  // for admins), as its button does.
  let schemaRefetch;
  if (opts['schema-headers'] !== undefined) {
    await enterHeaders(page, opts['schema-headers']);
    const refetched = page.waitForResponse(
      (r) =>
        new URL(r.url()).pathname === '/graphql' &&
        /__schema/.test(JSON.parse(r.request().postData() ?? '{}').query ?? ''),
      { timeout: STEP_TIMEOUT_MS },
    );
    await page.getByRole('button', { name: 'Re-fetch GraphQL schema' }).click();
    const response = await refetched.catch((error) => {
      throw new Failure(`no schema refetch within ${STEP_TIMEOUT_MS / 1000} s: ${error.message}`);
    });
    const answer = await response.json().catch(() => null);
    schemaRefetch = {
      status: response.status(),
      authorization: (await response.request().allHeaders()).authorization ?? null,
      schema: answer?.data?.__schema != null,
      errors: errorsOf(answer),
    };
  }

  // One run per --headers (after typing them into the Headers editor), or one run as it is.
  const runs = [];
  if (opts.subscription) runs.push({ headers: null, ...(await runSubscription(page)) });
  for (const headers of opts.subscription ? [] : (opts.headers ?? [undefined])) {
    if (headers !== undefined) await enterHeaders(page, headers);
    runs.push({ headers: headers ?? null, ...(await runQuery(page)) });
    if (runs.length === 1 && opts.screenshot) {
      mkdirSync(dirname(opts.screenshot), { recursive: true });
      await page.screenshot({ path: opts.screenshot, fullPage: true });
    }
  }
  const { rendered, queryMs } = runs[0];

  problems.push(...(await page.evaluate(() => window.__cspViolations)).map((v) => `CSP violation: ${v}`));
  if (foreignRequests.length > 0) {
    problems.push(...foreignRequests.map((r) => `request to another origin: ${r}`));
  }
  if (problems.length > 0) throw new Failure(problems.join('\n'));

  await Promise.all(responseDetails);
  process.stdout.write(
    `${JSON.stringify({
      loadMs,
      queryMs,
      defaultQuery,
      rendered,
      runs,
      schemaRefetch,
      graphqlResponses,
      websockets,
      requests,
    })}\n`,
  );
} catch (error) {
  exitCode = 1;
  const detail = error instanceof Failure ? error.message : (error.stack ?? String(error));
  const also = problems.filter((p) => !detail.includes(p));
  process.stderr.write(`GraphiQL check failed: ${detail}\n${also.map((p) => `  also: ${p}\n`).join('')}`);
} finally {
  await context?.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(exitCode);

// The text of the CodeMirror editor under `selector`.
async function editorValue(page, selector) {
  return page.evaluate((sel) => document.querySelector(sel).CodeMirror.getValue(), selector);
}

// Focuses an editor, selects everything in it and types `text` over it. The text goes in as one
// input (no key events), so the editor neither auto-closes brackets nor accepts a completion.
async function replaceEditorText(page, editor, text) {
  await editor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

// Clicks the run button and waits until the result pane shows the server's answer. Returns the
// text the pane rendered, how long it took, and the Authorization header the query was sent with.
async function runQuery(page) {
  // Run it and wait until the result pane shows the GraphQL response.
  // GraphiQL reparses the edited document's operation names a moment after the edit; a click
  // before that sends the replaced query's name with the new text, which the server rightly
  // refuses ("Unknown operation named ..."). Then the click is repeated, as a user would, at
  // most twice more.
  const queryStarted = Date.now();
  const resultLines = page.locator('.result-window .CodeMirror-line');
  let answer;
  let authorization;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const answered = page.waitForResponse(
      (r) =>
        new URL(r.url()).pathname === '/graphql' &&
        !/__schema/.test(JSON.parse(r.request().postData() ?? '{}').query ?? ''),
      { timeout: STEP_TIMEOUT_MS },
    );
    await page.locator('button.graphiql-execute-button').click();
    const response = await answered;
    answer = await response.text();
    // The Authorization header the query went with, as Chromium sent it (null: none).
    authorization = (await response.request().allHeaders()).authorization ?? null;
    if (!answer.includes('Unknown operation named')) break;
  }
  await page
    .waitForFunction(
      (expected) => {
        const text = document.querySelector('.result-window .CodeMirror-code')?.textContent ?? '';
        if (!/"(data|errors)"/.test(text) || text.includes('Unknown operation named')) return false;
        // The pane shows this run's answer, not the previous run's or a schema error.
        const shown = document.querySelector('.result-window .CodeMirror')?.CodeMirror?.getValue();
        try {
          return JSON.stringify(JSON.parse(shown)) === JSON.stringify(JSON.parse(expected));
        } catch {
          return false;
        }
      },
      answer,
      { timeout: STEP_TIMEOUT_MS },
    )
    .catch((error) => {
      throw new Failure(`no result within ${STEP_TIMEOUT_MS / 1000} s: ${error.message}`);
    });
  const queryMs = Date.now() - queryStarted;
  // The editor draws runs of spaces with no-break spaces.
  const rendered = (await resultLines.allTextContents()).join('\n').replace(/\u00a0/g, ' ');
  const lineCount = await page.evaluate(
    () => document.querySelector('.result-window .CodeMirror').CodeMirror.lineCount(),
  );
  const lastLine = await resultLines.last().boundingBox();
  const pane = await page.locator('.result-window .CodeMirror-scroll').boundingBox();
  const bottom = Math.min(pane.y + pane.height, VIEWPORT.height);
  if ((await resultLines.count()) !== lineCount || lastLine.y + lastLine.height > bottom) {
    throw new Failure(`the result (${lineCount} lines) does not fit on the screen: ${rendered}`);
  }
  return { rendered, queryMs, authorization };
}

// Clicks the run button for a subscription and waits until the result pane shows a change
// pushed over the WebSocket. Returns the text the pane rendered and how long it took.
async function runSubscription(page) {
  const started = Date.now();
  await page.locator('button.graphiql-execute-button').click();
  await page
    .waitForFunction(
      () => {
        const shown = document.querySelector('.result-window .CodeMirror')?.CodeMirror?.getValue();
        try {
          const data = JSON.parse(shown).data;
          return data != null && Object.values(data).some((change) => change?.kind != null);
        } catch {
          return false;
        }
      },
      undefined,
      { timeout: STEP_TIMEOUT_MS },
    )
    .catch((error) => {
      throw new Failure(`no change shown within ${STEP_TIMEOUT_MS / 1000} s: ${error.message}`);
    });
  const rendered = await page.evaluate(
    () => document.querySelector('.result-window .CodeMirror').CodeMirror.getValue(),
  );
  // Stop it, as a user would, with the same button.
  await page.locator('button.graphiql-execute-button').click();
  return { rendered, queryMs: Date.now() - started, authorization: null };
}

// The errors of a GraphQL response as `{ code, message }`, or null when it has none.
function errorsOf(answer) {
  return answer?.errors?.map((e) => ({ code: e.extensions?.code ?? null, message: e.message })) ?? null;
}

// Opens the Headers tab of the editor tools and types `text` over whatever the Headers editor
// held; fails unless the editor then holds exactly `text`.
async function enterHeaders(page, text) {
  await page.getByRole('button', { name: 'Headers', exact: true }).click();
  const headersEditor = page.locator('.graphiql-editor-tool .CodeMirror').filter({ visible: true });
  await replaceEditorText(page, headersEditor, text);
  const entered = await headersEditor.evaluate((editor) => editor.CodeMirror.getValue());
  if (entered !== text) {
    throw new Failure(`the Headers editor holds ${JSON.stringify(entered)}, not the headers entered`);
  }
}
