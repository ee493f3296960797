#!/usr/bin/env node
// Runnable entry of the fault harness (`tidemark harness` runs it; `--help` has every flag):
//   tidemark-harness [--quick] [--backends memory,jsonl,...] [--driver MODULE]... [--out DIR]
//   tidemark-harness --driver ./driver.js [--quick] --replay ID   (one run of a report again)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HARNESS_USAGE, type HarnessArgs, parseHarnessArgs } from './args.js';
import {
  HarnessSetupError,
  type LoadedDriver,
  loadFirstPartyDriver,
  loadHarnessDriver,
} from './drivers/loader.js';
import { runFaultHarness } from './harness.js';
import { replayRun } from './replay.js';
import { formatReportMarkdown, formatReportTable } from './report/report.js';
import { formatReportHtml } from './report/report-html.js';

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

/**
 * Every driver the command line names, each through the one loader: `--backends NAME` is the
 * module `@tidemark/NAME/harness`, `--driver` a path or package. Two drivers of one name would
 * share their report rows: a setup error.
 */
async function loadDrivers(args: HarnessArgs): Promise<LoadedDriver[]> {
  const options = { resolveFrom: args.resolveFrom };
  const loaded: LoadedDriver[] = [];
  for (const name of args.backends) loaded.push(await loadFirstPartyDriver(name, options));
  for (const spec of args.drivers) loaded.push(await loadHarnessDriver(spec, options));
  const seen = new Set<string>();
  for (const { driver, selector } of loaded) {
    if (seen.has(driver.name))
      throw new HarnessSetupError(
        `driver ${selector}: name ${JSON.stringify(driver.name)} is taken by another driver`,
      );
    seen.add(driver.name);
  }
  if (loaded.length === 0)
    throw new HarnessSetupError('no backend to run (--backends LIST or --driver MODULE)');
  return loaded;
}

/** `--replay ID`: one run again, its outcome on stdout; status 1 when it still violates. */
async function replay(args: HarnessArgs, id: string): Promise<number> {
  if (args.backends.length + args.drivers.length !== 1)
    throw new Error('--replay needs exactly one backend (--backends NAME or --driver MODULE)');
  const [{ driver }] = (await loadDrivers(args)) as [LoadedDriver];
  const result = await replayRun(driver, id, args.quick);
  const { outcome } = result;
  const lines = [
    `${driver.name}: ${result.fault}${result.injected ? '' : ' (not injected)'}`,
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
  if (args.help) {
    process.stdout.write(HARNESS_USAGE);
    return 0;
  }
  if (args.replay !== undefined) return replay(args, args.replay);
  const loaded = await loadDrivers(args);
  const progress = progressReporter();
  const report = await runFaultHarness(
    loaded.map((l) => l.driver),
    {
      selectors: Object.fromEntries(loaded.map((l) => [l.driver.name, l.selector])),
      quick: args.quick,
      ...(progress !== undefined && { progress }),
      ...(args.kills !== undefined && { kills: args.kills }),
      ...(args.stopAfter !== undefined && { stopAfterFailures: args.stopAfter }),
    },
  );
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
