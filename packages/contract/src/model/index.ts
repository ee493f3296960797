// Model-based testing: random command sequences run against the backend and against the memory
// reference store (the project's model of a correct backend), and every answer must agree.
import { MemoryVolume } from '@tidemark/memory';
import fc from 'fast-check';
import { type ContractCheck, violation } from '../harness.js';
import { commandArbitraries } from './generators.js';
import { OnInstance, ReopenCommand } from './instance-commands.js';
import { HasCommand, ListCommand, LoadCommand } from './session-commands.js';
import { type ModelSide, openModelStores, openRealStores, type RealSide } from './sides.js';

/**
 * After a sequence: first ask both live instances about every id, so that state one instance kept
 * from before the other one wrote (a stale cache, a stale summary) shows even when the random
 * sequence never read it back on that instance; then restart both sides and compare everything
 * that is stored, so that a backend whose answers came from a cache but whose storage diverged is
 * caught too.
 */
async function compareFinalState(model: ModelSide, real: RealSide): Promise<void> {
  for (const instance of [0, 1] as const) {
    for (const id of ['s0', 's1', 's2']) {
      await new OnInstance(new HasCommand(id), instance).run(model, real);
      await new OnInstance(new LoadCommand(id, 'keep'), instance).run(model, real);
    }
  }
  await new ReopenCommand().run(model, real);
  for (const id of ['s0', 's1', 's2']) await new LoadCommand(id, 'keep').run(model, real);
  await new ListCommand(undefined, 2).run(model, real);
}

/**
 * The model-based check: `runs` random sequences of create / append (valid, behind, ahead, retry,
 * conflicting, malformed; without `after`, or with a right or stale one when the store claims
 * `capabilities.appendAfter`) / load (keep, cut) / read / list / has / update / delete (plain and
 * conditional) / close / reopen and shadowed-reservation scenarios, switching between two live
 * instances and racing them, each answer of the backend compared with the memory model's.
 *
 * @param runs - number of sequences (default: the `modelRuns` contract option, 50).
 * @param seed - fast-check seed, to replay a reported failure (default: the `seed` option, random).
 */
export function modelBasedCheck(runs?: number, seed?: number): ContractCheck {
  return {
    group: 'model',
    name: 'random command sequences answer like the memory reference model',
    async run(ctx) {
      const chosenSeed = seed ?? ctx.options.seed;
      const details = await fc.check(
        fc.asyncProperty(
          fc.commands(commandArbitraries, { maxCommands: 40, size: 'max' }),
          async (commands) => {
            const volume = new MemoryVolume();
            const model: ModelSide = { volume, stores: await openModelStores(volume), active: 0 };
            const real: RealSide = { context: ctx, stores: await openRealStores(ctx), active: 0 };
            try {
              await fc.asyncModelRun(() => ({ model, real }), commands);
              await compareFinalState(model, real);
            } finally {
              for (const store of model.stores) await store.close();
              await ctx.closeAll();
              await ctx.driver.cleanup();
            }
          },
        ),
        { numRuns: runs ?? ctx.options.modelRuns, ...(chosenSeed !== undefined && { seed: chosenSeed }) },
      );
      if (details.failed) {
        // fast-check's report names the shrunk command sequence; the error says which answer differed.
        const cause =
          details.errorInstance instanceof Error
            ? details.errorInstance.message
            : String(details.errorInstance);
        violation(`${cause}\n${fc.defaultReportMessage(details)}`);
      }
    },
  };
}
