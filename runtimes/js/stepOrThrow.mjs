// Drive a callgate machine exported for XState v5 (callgate export MACHINE --format xstate)
// the way callgate itself does: an event the current state does not accept is an error,
// never silently ignored (XState's own default is to ignore it).

/** Thrown when the actor's current state does not accept the event; nothing changed. */
export class RefusedEventError extends Error {
  constructor(machine, state, event) {
    super(`machine '${machine}' cannot handle event '${event}' in state '${state}'`);
    this.name = 'RefusedEventError';
    this.machine = machine;
    this.state = state;
    this.event = event;
  }
}

/** The event as an XState event object: a bare string is its type. */
function asEvent(event) {
  if (typeof event === 'string') return { type: event };
  if (event !== null && typeof event === 'object' && typeof event.type === 'string') return event;
  throw new TypeError(`an event is a string or an object with a string 'type', not ${event}`);
}

/**
 * Send `event` to a started XState actor only if its current state accepts it; return the
 * state reached. Throws RefusedEventError, and sends nothing, when the state does not.
 */
export function stepOrThrow(actor, event) {
  const message = asEvent(event);
  const snapshot = actor.getSnapshot();
  if (snapshot.status !== 'active' || !snapshot.can(message)) {
    throw new RefusedEventError(actor.logic.id, String(snapshot.value), message.type);
  }
  actor.send(message);
  return actor.getSnapshot().value;
}

/** Whether the actor is in a state where a callgate run may end (tagged `final`). */
export function isFinal(actor) {
  return actor.getSnapshot().hasTag('final');
}
