// callgate-machines: callgate's seven machines as data (XState v5 configs and callgate
// tables) and stepOrThrow, the helper that makes an XState actor refuse an event its
// state does not accept instead of ignoring it. See docs/embedding.md in callgate.
import detectorTable from './machines/detector.json' with { type: 'json' };
import detector from './machines/detector.xstate.json' with { type: 'json' };
import displayTable from './machines/display.json' with { type: 'json' };
import display from './machines/display.xstate.json' with { type: 'json' };
import releaseTable from './machines/release.json' with { type: 'json' };
import release from './machines/release.xstate.json' with { type: 'json' };
import slotTable from './machines/slot.json' with { type: 'json' };
import slot from './machines/slot.xstate.json' with { type: 'json' };
import turnTable from './machines/turn.json' with { type: 'json' };
import turn from './machines/turn.xstate.json' with { type: 'json' };
import verdictTable from './machines/verdict.json' with { type: 'json' };
import verdict from './machines/verdict.xstate.json' with { type: 'json' };
import voteTable from './machines/vote.json' with { type: 'json' };
import vote from './machines/vote.xstate.json' with { type: 'json' };

export { RefusedEventError, isFinal, stepOrThrow } from './stepOrThrow.mjs';

/** Each machine's XState v5 config (`callgate export MACHINE --format xstate`). */
export const xstate = Object.freeze({ detector, display, release, slot, turn, verdict, vote });

/** Each machine's table (`callgate export MACHINE --format json`, format callgate.table). */
export const tables = Object.freeze({
  detector: detectorTable,
  display: displayTable,
  release: releaseTable,
  slot: slotTable,
  turn: turnTable,
  verdict: verdictTable,
  vote: voteTable,
});

/** The machines' names, in alphabetical order. */
export const MACHINES = Object.freeze(Object.keys(xstate));
