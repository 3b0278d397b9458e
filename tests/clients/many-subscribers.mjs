// Many subscriptions held by real graphql-ws clients (over the `ws` package), as the signed-in
// users of an application hold theirs: `sockets` sockets of `per-socket` subscriptions each, every
// one to `notesChanged` of an owner of its own (`idle-<socket>-<n>`), and `watchers` sockets more
// with one subscription each to the notes of `written`.
//
// usage: node many-subscribers.mjs <graphql-url> <sockets> <per-socket> <watchers> <written>
//
// Prints one JSON line per message, as it comes:
// - `{"ready":{"idle":N,"watchers":W}}` once the server acknowledged every socket (whether each
//   subscription runs, the server's running-subscriptions gauge says);
// - `{"sub":S,"next":{...}}` for each change a subscription receives (S is the owner for an idle
//   subscription, `w<i>` for a watcher), the change's fields as sent;
// - `{"sub":S,"ended":"errors"|"error"|"complete","detail":...}` when a subscription ends (a
//   `next` with errors counts as its end: that is how `CHANGES_LOST` comes);
// - `{"socket":I,"closed":CODE}` when a socket closes before the end.
// When its standard input closes it disposes of its clients, prints `{"done":true}` and exits.
import { createClient } from "graphql-ws";
import WebSocket from "ws";
import { fail } from "./lib/notes.mjs";

const [url, sockets, perSocket, watchers, written] = process.argv.slice(2);
const wsUrl = url.replace(/^http/, "ws");
const QUERY =
  "subscription($owner: String!) { notesChanged(owner: $owner) { kind id edge { node { owner noteId text } } } }";
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

let finishing = false;
// A client whose `connected` resolves once the server acknowledged it.
const connect = (index) => {
  let acknowledged;
  const connected = new Promise((done) => (acknowledged = done));
  const client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    lazy: false,
    retryAttempts: 0,
    on: {
      connected: () => acknowledged(),
      closed: (event) => {
        if (!finishing) print({ socket: index, closed: event?.code ?? null });
      },
      error: (err) => {
        if (!finishing) fail("SOCKET", `socket ${index}: ${err?.message ?? String(err)}`);
      },
    },
  });
  return { client, connected };
};

const subscribe = (client, sub, owner) =>
  client.subscribe(
    { query: QUERY, variables: { owner } },
    {
      next: (result) => {
        if (result.errors) {
          print({ sub, ended: "errors", detail: result.errors });
        } else {
          print({ sub, next: result.data.notesChanged });
        }
      },
      error: (err) => {
        const detail = Array.isArray(err) ? err : (err?.message ?? String(err));
        if (!finishing) print({ sub, ended: "error", detail });
      },
      complete: () => {
        if (!finishing) print({ sub, ended: "complete" });
      },
    },
  );

const clients = [];
const idle = Number(sockets) * Number(perSocket);
for (let s = 0; s < Number(sockets); s++) {
  const { client, connected } = connect(s);
  clients.push(client);
  for (let n = 0; n < Number(perSocket); n++) {
    const owner = `idle-${s}-${n}`;
    subscribe(client, owner, owner);
  }
  await connected;
}
for (let w = 0; w < Number(watchers); w++) {
  const { client, connected } = connect(Number(sockets) + w);
  clients.push(client);
  subscribe(client, `w${w}`, written);
  await connected;
}
print({ ready: { idle, watchers: Number(watchers) } });

process.stdin.resume();
process.stdin.on("end", async () => {
  finishing = true;
  await Promise.all(clients.map((client) => client.dispose()));
  print({ done: true });
  process.exit(0);
});
