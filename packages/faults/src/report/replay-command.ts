// The commands a report prints to run a reported run again. A backend is named on the command
// line the way the run named it (`--backends jsonl`, `--driver /abs/path/driver.js`), so the
// printed command runs as printed, from any directory.
import { FIRST_PARTY_BACKENDS } from '../drivers/first-party.js';

/** `text` as one shell word (single-quoted unless it is plainly safe). Pure. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:,=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * How the command line selects `backend`: the selector the run recorded (`selectors[backend]`,
 * e.g. `--driver /home/me/proj/driver.js`), else `--backends NAME` for a first-party backend,
 * else `--driver <module of BACKEND>` (a run started from the library API, which knows no module). Pure.
 */
export function backendSelector(backend: string, selectors?: Readonly<Record<string, string>>): string {
  const recorded = selectors?.[backend];
  if (recorded !== undefined) {
    const [flag, ...value] = recorded.split(' ');
    return `${flag} ${shellWord(value.join(' '))}`;
  }
  return (FIRST_PARTY_BACKENDS as readonly string[]).includes(backend)
    ? `--backends ${backend}`
    : `--driver ${shellWord(`<module of ${backend}>`)}`;
}

/** The command that runs one reported run again (`tidemark harness --backends B [--quick] --replay ID`). Pure. */
export function replayCommand(
  backend: string,
  replayId: string,
  quick: boolean,
  selectors?: Readonly<Record<string, string>>,
): string {
  return `tidemark harness ${backendSelector(backend, selectors)}${quick ? ' --quick' : ''} --replay ${shellWord(replayId)}`;
}

/** The command that runs a backend's whole harness run again (for runs without a single-run replay). Pure. */
export function rerunCommand(
  backend: string,
  quick: boolean,
  selectors?: Readonly<Record<string, string>>,
): string {
  return `tidemark harness ${backendSelector(backend, selectors)}${quick ? ' --quick' : ''}`;
}
