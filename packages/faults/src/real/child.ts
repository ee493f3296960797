// The child process of real-fault runs: a writer to SIGKILL at random instants, a probe that runs
// as an unprivileged uid, or a holder of an SQLite lock. It is started from the built `dist`.
import { writeSync } from 'node:fs';
import { isTidemarkError, type JsonObject, type SessionStore } from '@tidemark/core';
import { raceBatchSize, raceEvents } from '../verdicts/concurrent-model.js';
import { ModelSession, WorkloadModel } from '../verdicts/model.js';
import { probeStore } from '../verdicts/probe.js';
import { Checker } from '../workload/runner.js';
import { sessionId, workloadEvent } from '../workload/workload.js';
import { type ChildRequest, killEventType } from './child-protocol.js';

const say = (line: string) => writeSync(1, `${line}\n`);

async function openStore(module: string, factory: string, options: JsonObject): Promise<SessionStore> {
  const mod = (await import(module)) as Record<string, (o: JsonObject) => Promise<SessionStore>>;
  const open = mod[factory];
  if (typeof open !== 'function') throw new Error(`${module} has no export ${factory}`);
  return open(options);
}

async function writer(request: Extract<ChildRequest, { mode: 'writer' }>): Promise<void> {
  const store = await openStore(request.module, request.factory, request.options);
  const keys = Array.from({ length: request.sessions }, (_, i) => `k${i}`);
  const next = new Map<string, number>();
  for (const key of keys) {
    try {
      next.set(key, (await store.load(sessionId(key))).events.length);
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      await store.create({ id: sessionId(key) });
      next.set(key, 0);
    }
  }
  say('ready');
  if (request.together === true) await writeTogether(store, keys, next);
  for (let i = 0; ; i++) {
    const key = keys[i % keys.length]!;
    const from = next.get(key)!;
    const count = 1 + (i % 3);
    const events = Array.from({ length: count }, (_, k) =>
      workloadEvent(key, from + k, killEventType(from + k)),
    );
    say(`try ${key} ${from} ${count}`);
    await store.append(sessionId(key), events);
    say(`ack ${key} ${from} ${count}`);
    next.set(key, from + count);
  }
}

/**
 * The writer of a backend with group commit: each round appends one batch to every session at
 * once, each acknowledged as its own append settles (so a kill can fall between the commit of a
 * shared group and the acknowledgements of its batches, or inside the commit itself).
 */
async function writeTogether(
  store: SessionStore,
  keys: readonly string[],
  next: Map<string, number>,
): Promise<never> {
  for (let round = 0; ; round++) {
    await Promise.all(
      keys.map(async (key, k) => {
        const from = next.get(key)!;
        const count = 1 + ((round + k) % 3);
        const events = Array.from({ length: count }, (_, j) =>
          workloadEvent(key, from + j, killEventType(from + j)),
        );
        say(`try ${key} ${from} ${count}`);
        await store.append(sessionId(key), events);
        say(`ack ${key} ${from} ${count}`);
        next.set(key, from + count);
      }),
    );
  }
}

async function probe(request: Extract<ChildRequest, { mode: 'probe' }>): Promise<void> {
  const model = new WorkloadModel();
  for (const s of request.model) {
    const session = new ModelSession(s.key, s.cwd);
    session.acked = s.acked;
    model.sessions.set(s.key, session);
  }
  const check = new Checker();
  await probeStore(
    () => openStore(request.module, request.factory, request.options),
    model,
    check,
    request.destructive,
  );
  say(JSON.stringify(check.outcome));
}

/**
 * One of two racers on one session: after `ready` it waits for `go` on stdin (so that both start
 * together), then appends where it believes the log ends, saying `try`, then `ack` or `refused`
 * (CONFLICT) or `failed` (another typed error); after anything but an ack it reloads to learn
 * the end. Any untyped error ends the child (main reports it).
 */
async function racer(request: Extract<ChildRequest, { mode: 'racer' }>): Promise<void> {
  const store = await openStore(request.module, request.factory, request.options);
  const id = sessionId(request.key);
  await store.create({ id });
  say('ready');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  let next = 0;
  let acks = 0;
  for (let attempt = 0; acks < request.batches && attempt < request.batches * 8; attempt++) {
    const count = raceBatchSize(request.index, next);
    const events = raceEvents(request.writer, request.key, next, count);
    say(`try ${next} ${count}`);
    try {
      next = (await store.append(id, events)).nextSeq;
      say(`ack ${events[0]!.seq} ${count}`);
      acks++;
      continue;
    } catch (error) {
      if (!isTidemarkError(error)) throw error;
      say(`${error.code === 'CONFLICT' ? 'refused' : 'failed'} ${events[0]!.seq} ${count} ${error.code}`);
    }
    try {
      next = (await store.load(id)).events.length;
    } catch (error) {
      if (!isTidemarkError(error)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
  }
  await store.close();
  say('closed');
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '{}') as ChildRequest;
  if (request.mode === 'writer') await writer(request);
  else if (request.mode === 'probe') await probe(request);
  else if (request.mode === 'racer') await racer(request);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const typed = isTidemarkError(error);
    say(
      `error ${JSON.stringify({ typed, code: typed ? error.code : undefined, message: error instanceof Error ? error.message : String(error) })}`,
    );
    process.exit(1);
  },
);
