// Child of run.mjs: the first getTuple of the bench thread in a new Node process, where none of
// the saver's code has run yet (it is compiled as it first runs), unlike run.mjs's cold calls,
// which use a new saver and connection in a process that has run the same code before.
//   node bench/first-call.mjs <SqliteSaver|sqlite|jsonl> <dir> [<langgraph dist/index.js>]
// Prints one JSON line: importMs (the saver's and store's modules), openMs (the store or
// connection), firstMs (the first getTuple, store opened before), secondMs (the next one).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [kind, dir, dist = new URL('../dist/index.js', import.meta.url).pathname] = process.argv.slice(2);
const config = { configurable: { thread_id: 'bench-thread' } };
const RELAXED = { durability: 'relaxed', boundaryTypes: [] };
const now = () => performance.now();

const i = now();
let open;
if (kind === 'SqliteSaver') {
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  open = async () => {
    const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'));
    saver.setup();
    return saver;
  };
} else {
  // The stores that build's package depends on, as its own node_modules resolve them.
  const resolve = createRequire(pathToFileURL(dist)).resolve;
  const [{ TidemarkSaver }, stores] = await Promise.all([
    import(pathToFileURL(dist).href),
    import(pathToFileURL(resolve(`@tidemark/${kind}`)).href),
  ]);
  open = async () => {
    const store =
      kind === 'sqlite'
        ? await stores.openSqliteStore({ path: join(dir, 'store.db'), ...RELAXED })
        : await stores.openJsonlStore({ root: join(dir, 'sessions'), ...RELAXED });
    return new TidemarkSaver(store);
  };
}
const o = now();
const saver = await open();
const g = now();
const tuple = await saver.getTuple(config);
const done = now();
if (typeof tuple?.checkpoint.channel_values.n !== 'number') throw new Error(`${kind}: no latest checkpoint`);
await saver.getTuple(config);
const second = now() - done;
process.stdout.write(
  `${JSON.stringify({ importMs: o - i, openMs: g - o, firstMs: done - g, secondMs: second })}\n`,
);
process.exit(0);
