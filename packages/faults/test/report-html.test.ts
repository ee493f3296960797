// The HTML report escapes what it shows and gives replay commands that parse (that the same id
// gives the same violation again is packages/jsonl/test/harness/replay.test.ts).
import { describe, expect, it } from 'vitest';
import {
  formatReportHtml,
  type HarnessReport,
  parseHarnessArgs,
  parseReplayId,
  replayCommand,
} from '../src/index.js';

const HOSTILE = `<script>alert("x")</script>&'`;

function hostileReport(): HarnessReport {
  return {
    quick: true,
    startedAt: '2026-01-01T00:00:00.000Z',
    durationMs: 1,
    cells: [
      {
        backend: HOSTILE,
        faultClass: HOSTILE,
        runs: 1,
        faultsInjected: 1,
        errorsSurfaced: 1,
        absences: 0,
        lostEvents: 0,
        violations: 1,
        status: 'fail',
        note: HOSTILE,
        examples: [],
        samples: [
          {
            fault: HOSTILE,
            injected: true,
            firstError: { call: HOSTILE, step: HOSTILE, code: 'IO', errno: HOSTILE, message: HOSTILE },
            violations: [{ kind: 'phantom', detail: HOSTILE }],
            violationCount: 1,
            reproduction: { replayId: HOSTILE, crashState: HOSTILE, operation: 3 },
          },
        ],
      },
    ],
    totals: [],
    failures: [],
    failureCount: 1,
    passed: false,
  };
}

describe('harness-report.html', () => {
  // Guards the escaping: report strings (paths, messages, backend names) never become markup.
  it('escapes every string of the report', () => {
    const html = formatReportHtml(hostileReport());
    expect(html).not.toContain('<script>alert');
    expect(html.match(/<script>/g)).toHaveLength(1); // the page's own, inline
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    expect(html).not.toMatch(/https?:\/\//); // nothing to fetch: a CI artifact opens offline
  });

  it('names the backend in the replay command as the run selected it, quoted for a shell', () => {
    expect(replayCommand('jsonl', 'crash:12:3', true)).toBe(
      'tidemark harness --backends jsonl --quick --replay crash:12:3',
    );
    const selectors = { 'json-dir': "--driver /home/me/my proj/driver's.js" };
    expect(replayCommand('json-dir', 'error:1:EIO:once', false, selectors)).toBe(
      `tidemark harness --driver '/home/me/my proj/driver'\\''s.js' --replay error:1:EIO:once`,
    );
    // A run from the library API knows no module: the command says what to put there.
    expect(replayCommand('json-dir', 'error:1:EIO:once', false)).toBe(
      `tidemark harness --driver '<module of json-dir>' --replay error:1:EIO:once`,
    );
  });

  it('parses the replay ids it gives, and the --replay option', () => {
    expect(parseReplayId('error:17:EIO:once')).toEqual({
      kind: 'error',
      fault: { at: 17, errno: 'EIO', mode: 'once' },
    });
    expect(parseReplayId('error:9:short')).toMatchObject({ fault: { at: 9, shortWrite: true } });
    expect(parseReplayId('crash:44:0')).toEqual({ kind: 'crash', afterOp: 44, stateIndex: 0 });
    expect(() => parseReplayId('error:x:EIO:once')).toThrow(/whole number/);
    expect(() => parseReplayId('kill:3')).toThrow(/unknown replay id/);
    expect(parseHarnessArgs(['--backends', 'jsonl', '--replay', 'crash:1:2']).replay).toBe('crash:1:2');
  });
});
