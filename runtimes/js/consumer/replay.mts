// A project that installed callgate-machines from npm, in TypeScript: every conformance
// vector replayed with the package's own XState configs and stepOrThrow. CI packs the
// package, installs it into a scratch project, compiles this file with `tsc --strict`
// and runs the build: node out/replay.mjs file:///path/to/docs/machines/vectors/
import { createActor, createMachine } from 'xstate';
import {
  MACHINES,
  RefusedEventError,
  stepOrThrow,
  tables,
  xstate,
  type MachineName,
} from 'callgate-machines';

declare const process: { argv: string[]; exitCode?: number };

interface Step {
  event: string;
  state: string;
  refused: boolean;
}

interface Run {
  name: string;
  initial: string;
  steps: Step[];
}

interface Vectors {
  machine: MachineName;
  runs: Run[];
}

/** The first place where the machine does not reproduce the run, or null. */
function replay(name: MachineName, run: Run): string | null {
  const actor = createActor(createMachine(xstate[name])).start();
  let state = String(actor.getSnapshot().value);
  if (state !== run.initial) return `starts in ${state}, the vector in ${run.initial}`;
  for (const [n, step] of run.steps.entries()) {
    const where = `step ${n} '${step.event}' in ${state}`;
    try {
      state = stepOrThrow(actor, step.event);
      if (step.refused) return `${where}: accepted, the vector refuses it`;
      if (state !== step.state) return `${where}: went to ${state}, the vector to ${step.state}`;
    } catch (error) {
      if (!(error instanceof RefusedEventError)) throw error;
      if (!step.refused) return `${where}: refused, the vector goes to ${step.state}`;
      if (String(actor.getSnapshot().value) !== state) return `${where}: a refusal changed the state`;
    }
  }
  actor.stop();
  return null;
}

const folder = process.argv[2];
if (folder === undefined) throw new Error('usage: node out/replay.mjs file:///…/vectors/');
const failures: string[] = [];
let runs = 0;
for (const name of MACHINES) {
  if (tables[name].name !== name) failures.push(`tables.${name} holds ${tables[name].name}`);
  const url = new URL(`${name}.vectors.json`, folder).href;
  const vectors = (await import(url, { with: { type: 'json' } })).default as Vectors;
  for (const run of vectors.runs) {
    runs += 1;
    const problem = replay(name, run);
    if (problem !== null) failures.push(`${name}: ${run.name}: ${problem}`);
  }
}
console.log(`callgate-machines: ${runs} runs of ${MACHINES.length} machines, ${failures.length} differ`);
if (failures.length > 0 || runs === 0) {
  console.error(failures.slice(0, 10).join('\n'));
  process.exitCode = 1;
}
