#!/usr/bin/env node
// Runnable entry of the fault harness: `node dist/bin.js [--quick] [--backends memory,jsonl,sqlite,postgres] [--out DIR]`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseHarnessArgs } from './args.js';
import type { HarnessDriver } from './driver.js';
import { jsonlDriver, sqliteDriver } from './drivers.js';
import { runFaultHarness } from './harness.js';
import { memoryDriver } from './memory-driver.js';
import { formatReportMarkdown, formatReportTable } from './report.js';
import { postgresDriver } from './server/pg-driver.js';

const DRIVERS: Record<string, () => HarnessDriver> = {
  memory: memoryDriver,
  jsonl: () => jsonlDriver(),
  sqlite: () => sqliteDriver(),
  // TIDEMARK_PG_URL or the local server; without one its cells are n/a (a failing cell with CI=true).
  postgres: () => postgresDriver(),
};

function progressReporter(): (phase: string, done: number, total: number) => void {
  let lastPhase = '';
  let lastDraw = 0;
  return (phase, done, total) => {
    if (process.stderr.isTTY) {
      const now = Date.now();
      if (now - lastDraw < 100 && done !== total) return;
      lastDraw = now;
      process.stderr.write(`\r\x1b[K${phase}: ${done}/${total}${done === total ? '\n' : ''}`);
    } else if (phase !== lastPhase) {
      lastPhase = phase;
      process.stderr.write(`${phase}: ${total} runs\n`);
    }
  };
}

async function main(): Promise<number> {
  const args = parseHarnessArgs(process.argv.slice(2));
  const drivers = args.backends.map((name) => {
    const make = DRIVERS[name];
    if (make === undefined)
      throw new Error(`unknown backend ${name}; known: ${Object.keys(DRIVERS).join(', ')}`);
    return make();
  });
  const report = await runFaultHarness(drivers, {
    quick: args.quick,
    progress: progressReporter(),
    ...(args.kills !== undefined && { kills: args.kills }),
  });
  const out = resolve(args.out);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'harness-report.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(out, 'harness-report.md'), formatReportMarkdown(report));
  process.stdout.write(
    `${formatReportTable(report)}\n\nreport written to ${join(out, 'harness-report.{json,md}')}\n`,
  );
  return report.passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`tidemark harness: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
