// Warm writes only: put + putWrites per super-step of the bench graph, on one saver per build,
// rounds interleaved. FOCUS_BUILDS=label=path/to/dist/index.js,... adds earlier builds (own stores).
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { benchGraph } from './graph.mjs';

const ROUNDS = Number(process.env.FOCUS_ROUNDS ?? 7);
const CHECKPOINTS = Number(process.env.FOCUS_CHECKPOINTS ?? 1000);
const BACKEND = process.env.FOCUS_BACKEND ?? 'sqlite';
const graph = (cp) => benchGraph(cp, CHECKPOINTS, 65536);

const builds = [['this', new URL('../dist/index.js', import.meta.url).pathname]];
for (const e of (process.env.FOCUS_BUILDS ?? '').split(',').filter(Boolean)) {
  const i = e.indexOf('=');
  builds.push([e.slice(0, i), e.slice(i + 1)]);
}
const contenders = [];
for (const [label, path] of builds) {
  const { TidemarkSaver } = await import(pathToFileURL(path).href);
  const resolve = createRequire(pathToFileURL(path)).resolve;
  const mod = await import(pathToFileURL(resolve(`@tidemark/${BACKEND}`)).href);
  contenders.push({
    name: label,
    open: async (dir) => {
      const store =
        BACKEND === 'sqlite'
          ? await mod.openSqliteStore({ path: join(dir, 's.db'), durability: 'relaxed', boundaryTypes: [] })
          : await mod.openJsonlStore({ root: join(dir, 's'), durability: 'relaxed', boundaryTypes: [] });
      return { saver: new TidemarkSaver(store), close: () => store.close() };
    },
  });
}
if (process.env.FOCUS_PEER !== '0')
  contenders.push({
    name: 'SqliteSaver',
    open: async (dir) => {
      const saver = SqliteSaver.fromConnString(join(dir, 'c.db'));
      saver.setup();
      return { saver, close: async () => saver.db.close() };
    },
  });
const results = Object.fromEntries(contenders.map((c) => [c.name, []]));
const cpu = Object.fromEntries(contenders.map((c) => [c.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < contenders.length; i++) {
    const c = contenders[(i + r) % contenders.length];
    const dir = mkdtempSync(join(tmpdir(), 'warm-'));
    const { saver, close } = await c.open(dir);
    let spent = 0;
    let puts = 0;
    for (const m of ['put', 'putWrites']) {
      const orig = saver[m].bind(saver);
      saver[m] = async (...a) => {
        const t = performance.now();
        try {
          return await orig(...a);
        } finally {
          spent += performance.now() - t;
          if (m === 'put') puts++;
        }
      };
    }
    const c0 = process.cpuUsage();
    await graph(saver).invoke(
      {},
      { configurable: { thread_id: 't' }, recursionLimit: CHECKPOINTS + 10, durability: 'sync' },
    );
    const c1 = process.cpuUsage(c0);
    await close();
    rmSync(dir, { recursive: true, force: true });
    if (r > 0) {
      results[c.name].push(spent / (puts - 1));
      cpu[c.name].push((c1.user + c1.system) / 1000 / (puts - 1));
    }
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const c of contenders)
  console.log(
    c.name.padEnd(12),
    med(results[c.name]).toFixed(3),
    'ms/step in put+putWrites;',
    med(cpu[c.name]).toFixed(3),
    'ms CPU/step of the whole run;',
    results[c.name].map((x) => x.toFixed(3)).join(' '),
  );
