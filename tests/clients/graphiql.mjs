// Drives dynarelay's GraphiQL playground in headless Chromium (Debian's `chromium` package, or
// $CHROMIUM), the way a person would: loads the page, replaces the query and the variables in
// the editors, clicks the run button and waits for the result pane. Prints a JSON report on
// stdout: the text the result pane rendered, every GraphQL response the page received and every
// request it made.
//
// Fails, with the reason on stderr, when the page or the query takes longer than 30 s each, when
// the page requests anything from another origin (such requests are aborted, never sent), when
// it logs a console error or an uncaught exception, or when it violates its
// Content-Security-Policy.
//
//   node graphiql.mjs --url http://127.0.0.1:PORT/ --query Q --variables JSON
//                     [--screenshot PATH] [--sabotage bundle|foreign-image|foreign-image-no-csp]
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
    screenshot: { type: 'string' },
    sabotage: { type: 'string' },
  },
});
if (!opts.url || !opts.query) {
  process.stderr.write('usage: node graphiql.mjs --url URL --query QUERY [--variables JSON] [--screenshot PATH]\n');
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
  page.on('response', async (response) => {
    if (new URL(response.url()).pathname !== '/graphql') return;
    const body = JSON.parse(response.request().postData() ?? '{}');
    graphqlResponses.push({
      operationName: body.operationName ?? null,
      introspection: /__schema/.test(body.query ?? ''),
      status: response.status(),
      contentType: response.headers()['content-type'] ?? null,
    });
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
  // The query the playground opens with (the README's sample query).
  const defaultQuery = await editorValue(page, '.graphiql-query-editor .CodeMirror');

  // Replace the query, and the variables in the (open) variables editor, like typing them.
  await replaceEditorText(page, queryEditor, opts.query);
  const variablesEditor = page.locator('.graphiql-editor-tool .CodeMirror').filter({ visible: true });
  await replaceEditorText(page, variablesEditor, opts.variables);
  const enteredQuery = await editorValue(page, '.graphiql-query-editor .CodeMirror');
  if (enteredQuery !== opts.query) {
    throw new Failure(`the query editor holds ${JSON.stringify(enteredQuery)}, not the query entered`);
  }

  // Run it and wait until the result pane shows a GraphQL response.
  // GraphiQL reparses the edited document's operation names a moment after the edit; a click
  // before that sends the replaced query's name with the new text, which the server rightly
  // refuses ("Unknown operation named ..."). Then the click is repeated, as a user would, at
  // most twice more.
  const queryStarted = Date.now();
  const resultLines = page.locator('.result-window .CodeMirror-line');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const answered = page.waitForResponse(
      (r) =>
        new URL(r.url()).pathname === '/graphql' &&
        !/__schema/.test(JSON.parse(r.request().postData() ?? '{}').query ?? ''),
      { timeout: STEP_TIMEOUT_MS },
    );
    await page.locator('button.graphiql-execute-button').click();
    const body = await (await answered).text();
    if (!body.includes('Unknown operation named')) break;
  }
  await page
    .waitForFunction(
      () => {
        const text = document.querySelector('.result-window .CodeMirror-code')?.textContent ?? '';
        return /"(data|errors)"/.test(text) && !text.includes('Unknown operation named');
      },
      null,
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

  if (opts.screenshot) {
    mkdirSync(dirname(opts.screenshot), { recursive: true });
    await page.screenshot({ path: opts.screenshot, fullPage: true });
  }

  problems.push(...(await page.evaluate(() => window.__cspViolations)).map((v) => `CSP violation: ${v}`));
  if (foreignRequests.length > 0) {
    problems.push(...foreignRequests.map((r) => `request to another origin: ${r}`));
  }
  if (problems.length > 0) throw new Failure(problems.join('\n'));

  process.stdout.write(
    `${JSON.stringify({ loadMs, queryMs, defaultQuery, rendered, graphqlResponses, requests })}\n`,
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
