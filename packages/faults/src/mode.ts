// Which configuration a sweep runs in. A backend may promise different things in different
// configurations (contract §4: `durability: 'relaxed'` keeps only boundary batches through a
// crash), and each promise must be crashed: the harness sweeps every mode a driver declares.
import type { Durability } from '@tidemark/core';

/** The configuration of one sweep: the durability stores are opened with, and how much is run. */
export interface SweepMode {
  durability: Durability;
  /**
   * Run one fault (or crash point) in `sample`, spread over the whole sweep (1: every one). The
   * quick run samples the modes after the first, so that each is crashed without doubling CI.
   */
  sample: number;
}

/** The default configuration, swept whole. */
export const STRICT_MODE: SweepMode = { durability: 'strict', sample: 1 };

/** The report row of a fault class in a mode: `EIO once`, `EIO once [relaxed]`. */
export function modeClass(faultClass: string, mode: SweepMode): string {
  return mode.durability === 'strict' ? faultClass : `${faultClass} [${mode.durability}]`;
}

/** A replay id in a mode: `crash:44:0`, `relaxed/crash:44:0`. */
export function modeReplayId(id: string, mode: SweepMode): string {
  return mode.durability === 'strict' ? id : `${mode.durability}/${id}`;
}

/** Whether run `index` of a sweep is in the sample (`salt` staggers the sample between points). */
export function inSample(mode: SweepMode, index: number, salt = 0): boolean {
  return (index + salt) % mode.sample === 0;
}
