// verify on a sealed store: the inner store checks its records; with keys, every event of each
// readable session is then opened too (read-only, through `read`), so tampering shows as a
// `corrupt` problem with its seq, as `load` would report it. Sealed summary fields are checked by
// `list`, which reports a summary that does not open in `problems`.
import type { MaintenanceProblem, SessionHealth, SessionStore, VerifyReport } from '@tidemark/core';
import { TidemarkError } from '@tidemark/core';
import { SealedEventOpener } from './batch.js';
import type { Keyring } from './keyring.js';

async function openProblem(
  inner: SessionStore,
  keyring: Keyring,
  id: string,
): Promise<MaintenanceProblem | undefined> {
  try {
    const opener = new SealedEventOpener(keyring, id);
    for await (const event of inner.read(id)) opener.open(event);
    return undefined;
  } catch (error) {
    if (!(error instanceof TidemarkError) || error.code !== 'CORRUPT') return undefined;
    const problem: MaintenanceProblem = { kind: 'corrupt', sessionId: id, message: error.message };
    if (error.location?.seq !== undefined) problem.seq = error.location.seq;
    return problem;
  }
}

/** The inner report with the sealed records of every ok or interrupted session opened as well. */
export async function verifySealed(
  inner: SessionStore,
  keyring: Keyring,
  report: VerifyReport,
): Promise<VerifyReport> {
  const sessions: SessionHealth[] = [];
  const problems: MaintenanceProblem[] = [];
  for (const health of report.sessions) {
    let next = health;
    if (health.status === 'ok' || health.status === 'interrupted') {
      const problem = await openProblem(inner, keyring, health.sessionId);
      if (problem !== undefined)
        next = { ...health, status: 'corrupt', problems: [...health.problems, problem] };
    }
    sessions.push(next);
    problems.push(...next.problems);
  }
  return { checked: report.checked, sessions, problems };
}
