// Types for stepOrThrow.mjs, for TypeScript users embedding a callgate XState export.
import type { AnyActorRef } from 'xstate';

/** Thrown when the actor's current state does not accept the event; nothing changed. */
export declare class RefusedEventError extends Error {
  readonly machine: string;
  readonly state: string;
  readonly event: string;
  constructor(machine: string, state: string, event: string);
}

/** Send `event` only if the current state accepts it; the state reached. Throws otherwise. */
export declare function stepOrThrow(actor: AnyActorRef, event: string | { type: string }): string;

/** Whether the actor is in a state where a callgate run may end (tagged `final`). */
export declare function isFinal(actor: AnyActorRef): boolean;
