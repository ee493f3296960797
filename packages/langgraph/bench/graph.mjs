// The bench's graph, shared by run.mjs and the focus scripts: `init` writes one large channel
// (`big`, `bigBytes` of 'x') once, then `step` loops, each super-step changing a counter and a
// reducer channel (`total`), until the thread holds `checkpoints` checkpoints: the input's (step
// -1), the applied input's (step 0), init's, and one per `step` super-step.
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  big: Annotation(),
  n: Annotation(),
  total: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
});

/** The graph compiled with `checkpointer`. */
export function benchGraph(checkpointer, checkpoints, bigBytes) {
  const stepRuns = checkpoints - 3;
  return new StateGraph(State)
    .addNode('init', () => ({ big: 'x'.repeat(bigBytes), n: 0 }))
    .addNode('step', (s) => ({ n: s.n + 1, total: 1 }))
    .addEdge(START, 'init')
    .addEdge('init', 'step')
    .addConditionalEdges('step', (s) => (s.n < stepRuns ? 'step' : END))
    .compile({ checkpointer });
}
