// The session browser's front end, compiled at build time into one script inlined in the page.
// It reads the JSON API and builds the DOM with createElement and text nodes only (never
// innerHTML), so a title such as `<img src=x onerror=…>` is shown as text.

interface ErrorJson {
  code: string;
  message: string;
  location?: { file?: string; offset?: number; table?: string; row?: string; seq?: number };
}
interface Summary {
  id: string;
  createdAt: string;
  updatedAt: string;
  cwd?: string;
  parent?: { id: string; seq: number };
  eventCount: number;
  committedSeq: number;
  interrupted: boolean;
  title?: string;
  firstPrompt?: string;
  tags?: string[];
}
interface Problem {
  id: string;
  error: ErrorJson;
}
interface ListResponse {
  sessions: Summary[];
  problems: Problem[];
  nextCursor?: string;
  scanned?: number;
}
interface SessionEvent {
  seq: number;
  type: string;
  time: string;
  data: unknown;
}
interface Health {
  status: string;
  problems: {
    kind: string;
    message: string;
    seq?: number;
    offset?: number;
    file?: string;
    row?: string;
    table?: string;
  }[];
}
interface SessionView {
  id: string;
  summary?: Summary;
  summaryProblem?: Problem;
  summaryMissing?: string;
  events: SessionEvent[];
  from: number;
  nextFrom?: number;
  readError?: ErrorJson;
  health?: Health;
  healthError?: ErrorJson;
  committedSeq: number;
  interrupted: boolean;
}

type Child = Node | string | undefined | false;

/** An element with attributes and children; strings become text nodes. */
function h(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  for (const child of children) {
    if (child === undefined || child === false) continue;
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}

/** Replaces the page's content, leaving out absent children. */
function show(...children: Child[]): void {
  app.replaceChildren(
    ...children.filter((child): child is Node | string => child !== undefined && child !== false),
  );
}

const base = `/${location.pathname.split('/')[1] ?? ''}/`;
const app = document.getElementById('app') as HTMLElement;

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(base + path, { credentials: 'omit' });
  const body = (await response.json()) as T | { error: ErrorJson };
  if (!response.ok) throw (body as { error: ErrorJson }).error;
  return body as T;
}

function locationText(location: ErrorJson['location'] | Health['problems'][number]): string {
  if (location === undefined) return '';
  const parts = [
    location.file,
    location.offset === undefined ? undefined : `offset ${location.offset}`,
    location.table,
    location.row,
    location.seq === undefined ? undefined : `seq ${location.seq}`,
  ].filter((part): part is string => part !== undefined);
  return parts.join(', ');
}

function errorBox(title: string, error: ErrorJson): HTMLElement {
  const where = locationText(error.location);
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('strong', {}, title, ' ', h('code', {}, error.code)),
    h('div', {}, error.message),
    where !== '' && h('div', { class: 'where' }, `at ${where}`),
  );
}

function age(iso: string): string {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.floor(seconds)}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

function sessionHref(id: string, updatedAt?: string): string {
  return `${base}session/${encodeURIComponent(id)}${updatedAt === undefined ? '' : `?at=${encodeURIComponent(updatedAt)}`}`;
}

function header(...extra: Child[]): HTMLElement {
  return h(
    'header',
    {},
    h('a', { href: base, class: 'brand' }, 'tidemark'),
    h('span', { class: 'muted' }, 'sessions'),
    ...extra,
  );
}

// ---- the list ----

function problemsSection(problems: Problem[]): HTMLElement | undefined {
  if (problems.length === 0) return undefined;
  return h(
    'section',
    { class: 'problems', 'data-testid': 'problems' },
    h('h2', {}, `${problems.length} session(s) the store could not describe`),
    ...problems.map((problem) =>
      h(
        'div',
        { class: 'problem-row' },
        h('a', { href: sessionHref(problem.id) }, problem.id),
        errorBox('', problem.error),
      ),
    ),
  );
}

