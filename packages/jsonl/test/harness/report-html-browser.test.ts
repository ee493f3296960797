// harness-report.html in a real headless Chromium: the heat map is red, with the exact
// reproduction, for a deliberately broken backend, and green for the real ones; the page loads
// nothing from the network. Saves the screenshot shown in the README (docs/harness-report.png).
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  errorSweepFs,
  formatReportHtml,
  type HarnessReport,
  QUICK_ERRNOS,
  QUICK_MODE_SAMPLE,
  ReportBuilder,
  runFaultHarness,
} from '@tidemark/faults';
import { memoryDriver } from '@tidemark/memory/harness';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonlDriver } from '../../src/harness.js';
import { jsonlWithoutDirSync } from './fixtures/broken-jsonl.js';

const CHROMIUM = '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
// The repository's docs/ (this file is packages/jsonl/test/harness/).
const SCREENSHOT = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  '..',
  'docs',
  'harness-report.png',
);
const BROKEN = 'jsonl-no-dir-sync';
// How a command line would have named the broken driver: its replay command names it so.
const BROKEN_MODULE = '/home/me/project/broken-driver.js';

if (!present && process.env.CI !== 'true')
  console.warn(`report-html-browser: skipped, ${CHROMIUM} is missing (apt-get install -y chromium)`);

/** The computed background colour of an element (the test's tsconfig has no DOM types). */
function background(locator: Locator): Promise<string> {
  type Window = { getComputedStyle(element: unknown): { backgroundColor: string } };
  return locator.evaluate(
    (element) => (globalThis as unknown as Window).getComputedStyle(element).backgroundColor,
  );
}

/** One report of two harness runs, as if one run had covered every backend. */
function merge(a: HarnessReport, b: HarnessReport): HarnessReport {
  return {
    ...a,
    durationMs: a.durationMs + b.durationMs,
    cells: [...a.cells, ...b.cells],
    totals: [...a.totals, ...b.totals],
    failures: [...a.failures, ...b.failures],
    failureCount: a.failureCount + b.failureCount,
    passed: a.passed && b.passed,
    selectors: { ...a.selectors, ...b.selectors },
  };
}

describe('harness-report.html in headless Chromium', () => {
  // With CI=true the browser test must run: a missing Chromium is a failure, not a skip.
  it.runIf(!present && process.env.CI === 'true')('has Chromium to run in (CI)', () => {
    expect.fail(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);
  });

  describe.skipIf(!present)('rendered', () => {
    let browser: Browser;
    let page: Page;
    let dir: string;
    const requests: string[] = [];

    beforeAll(async () => {
      // Green cells from the real backends: memory's and JSONL's quick error sweeps (their crash
      // sweeps and SIGKILL phases are the CLI's harness-quick test; here they would only add green
      // cells at minutes of cost: this file took 7 minutes of a loaded CI run with them), and the
      // broken one until its first violation.
      const memory = await runFaultHarness(memoryDriver(), { quick: true, skip: ['real', 'crash'] });
      const jsonl = new ReportBuilder();
      const jsonlStarted = new Date();
      // Every fifth planned fault: the page needs green cells, the sweep itself is jsonl's own test.
      await errorSweepFs(jsonlDriver(), jsonl, QUICK_ERRNOS, ['EIO'], undefined, {
        durability: 'strict',
        sample: QUICK_MODE_SAMPLE,
      });
      const real = merge(memory, jsonl.build(true, jsonlStarted, []));
      const broken = await runFaultHarness([jsonlWithoutDirSync()], {
        quick: true,
        skip: ['real', 'errors'],
        stopAfterFailures: 1,
        selectors: { [BROKEN]: `--driver ${BROKEN_MODULE}` },
      });
      dir = await mkdtemp(join(tmpdir(), 'tidemark-report-html-'));
      const file = join(dir, 'harness-report.html');
      await writeFile(file, formatReportHtml(merge(real, broken)));
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      });
      page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(pathToFileURL(file).href);
    }, 600_000);

    afterAll(async () => {
      await browser?.close();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('shows the real backends green (or amber n/a), never red', async () => {
      for (const backend of ['memory', 'jsonl']) {
        const statuses = await page
          .locator(`a.cell[data-backend="${backend}"]`)
          .evaluateAll((cells) => cells.map((c) => c.getAttribute('data-status')));
        expect(statuses.length).toBeGreaterThan(5);
        expect(statuses.filter((s) => s !== 'pass' && s !== 'n/a')).toEqual([]);
        expect(statuses).toContain('pass');
      }
      const green = page.locator('a.cell[data-backend="jsonl"][data-status="pass"]').first();
      expect(await background(green)).toBe('rgb(217, 242, 227)');
    });

    it('shows the broken backend red with the count, and its run with the exact reproduction', async () => {
      const red = page.locator(`a.cell[data-backend="${BROKEN}"][data-status="fail"]`).first();
      await expect.poll(() => red.count()).toBe(1);
      expect(await background(red)).toBe('rgb(253, 224, 220)');
      expect(await red.innerText()).toMatch(/^\d+ violations?\n\d+ run\(s\)$/);
      await red.click();
      const details = page.locator('section.details.open');
      await expect.poll(() => details.isVisible()).toBe(true);
      const run = details.locator('tbody.violating').first();
      const text = await run.innerText();
      expect(text).toMatch(/crash after op \d+ \(\w+\)/);
      expect(text).toMatch(/#\d+ \w+\(\w*\)/); // the workload step
      expect(text).toContain('false-absence');
      expect(text).toMatch(/crash state\s+after op \d+ \(\w+\), state \d+: /);
      expect(text).toMatch(/operation\s+\d+/);
      expect(text).toMatch(/seed\s+none: the run is deterministic/);
      expect(await run.locator('code.replay').innerText()).toMatch(
        new RegExp(`^tidemark harness --driver ${BROKEN_MODULE} --quick --replay crash:\\d+:\\d+$`),
      );
      await page.screenshot({ path: SCREENSHOT, fullPage: false });
    });

    it('loads nothing but the file itself', () => {
      expect(requests.filter((url) => !url.startsWith('file:'))).toEqual([]);
    });
  });
});
