// Every callgate machine's XState export, run by XState's own interpreter, must reproduce
// every conformance vector: the same state after every step and the same refusals.
// CALLGATE_MACHINES (the *.xstate.json exports) and CALLGATE_VECTORS (the *.vectors.json
// files) default to the copies committed under docs/machines/.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createActor, createMachine } from 'xstate';
import { RefusedEventError, stepOrThrow } from '../stepOrThrow.mjs';

const docs = fileURLToPath(new URL('../../../docs/machines/', import.meta.url));
const machinesDir = process.env.CALLGATE_MACHINES ?? docs;
const vectorsDir = process.env.CALLGATE_VECTORS ?? join(docs, 'vectors');

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The first place where the machine does not reproduce the run, or null. */
function replay(machine, run) {
  const actor = createActor(machine).start();
  let state = actor.getSnapshot().value;
  if (state !== run.initial) return `starts in ${state}, the vector in ${run.initial}`;
  for (const [n, step] of run.steps.entries()) {
    const where = `step ${n} '${step.event}' in ${state}`;
    if (step.refused) {
      if (actor.getSnapshot().can({ type: step.event })) return `${where}: accepted, the vector refuses it`;
      assert.throws(() => stepOrThrow(actor, step.event), RefusedEventError);
      if (actor.getSnapshot().value !== state) return `${where}: a refused event changed the state`;
    } else {
      try {
        state = stepOrThrow(actor, step.event);
      } catch (error) {
        if (error instanceof RefusedEventError) return `${where}: refused, the vector goes to ${step.state}`;
        throw error;
      }
      if (state !== step.state) return `${where}: went to ${state}, the vector to ${step.state}`;
    }
  }
  actor.stop();
  return null;
}

const files = readdirSync(vectorsDir).filter((name) => name.endsWith('.vectors.json')).sort();

test('there are vectors for every machine', () => {
  assert.deepEqual(
    files.map((name) => name.replace('.vectors.json', '')),
    ['detector', 'display', 'release', 'slot', 'turn', 'verdict', 'vote'],
  );
});

for (const file of files) {
  const vectors = readJson(join(vectorsDir, file));
  const config = readJson(join(machinesDir, `${vectors.machine}.xstate.json`));

  test(`${vectors.machine}: XState reproduces all ${vectors.runs.length} runs`, () => {
    assert.equal(vectors.format, 'callgate.vectors');
    assert.equal(vectors.version, 1);
    assert.ok(vectors.runs.some((run) => run.source === 'refusal'), 'no refusal runs');
    const machine = createMachine(config);
    const failures = [];
    for (const run of vectors.runs) {
      const problem = replay(machine, run);
      if (problem !== null) failures.push(`${run.name}: ${problem}`);
    }
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} runs differ`);
  });
}
