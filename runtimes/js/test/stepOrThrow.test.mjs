// stepOrThrow: the helper that makes an embedded XState machine refuse, not ignore.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createActor, createMachine } from 'xstate';
import { RefusedEventError, isFinal, stepOrThrow } from '../stepOrThrow.mjs';

const door = createMachine({
  id: 'door',
  initial: 'shut',
  states: {
    shut: { on: { open: { target: 'ajar' }, lock: { target: 'locked' } } },
    ajar: { on: { shut: { target: 'shut' } } },
    locked: { tags: ['final'], on: { lock: { target: 'locked' } } },
    gone: { type: 'final', tags: ['final'] },
  },
});

test('an accepted event steps the actor and returns the new state', () => {
  const actor = createActor(door).start();
  assert.equal(stepOrThrow(actor, 'open'), 'ajar');
  assert.equal(stepOrThrow(actor, { type: 'shut' }), 'shut');
  assert.equal(actor.getSnapshot().value, 'shut');
});

test('a refused event throws naming machine, state and event, and changes nothing', () => {
  const actor = createActor(door).start();
  stepOrThrow(actor, 'open');
  assert.throws(() => stepOrThrow(actor, 'lock'), RefusedEventError);
  assert.equal(actor.getSnapshot().value, 'ajar');
  assert.throws(() => stepOrThrow(actor, 'lock'), {
    message: "machine 'door' cannot handle event 'lock' in state 'ajar'",
  });
});

test('an event no state knows is refused too', () => {
  const actor = createActor(door).start();
  assert.throws(() => stepOrThrow(actor, 'fly'), /cannot handle event 'fly' in state 'shut'/);
  assert.equal(actor.getSnapshot().value, 'shut');
});

test('a final state that still accepts events keeps the actor running', () => {
  const actor = createActor(door).start();
  assert.equal(isFinal(actor), false);
  assert.equal(stepOrThrow(actor, 'lock'), 'locked');
  assert.equal(isFinal(actor), true);
  assert.equal(stepOrThrow(actor, 'lock'), 'locked');
  assert.throws(() => stepOrThrow(actor, 'open'), RefusedEventError);
});

test('a stopped actor refuses every event', () => {
  const actor = createActor(door).start();
  actor.stop();
  assert.throws(() => stepOrThrow(actor, 'open'), RefusedEventError);
});

test('an event that is neither a string nor an object with a type is a TypeError', () => {
  const actor = createActor(door).start();
  assert.throws(() => stepOrThrow(actor, 42), TypeError);
  assert.throws(() => stepOrThrow(actor, { kind: 'open' }), TypeError);
  assert.equal(actor.getSnapshot().value, 'shut');
});