function sessionRow(summary: Summary): HTMLElement {
  const title = summary.title ?? summary.firstPrompt ?? summary.id;
  return h(
    'tr',
    { 'data-id': summary.id },
    h('td', { class: 'when', title: summary.updatedAt }, age(summary.updatedAt)),
    h(
      'td',
      {},
      h('a', { href: sessionHref(summary.id, summary.updatedAt), class: 'title' }, title),
      summary.title !== undefined &&
        summary.firstPrompt !== undefined &&
        h('div', { class: 'prompt' }, summary.firstPrompt),
      summary.parent !== undefined &&
        h('div', { class: 'muted' }, `forked from ${summary.parent.id} @ ${summary.parent.seq}`),
    ),
    h('td', { class: 'cwd' }, summary.cwd ?? ''),
    h('td', {}, ...(summary.tags ?? []).map((tag) => h('span', { class: 'tag' }, tag))),
    h('td', { class: 'num' }, String(summary.eventCount)),
    h(
      'td',
      {},
      summary.interrupted
        ? h('span', { class: 'badge warn' }, 'interrupted')
        : h('span', { class: 'badge ok' }, 'committed'),
    ),
  );
}

async function showList(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const q = params.get('q') ?? '';
  const cursor = params.get('cursor') ?? '';
  const query = new URLSearchParams();
  if (q !== '') query.set('q', q);
  if (cursor !== '') query.set('cursor', cursor);
  const form = h(
    'form',
    { method: 'get', action: base, class: 'search', role: 'search' },
    h('input', {
      type: 'search',
      name: 'q',
      value: q,
      placeholder: 'Search title, first prompt, cwd, tag',
      'aria-label': 'Search',
    }),
    h('button', { type: 'submit' }, 'Search'),
  );
  show(header(form), h('p', { class: 'muted' }, 'Loading…'));
  const page = await getJson<ListResponse>(`${q === '' ? 'api/sessions' : 'api/search'}?${query}`);
  const next = new URLSearchParams(query);
  if (page.nextCursor !== undefined) next.set('cursor', page.nextCursor);
  const status =
    q === ''
      ? `${page.sessions.length} session(s), newest first`
      : `${page.sessions.length} match(es) for “${q}” in ${page.scanned ?? 0} session(s) looked at`;
  show(
    header(form),
    problemsSection(page.problems),
    h('p', { class: 'muted', 'data-testid': 'status' }, status),
    h(
      'table',
      { class: 'sessions' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['updated', 'session', 'cwd', 'tags', 'events', 'state'].map((name) => h('th', {}, name)),
        ),
      ),
      h('tbody', {}, ...page.sessions.map(sessionRow)),
    ),
    h(
      'nav',
      { class: 'pager' },
      (cursor !== '' || q !== '') &&
        h('a', { href: q === '' ? base : `${base}?q=${encodeURIComponent(q)}` }, '« first page'),
      page.nextCursor !== undefined &&
        h('a', { href: `${base}?${next}`, rel: 'next' }, q === '' ? 'next page »' : 'continue searching »'),
    ),
  );
}

// ---- one session ----

function fieldsOf(data: unknown): Record<string, unknown> | undefined {
  return data !== null && typeof data === 'object' && !Array.isArray(data)
    ? (data as Record<string, unknown>)
    : undefined;
}

function textOf(data: unknown): string {
  if (typeof data === 'string') return data;
  const fields = fieldsOf(data);
  for (const key of ['text', 'content', 'message', 'output', 'result', 'error']) {
    if (typeof fields?.[key] === 'string') return fields[key] as string;
  }
  return JSON.stringify(data, null, 2);
}

function callIdOf(data: unknown): string | undefined {
  const fields = fieldsOf(data);
  const id = fields?.callId ?? fields?.toolCallId ?? fields?.id;
  return typeof id === 'string' ? id : undefined;
}

const LONG_TEXT = 400;

/** Text in a <pre>, collapsed behind its first line when long. */
function body(text: string): HTMLElement {
  if (text.length <= LONG_TEXT && text.split('\n').length <= 8) return h('pre', {}, text);
  const preview = `${text.slice(0, 120).split('\n')[0]}… (${text.length} characters)`;
  return h('details', {}, h('summary', {}, preview), h('pre', {}, text));
}

