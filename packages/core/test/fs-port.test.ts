import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../src/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tidemark-fs-port-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('nodeFileSystem reads', () => {
  it('read regular files', async () => {
    writeFileSync(join(dir, 'a.json'), '{"ok":true}');
    expect(Buffer.from(await nodeFileSystem.readFile(join(dir, 'a.json'))).toString()).toBe('{"ok":true}');
    const handle = await nodeFileSystem.open(join(dir, 'a.json'), 'r');
    const buffer = Buffer.alloc(4);
    expect(await handle.read(buffer, 0, 4, 1)).toBe(4);
    expect(buffer.toString()).toBe('"ok"');
    await handle.close();
  });

  it('refuse a planted FIFO instead of blocking forever', async () => {
    const fifo = join(dir, 's.summary.json');
    execFileSync('mkfifo', [fifo]);
    await expect(nodeFileSystem.readFile(fifo)).rejects.toMatchObject({ code: 'EINVAL' });
    await expect(nodeFileSystem.open(fifo, 'r')).rejects.toMatchObject({ code: 'EINVAL' });
  });

  it('refuse a planted link (here to an endless device) at the last component', async () => {
    const link = join(dir, 's.jsonl');
    symlinkSync('/dev/zero', link);
    await expect(nodeFileSystem.readFile(link)).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(nodeFileSystem.open(link, 'r')).rejects.toMatchObject({ code: 'ELOOP' });
  });

  it('keep ENOENT for a missing file, the one errno that means absence', async () => {
    await expect(nodeFileSystem.readFile(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
