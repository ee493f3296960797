// The traced child of the concurrent power-loss check (sqlite-race-powerloss.ts), run under strace
// from the built `dist`: two store instances on one database race for one session (runRace), and
// every append is announced before the call (`try`) and after it settled (`ack`, `refused`) with a
// write to stdout, so that each acknowledgement takes its place in the trace among the writes.
import { writeSync } from 'node:fs';
import { isTidemarkError, type JsonObject, type SessionStore } from '@tidemark/core';
import { RaceModel } from '../verdicts/concurrent-model.js';
import { runRace } from '../workload/concurrent.js';
import { Checker } from '../workload/runner.js';

/** What the child is asked to do (JSON in argv[2]). */
export interface RaceTraceRequest {
  module: string;
  factory: string;
  options: JsonObject;
}

const say = (line: string) => writeSync(1, `${line}\n`);

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? '{}') as RaceTraceRequest;
  const mod = (await import(request.module)) as Record<string, (o: JsonObject) => Promise<SessionStore>>;
  const stores = [await mod[request.factory]!(request.options), await mod[request.factory]!(request.options)];
  const check = new Checker();
  await runRace(stores, new RaceModel(), check, (word, key, writer, from, count) =>
    say(`${word} ${key} ${writer} ${from} ${count}`),
  );
  for (const store of stores) await store.close();
  // The race's own verdicts (an untyped error, two acknowledgements of one seq) end the run here.
  if (check.outcome.violations.length > 0) say(`violations ${JSON.stringify(check.outcome.violations)}`);
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