function meta(event: SessionEvent): HTMLElement {
  return h('span', { class: 'meta', title: event.time }, `#${event.seq} ${event.time.slice(11, 19)}`);
}

function toolCard(call: SessionEvent, result: SessionEvent | undefined): HTMLElement {
  const fields = fieldsOf(call.data);
  const name = fields?.name ?? fields?.tool ?? fields?.toolName;
  const input = fields?.input ?? fields?.args ?? fields?.arguments;
  const failed = result !== undefined && fieldsOf(result.data)?.error !== undefined;
  return h(
    'div',
    { class: `event tool${failed ? ' failed' : ''}`, 'data-seq': String(call.seq) },
    h(
      'div',
      { class: 'who' },
      meta(call),
      ' tool ',
      h('strong', {}, typeof name === 'string' ? name : '?'),
      callIdOf(call.data) !== undefined && h('span', { class: 'muted' }, ` [${callIdOf(call.data)}]`),
    ),
    body(input === undefined ? textOf(call.data) : JSON.stringify(input, null, 2)),
    result === undefined
      ? h('div', { class: 'muted' }, 'no result')
      : h(
          'div',
          { class: 'result' },
          h('div', { class: 'who' }, meta(result), failed ? ' ✗ result' : ' ← result'),
          body(textOf(result.data)),
        ),
  );
}

function eventNode(event: SessionEvent, results: Map<string, SessionEvent>, turn: number): HTMLElement {
  switch (event.type) {
    case 'turn/start':
      return h('div', { class: 'boundary start' }, meta(event), ` turn ${turn}`);
    case 'turn/end':
    case 'session/end':
      return h(
        'div',
        { class: 'boundary end' },
        meta(event),
        ` ${event.type === 'turn/end' ? `end of turn ${turn}` : 'end of session'} (boundary)`,
      );
    case 'user/message':
      return h(
        'div',
        { class: 'event user' },
        h('div', { class: 'who' }, meta(event), ' user'),
        body(textOf(event.data)),
      );
    case 'assistant/message':
    case 'model/message':
    case 'model/step':
      return h(
        'div',
        { class: 'event assistant' },
        h('div', { class: 'who' }, meta(event), ' assistant'),
        body(textOf(event.data)),
      );
    case 'tool/call': {
      const id = callIdOf(event.data);
      return toolCard(event, id === undefined ? undefined : results.get(id));
    }
    default:
      return h(
        'div',
        { class: 'event other' },
        h('div', { class: 'who' }, meta(event), ` ${event.type}`),
        body(textOf(event.data)),
      );
  }
}

function timeline(view: SessionView): HTMLElement {
  const calls = new Set(view.events.filter((e) => e.type === 'tool/call').map((e) => callIdOf(e.data)));
  const results = new Map<string, SessionEvent>();
  for (const event of view.events) {
    const id = callIdOf(event.data);
    if (event.type === 'tool/result' && id !== undefined && calls.has(id) && !results.has(id))
      results.set(id, event);
  }
  const paired = new Set(results.values());
  const committed = h('div', { class: 'committed' });
  const tail = h('div', { class: 'tail', 'data-testid': 'interrupted-tail' });
  let turn = 0;
  for (const event of view.events) {
    if (paired.has(event)) continue;
    if (event.type === 'turn/start') turn++;
    (view.interrupted && event.seq > view.committedSeq ? tail : committed).append(
      eventNode(event, results, turn),
    );
  }
  if (tail.childNodes.length > 0) {
    tail.prepend(
      h(
        'div',
        { class: 'tail-mark' },
        `Interrupted tail: events after the last boundary (seq ${view.committedSeq}); a turn that never finished.`,
      ),
    );
  }
  return h('section', { class: 'timeline' }, committed, tail.childNodes.length > 0 && tail);
}

