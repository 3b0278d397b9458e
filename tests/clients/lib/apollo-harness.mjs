// Shared pieces of the Apollo Client scripts: failing with a tagged message, waiting for a
// watched query's first result, and a fetch that lets a script see (and alter) each exchange.

/** A failed check: the script prints `message` on stderr and exits with status 1. */
export class CheckFailed extends Error {}

/** Fails the running script with `message`, which starts with a tag such as `MISMATCH:`. */
export function fail(message) {
  throw new CheckFailed(message);
}

/**
 * Runs `main`, printing its failure on stderr and setting the exit status. Any other exception
 * (a rejected request, a GraphQL error) fails the script too, with its stack.
 */
export async function runMain(main) {
  try {
    await main();
  } catch (err) {
    if (err instanceof CheckFailed) {
      process.stderr.write(`${err.message}\n`);
    } else {
      process.stderr.write(`ERROR: ${err?.stack ?? err}\n`);
      if (err?.errors) process.stderr.write(`${JSON.stringify(err.errors)}\n`);
    }
    process.exitCode = 1;
  }
}

/**
 * Subscribes to `observable` (an ObservableQuery), as a mounted component would, and resolves
 * with its first settled result. Rejects when that result carries an error.
 */
export function firstResult(observable) {
  return new Promise((resolve, reject) => {
    const subscription = observable.subscribe({
      next(result) {
        if (result.loading) return;
        if (result.error) reject(result.error);
        else resolve({ result, subscription });
      },
      error: reject,
    });
  });
}

/**
 * A `fetch` for HttpLink that records every request and response. `alter(exchange, body)` may
 * change a JSON response body in place and return it, or return a replacement, to inject faults;
 * `exchange` holds the request's method, URL and parsed parameters, then the response's status
 * and body as the client received it.
 */
export function recordingFetch(alter = () => undefined) {
  const exchanges = [];
  async function wrapped(input, init = {}) {
    const url = new URL(typeof input === "string" ? input : input.url);
    const method = (init.method ?? "GET").toUpperCase();
    let params;
    if (method === "GET") {
      params = {};
      for (const [name, value] of url.searchParams) {
        params[name] = name === "variables" || name === "extensions" ? JSON.parse(value) : value;
      }
    } else {
      params = JSON.parse(init.body);
    }
    const exchange = { method, url: url.toString(), params };
    exchanges.push(exchange);
    const response = await fetch(input, init);
    const text = await response.text();
    exchange.status = response.status;
    exchange.contentType = response.headers.get("content-type");
    try {
      exchange.body = JSON.parse(text);
    } catch {
      exchange.body = undefined;
    }
    const replaced = exchange.body === undefined ? undefined : alter(exchange, exchange.body);
    // From here on the exchange shows what the client received.
    if (replaced !== undefined) exchange.body = replaced;
    const outText = replaced === undefined ? text : JSON.stringify(replaced);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(outText, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }
  return { fetch: wrapped, exchanges };
}

/** A readable difference between two identity lists. */
export function describeDiff(got, expected) {
  const lines = [`got ${got.length} items, expected ${expected.length}`];
  const firstDiff = got.findIndex((id, i) => id !== expected[i]);
  const at = firstDiff >= 0 ? firstDiff : Math.min(got.length, expected.length);
  lines.push(`first difference at index ${at}: got ${got[at] ?? "(end)"}, expected ${expected[at] ?? "(end)"}`);
  const gotSet = new Set(got);
  const expectedSet = new Set(expected);
  const missing = expected.filter((id) => !gotSet.has(id));
  const unexpected = got.filter((id) => !expectedSet.has(id));
  const seen = new Set();
  const duplicates = got.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
  if (missing.length) lines.push(`missing ${missing.length}: ${missing.slice(0, 5).join(", ")}`);
  if (unexpected.length) lines.push(`unexpected ${unexpected.length}: ${unexpected.slice(0, 5).join(", ")}`);
  if (duplicates.length) lines.push(`duplicated ${duplicates.length}: ${duplicates.slice(0, 5).join(", ")}`);
  if (!missing.length && !unexpected.length && !duplicates.length) lines.push("same items, another order");
  return lines.join("\n  ");
}
