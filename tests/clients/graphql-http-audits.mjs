// Runs graphql-http's GraphQL-over-HTTP server audits against a running dynarelay and prints one
// JSON line per audit: {"id","name","status","reason"}. Exits 1 when any MUST fails.
//
//   node graphql-http-audits.mjs <url of /graphql> [--fault always-200]
//
// `--fault always-200` puts a loopback proxy in front of the server that answers every request
// with status 200 and `application/graphql-response+json`, the way a handler without its own
// status logic does. The audits must then fail; the Rust test checks that they do.
import http from 'node:http';
import { serverAudits } from 'graphql-http';

const [url, flag, fault] = process.argv.slice(2);
if (!url) {
  console.error('usage: node graphql-http-audits.mjs <url> [--fault always-200]');
  process.exit(2);
}

let target = url;
let proxy;
if (flag === '--fault') {
  if (fault !== 'always-200') {
    console.error(`unknown fault ${fault}`);
    process.exit(2);
  }
  proxy = await alwaysOk(new URL(url));
  target = `http://127.0.0.1:${proxy.address().port}${new URL(url).pathname}`;
}

let mustFailures = 0;
try {
  for (const audit of serverAudits({ url: target })) {
    const result = await audit.fn();
    let reason;
    if (result.status !== 'ok') {
      reason = result.reason;
      if (result.response) {
        const body = await result.response.text().catch(() => '');
        reason += ` (status ${result.response.status}, content-type ${result.response.headers.get('content-type')}, body ${body.slice(0, 200)})`;
      }
    }
    if (result.status === 'error') mustFailures += 1;
    console.log(JSON.stringify({ id: audit.id, name: audit.name, status: result.status, reason }));
  }
} finally {
  proxy?.close();
}
if (mustFailures > 0) {
  console.error(`${mustFailures} MUST audit(s) failed`);
  process.exit(1);
}

/** A proxy to `upstream` that rewrites every response to 200 `application/graphql-response+json`. */
function alwaysOk(upstream) {
  const server = http.createServer((req, res) => {
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        const headers = { ...answer.headers, 'content-type': 'application/graphql-response+json' };
        res.writeHead(200, headers);
        answer.pipe(res);
      },
    );
    forward.on('error', (err) => {
      res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(forward);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
