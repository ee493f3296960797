// The workload child of the power-loss sweep, run under strace from the built `dist`: it opens the
// store, appends rounds of batches to a few sessions, and closes it. Each append is announced
// (`try`) before the call and acknowledged (`ack`) after it resolved, with a write to stdout, so
// that the acknowledgement takes its place in the system-call trace among the store's own writes.
import { writeSync } from 'node:fs';
import { isTidemarkError, type JsonObject, type SessionStore } from '@tidemark/core';
import { sessionId, workloadEvent } from '../workload/workload.js';
import { killEventType } from './child-protocol.js';

/** What the power-loss child is asked to do (JSON in argv[2]). */
export interface PowerLossRequest {
  module: string;
  factory: string;
  options: JsonObject;
  sessions: number;
  rounds: number;
  /** Append to every session at once each round (a backend with group commit). */
  together: boolean;
}

const say = (line: string) => writeSync(1, `${line}\n`);

async function appendOne(store: SessionStore, key: string, from: number, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, j) =>
    workloadEvent(key, from + j, killEventType(from + j)),
  );
  say(`try ${key} ${from} ${count}`);
  await store.append(sessionId(key), events);
  say(`ack ${key} ${from} ${count}`);
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '{}') as PowerLossRequest;
  const mod = (await import(request.module)) as Record<string, (o: JsonObject) => Promise<SessionStore>>;
  const store = await mod[request.factory]!(request.options);
  const keys = Array.from({ length: request.sessions }, (_, i) => `p${i}`);
  for (const key of keys) await store.create({ id: sessionId(key) });
  const next = new Map(keys.map((key) => [key, 0]));
  for (let round = 0; round < request.rounds; round++) {
    // Batches of 1 to 3 events: some close a turn (turn/end every fourth seq), most do not.
    const batch = (k: number) => [keys[k]!, next.get(keys[k]!)!, 1 + ((round + k) % 3)] as const;
    if (request.together) await Promise.all(keys.map((_, k) => appendOne(store, ...batch(k))));
    else for (let k = 0; k < keys.length; k++) await appendOne(store, ...batch(k));
    for (let k = 0; k < keys.length; k++) next.set(keys[k]!, batch(k)[1] + batch(k)[2]);
  }
  await store.close();
  say('closed');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const typed = isTidemarkError(error);
    say(
      `error ${JSON.stringify({ typed, message: error instanceof Error ? error.message : String(error) })}`,
    );
    process.exit(1);
  },
);
