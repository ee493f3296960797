// `--help` on every command: the command's own usage and every flag it takes, exit 0, nothing run.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, commandHelp } from '../src/help.js';
import { tidemark, useTempHome } from './run-cli.js';

const COMMANDS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'commands');

/** The option names a command's module reads (`ctx.values.x`, `ctx.values['x-y']`). */
function optionsRead(command: string): string[] {
  const source = readFileSync(join(COMMANDS_DIR, `${command}.ts`), 'utf8');
  const names = [...source.matchAll(/values(?:\.([a-z]+)|\['([a-z-]+)'\])/g)].map((m) => m[1] ?? m[2]!);
  return [...new Set(names)].sort();
}

describe('tidemark <command> --help', () => {
  useTempHome();

  it('has an entry for every command but harness, whose help is the harness own', () => {
    const modules = ['active', 'config', 'delete', 'export', 'import', 'list', 'migrate', 'prune']
      .concat(['repair', 'show', 'trash', 'ui', 'verify', 'rekey', 'keys'])
      .sort();
    expect(Object.keys(COMMAND_HELP).sort()).toEqual(modules);
  });

  for (const command of Object.keys(COMMAND_HELP)) {
    it(`${command} --help prints ${command}'s usage and every flag it reads, exit 0`, () => {
      const run = tidemark([command, '--help']);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: tidemark ${command}\\b`));
      // Every flag the command's code reads is listed, so the help cannot fall behind the code.
      for (const name of optionsRead(command)) expect(run.stdout).toContain(`  --${name}`);
      expect(run.stdout).toContain('-h, --help');
      expect(run.stdout).not.toContain('Commands:');
      expect(run.stdout).toBe(`${commandHelp(command)}\n`);
    });
  }

  it('-h, `tidemark help <command>` and --help after other flags print the same help', () => {
    const help = tidemark(['prune', '--help']).stdout;
    expect(tidemark(['prune', '-h']).stdout).toBe(help);
    expect(tidemark(['help', 'prune']).stdout).toBe(help);
    expect(tidemark(['--store', 'memory:', 'prune', '--yes', '--help']).stdout).toBe(help);
    expect(help).toContain('--older-than DAYS');
  });

  it('--store and --trash are listed where they apply', () => {
    expect(tidemark(['list', '--help']).stdout).toContain('--store ADDRESS');
    expect(tidemark(['delete', '--help']).stdout).toContain('--trash ADDRESS');
    expect(tidemark(['migrate', '--help']).stdout).not.toContain('--store ADDRESS');
  });

  it('ui --help prints the help of ui and returns, without starting the browser', () => {
    const run = tidemark(['ui', '--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^Usage: tidemark ui \[--port N\] \[--json\]/);
    expect(run.stdout).toContain('--port N');
    expect(run.stdout).not.toContain('open http');
  });

  it('--help with an unknown command is a usage error naming it', () => {
    const run = tidemark(['frobnicate', '--help']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^tidemark: USAGE: unknown command "frobnicate"/);
  });

  it('the global help still lists every command and says how to get a command help', () => {
    const run = tidemark(['--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^Usage: tidemark \[--store ADDRESS\] <command>/);
    expect(run.stdout).toContain('tidemark <command> --help');
  });
});
