// Every callgate machine's SCXML export, executed by the SCION SCXML engine, must
// reproduce every conformance vector: the same state after every step and the same
// refusals. SCXML discards an event no transition takes, so each step counts the
// transitions the engine took: none is a refusal, one is a step (fail closed on either
// side). Table event E of machine M is the SCXML event "M.E". CALLGATE_MACHINES (the *.scxml exports) and CALLGATE_VECTORS (the *.vectors.json
// files) default to the copies committed under docs/machines/.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const scxml = createRequire(import.meta.url)('@scion-scxml/scxml');

const docs = fileURLToPath(new URL('../../../docs/machines/', import.meta.url));
const machinesDir = process.env.CALLGATE_MACHINES ?? docs;
const vectorsDir = process.env.CALLGATE_VECTORS ?? join(docs, 'vectors');

/** The SCXML document compiled by SCION into a model that new statecharts are built from. */
function compile(path) {
  return new Promise((resolve, reject) => {
    scxml.documentStringToModel(path, readFileSync(path, 'utf8'), (error, model) => {
      if (error) return reject(error);
      model.prepare((err, fnModel) => (err ? reject(err) : resolve(fnModel)));
    });
  });
}

/** The callgate state: the top-level state of the engine's configuration (one, or an error). */
function stateOf(configuration) {
  const top = [...new Set(configuration.map((id) => id.split('.')[0]))];
  return top.length === 1 ? top[0] : `several states: ${top.join(', ')}`;
}

/** The first place where the engine does not reproduce the run, or null. */
function replay(fnModel, machine, run) {
  const chart = new scxml.core.Statechart(fnModel);
  let taken = 0;
  chart.on('onTransition', () => {
    taken += 1;
  });
  let state = stateOf(chart.start());
  if (state !== run.initial) return `starts in ${state}, the vector in ${run.initial}`;
  for (const [n, step] of run.steps.entries()) {
    const where = `step ${n} '${step.event}' in ${state}`;
    taken = 0;
    const after = stateOf(chart.gen({ name: `${machine}.${step.event}` }));
    if (step.refused && taken !== 0) return `${where}: accepted, the vector refuses it`;
    if (step.refused && after !== state) return `${where}: a refused event changed the state`;
    if (!step.refused && taken !== 1) return `${where}: ${taken} transitions taken, the vector one`;
    if (after !== step.state) return `${where}: went to ${after}, the vector to ${step.state}`;
    state = after;
  }
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
  const vectors = JSON.parse(readFileSync(join(vectorsDir, file), 'utf8'));

  test(`${vectors.machine}: SCION reproduces all ${vectors.runs.length} runs`, async () => {
    assert.equal(vectors.format, 'callgate.vectors');
    assert.equal(vectors.version, 1);
    assert.ok(vectors.runs.some((run) => run.source === 'refusal'), 'no refusal runs');
    const fnModel = await compile(join(machinesDir, `${vectors.machine}.scxml`));
    const failures = [];
    for (const run of vectors.runs) {
      const problem = replay(fnModel, vectors.machine, run);
      if (problem !== null) failures.push(`${run.name}: ${problem}`);
    }
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} runs differ`);
  });
}
