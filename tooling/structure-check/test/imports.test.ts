import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CruiseViolation, classifyViolations } from '../src/imports.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

describe('import rules (.dependency-cruiser.cjs) on a fixture tree', () => {
  let fixture: string;
  let violations: CruiseViolation[];

  beforeAll(async () => {
    fixture = mkdtempSync(join(tmpdir(), 'tidemark-cruise-'));
    const files: Record<string, string> = {
      'core/src/a.ts': "import { b } from './b.js';\nexport const a = () => b;",
      'core/src/b.ts': "import { a } from './a.js';\nexport const b = () => a;",
      'core/src/up.ts': "export { m } from '../../memory/src/m.js';",
      'core/src/missing.ts': "export { nope } from './nope.js';",
      'memory/src/m.ts': "export { b as m } from '../../core/src/b.js';",
      'jsonl/src/s.ts': "export { q as s } from '../../sqlite/src/q.js';",
      'sqlite/src/q.ts': 'export const q = 1;',
      'faults/src/d.ts':
        "export { s } from '../../jsonl/src/s.js';\nexport { m } from '../../memory/src/m.js';",
      'contract/src/k.ts':
        "export { s } from '../../jsonl/src/s.js';\nexport { m } from '../../memory/src/m.js';",
      'jsonl/src/harness.ts':
        "export { d } from '../../faults/src/e.js';\nexport { q } from '../../sqlite/src/q.js';",
      'jsonl/src/main.ts': "export { d } from '../../faults/src/e.js';",
      'faults/src/e.ts': 'export const d = 1;',
      'lifecycle/src/l.ts': "export { c } from '../../cli/src/c.js';",
      'cli/src/c.ts': 'export const c = 1;',
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(fixture, 'packages', path)), { recursive: true });
      writeFileSync(join(fixture, 'packages', path), `${text}\n`);
    }
    const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
    const args = ['packages', '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'];
    const output = await promisify(execFile)(depcruise, args, { cwd: fixture }).catch(
      (error: { stdout: string }) => error,
    );
    violations = JSON.parse(output.stdout).summary.violations;
  }, 120_000);

  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  const rulesOf = (from: string, to: string) =>
    violations
      .filter((v) => v.from === `packages/${from}` && v.to === `packages/${to}`)
      .map((v) => v.rule.name)
      .sort();

  it('finds a cycle once, with its modules', () => {
    expect(classifyViolations(violations).cycles).toHaveLength(1);
    expect(new Set(classifyViolations(violations).cycles[0])).toEqual(
      new Set(['packages/core/src/a.ts', 'packages/core/src/b.ts']),
    );
  });

  it('forbids core importing any other package', () => {
    expect(rulesOf('core/src/up.ts', 'memory/src/m.ts')).toEqual([
      'core-imports-nothing-of-ours',
      'cross-package-by-name',
    ]);
  });

  it('forbids a backend importing another backend, and allows it core', () => {
    expect(rulesOf('jsonl/src/s.ts', 'sqlite/src/q.ts')).toEqual([
      'backend-imports-only-core',
      'cross-package-by-name',
    ]);
    expect(rulesOf('memory/src/m.ts', 'core/src/b.ts')).toEqual(['cross-package-by-name']);
  });

  it('forbids the harness core importing any backend, and the contract suite one other than memory', () => {
    expect(rulesOf('faults/src/d.ts', 'jsonl/src/s.ts')).toEqual([
      'cross-package-by-name',
      'harness-core-imports-no-backend',
    ]);
    expect(rulesOf('faults/src/d.ts', 'memory/src/m.ts')).toEqual([
      'cross-package-by-name',
      'harness-core-imports-no-backend',
    ]);
    expect(rulesOf('contract/src/k.ts', 'jsonl/src/s.ts')).toEqual([
      'contract-imports-no-backend-but-memory',
      'cross-package-by-name',
    ]);
    expect(rulesOf('contract/src/k.ts', 'memory/src/m.ts')).toEqual(['cross-package-by-name']);
  });

  it("lets a backend's harness driver, and only it, import the harness", () => {
    expect(rulesOf('jsonl/src/harness.ts', 'faults/src/e.ts')).toEqual(['cross-package-by-name']);
    expect(rulesOf('jsonl/src/harness.ts', 'sqlite/src/q.ts')).toEqual([
      'backend-harness-imports-core-and-faults',
      'cross-package-by-name',
    ]);
    expect(rulesOf('jsonl/src/main.ts', 'faults/src/e.ts')).toEqual([
      'backend-imports-only-core',
      'cross-package-by-name',
    ]);
  });

  it('forbids lifecycle importing anything but core, and anyone importing cli', () => {
    expect(rulesOf('lifecycle/src/l.ts', 'cli/src/c.ts')).toEqual([
      'cross-package-by-name',
      'lifecycle-imports-only-core',
      'nothing-imports-cli',
    ]);
  });

  it('reports an import that does not resolve', () => {
    expect(violations.filter((v) => v.rule.name === 'resolvable').map((v) => v.from)).toEqual([
      'packages/core/src/missing.ts',
    ]);
  });
});
