// The active-session pointer of each project directory: the session an agent continues by default
// in that directory. Prune never touches a session that is active anywhere.
import { join } from 'node:path';
import { assertValidId, TidemarkError } from '@tidemark/core';
import { readTextIfExists, withFileLock, writeFileAtomic } from './files.js';

/** File name of the pointers inside the lifecycle home. */
export const ACTIVE_FILE = 'active.json';

interface ActiveFile {
  version: 1;
  active: Record<string, string>;
}

/** Parses the pointer file. Pure. @throws TidemarkError CORRUPT for anything but a valid file. */
export function parseActiveFile(text: string, file = ACTIVE_FILE): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TidemarkError('CORRUPT', `${file}: not JSON`, { location: { file }, cause: error });
  }
  const active = (value as Partial<ActiveFile> | null)?.active;
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof active !== 'object' ||
    active === null ||
    Array.isArray(active)
  ) {
    throw new TidemarkError('CORRUPT', `${file}: expected { "version": 1, "active": { cwd: id } }`, {
      location: { file },
    });
  }
  const out: Record<string, string> = Object.create(null);
  for (const [cwd, id] of Object.entries(active)) {
    if (typeof id !== 'string')
      throw new TidemarkError('CORRUPT', `${file}: pointer of ${cwd} is not a string`, {
        location: { file },
      });
    out[cwd] = id;
  }
  return out;
}

/**
 * Active-session pointers stored in `<home>/active.json` (0600, replaced atomically). Changes are
 * read-modify-write under an inter-process lock (`active.json.lock`), so two agents setting the
 * pointers of two projects at once both keep theirs.
 */
export class ActivePointers {
  readonly file: string;

  constructor(home: string) {
    this.file = join(home, ACTIVE_FILE);
  }

  /** Every pointer, cwd → session id. An absent file means no pointers; a broken one is CORRUPT. */
  async all(): Promise<Record<string, string>> {
    const text = await readTextIfExists(this.file);
    return text === undefined ? Object.create(null) : parseActiveFile(text, this.file);
  }

  /** The active session of `cwd`, if any. */
  async get(cwd: string): Promise<string | undefined> {
    return (await this.all())[cwd];
  }

  /** Makes `id` the active session of `cwd`. */
  async set(cwd: string, id: string): Promise<void> {
    assertValidId(id);
    if (typeof cwd !== 'string' || cwd === '')
      throw new TidemarkError('INVALID', 'setActive: cwd must be a non-empty string');
    await withFileLock(this.file, async () => {
      const all = await this.all();
      all[cwd] = id;
      await this.write(all);
    });
  }

  /**
   * Removes the pointer of `cwd`; returns the id it pointed to. With `onlyIf`, the pointer is
   * removed only while it still names that session (it may have been moved on since it was read).
   */
  async clear(cwd: string, onlyIf?: string): Promise<string | undefined> {
    return withFileLock(this.file, async () => {
      const all = await this.all();
      const previous = all[cwd];
      if (previous === undefined || (onlyIf !== undefined && previous !== onlyIf)) return undefined;
      delete all[cwd];
      await this.write(all);
      return previous;
    });
  }

  /** The set of session ids active in any project. */
  async ids(): Promise<Set<string>> {
    return new Set(Object.values(await this.all()));
  }

  private async write(active: Record<string, string>): Promise<void> {
    const sorted = Object.fromEntries(
      Object.entries(active).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    await writeFileAtomic(this.file, `${JSON.stringify({ version: 1, active: sorted }, null, 2)}\n`);
  }
}
