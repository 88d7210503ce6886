// Before `npm pack`: copy callgate's exported machines (docs/machines/*.json and
// *.xstate.json, written by `callgate export`) into ./machines/, so the package carries
// the tables its index exports, and the repository's LICENSE. The copies are not
// committed: docs/machines/ is the one source, and a test there fails when it is stale.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../../../docs/machines/', import.meta.url));
const target = fileURLToPath(new URL('../machines/', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const names = ['detector', 'display', 'release', 'slot', 'turn', 'verdict', 'vote'];

rmSync(target, { recursive: true, force: true });
mkdirSync(target);
const present = new Set(readdirSync(source));
for (const name of names) {
  for (const file of [`${name}.json`, `${name}.xstate.json`]) {
    if (!present.has(file)) throw new Error(`docs/machines/${file} is missing: run python docs/make_diagrams.py`);
    copyFileSync(source + file, target + file);
  }
}
copyFileSync(`${root}LICENSE`, fileURLToPath(new URL('../LICENSE', import.meta.url)));