function healthNode(view: SessionView): HTMLElement | undefined {
  if (view.healthError !== undefined) return errorBox('verify failed:', view.healthError);
  if (view.health === undefined) return h('span', { class: 'badge' }, 'verify: not offered by this store');
  const status = view.health.status;
  return h(
    'div',
    { class: 'health', 'data-testid': 'verify' },
    h(
      'span',
      { class: `badge ${status === 'ok' ? 'ok' : status === 'interrupted' ? 'warn' : 'bad'}` },
      `verify: ${status}`,
    ),
    ...view.health.problems.map((p) =>
      h(
        'div',
        { class: 'muted' },
        `${p.kind}: ${p.message}`,
        locationText(p) !== '' && ` (at ${locationText(p)})`,
      ),
    ),
  );
}

function sessionHeader(view: SessionView): HTMLElement {
  const s = view.summary;
  const facts: [string, Child][] = [
    ['id', h('code', {}, view.id)],
    ['cwd', s?.cwd],
    ['created', s?.createdAt],
    ['updated', s?.updatedAt],
    ['events', s === undefined ? undefined : `${s.eventCount}, committed through seq ${view.committedSeq}`],
    [
      'parent',
      s?.parent !== undefined &&
        h(
          'a',
          { href: sessionHref(s.parent.id), 'data-testid': 'parent' },
          `${s.parent.id} @ seq ${s.parent.seq}`,
        ),
    ],
    [
      'tags',
      s?.tags !== undefined &&
        s.tags.length > 0 &&
        h('span', {}, ...s.tags.map((tag) => h('span', { class: 'tag' }, tag))),
    ],
  ];
  return h(
    'section',
    { class: 'session-head' },
    h('h1', {}, s?.title ?? s?.firstPrompt ?? view.id),
    h(
      'dl',
      {},
      ...facts
        .filter(([, v]) => v !== undefined && v !== false)
        .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    h(
      'div',
      { class: 'actions' },
      view.interrupted && h('span', { class: 'badge warn' }, 'interrupted'),
      healthNode(view),
      h(
        'a',
        {
          href: `${base}api/session/${encodeURIComponent(view.id)}/export`,
          download: `${view.id}.jsonl`,
          class: 'button',
        },
        'Export JSONL',
      ),
    ),
    view.summaryProblem !== undefined &&
      errorBox('The summary could not be read:', view.summaryProblem.error),
    view.summaryMissing !== undefined && h('p', { class: 'muted' }, `Summary: ${view.summaryMissing}`),
  );
}

async function showSession(id: string): Promise<void> {
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const name of ['at', 'from']) if (params.get(name) !== null) query.set(name, params.get(name) ?? '');
  show(header(), h('p', { class: 'muted' }, 'Loading…'));
  const view = await getJson<SessionView>(`api/session/${encodeURIComponent(id)}?${query}`);
  const more = new URLSearchParams(query);
  if (view.nextFrom !== undefined) more.set('from', String(view.nextFrom));
  show(
    header(),
    sessionHeader(view),
    view.readError !== undefined &&
      errorBox(
        `Reading stopped after ${view.events.length} event(s): the session is damaged.`,
        view.readError,
      ),
    view.from > 0 && h('p', {}, h('a', { href: sessionHref(id) }, `« events before seq ${view.from}`)),
    timeline(view),
    view.nextFrom !== undefined &&
      h('p', {}, h('a', { href: `${sessionHref(id)}?${more}` }, `events from seq ${view.nextFrom} »`)),
  );
  document.title = `${view.summary?.title ?? view.id} · tidemark`;
}

async function main(): Promise<void> {
  const rest = location.pathname.slice(base.length);
  try {
    if (rest.startsWith('session/')) await showSession(decodeURIComponent(rest.slice('session/'.length)));
    else await showList();
  } catch (error) {
    const typed =
      (error as ErrorJson).code !== undefined ? (error as ErrorJson) : { code: 'IO', message: String(error) };
    show(header(), errorBox('Could not load:', typed));
  }
}

void main();
