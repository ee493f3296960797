// Which configuration a sweep runs in. A backend may promise different things in different
// configurations (contract §4: `durability: 'relaxed'` keeps only boundary batches through a
// crash), and each promise must be crashed: the harness sweeps every mode a driver declares.
import type { Durability } from '@tidemark/core';
import type { WorkloadStep } from '../workload/workload.js';

/**
 * A workload swept besides the driver's own (the write path): its rows and replay ids carry its
 * name, `write path: EIO once` and `write-path/error:17:EIO:once`.
 */
export interface NamedWorkload {
  /** Row prefix, e.g. `write path`. */
  name: string;
  /** Replay id prefix, e.g. `write-path`. */
  id: string;
  steps: readonly WorkloadStep[];
}

/** The configuration of one sweep: the durability stores are opened with, and how much is run. */
export interface SweepMode {
  /** The mode whose promise the sweep checks; stores are opened with it unless {@link SweepMode.opensDefault}. */
  durability: Durability;
  /**
   * Stores are opened with no durability option at all, as a user who passes none opens them, and
   * held to the promise of {@link SweepMode.durability} (the default the docs promise: `strict`).
   * Rows are suffixed `[default]`, replay ids prefixed `default/`.
   */
  opensDefault?: boolean;
  /**
   * Run one fault (or crash point) in `sample`, spread over the whole sweep (1: every one). The
   * quick run samples the modes after the first, so that each is crashed without doubling CI.
   */
  sample: number;
  /** The workload swept instead of the driver's (default: AGENT_WORKLOAD or the driver's own). */
  workload?: NamedWorkload;
}

/** The default configuration, swept whole. */
export const STRICT_MODE: SweepMode = { durability: 'strict', sample: 1 };

/** The durability option a store of the sweep is opened with: `undefined` for the default. */
export function openDurability(mode: SweepMode): Durability | undefined {
  return mode.opensDefault ? undefined : mode.durability;
}

/** The report row of a fault class in a mode: `EIO once`, `EIO once [relaxed]`, `crash (power loss) [default]`. */
export function modeClass(faultClass: string, mode: SweepMode): string {
  const named = mode.workload === undefined ? faultClass : `${mode.workload.name}: ${faultClass}`;
  if (mode.opensDefault) return `${named} [default]`;
  return mode.durability === 'strict' ? named : `${named} [${mode.durability}]`;
}

/** A replay id in a mode: `crash:44:0`, `relaxed/crash:44:0`, `default/crash:44:0`. */
export function modeReplayId(id: string, mode: SweepMode): string {
  const named = mode.workload === undefined ? id : `${mode.workload.id}/${id}`;
  if (mode.opensDefault) return `default/${named}`;
  return mode.durability === 'strict' ? named : `${mode.durability}/${named}`;
}

/** Whether run `index` of a sweep is in the sample (`salt` staggers the sample between points). */
export function inSample(mode: SweepMode, index: number, salt = 0): boolean {
  return (index + salt) % mode.sample === 0;
}
