// Just enough of the PostgreSQL wire protocol (v3) to recognise a COMMIT in the frontend stream and
// the reply to it in the backend stream. Bodies are kept only up to a small cap: a message longer
// than that is never a COMMIT, and COPY data or big binds must not be buffered.

/** Longest body kept for inspection; a longer Query or Parse cannot be a bare COMMIT. */
const BODY_CAP = 1024;
/** Startup-phase request codes answered by the server before the real startup message. */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** `COMMIT`, `END`, optionally `WORK`/`TRANSACTION`, optional `;`, comments and blanks around. */
const COMMIT_SQL = /^(?:COMMIT|END)(?:\s+(?:WORK|TRANSACTION))?\s*;?\s*$/i;

function stripLeadingComments(sql: string): string {
  let rest = sql.trimStart();
  for (;;) {
    if (rest.startsWith('--')) {
      const nl = rest.indexOf('\n');
      rest = nl < 0 ? '' : rest.slice(nl + 1).trimStart();
    } else if (rest.startsWith('/*')) {
      const end = rest.indexOf('*/');
      rest = end < 0 ? '' : rest.slice(end + 2).trimStart();
    } else return rest;
  }
}

/** Whether a statement's SQL is a bare COMMIT or END (not COMMIT PREPARED, not part of a batch). */
export function isCommitSql(sql: string): boolean {
  return COMMIT_SQL.test(stripLeadingComments(sql));
}

/**
 * Whether a statement's SQL writes rows: INSERT, UPDATE, DELETE or MERGE, alone or inside a WITH
 * (a data-modifying CTE). Outside BEGIN such a statement is its own transaction, so its reply is
 * the reply to a commit (a store whose appends are single autocommit statements commits that way).
 */
export function isWriteSql(sql: string): boolean {
  const text = stripLeadingComments(sql);
  return (
    /^(?:INSERT|UPDATE|DELETE|MERGE)\b/i.test(text) ||
    /^WITH\b[\s\S]*\b(?:INSERT|UPDATE|DELETE)\b/i.test(text)
  );
}

/** What kind of statement a frontend message runs. */
type StatementKind = 'commit' | 'write' | 'other';

function kindOfSql(sql: string): StatementKind {
  if (isCommitSql(sql)) return 'commit';
  return isWriteSql(sql) ? 'write' : 'other';
}

function cstring(body: Buffer, from: number): { text: string; next: number } | undefined {
  const end = body.indexOf(0, from);
  return end < 0 ? undefined : { text: body.toString('utf8', from, end), next: end + 1 };
}

/** A complete message: its type byte (`''` for startup-phase messages) and its (capped) body. */
interface WireMessage {
  type: string;
  length: number;
  body: Buffer;
}

/**
 * Incremental framer: feed it chunks, get each complete message once. `startup` streams (the
 * frontend side) begin with untyped messages until the real startup message has gone by.
 */
class Framer {
  private header = Buffer.alloc(0);
  private body: Buffer[] = [];
  private kept = 0;
  private remaining = -1;
  private current: { type: string; length: number } | undefined;

  constructor(private startup: boolean) {}

  /** Splits `chunk` into messages, calling `onMessage` for each one completed in it. */
  feed(chunk: Buffer, onMessage: (message: WireMessage) => void): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.current === undefined) {
        const headerLength = this.startup ? 4 : 5;
        const take = Math.min(headerLength - this.header.length, chunk.length - at);
        this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)]);
        at += take;
        if (this.header.length < headerLength) return;
        const type = this.startup ? '' : String.fromCharCode(this.header[0]!);
        const length = this.header.readInt32BE(this.startup ? 0 : 1);
        this.current = { type, length };
        this.remaining = length - 4;
        this.header = Buffer.alloc(0);
      }
      const take = Math.min(this.remaining, chunk.length - at);
      const keep = Math.min(take, BODY_CAP - this.kept);
      if (keep > 0) {
        this.body.push(chunk.subarray(at, at + keep));
        this.kept += keep;
      }
      at += take;
      this.remaining -= take;
      if (this.remaining > 0) return;
      const message = { ...this.current, body: Buffer.concat(this.body) };
      this.current = undefined;
      this.body = [];
      this.kept = 0;
      if (message.type === '' && message.body.length >= 4) {
        const code = message.body.readInt32BE(0);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.startup = false;
      }
      onMessage(message);
    }
  }
}

