// The trusted documents' manifests, written by the real tools: Apollo's
// @apollo/generate-persisted-query-manifest (its CLI, with a config file) over the Apollo Client
// application's documents in trusted/apollo, and relay-compiler with `persistConfig` (a local
// file, MD5) over relay/src. Offline: neither tool touches the network.
//
// usage: node trusted-manifests.mjs <out-dir>
//
// Writes into <out-dir>:
//   apollo.json            the manifest of trusted/apollo: what the server is given
//   apollo-client.json     the manifest of trusted/apollo and trusted/apollo-unlisted: a newer
//                          build of the application than the server's list
//   relay.json             relay-compiler's persisted operations file for relay/src
//   relay/<Name>.js        relay/src's artifacts, persisted (`params.id`, no text)
//   relay-text/<Name>.js   relay/src's artifacts, not persisted (`params.text`)
//   relay-unlisted.json, relay-unlisted/, relay-unlisted-text/
//                          the same for trusted/relay-unlisted, a document the server is not given
// and prints, as one JSON line, each file's operations and how their ids were made: whether each
// Apollo id is the SHA-256 of its body, each Relay id the MD5 of its text, and whether the text
// relay-compiler persisted is the text it puts in the artifacts when it does not persist.
// Exits 1 with a tag on stderr when a tool fails.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { fail } from './lib/notes.mjs';
import { compileRelay, loadArtifact } from './lib/relay.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [outArg] = process.argv.slice(2);
if (!outArg) fail('USAGE', 'node trusted-manifests.mjs <out-dir>');
const out = resolve(outArg);
mkdirSync(out, { recursive: true });

const hash = (algorithm, text) => createHash(algorithm).update(text).digest('hex');

// --- Apollo: generate-persisted-query-manifest's CLI ---------------------------------------------

const cli = join(
  dirname(createRequire(import.meta.url).resolve('@apollo/generate-persisted-query-manifest/package.json')),
  'cli.js',
);

/** Runs the CLI with a config of `documents` (globs from tests/clients); the manifest it wrote. */
function apolloManifest(name, documents) {
  const config = join(out, `${name}.config.json`);
  const output = join(out, `${name}.json`);
  writeFileSync(config, JSON.stringify({ documents, output }, null, 2));
  const run = spawnSync(process.execPath, [cli, '--config', config], {
    cwd: here,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  if (run.error) fail('APOLLO', `cannot run generate-persisted-query-manifest: ${run.error.message}`);
  if (run.status !== 0) {
    fail('APOLLO', `generate-persisted-query-manifest failed (exit status ${run.status}):\n${run.stdout}${run.stderr}`);
  }
  const manifest = JSON.parse(readFileSync(output, 'utf8'));
  if (manifest.format !== 'apollo-persisted-query-manifest' || manifest.version !== 1) {
    fail('APOLLO', `not an Apollo persisted query manifest: ${JSON.stringify(manifest).slice(0, 300)}`);
  }
  return {
    operations: manifest.operations.map(({ name, type }) => `${type} ${name}`),
    idIsSha256OfBody: manifest.operations.every(({ id, body }) => id === hash('sha256', body)),
  };
}

const apollo = apolloManifest('apollo', ['trusted/apollo/*.js']);
const apolloClient = apolloManifest('apollo-client', ['trusted/apollo/*.js', 'trusted/apollo-unlisted/*.js']);

// --- Relay: relay-compiler with persistConfig -----------------------------------------------------

const schemaText = readFileSync(join(here, '..', '..', 'schema.graphql'), 'utf8');

/** Writes each artifact of `artifacts` as `<dir>/<Name>.js`. */
function writeArtifacts(dir, artifacts) {
  mkdirSync(join(out, dir), { recursive: true });
  for (const [name, text] of artifacts) writeFileSync(join(out, dir, `${name}.js`), text);
}

/** Compiles `src` persisted and not, writes both and the persisted file as `<name>`. */
async function relayManifest(name, src) {
  const persistedRun = compileRelay(schemaText, 'javascript', { persist: { algorithm: 'MD5' }, src });
  if (persistedRun.error) fail('RELAY', persistedRun.error);
  const textRun = compileRelay(schemaText, 'javascript', { src });
  if (textRun.error) fail('RELAY', textRun.error);
  const { artifacts, persisted } = persistedRun;
  writeFileSync(join(out, `${name}.json`), JSON.stringify(persisted, null, 2));
  writeArtifacts(name, artifacts);
  writeArtifacts(`${name}-text`, textRun.artifacts);

  const operations = [];
  let textsAsPersisted = true;
  let artifactsWithoutText = true;
  for (const [artifact, text] of artifacts) {
    // Operations only: a fragment's artifact imports its refetch query's.
    if (!text.includes('"kind": "Request"')) continue;
    const { params } = await loadArtifact(text);
    operations.push(`${params.operationKind} ${params.name}`);
    if (params.text != null || typeof params.id !== 'string') artifactsWithoutText = false;
    const { params: unpersisted } = await loadArtifact(textRun.artifacts.get(artifact));
    if (persisted[params.id] !== unpersisted.text) textsAsPersisted = false;
  }
  return {
    operations: operations.sort(),
    ids: Object.keys(persisted).length,
    idIsMd5OfText: Object.entries(persisted).every(([id, text]) => id === hash('md5', text)),
    artifactsWithoutText,
    textsAsPersisted,
  };
}

const relay = await relayManifest('relay', join(here, 'relay', 'src'));
const relayUnlisted = await relayManifest('relay-unlisted', join(here, 'trusted', 'relay-unlisted'));

console.log(JSON.stringify({ apollo, apolloClient, relay, relayUnlisted }));
