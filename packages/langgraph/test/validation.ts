// LangGraph's published conformance suite, run under the saver's own name on one backend: the
// full `validate` suite (no test skipped: the skip lists of the suite name other savers), plus the
// opt-in getDeltaChannelHistory tests.
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { TidemarkSaver } from '../src/index.js';
import type { Backend, OpenedStore } from './backends.js';

/** Registers the validation suite for `backend`. */
export function validateOn(backend: Backend): void {
  const opened = new WeakMap<TidemarkSaver, OpenedStore>();
  const initializer = {
    checkpointerName: `TidemarkSaver (${backend.name})`,
    async createCheckpointer() {
      const store = await backend.open();
      const saver = new TidemarkSaver(store.store);
      opened.set(saver, store);
      return saver;
    },
    async destroyCheckpointer(saver: TidemarkSaver) {
      await opened.get(saver)?.close();
    },
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
