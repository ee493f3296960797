#!/usr/bin/env node
// @ts-check
// `pnpm check:structure`: runs the structural checks over the repository and exits 1 when a
// strict check finds something. A check named in `--report=<names>` (or all of them with
// `--report`, or those in TIDEMARK_STRUCTURE_REPORT) prints what it finds and does not fail.
// `--only=<names>` runs just those checks.
//
// Checks: sizes (files <= 500 lines, functions <= 80), layering and cycles (dependency-cruiser,
// .dependency-cruiser.cjs), copies (jscpd, .jscpd.json, gated between backends), refs (every
// `contract §N` / `SPEC §N` names a section of docs/contract.md).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { classifyClones, formatClone } from './copies.js';
import { packageNames, packageSources, walk } from './files.js';
import { classifyViolations, formatCycle, formatLayering } from './imports.js';
import { danglingReferences, formatReference, referencesIn, sectionsOf } from './refs.js';
import { formatSizeViolation, measureSource } from './sizes.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const checkNames = ['sizes', 'layering', 'cycles', 'copies', 'refs'];

/** @typedef {{ findings: string[]; info?: string[] }} CheckResult */

/** @returns {CheckResult} */
function checkSizes() {
  const findings = packageSources(root).flatMap((file) =>
    measureSource(file, readFileSync(join(root, file), 'utf8')).map(formatSizeViolation),
  );
  return { findings };
}

const run = promisify(execFile);

/**
 * Runs a tool from the root's node_modules/.bin; a non-zero exit (dependency-cruiser's answer to a
 * violation) still yields its output.
 * @param {string} tool
 * @param {string[]} args
 * @returns {Promise<{ stdout: string; stderr: string; failed: boolean }>}
 */
async function runTool(tool, args) {
  try {
    const { stdout, stderr } = await run(join(root, 'node_modules', '.bin', tool), args, {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    return { stdout, stderr, failed: false };
  } catch (error) {
    const { stdout = '', stderr = String(error) } = /** @type {{ stdout?: string; stderr?: string }} */ (
      error
    );
    return { stdout, stderr, failed: true };
  }
}

/** @type {Promise<ReturnType<typeof classifyViolations>> | undefined} */
let cruised;
/** dependency-cruiser runs once for both import checks. */
function cruise() {
  cruised ??= (async () => {
    const sources = packageNames(root).map((name) => `packages/${name}/src`);
    const result = await runTool('depcruise', [
      ...sources,
      '--config',
      '.dependency-cruiser.cjs',
      '--output-type',
      'json',
    ]);
    if (!result.stdout) throw new Error(`dependency-cruiser gave no report: ${result.stderr}`);
    return classifyViolations(JSON.parse(result.stdout).summary.violations);
  })();
  return cruised;
}

/** @returns {Promise<CheckResult>} */
async function checkLayering() {
  return { findings: (await cruise()).layering.map(formatLayering) };
}

/** @returns {Promise<CheckResult>} */
async function checkCycles() {
  return { findings: (await cruise()).cycles.map(formatCycle) };
}

/** @returns {Promise<CheckResult>} */
async function checkCopies() {
  const output = mkdtempSync(join(tmpdir(), 'tidemark-jscpd-'));
  try {
    const result = await runTool('jscpd', ['--config', '.jscpd.json', '--output', output]);
    if (result.failed) throw new Error(`jscpd failed: ${result.stderr}`);
    const report = JSON.parse(readFileSync(join(output, 'jscpd-report.json'), 'utf8'));
    const { gated, other } = classifyClones(report.duplicates);
    return {
      findings: gated.map(formatClone),
      info:
        other.length > 0
          ? [`${other.length} repeated block(s) inside one package or a test kit (not gated)`]
          : [],
    };
  } finally {
    rmSync(output, { recursive: true, force: true });
  }
}

/** @returns {CheckResult} */
function checkRefs() {
  const sections = sectionsOf(readFileSync(join(root, 'docs', 'contract.md'), 'utf8'));
  const files = [
    ...packageSources(root),
    ...packageNames(root)
      .map((name) => `packages/${name}/README.md`)
      .filter((file) => {
        try {
          readFileSync(join(root, file));
          return true;
        } catch {
          return false;
        }
      }),
    ...walk(root, join(root, 'docs'), (name) => name.endsWith('.md')),
    'README.md',
  ];
  const references = files.flatMap((file) => referencesIn(file, readFileSync(join(root, file), 'utf8')));
  const dangling = danglingReferences(references, sections);
  return {
    findings: dangling.map(formatReference),
    info: [
      `${references.length} reference(s) read; sections of docs/contract.md: ${[...sections].join(' ')}`,
    ],
  };
}

/** @type {Record<string, () => CheckResult | Promise<CheckResult>>} */
const checks = {
  sizes: checkSizes,
  layering: checkLayering,
  cycles: checkCycles,
  copies: checkCopies,
  refs: checkRefs,
};

/**
 * `--name=a,b` or `--name a,b` as a list; `--name` alone as every check.
 * @param {string[]} args
 * @param {string} name
 * @returns {string[] | undefined}
 */
function listOption(args, name) {
  const index = args.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (index < 0) return undefined;
  const arg = /** @type {string} */ (args[index]);
  const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[index + 1];
  if (value === undefined || value.startsWith('--') || (!arg.includes('=') && !/^[a-z,]+$/.test(value))) {
    return checkNames;
  }
  return value === 'all' ? checkNames : value.split(',').filter(Boolean);
}

async function main() {
  const args = process.argv.slice(2);
  const only = listOption(args, 'only') ?? checkNames;
  const fromEnv = process.env.TIDEMARK_STRUCTURE_REPORT;
  const report = new Set([
    ...(listOption(args, 'report') ?? []),
    ...(fromEnv ? (fromEnv === 'all' ? checkNames : fromEnv.split(',')) : []),
  ]);
  for (const name of [...only, ...report]) {
    if (!checkNames.includes(name)) {
      console.error(`unknown check "${name}"; the checks are ${checkNames.join(', ')}`);
      process.exit(2);
    }
  }
  // The two external tools run side by side while the in-process checks read the files.
  const started = performance.now();
  /** @type {Map<string, Promise<{ result: CheckResult; seconds: string }>>} */
  const pending = new Map();
  const external = ['layering', 'cycles', 'copies'];
  const launchOrder = [
    ...only.filter((n) => external.includes(n)),
    ...only.filter((n) => !external.includes(n)),
  ];
  for (const name of launchOrder) {
    const check = /** @type {() => CheckResult | Promise<CheckResult>} */ (checks[name]);
    pending.set(
      name,
      Promise.resolve()
        .then(check)
        .then((result) => ({ result, seconds: ((performance.now() - started) / 1000).toFixed(1) })),
    );
  }
  let failed = false;
  for (const name of only) {
    const { result, seconds } = await /** @type {Promise<{ result: CheckResult; seconds: string }>} */ (
      pending.get(name)
    );
    const strict = !report.has(name);
    const verdict = result.findings.length === 0 ? 'ok' : strict ? 'FAIL' : 'report only';
    console.log(`${name}: ${result.findings.length} finding(s), ${verdict} (done at ${seconds} s)`);
    for (const finding of result.findings) console.log(`  ${finding}`);
    for (const line of result.info ?? []) console.log(`  (${line})`);
    if (strict && result.findings.length > 0) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

await main();
