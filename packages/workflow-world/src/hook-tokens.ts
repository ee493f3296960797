// A hook token belongs to one live hook across every run of the World. Each token has a session
// of claims (`wtok_` + the token's hash): the last claim is the holder. A claim is appended at the
// log's next seq, so two runs claiming at once cannot both win. Whether the holder still holds the
// token is read from its run's log (the hook neither disposed nor ended with its run), so a
// release that a crash never wrote cannot keep a token taken forever.
import { createHash } from 'node:crypto';
import { isTidemarkError, type SessionStore, TidemarkError } from '@tidemark/core';
import type { RunLogs } from './run-log.js';
import { backoff, MAX_REPLANS, reserve } from './run-log.js';

const CLAIM = 'workflow/token-claim';

/** The hook holding a token. */
export interface TokenClaim {
  runId: string;
  hookId: string;
}

/** The id of a hook token's session of claims: `wtok_` and 48 hex digits of the token's SHA-256. */
export const tokenSessionId = (token: string): string =>
  `wtok_${createHash('sha256').update(token).digest('hex').slice(0, 48)}`;

/** The token logs of one World: who holds each hook token. */
export class HookTokens {
  constructor(
    private readonly store: SessionStore,
    private readonly runs: RunLogs,
    private readonly cwd: string,
  ) {}

  /** The last claim of the token and the seq after it; no claim when the token was never used. */
  private async last(token: string): Promise<{ claim: TokenClaim | undefined; nextSeq: number }> {
    const id = tokenSessionId(token);
    let claim: TokenClaim | undefined;
    let nextSeq = 0;
    try {
      for await (const event of this.store.read(id, { last: 1 })) {
        const data = event.data as { runId?: unknown; hookId?: unknown } | null;
        if (event.type !== CLAIM || typeof data?.runId !== 'string' || typeof data.hookId !== 'string')
          throw new TidemarkError('CORRUPT', `hook token log ${id}: seq ${event.seq} is not a claim`, {
            sessionId: id,
          });
        claim = { runId: data.runId, hookId: data.hookId };
        nextSeq = event.seq + 1;
      }
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    return { claim, nextSeq };
  }

  /** True while the claim's hook is live or still being created (its run not ended, not disposed). */
  private async holds(claim: TokenClaim): Promise<boolean> {
    const view = await this.runs.view(claim.runId);
    if (view.run === undefined) return false;
    if (view.disposedHooks.has(claim.hookId)) return false;
    return !['completed', 'failed', 'cancelled'].includes(view.run.status);
  }

  /**
   * Claims the token for a hook. Resolves with undefined when the hook holds it (now or already),
   * or with the run of the live hook that holds it.
   */
  async claim(token: string, claimant: TokenClaim): Promise<string | undefined> {
    const id = tokenSessionId(token);
    for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
      await backoff(attempt);
      const { claim, nextSeq } = await this.last(token);
      if (claim !== undefined && claim.runId === claimant.runId && claim.hookId === claimant.hookId)
        return undefined;
      if (claim !== undefined && (await this.holds(claim))) return claim.runId;
      if (nextSeq === 0) await reserve(this.store, id, this.cwd);
      try {
        await this.store.append(id, [
          { seq: nextSeq, type: CLAIM, time: new Date().toISOString(), data: { ...claimant } },
        ]);
        return undefined;
      } catch (error) {
        if (!isTidemarkError(error, 'CONFLICT')) throw error;
      }
    }
    throw new TidemarkError('CONFLICT', `hook token log ${id}: lost the next seq ${MAX_REPLANS} times`, {
      sessionId: id,
    });
  }

  /** The live hook holding the token, if any. */
  async holder(token: string): Promise<TokenClaim | undefined> {
    const { claim } = await this.last(token);
    if (claim === undefined) return undefined;
    const view = await this.runs.view(claim.runId);
    return view.hooks.has(claim.hookId) ? claim : undefined;
  }
}
