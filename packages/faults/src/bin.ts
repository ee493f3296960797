#!/usr/bin/env node
// Runnable entry of the fault harness:
//   node dist/bin.js [--quick] [--backends memory,jsonl,sqlite,postgres] [--out DIR]
//   node dist/bin.js --backends jsonl [--quick] --replay ID   (one run of a report again)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type HarnessArgs, parseHarnessArgs } from './args.js';
import type { HarnessDriver } from './drivers/driver.js';
import { jsonlDriver, sqliteDriver } from './drivers/drivers.js';
import { memoryDriver } from './drivers/memory-driver.js';
import { runFaultHarness } from './harness.js';
import { replayRun } from './replay.js';
import { formatReportMarkdown, formatReportTable } from './report/report.js';
import { formatReportHtml } from './report/report-html.js';
import { postgresDriver } from './server/pg-driver.js';

const DRIVERS: Record<string, () => HarnessDriver> = {
  memory: memoryDriver,
  jsonl: () => jsonlDriver(),
  sqlite: () => sqliteDriver(),
  // TIDEMARK_PG_URL or the local server; without one its cells are n/a (a failing cell with CI=true).
  postgres: () => postgresDriver(),
};

// A reader that went away (`| head`) is no failure: the report files are written all the same.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

/** Progress on stderr, drawn over one line, only when stderr is a terminal. */
function progressReporter(): ((phase: string, done: number, total: number) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let lastDraw = 0;
  return (phase, done, total) => {
    const now = Date.now();
    if (now - lastDraw < 100 && done !== total) return;
    lastDraw = now;
    process.stderr.write(`\r\x1b[K${phase}: ${done}/${total}${done === total ? '\n' : ''}`);
  };
}

function makeDrivers(names: readonly string[]): HarnessDriver[] {
  return names.map((name) => {
    const make = DRIVERS[name];
    if (make === undefined)
      throw new Error(`unknown backend ${name}; known: ${Object.keys(DRIVERS).join(', ')}`);
    return make();
  });
}

/** `--replay ID`: one run again, its outcome on stdout; status 1 when it still violates. */
async function replay(args: HarnessArgs, id: string): Promise<number> {
  if (args.backends.length !== 1) throw new Error('--replay needs exactly one backend (--backends NAME)');
  const [driver] = makeDrivers(args.backends);
  const result = await replayRun(driver!, id, args.quick);
  const { outcome } = result;
  const lines = [
    `${driver!.name}: ${result.fault}${result.injected ? '' : ' (not injected)'}`,
    outcome.firstError === undefined
      ? 'no typed error'
      : `first typed error: ${outcome.firstError.step ?? '-'} ${outcome.firstError.call}: ${outcome.firstError.code}${outcome.firstError.errno ? ` (${outcome.firstError.errno})` : ''}: ${outcome.firstError.message}`,
    ...outcome.violations.map((v) => `VIOLATION ${v.kind}: ${v.detail}`),
    outcome.violations.length === 0
      ? 'PASS: no violation'
      : `FAIL: ${outcome.violations.length} violation(s)`,
  ];
  process.stdout.write(args.json ? `${JSON.stringify(result, null, 2)}\n` : `${lines.join('\n')}\n`);
  return outcome.violations.length === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const args = parseHarnessArgs(process.argv.slice(2));
  if (args.replay !== undefined) return replay(args, args.replay);
  const drivers = makeDrivers(args.backends);
  const progress = progressReporter();
  const report = await runFaultHarness(drivers, {
    quick: args.quick,
    ...(progress !== undefined && { progress }),
    ...(args.kills !== undefined && { kills: args.kills }),
  });
  const out = resolve(args.out);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'harness-report.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(out, 'harness-report.md'), formatReportMarkdown(report));
  writeFileSync(join(out, 'harness-report.html'), formatReportHtml(report));
  process.stdout.write(
    args.json
      ? `${JSON.stringify(report, null, 2)}\n`
      : `${formatReportTable(report)}\n\nreport written to ${join(out, 'harness-report.{json,md,html}')}\n`,
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
