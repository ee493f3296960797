// `tidemark ui`: serves the session browser on loopback, prints a URL that carries its token, and
// stops cleanly on SIGTERM.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, home, tidemark, useTempHome } from './run-cli.js';

useTempHome();

/** Starts `tidemark ui` and resolves with the URL it prints, and the child to stop. */
async function startUi(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: home(),
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const found = /https?:\/\/\S+/.exec(out);
      if (found !== null) resolve(found[0].replace(/[",}]+$/, ''));
    });
    child.once('exit', (code) => reject(new Error(`tidemark ui exited with ${code}: ${err}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { url, child, exited };
}

describe('tidemark ui', () => {
  it('serves the sessions of the store at the printed URL and refuses requests without its token', async () => {
    const header = {
      format: 'tidemark-export',
      version: 1,
      meta: { id: 'shown', createdAt: '2026-01-01T00:00:00.000Z' },
      summary: { updatedAt: '2026-01-01T00:00:00.000Z', eventCount: 1, title: 'a title for the browser' },
    };
    const event = { seq: 0, type: 'user/message', time: '2026-01-01T00:00:00.000Z', data: { text: 'hi' } };
    const imported = tidemark(['import'], { input: `${JSON.stringify(header)}\n${JSON.stringify(event)}\n` });
    expect(imported.status, imported.stderr).toBe(0);
    const { url, child, exited } = await startUi(['ui', '--port', '0']);
    try {
      const parsed = new URL(url);
      expect(parsed.hostname).toBe('127.0.0.1');
      const page = await fetch(url);
      expect(page.status).toBe(200);
      const listing = await fetch(new URL('api/sessions', url));
      expect(listing.status).toBe(200);
      expect(await listing.text()).toContain('a title for the browser');
      const withoutToken = await fetch(`${parsed.origin}/`);
      expect(withoutToken.status).toBe(403);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  describe('over a sealed store', () => {
    const key = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
    const header = {
      format: 'tidemark-export',
      version: 1,
      meta: { id: 'sealed1', createdAt: '2026-01-01T00:00:00.000Z' },
      summary: { updatedAt: '2026-01-01T00:00:00.000Z', eventCount: 1, title: 'SECRET-TITLE' },
    };
    const event = {
      seq: 0,
      type: 'user/message',
      time: '2026-01-01T00:00:00.000Z',
      data: { text: 'SECRET-TEXT' },
    };
    const input = `${JSON.stringify(header)}\n${JSON.stringify(event)}\n`;

    /** The list and the session as the browser's API serves them. */
    async function served(env: NodeJS.ProcessEnv): Promise<string> {
      const { url, child, exited } = await startUi(['ui', '--port', '0'], env);
      try {
        const list = await (await fetch(new URL('api/sessions', url))).text();
        const session = await (await fetch(new URL('api/session/sealed1', url))).text();
        return `${list}\n${session}`;
      } finally {
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      }
    }

    it('opens sealed values with the keys', async () => {
      expect(tidemark(['import'], { input, env: { TIDEMARK_KEYS: key } }).status).toBe(0);
      const text = await served({ TIDEMARK_KEYS: key });
      expect(text).toContain('SECRET-TITLE');
      expect(text).toContain('SECRET-TEXT');
    });

    it('shows "sealed" in place of each sealed value without keys', async () => {
      expect(tidemark(['import'], { input, env: { TIDEMARK_KEYS: key } }).status).toBe(0);
      const text = await served({});
      expect(text).not.toContain('SECRET');
      expect(text).not.toContain('ts1.');
      expect(text).toContain('"title":"sealed"');
      expect(text).toContain('"data":"sealed"');
    });
  });

  it('prints the URL as JSON with --json', async () => {
    const { url, child, exited } = await startUi(['ui', '--port', '0', '--json']);
    child.kill('SIGTERM');
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(await exited).toBe(0);
  });

  it('rejects a port that is not a port number', () => {
    const run = tidemark(['ui', '--port', '70000']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--port must be a port number/);
  });
});