/** Statements of each kind completed in a chunk of the frontend stream. */
export interface FrontendStatements {
  /** COMMIT/END. */
  commits: number;
  /** INSERT/UPDATE/DELETE/MERGE, also inside a WITH (see {@link isWriteSql}). */
  writes: number;
}

/**
 * Watches the frontend (client → server) stream and reports when a COMMIT (or a writing
 * statement) is sent: a simple Query with such SQL, or an extended-protocol Execute of a portal
 * bound to a statement parsed from it (named statements are remembered across messages). A simple
 * Query holding several statements counts by its first one.
 */
export class FrontendCommitWatcher {
  private readonly framer = new Framer(true);
  private readonly statements = new Map<string, StatementKind>();
  private readonly portals = new Map<string, StatementKind>();

  /** Feeds a chunk; returns how many COMMIT messages were completed in it. */
  feed(chunk: Buffer): number {
    return this.feedStatements(chunk).commits;
  }

  /** Feeds a chunk; returns how many COMMITs and writing statements were completed in it. */
  feedStatements(chunk: Buffer): FrontendStatements {
    const seen: FrontendStatements = { commits: 0, writes: 0 };
    this.framer.feed(chunk, (message) => {
      const kind = this.kindOf(message);
      if (kind === 'commit') seen.commits++;
      else if (kind === 'write') seen.writes++;
    });
    return seen;
  }

  private kindOf({ type, length, body }: WireMessage): StatementKind {
    const complete = length - 4 === body.length;
    switch (type) {
      case 'Q': {
        // A Query longer than the cap is cut: never a COMMIT, but its start still tells a write.
        const kind = kindOfSql(cstring(body, 0)?.text ?? body.toString('utf8'));
        return kind === 'commit' && !complete ? 'other' : kind;
      }
      case 'P': {
        const name = cstring(body, 0);
        if (name === undefined) return 'other';
        const sql = cstring(body, name.next);
        // A long statement is cut at the cap: it cannot be a COMMIT, but its start tells a write.
        const text = sql?.text ?? body.toString('utf8', name.next);
        const kind = kindOfSql(text);
        this.statements.set(name.text, kind === 'commit' && !complete ? 'other' : kind);
        return 'other';
      }
      case 'B': {
        const portal = cstring(body, 0);
        const statement = portal && cstring(body, portal.next);
        if (portal && statement)
          this.portals.set(portal.text, this.statements.get(statement.text) ?? 'other');
        return 'other';
      }
      case 'E': {
        const portal = cstring(body, 0);
        return portal === undefined ? 'other' : (this.portals.get(portal.text) ?? 'other');
      }
      default:
        return 'other';
    }
  }
}

/** What the server answered to a cut COMMIT, as far as it was seen. */
export interface BackendReply {
  /** Command tags of CommandComplete messages (`COMMIT`, or `ROLLBACK` for a failed transaction). */
  tags: string[];
  /** SQLSTATEs of ErrorResponse messages. */
  errors: string[];
  /** True once ReadyForQuery arrived: the server has finished with the COMMIT. */
  ready: boolean;
}

/** Watches the backend (server → client) stream for the reply to a COMMIT. */
export class BackendReplyWatcher {
  private readonly framer = new Framer(false);
  readonly reply: BackendReply = { tags: [], errors: [], ready: false };

  /** Feeds a chunk of the server's output; returns the reply seen so far. */
  feed(chunk: Buffer): BackendReply {
    this.framer.feed(chunk, ({ type, body }) => {
      if (type === 'C') this.reply.tags.push(cstring(body, 0)?.text ?? '');
      else if (type === 'Z') this.reply.ready = true;
      else if (type === 'E') this.reply.errors.push(errorField(body, 'C') ?? '');
    });
    return this.reply;
  }
}

/** A field (e.g. `C`, the SQLSTATE) of an ErrorResponse body. */
function errorField(body: Buffer, field: string): string | undefined {
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at]!);
    const value = cstring(body, at + 1);
    if (value === undefined) return undefined;
    if (code === field) return value.text;
    at = value.next;
  }
  return undefined;
}
