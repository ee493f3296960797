// Pure text rendering for the CLI: tables, the session timeline, durations, a progress bar, and
// colours that are only used on a terminal without NO_COLOR.
import type { SessionEvent, SessionSummary } from '@tidemark/core';

/** ANSI styling, or identity functions when colour is off. */
export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  green(text: string): string;
  cyan(text: string): string;
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

/**
 * Whether to colour a stream: never with NO_COLOR set (non-empty); FORCE_COLOR decides next
 * (`0`/`false` off, any other non-empty value on, as CI logs that render ANSI ask); else only on a
 * terminal whose TERM is not `dumb`.
 */
export function colourOn(isTty: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  return isTty && env.TERM !== 'dumb';
}

/** ANSI styles for a stream ({@link colourOn}), or identity functions. */
export function makeStyle(isTty: boolean, env: NodeJS.ProcessEnv = process.env): Style {
  const on = colourOn(isTty, env);
  const id = (text: string) => text;
  if (!on) return { bold: id, dim: id, red: id, yellow: id, green: id, cyan: id };
  return {
    bold: ansi(1, 22),
    dim: ansi(2, 22),
    red: ansi(31, 39),
    yellow: ansi(33, 39),
    green: ansi(32, 39),
    cyan: ansi(36, 39),
  };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping ANSI escapes is the point
const ANSI_PATTERN = /\u001b\[[0-9;]*m/g;

/** Visible width of a string (ANSI escapes do not count). */
export function visibleLength(text: string): number {
  return text.replace(ANSI_PATTERN, '').length;
}

/** Cuts `text` to `max` characters with an ellipsis; newlines become spaces. */
export function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) =>
    Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? ''))),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visibleLength(cell))))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** "3m ago" style age of `time` at `now`. */
export function age(time: string, now: Date): string {
  const ms = now.getTime() - Date.parse(time);
  if (!Number.isFinite(ms)) return '?';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h}h ago`;
  return `${Math.round(h / 24)}d ago`;
}

/** Rows of `tidemark list`. */
export function listRows(sessions: readonly SessionSummary[], now: Date, style: Style): string[][] {
  return sessions.map((s) => [
    s.id,
    age(s.updatedAt, now),
    String(s.eventCount),
    s.interrupted ? style.yellow('interrupted') : style.green('ok'),
    s.cwd ?? '-',
    truncate(s.title ?? s.firstPrompt ?? '', 60),
  ]);
}

/** The header of `tidemark list`. */
export const LIST_HEADER = ['ID', 'UPDATED', 'EVENTS', 'STATE', 'CWD', 'TITLE'] as const;

function textOf(data: unknown): string | undefined {
  if (typeof data === 'string') return data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const d = data as Record<string, unknown>;
  for (const key of ['text', 'content', 'message', 'error', 'output', 'result']) {
    if (typeof d[key] === 'string') return d[key] as string;
  }
  return undefined;
}

function compact(data: unknown, max: number): string {
  const text = textOf(data);
  if (text !== undefined) return truncate(text, max);
  return data === null || data === undefined ? '' : truncate(JSON.stringify(data), max);
}

/** The fields of an event's data when it is an object (not null, not an array). */
function objectFields(data: unknown): Record<string, unknown> | undefined {
  return data !== null && typeof data === 'object' && !Array.isArray(data)
    ? (data as Record<string, unknown>)
    : undefined;
}

/**
 * A readable timeline: turns as headed groups, user and assistant messages, tool calls with their
 * results (matched by `callId`/`id` when present), and a marker for an interrupted tail.
 */
export function renderTimeline(
  events: readonly SessionEvent[],
  committedSeq: number,
  style: Style,
  width = 100,
): string {
  const lines: string[] = [];
  let turn = 0;
  const indent = (depth: number) => '  '.repeat(depth);
  let inTurn = false;
  for (const event of events) {
    const seq = style.dim(`#${event.seq}`.padStart(5));
    const time = style.dim(event.time.slice(11, 19));
    const fields = objectFields(event.data);
    const callId = (fields?.callId ?? fields?.id ?? fields?.toolCallId) as string | undefined;
    const name = fields?.name ?? fields?.tool;
    const idText = typeof callId === 'string' ? style.dim(` [${callId}]`) : '';
    switch (event.type) {
      case 'turn/start':
        turn++;
        inTurn = true;
        lines.push(`${seq} ${time} ${style.bold(`── turn ${turn} ──`)}`);
        break;
      case 'turn/end':
        inTurn = false;
        lines.push(`${seq} ${time} ${style.dim(`── end of turn ${turn} ──`)}`);
        break;
      case 'user/message':
        lines.push(
          `${seq} ${time} ${indent(inTurn ? 1 : 0)}${style.cyan('user')}: ${compact(event.data, width)}`,
        );
        break;
      case 'assistant/message':
      case 'model/message':
      case 'model/step':
        lines.push(
          `${seq} ${time} ${indent(inTurn ? 1 : 0)}${style.green('assistant')}: ${compact(event.data, width)}`,
        );
        break;
      case 'tool/call':
        lines.push(
          `${seq} ${time} ${indent(inTurn ? 1 : 0)}→ tool ${style.bold(typeof name === 'string' ? name : '?')}${idText} ${compact(fields?.input ?? fields?.args ?? '', width - 20)}`,
        );
        break;
      case 'tool/result': {
        const failed = fields !== undefined && fields.error !== undefined;
        const mark = failed ? style.red('✗ result') : '← result';
        lines.push(
          `${seq} ${time} ${indent(inTurn ? 1 : 0)}${mark}${idText} ${compact(event.data, width - 20)}`,
        );
        break;
      }
      default:
        lines.push(
          `${seq} ${time} ${indent(inTurn ? 1 : 0)}${style.dim(event.type)} ${compact(event.data, width)}`,
        );
    }
  }
  const last = events[events.length - 1];
  if (last !== undefined && last.seq > committedSeq) {
    lines.push(
      style.yellow(
        `(interrupted: ${last.seq - committedSeq} event(s) after the last boundary at seq ${committedSeq})`,
      ),
    );
  }
  return lines.join('\n');
}

/** A progress bar line such as `[#####-----]  50% 5/10 sessions`. */
export function progressBar(done: number, total: number, label: string, width = 30): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}% ${done}/${total} ${label}`;
}
