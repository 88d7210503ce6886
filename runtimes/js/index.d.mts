// Types for callgate-machines (index.mjs).
import type { createMachine } from 'xstate';

export { RefusedEventError, isFinal, stepOrThrow } from './stepOrThrow.mjs';

/** The name of one of callgate's machines. */
export type MachineName = 'detector' | 'display' | 'release' | 'slot' | 'turn' | 'verdict' | 'vote';

/** An XState v5 machine config, as `createMachine` takes it. */
export type XStateConfig = Parameters<typeof createMachine>[0];

/** One state of a callgate table. */
export interface TableState {
  name: string;
  doc: string;
  final: boolean;
  tags?: string[];
  status?: string;
}

/** One transition of a callgate table: guard and output are names, never code. */
export interface TableTransition {
  source: string;
  event: string;
  target: string;
  doc: string;
  guard: string | null;
  output: string | null;
}

/** A machine's table (format `callgate.table`, version 1: docs/machines/table.schema.json). */
export interface CallgateTable {
  format: 'callgate.table';
  version: 1;
  name: MachineName;
  doc: string;
  initial: string;
  states: TableState[];
  events: { name: string; doc: string }[];
  transitions: TableTransition[];
}

/** Each machine's XState v5 config. */
export declare const xstate: Readonly<Record<MachineName, XStateConfig>>;

/** Each machine's callgate table. */
export declare const tables: Readonly<Record<MachineName, CallgateTable>>;

/** The machines' names, in alphabetical order. */
export declare const MACHINES: readonly MachineName[];
