// @tidemark/jsonl and its hand-written peer: one .jsonl file per session in one directory, an
// append is one write of the batch's lines and one fdatasync on a kept-open handle, a load is
// readFile + split + JSON.parse, and a list is readdir + stat of every file, newest first.
import { mkdirSync, writeFileSync } from 'node:fs';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { prepareBatch } from '@tidemark/core';
import {
  bucketOf,
  encodeBatch,
  encodeHeader,
  encodeSidecar,
  openJsonlStore,
  sessionPaths,
} from '@tidemark/jsonl';
import { batch, sessionId, TIME } from './common.mjs';
import { tidemarkHandle } from './subjects-sqlite.mjs';

/**
 * `sessions` two-event sessions written straight in the store's format (log and summary sidecar,
 * with its exported encoders), then one list that builds the catalog as a store at rest has it.
 * Through the API even relaxed seeding made 5,000 sessions in 40 s here: 100,000 would dominate.
 */
async function seedFormat(root, sessions) {
  const text = encodeBatch(prepareBatch(batch(0, 2, true)), 1, TIME);
  const made = new Set();
  for (let i = 0; i < sessions; i++) {
    const id = sessionId('s', i);
    const cwd = `/project/${i % 20}`;
    const paths = sessionPaths(root, bucketOf(cwd), id);
    if (!made.has(paths.dir)) mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
    made.add(paths.dir);
    const log = Buffer.from(encodeHeader({ id, createdAt: TIME, cwd }, {}) + text);
    writeFileSync(paths.log, log, { mode: 0o600 });
    const updatedAt = new Date(Date.parse(TIME) + i * 1000).toISOString();
    const summary = {
      id,
      createdAt: TIME,
      updatedAt,
      cwd,
      eventCount: 2,
      committedSeq: 1,
      interrupted: false,
    };
    writeFileSync(paths.summary, encodeSidecar({ logSize: log.length, summary }), { mode: 0o600 });
  }
  const store = await openJsonlStore({ root });
  await store.list({ limit: 1 });
  await store.close();
}

export const tidemarkJsonl = {
  name: 'tidemark jsonl',
  family: 'jsonl',
  settings: 'strict: every append on stable storage before it resolves (O_DSYNC write)',
  async open(dir) {
    return tidemarkHandle(await openJsonlStore({ root: join(dir, 'sessions') }), this.settings);
  },
  async seedList(dir, sessions) {
    await seedFormat(join(dir, 'sessions'), sessions);
    return this.open(dir);
  },
};

/** readdir + stat of every log, sorted newest first: the least any list of summaries can do. */
async function statAll(dir) {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.jsonl'));
  const entries = [];
  // In slices, so that 100,000 stats are not 100,000 promises at once in the thread pool's queue.
  for (let start = 0; start < names.length; start += 1024) {
    const slice = names.slice(start, start + 1024);
    const stats = await Promise.all(slice.map((name) => stat(join(dir, name))));
    for (const [i, s] of stats.entries())
      entries.push({ id: slice[i].slice(0, -6), updatedAt: s.mtimeMs, bytes: s.size });
  }
  return entries.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1));
}

function handJsonlHandle(dir) {
  const handles = new Map();
  return {
    settings: 'write + fdatasync per append',
    async append(id, events) {
      let handle = handles.get(id);
      if (handle === undefined) {
        handle = await open(join(dir, `${id}.jsonl`), 'a', 0o600);
        handles.set(id, handle);
      }
      const lines = events.map((e) => `${JSON.stringify(e)}\n`).join('');
      await handle.write(lines);
      await handle.datasync();
    },
    async load(id) {
      const text = await readFile(join(dir, `${id}.jsonl`), 'utf8');
      const events = [];
      for (const line of text.split('\n')) if (line !== '') events.push(JSON.parse(line));
      return events.length;
    },
    firstPage: async (limit) => (await statAll(dir)).slice(0, limit).length,
    wholeList: async () => (await statAll(dir)).length,
    async close() {
      for (const handle of handles.values()) await handle.close();
    },
  };
}

export const handJsonl = {
  name: 'hand-written JSONL',
  family: 'jsonl',
  against: 'tidemark jsonl',
  async open(dir) {
    mkdirSync(join(dir, 'raw'), { recursive: true });
    return handJsonlHandle(join(dir, 'raw'));
  },
  async seedList(dir, sessions) {
    const raw = join(dir, 'raw');
    mkdirSync(raw, { recursive: true });
    const text = batch(0, 2, true)
      .map((e) => `${JSON.stringify(e)}\n`)
      .join('');
    for (let i = 0; i < sessions; i++) writeFileSync(join(raw, `${sessionId('s', i)}.jsonl`), text);
    return handJsonlHandle(raw);
  },
};
