// Compiling the Relay documents in relay/src with relay-compiler, in a temporary directory so
// that no generated file stays behind: shared by relay-compile.mjs (TypeScript artifacts, read
// as text), relay-live.mjs (JavaScript artifacts, loaded into relay-runtime) and
// trusted-manifests.mjs (persisted operations: artifacts with ids, and the file of their texts).

import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const relayDir = join(here, '..', 'relay');

/**
 * Compiles relay/src against `schemaText` with the checked-in configuration, in `language`
 * (`typescript`, as configured, or `javascript`: the documents are plain JavaScript, and
 * relay-compiler takes a project's sources in the language it writes). Returns the artifacts as
 * a Map from name (`UserPurchasesPageQuery`) to text, or `{ error }` with relay-compiler's
 * diagnostics.
 *
 * With `persist` (`{ algorithm }`: `MD5`, the default, `SHA1` or `SHA256`), relay-compiler
 * persists the operations as its `persistConfig` with a local `file` does: each operation
 * artifact then carries `params.id` and no `params.text`, and `persisted` is that file's content,
 * an object from id to operation text. `src` compiles another directory of documents instead of
 * relay/src, with the same configuration.
 */
export function compileRelay(schemaText, language = 'typescript', { persist, src = join(relayDir, 'src') } = {}) {
  const relayBin = createRequire(import.meta.url)('relay-compiler');
  if (!relayBin) return { error: `relay-compiler has no binary for ${process.platform} (${process.arch})` };
  const work = mkdtempSync(join(tmpdir(), 'dynarelay-relay-'));
  try {
    cpSync(src, join(work, 'src'), { recursive: true });
    if (language === 'javascript') {
      for (const file of readdirSync(join(work, 'src'))) {
        renameSync(join(work, 'src', file), join(work, 'src', file.replace(/\.ts$/, '.js')));
      }
    }
    writeFileSync(join(work, 'schema.graphql'), schemaText);
    mkdirSync(join(work, '__generated__'));
    // The checked-in configuration, with every path inside the temporary directory.
    const config = JSON.parse(readFileSync(join(relayDir, 'relay.config.json'), 'utf8'));
    Object.assign(config, {
      src: './src',
      schema: './schema.graphql',
      artifactDirectory: './__generated__',
      noSourceControl: true,
      language,
    });
    if (persist) {
      // relay-compiler adds to the file, which must exist.
      writeFileSync(join(work, 'persisted.json'), '{}');
      config.persistConfig = { file: './persisted.json', algorithm: persist.algorithm ?? 'MD5' };
    }
    writeFileSync(join(work, 'relay.config.json'), JSON.stringify(config, null, 2));

    const run = spawnSync(
      relayBin,
      ['--noWatchman', '--output', 'quiet-with-errors', join(work, 'relay.config.json')],
      { cwd: work, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } },
    );
    // Diagnostics are coloured even without a terminal.
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, '');
    if (run.error) return { error: `cannot run relay-compiler: ${run.error.message}` };
    if (run.status !== 0) return { error: `relay-compiler failed (exit status ${run.status}):\n${output}` };
    const artifacts = new Map();
    for (const file of readdirSync(join(work, '__generated__'))) {
      artifacts.set(
        file.replace(/\.graphql\.(ts|js)$/, ''),
        readFileSync(join(work, '__generated__', file), 'utf8'),
      );
    }
    if (!persist) return { artifacts };
    return { artifacts, persisted: JSON.parse(readFileSync(join(work, 'persisted.json'), 'utf8')) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Loads a JavaScript artifact's text as the module Relay would import: its default export. */
export async function loadArtifact(text) {
  const module = await import(`data:text/javascript;charset=utf-8,${encodeURIComponent(text)}`);
  return module.default;
}
