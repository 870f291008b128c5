// allot dashboard (docs/dashboard.md). Plain JavaScript, no framework and nothing fetched from elsewhere.
// The token stays in sessionStorage (this tab only) and travels in the Authorization header, never in a URL.
// Pages follow the server's event stream (GET /v1/events, long-polled) and read again when something happens;
// each read is an aggregate or one page (GET /v1/dashboard/..., GET /v1/jobs/NAME), never the whole state.
// Text from the server is always set as text (textContent), never parsed as HTML.
'use strict';

const TOKEN_KEY = 'allot-token';
const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  cursor: null,         // the last event seen
  route: null,          // {page, arg, params}
  refreshTimer: null,
  lastRefresh: 0,
  events: [],           // newest first, for the Events page
  pollAbort: null,
  generation: 0,        // bumped on every navigation: a stale page load does not draw over a newer one
  lastAnswer: 0,        // Date.now() when the server last answered anything (a page read or the event stream)
  streamOk: false,      // the event stream's last long poll was answered
  zone: localStorage.getItem('allot-zone') === 'local' ? 'local' : 'utc',  // how times are written (fmtTime)
};
// However fast events come, a page is read again at most every 250 ms, or twice as long as its last reading and
// drawing took, so that a busy cluster costs the server a bounded number of reads per open page.
const REFRESH_MIN_MS = 250;
const REFRESH_IDLE_MS = 15000; // aggregates a member cannot see change (other teams' jobs) are read this often
const EVENTS_KEPT = 2000;
// A hung server must not read as live. The event stream's long poll asks the server to answer within
// POLL_WAIT_S even when nothing happens; every read is given up after ANSWER_TIMEOUT_MS (the long poll after its
// wait plus that grace); and when nothing at all has been answered for STALE_AFTER_MS the badge reads `stale` and
// the page is greyed out, saying when it was last updated.
const POLL_WAIT_S = 10;
const ANSWER_TIMEOUT_MS = 15000;
const STALE_AFTER_MS = POLL_WAIT_S * 1000 + 5000;
const POLL_TIMEOUT_MS = STALE_AFTER_MS;

// ---- small helpers --------------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  // Children come as elements, text, or arrays of them nested to any depth (a row of cells built by map() inside
  // a list of rows): all are flattened, so that an array is never written as "[object HTMLElement],...".
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const svgNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v; else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c) el.append(c);
  return el;
}
// The API writes points in time as RFC 3339 text (docs/api.md, "Times"); a number is Unix seconds (an older
// server). Both to Unix seconds, so that charts and durations can do arithmetic on them.
function toSeconds(t) {
  if (typeof t === 'string') return Date.parse(t) / 1000;
  return t;
}
// The one way a point in time is written on every page: ISO-like, always with its zone. UTC by default
// ("2026-11-26 05:13:57Z", as the CLI writes it); the header's toggle switches to the browser's zone, written as
// its offset ("2026-11-25 21:13:57-08:00"). `clock`: the time of day only ("05:13Z"), for chart axes.
function fmtTime(t, clock) {
  if (t === undefined || t === null || t === '') return '';
  const sec = toSeconds(t);
  if (!Number.isFinite(sec)) return String(t);
  const d = new Date(sec * 1000);
  const p = n => String(n).padStart(2, '0');
  const local = state.zone === 'local';
  const [Y, M, D, hh, mm, ss] = local
    ? [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()]
    : [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()];
  let zone = 'Z';
  if (local) {
    const off = -d.getTimezoneOffset();
    zone = (off < 0 ? '-' : '+') + p(Math.floor(Math.abs(off) / 60)) + ':' + p(Math.abs(off) % 60);
  }
  if (clock) return `${p(hh)}:${p(mm)}${zone}`;
  return `${Y}-${p(M)}-${p(D)} ${p(hh)}:${p(mm)}:${p(ss)}${zone}`;
}
function fmtDuration(sec) {
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return sec + 's';
  if (sec < 3600) return Math.floor(sec / 60) + 'm ' + (sec % 60) + 's';
  if (sec < 86400) return Math.floor(sec / 3600) + 'h ' + Math.floor((sec % 3600) / 60) + 'm';
  return Math.floor(sec / 86400) + 'd ' + Math.floor((sec % 86400) / 3600) + 'h';
}
function num(v) { return typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v); }
function badge(text, extra) { return h('span', { class: 'badge ' + text + (extra ? ' ' + extra : ''), text }); }
function jobLink(name) { return h('a', { href: '#/job/' + encodeURIComponent(name), text: name }); }
// The attributes of a <details> whose open state outlives the page's redraws (every event redraws the page).
function keepOpen(openSet, key) {
  return { open: openSet.has(key), ontoggle: e => { if (e.target.open) openSet.add(key); else openSet.delete(key); } };
}
// A link to the Jobs page with its filters set ({team, state, priority, instance_type}): every job count links so.
function jobsHref(filters) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters || {})) if (v) q.set(k, v);
  const qs = q.toString();
  return '#/jobs' + (qs ? '?' + qs : '');
}
function jobsLink(filters, text, extra) { return h('a', Object.assign({ href: jobsHref(filters), class: 'count-link', text: String(text) }, extra || {})); }

class HttpError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// One read of the API. It is given up after opts.timeoutMs (ANSWER_TIMEOUT_MS by default): a server that has hung
// must not leave the page waiting for ever. Any answer, refusals included, says the server is alive.
async function api(path, opts = {}) {
  const headers = { Authorization: 'Bearer ' + state.token };
  const timeoutMs = opts.timeoutMs || ANSWER_TIMEOUT_MS;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const onOuterAbort = () => abort.abort();
  if (opts.signal) opts.signal.addEventListener('abort', onOuterAbort);
  let r;
  try {
    r = await fetch(path, { headers, cache: 'no-store', signal: abort.signal });
    state.lastAnswer = Date.now();
    if (r.status === 401) {
      logout('The token was refused: ' + await errorText(r));
      throw new HttpError(401, 'not logged in');
    }
    if (!r.ok) throw new HttpError(r.status, await errorText(r));
    const type = r.headers.get('Content-Type') || '';
    return await (type.includes('json') ? r.json() : r.text());
  } catch (e) {
    if (abort.signal.aborted && !(opts.signal && opts.signal.aborted))
      throw new HttpError(0, `the server did not answer within ${Math.round(timeoutMs / 1000)} s`);
    throw e;
  } finally {
    clearTimeout(timer);
    if (opts.signal) opts.signal.removeEventListener('abort', onOuterAbort);
  }
}
async function errorText(r) {
  try { const j = await r.json(); return (j.error && j.error.message) || r.statusText; } catch (e) { return r.statusText; }
}

// ---- login ------------------------------------------------------------------------------------------------------

function showLogin(message) {
  document.getElementById('login').hidden = false;
  document.getElementById('page').replaceChildren();
  document.getElementById('logout').hidden = true;
  document.getElementById('nav').hidden = true;
  document.getElementById('login-error').textContent = message || '';
  setLive(false, 'logged out');
  document.getElementById('stale-note').hidden = true;
  document.getElementById('updated').textContent = '';
}
function logout(message) {
  state.token = '';
  // What this token saw leaves with it: the next person to log in in this tab reads only what theirs may.
  state.events = [];
  state.cursor = null;
  state.caller = null;
  state.lastAnswer = 0;
  sessionStorage.removeItem(TOKEN_KEY);
  if (state.pollAbort) state.pollAbort.abort();
  showLogin(message);
}
async function login(token) {
  state.token = token.trim();
  try {
    const c = await api('/v1/dashboard/cluster');
    sessionStorage.setItem(TOKEN_KEY, state.token);
    document.getElementById('login').hidden = true;
    document.getElementById('logout').hidden = false;
    document.getElementById('nav').hidden = false;
    state.cursor = c.events_last;
    state.caller = c.caller || { role: '', teams: [] };
    state.instanceTypes = c.instance_types.map(t => t.instance_type);
    startEventLoop();
    navigate();
  } catch (e) {
    if (e.status !== 401) showLogin('Cannot log in: ' + e.message);
  }
}

// ---- live updates -------------------------------------------------------------------------------------------

// The badge: `live` while the event stream is followed and the server answers, `stale` when the server has not
// answered anything for STALE_AFTER_MS (the page then says how old it is), `reconnecting` while the stream fails
// with errors, `logged out`. Beside it, how long ago the server last answered: the page shows what it said then.
function setLive(on, text) {
  const el = document.getElementById('live');
  el.className = 'live ' + (on ? 'on' : text === 'stale' ? 'stale' : 'off');
  el.textContent = text;
  document.getElementById('page').classList.toggle('stale', text === 'stale');
}
function fmtAgo(ms) {
  const sec = Math.max(0, Math.floor(ms / 1000));
  return sec < 120 ? `${sec} s ago` : `${Math.floor(sec / 60)} min ago`;
}
function showFreshness() {
  const updated = document.getElementById('updated');
  if (!state.token || !state.lastAnswer) { updated.textContent = ''; return; }
  const silent = Date.now() - state.lastAnswer;
  updated.textContent = 'updated ' + fmtAgo(silent);
  updated.title = 'the server last answered at ' + fmtTime(state.lastAnswer / 1000);
  const note = document.getElementById('stale-note');
  if (silent > STALE_AFTER_MS) {
    setLive(false, 'stale');
    note.hidden = false;
    note.textContent = `The server has not answered for ${Math.floor(silent / 1000)} s: this page shows what it said at ` +
      `${fmtTime(state.lastAnswer / 1000)}, and may be out of date. It is read again as soon as the server answers.`;
  } else {
    note.hidden = true;
    setLive(state.streamOk, state.streamOk ? 'live' : 'reconnecting');
  }
}
setInterval(showFreshness, 1000);

// One long poll at a time on the event stream; every batch of events schedules a re-read of the page.
async function startEventLoop() {
  if (state.pollAbort) state.pollAbort.abort();
  const abort = new AbortController();
  state.pollAbort = abort;
  let failures = 0;
  state.streamOk = true;  // the login's read just succeeded
  showFreshness();
  while (!abort.signal.aborted && state.token) {
    try {
      const since = state.cursor || 0;
      const answeredBefore = state.lastAnswer;
      const page = await api('/v1/events?since=' + since + '&wait=' + POLL_WAIT_S,
                             { signal: abort.signal, timeoutMs: POLL_TIMEOUT_MS });
      const recovering = !state.streamOk || Date.now() - answeredBefore > STALE_AFTER_MS;
      failures = 0;
      state.streamOk = true;
      state.cursor = page.next;
      if (page.events.length) onEvents(page.events);
      else if (recovering) scheduleRefresh();  // back after a silence: read the page again at once
      showFreshness();
    } catch (e) {
      if (abort.signal.aborted || e.status === 401) return;
      failures++;
      state.streamOk = false;
      showFreshness();
      await new Promise(r => setTimeout(r, Math.min(10000, 500 * failures)));
    }
  }
}

function onEvents(events) {
  for (const e of events) state.events.unshift(e);
  if (state.events.length > EVENTS_KEPT) state.events.length = EVENTS_KEPT;
  scheduleRefresh();
}

function scheduleRefresh() {
  if (state.refreshTimer) return;
  const gap = Math.max(REFRESH_MIN_MS, 2 * (state.lastDrawMs || 0));
  const wait = Math.max(0, gap - (Date.now() - state.lastRefresh));
  state.refreshTimer = setTimeout(() => { state.refreshTimer = null; render(false); }, wait);
}
setInterval(() => { if (state.token && Date.now() - state.lastRefresh > REFRESH_IDLE_MS) render(false); }, 5000);

// ---- routing ------------------------------------------------------------------------------------------------

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query] = hash.split('?');
  const parts = path.split('/');
  const params = new URLSearchParams(query || '');
  return { page: parts[0] || 'cluster', arg: parts.slice(1).map(decodeURIComponent).join('/'), params };
}
function setParams(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const qs = q.toString();
  location.hash = '#/' + page + (qs ? '?' + qs : '');
}
function navigate() {
  state.route = parseRoute();
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === state.route.page);
  render(true);
}

// Draws the current page. `fresh`: a navigation (the page starts empty); otherwise an update in place, which
// keeps what the person typed and where they scrolled.
async function render(fresh) {
  if (!state.token) return;
  const root = document.getElementById('page');
  // An update waits while the person is typing in or choosing from the page's form: drawing the page again
  // would replace the field under their hands.
  const active = document.activeElement;
  if (!fresh && active && root.contains(active) && (active.tagName === 'INPUT' || active.tagName === 'SELECT')) {
    state.lastRefresh = Date.now();
    scheduleRefresh();
    return;
  }
  const gen = fresh ? ++state.generation : state.generation;
  state.lastRefresh = Date.now();
  const page = PAGES[state.route.page] || PAGES.cluster;
  if (fresh) { root.replaceChildren(h('p', { class: 'muted', text: 'Loading…' })); page.reset && page.reset(); }
  try {
    const started = performance.now();
    const content = await page.draw(state.route, fresh);
    if (gen !== state.generation || !content) return;
    const scroll = window.scrollY;
    // A square focused by keyboard (Topology) keeps the focus when the page is drawn again.
    const focused = document.activeElement && root.contains(document.activeElement) ? document.activeElement.dataset.node : undefined;
    root.replaceChildren(content);
    if (focused !== undefined) {
      const again = root.querySelector(`.node[data-node="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
    state.lastDrawMs = performance.now() - started;
    root.dataset.loadedMs = String(Math.round(state.lastDrawMs));
    root.dataset.updated = String(Date.now());
    root.dataset.page = state.route.page;
    if (!fresh) window.scrollTo(0, scroll);
  } catch (e) {
    if (gen !== state.generation || e.status === 401) return;
    // An update that fails keeps what the page showed: the badge and the stale note say how old it is. A page
    // opened afresh has nothing to keep, and says why it is empty.
    if (fresh) root.replaceChildren(h('p', { class: 'error', text: 'Cannot read this page: ' + e.message }));
  }
}

// ---- Cluster --------------------------------------------------------------------------------------------------

function stackedBar(parts, total, title) {
  const bar = h('div', { class: 'bar', title });
  let left = 0;
  for (const [cls, value] of parts) {
    if (!value || !total) continue;
    const span = h('span', { class: cls, 'data-value': value });
    span.style.left = (100 * left / total) + '%';
    span.style.width = (100 * value / total) + '%';
    bar.append(span);
    left += value;
  }
  return bar;
}

function utilisationChart(util) {
  const W = 760, H = 200, L = 40, R = 10, T = 10, B = 24;
  const samples = util.samples;
  const svg = s('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
                         'aria-label': 'accelerator utilisation over time' });
  // At least the last half hour is drawn, so a young server's few samples read as a start, not as the whole story.
  const t1 = toSeconds(samples[samples.length - 1].at), t0 = Math.min(toSeconds(samples[0].at), t1 - 1800);
  const x = t => L + (W - L - R) * (t - t0) / (t1 - t0);
  const y = f => T + (H - T - B) * (1 - f);
  for (const f of [0, 0.5, 1]) {
    svg.append(s('line', { x1: L, x2: W - R, y1: y(f), y2: y(f), stroke: '#e4e7ec' }));
    svg.append(s('text', { x: 4, y: y(f) + 4, text: Math.round(f * 100) + '%' }));
  }
  svg.append(s('text', { x: L, y: H - 6, text: fmtTime(t0, true) }));
  svg.append(s('text', { x: W - R, y: H - 6, 'text-anchor': 'end', text: fmtTime(t1, true) }));
  const colours = ['#3b6fd8', '#e8871e', '#2f9e62', '#7a5af8', '#d63a3a', '#0e9384'];
  const legend = h('div', { class: 'legend' });
  util.instance_types.forEach((type, i) => {
    const pts = samples.filter(p => p.total[i] > 0).map(p => `${x(toSeconds(p.at)).toFixed(1)},${y(p.in_use[i] / p.total[i]).toFixed(1)}`);
    if (!pts.length) return;
    if (pts.length === 1) pts.unshift(`${(x(t1) - 6).toFixed(1)},${pts[0].split(',')[1]}`);  // one sample: a short stroke
    const colour = colours[i % colours.length];
    svg.append(s('polyline', { points: pts.join(' '), fill: 'none', stroke: colour, 'stroke-width': 2, 'data-type': type }));
    const last = pts[pts.length - 1].split(',');
    svg.append(s('circle', { cx: last[0], cy: last[1], r: 3, fill: colour }));
    const sw = h('i'); sw.style.background = colour;
    legend.append(h('span', {}, sw, type));
  });
  return h('div', {}, svg, legend);
}

const PAGES = {};

PAGES.cluster = {
  async draw() {
    const [c, reservations] = await Promise.all([api('/v1/dashboard/cluster'), api('/v1/reservations')]);
    state.instanceTypes = c.instance_types.map(t => t.instance_type);  // the Jobs page's filter offers these
    const cards = h('div', { class: 'cards' });
    for (const t of c.instance_types) {
      const useAcc = t.accelerators.total > 0;
      const a = useAcc ? t.accelerators : t.vcpu;
      const unit = useAcc ? 'accelerators' : 'vCPUs';
      cards.append(h('div', { class: 'card', 'data-type': t.instance_type },
        h('div', { class: 'muted', text: t.instance_type + ' · ' + t.nodes + ' node' + (t.nodes === 1 ? '' : 's') }),
        h('div', { class: 'big', text: `${a.in_use} / ${a.total} ${unit} in use` }),
        stackedBar([['bar-used', a.in_use], ['bar-free', a.free], ['bar-unhealthy', a.unhealthy], ['bar-cordoned', a.cordoned]], a.total,
                   `in use ${a.in_use}, free ${a.free}, unhealthy ${a.unhealthy}, cordoned ${a.cordoned}`),
        h('div', { class: 'acc-counts' },
          h('span', { class: 'in-use', text: `in use ${a.in_use}` }), ' · ',
          h('span', { class: 'free', text: `free ${a.free}` }), ' · ',
          h('span', { class: 'unhealthy', text: `unhealthy ${a.unhealthy}` }),
          a.cordoned ? ` · cordoned ${a.cordoned}` : ''),
        h('div', {}, h('a', { href: jobsHref({ instance_type: t.instance_type, state: 'Running' }), class: 'type-jobs', text: 'its running jobs' }))));
    }
    if (!c.instance_types.length) cards.append(h('p', { class: 'muted', text: 'No nodes have joined yet.' }));
    const legend = h('div', { class: 'legend' }, h('span', {}, h('i', { class: 'use' }), 'in use'),
                     h('span', {}, h('i', { class: 'free' }), 'free'), h('span', {}, h('i', { class: 'bad' }), 'unhealthy'),
                     h('span', {}, h('i', { class: 'cordon' }), 'cordoned'));
    const health = h('table', { id: 'nodes-by-health' }, h('tr', {}, h('th', { text: 'health' }), h('th', { class: 'num', text: 'nodes' })),
      Object.entries(c.nodes_by_health).map(([k, v]) => h('tr', { 'data-health': k },
        h('td', {}, badge(k, k === 'Schedulable' ? '' : 'bad')), h('td', { class: 'num', text: v }))),
      h('tr', {}, h('td', { text: 'cordoned' }), h('td', { class: 'num', text: c.cordoned })));
    const attention = c.attention.length
      ? h('table', { id: 'attention' }, h('tr', {}, ['node', 'instance type', 'health', 'cordoned', 'suspect', 'why'].map(t => h('th', { text: t }))),
          c.attention.map(n => h('tr', { 'data-node': n.name },
            h('td', {}, h('a', { href: '#/topology?node=' + encodeURIComponent(n.name), text: n.name })),
            h('td', { text: n.instance_type }), h('td', {}, badge(n.health, n.health === 'Schedulable' ? '' : 'bad')),
            h('td', { text: n.cordoned ? 'yes' : '' }), h('td', { class: 'suspect', text: n.suspect ? 'suspect' : '' }),
            h('td', { class: 'reason', text: n.reason || '' }))),
          c.attention_total > c.attention.length ? h('tr', {}, h('td', { colspan: 6, class: 'muted', text: `and ${c.attention_total - c.attention.length} more` })) : null)
      : h('p', { class: 'muted', text: 'Every node is Schedulable, not cordoned and not suspect.' });
    // Every count links to the Jobs page with its filter set.
    const JOB_CARDS = ['Running', 'Pending', 'Suspended', 'Failed', 'Succeeded', 'Cancelled'];
    const jobs = h('div', { class: 'cards' }, JOB_CARDS.filter(k => k in c.jobs).map(k =>
      h('div', { class: 'card', 'data-jobs': k }, h('div', { class: 'muted', text: k }),
        h('div', { class: 'big' }, jobsLink({ state: k }, c.jobs[k])))),
      h('div', { class: 'card', 'data-jobs': 'total' }, h('div', { class: 'muted', text: 'jobs kept (finished jobs leave after the retention)' }),
        h('div', { class: 'big' }, jobsLink({}, c.jobs.total))));
    const failed = c.failed || { last_hour: 0, last_day: 0 };
    const failedCards = h('div', { class: 'cards', id: 'failed-counts' },
      h('div', { class: 'card', 'data-failed': 'last_hour' }, h('div', { class: 'muted', text: 'failed in the last hour' }),
        h('div', { class: 'big' + (failed.last_hour ? ' bad-text' : '') }, jobsLink({ state: 'Failed' }, failed.last_hour))),
      h('div', { class: 'card', 'data-failed': 'last_day' }, h('div', { class: 'muted', text: 'failed in the last day' }),
        h('div', { class: 'big' + (failed.last_day ? ' bad-text' : '') }, jobsLink({ state: 'Failed' }, failed.last_day))));
    const recent = c.recent_failures || [];
    const member = state.caller && state.caller.role === 'member';
    const failures = recent.length
      ? h('table', { id: 'recent-failures' }, h('tr', {}, ['failed at', 'job', 'team', 'reason code', 'reason'].map(t => h('th', { text: t }))),
          recent.map(f => h('tr', { 'data-job': f.name }, h('td', { text: fmtTime(f.failed_at) }), h('td', {}, jobLink(f.name)),
            h('td', { text: f.team }), h('td', {}, badge(f.reason_code, 'bad')), h('td', { class: 'reason', text: f.reason }))))
      : h('p', { class: 'muted', text: member ? 'No job of your teams has failed (among the jobs kept).' : 'No job has failed (among the jobs kept).' });
    // Reservations of existing nodes (docs/scheduling.md): the server lists those the caller may read (a member:
    // its teams'), by name; an amount's nodes are chosen at its start.
    const now = Date.now() / 1000;
    const reserved = reservations.length
      ? h('table', { id: 'reservations' }, h('tr', {}, ['reservation', 'for', 'state', 'nodes', 'start', 'end'].map(t => h('th', { text: t }))),
          reservations.map(r => h('tr', { 'data-reservation': r.name },
            h('td', { text: r.name }), h('td', { text: r.team + (r.user ? ' (user ' + r.user + ')' : '') }),
            h('td', {}, badge(r.state)),
            h('td', {}, r.nodes.length
              ? r.nodes.map((n, i) => [i ? ', ' : '', h('a', { href: '#/topology?node=' + encodeURIComponent(n), text: n })])
              : `${r.count} × ${r.instance_type} (chosen at the start)`),
            h('td', { text: fmtTime(r.start) + (toSeconds(r.start) > now ? ` (in ${fmtDuration(toSeconds(r.start) - now)})` : '') }),
            h('td', { text: fmtTime(r.end) + ` (in ${fmtDuration(toSeconds(r.end) - now)})` }))))
      : h('p', { class: 'muted', text: member ? 'No reservation for your teams.' : 'No reservations.' });
    return h('div', {},
      h('h1', { text: 'Cluster' }),
      h('h2', { text: 'Capacity per instance type' }), cards, legend,
      h('h2', { text: `Utilisation (accelerators in use; a sample every ${c.utilisation.every_s} s)` }), utilisationChart(c.utilisation),
      h('h2', { text: `Nodes by health (${c.nodes} nodes)` }), health,
      h('h2', { text: `Nodes that need attention (unhealthy, cordoned or suspect: ${c.attention_total})` }), attention,
      h('h2', { text: member ? 'Reservations for your teams' : 'Reservations of existing nodes' }), reserved,
      h('h2', { text: 'Failures' }), failedCards,
      h('h2', { text: member ? 'Recent failures of your teams\' jobs' : 'Recent failures' }), failures,
      h('h2', { text: 'Jobs' + (member ? ' (every team: click a count for your teams\' jobs)' : '') }), jobs);
  },
};

// ---- Teams ----------------------------------------------------------------------------------------------------

// Which amount a type's bars show: accelerators, or vCPUs for types without.
function barKey(t) { return t.usage.accelerators > 0 || t.nominal.accelerators > 0 || t.max.accelerators > 0 ? 'accelerators' : 'vcpu'; }
// `scale`: the type's common scale (the most any team may hold or holds of it), so that every team's bar of one
// instance type is drawn to the same length per accelerator and two teams' bars compare at a glance.
function quotaBar(team, t, scale) {
  const key = barKey(t);
  const nominal = t.nominal[key], usage = t.usage[key], borrowed = t.borrowed[key], lent = t.lent[key];
  const within = usage - borrowed;
  const bar = stackedBar([['bar-used', within], ['bar-lent', lent], ['bar-borrowed', borrowed]], scale,
    `${key}: in use ${usage} (borrowed ${borrowed}), nominal ${nominal}, lent ${lent}, may hold up to ${t.max[key]}`);
  // The bars sit left to right: used within quota, lent (idle quota others hold), then borrowed beyond it, so the
  // borrowed part starts at the nominal mark.
  const mark = h('span', { class: 'bar-nominal', title: 'nominal quota' });
  mark.style.left = 'calc(' + (100 * nominal / scale) + '% - 1px)';
  bar.append(mark);
  bar.dataset.team = team;
  bar.dataset.type = t.instance_type;
  bar.dataset.scale = String(scale);
  // The part of the common scale this team may hold at most (nominal plus its borrow limit).
  const reach = h('span', { class: 'bar-max', title: 'the most the team may hold' });
  reach.style.left = 'calc(' + Math.min(100, 100 * t.max[key] / scale) + '% - 1px)';
  bar.append(reach);
  return { bar, key };
}

PAGES.teams = {
  async draw() {
    const d = await api('/v1/dashboard/teams');
    // One scale per instance type, common to every team's bar of it.
    const scales = {};
    for (const team of d.teams) for (const t of team.instance_types) {
      const key = barKey(t);
      scales[t.instance_type] = Math.max(scales[t.instance_type] || 1, t.max[key], t.usage[key], t.nominal[key]);
    }
    const rows = [];
    // In a cohort tree the teams are drawn as the tree: each group a row, then its groups and its teams indented
    // under it; root groups first, then the teams without a group (as `allot teams` shows it, docs/cli.md).
    const groups = d.groups || [];
    const order = [];
    const walk = (parent, depth) => {
      if (depth > groups.length) return;
      for (const g of groups) if ((g.parent || '') === parent) { order.push({ group: g, depth }); walk(g.name, depth + 1); }
      for (const team of d.teams) if ((team.group || '') === parent) order.push({ team, depth });
    };
    if (groups.length) {
      walk('', 0);
      // A team naming a group the list lacks is still shown, at the top.
      for (const team of d.teams) if (!order.some(o => o.team === team)) order.push({ team, depth: 0 });
    } else {
      for (const team of d.teams) order.push({ team, depth: 0 });
    }
    const indent = (cell, depth) => { cell.style.paddingLeft = (0.4 + 1.5 * depth) + 'em'; return cell; };
    for (const { group, team, depth } of order) {
      if (group) {
        rows.push(h('tr', { class: 'group', 'data-group': group.name, 'data-depth': depth },
          indent(h('td', { class: 'group-name', text: group.name + '/' }), depth),
          h('td', { class: 'num', text: String(group.fair_share_weight) }),
          h('td', { class: 'num share', text: group.share === null ? '∞' : group.share.toFixed(3) }),
          h('td', { colspan: 10, class: 'muted', text: 'group' + (group.parent ? ' in ' + group.parent : '') })));
        continue;
      }
      const types = team.instance_types.length ? team.instance_types : [null];
      types.forEach((t, i) => {
        const cells = [];
        if (i === 0) {
          const span = { rowspan: types.length };
          cells.push(indent(h('td', Object.assign({ class: 'team-name' }, span), h('a', { href: '#/queue?team=' + encodeURIComponent(team.name), text: team.name }),
                       team.borrowing ? h('div', {}, badge('borrowing', 'Suspended')) : null), depth),
                     h('td', Object.assign({ class: 'num' }, span), String(team.fair_share_weight)),
                     h('td', Object.assign({ class: 'num share' }, span), team.share === null ? '∞' : team.share.toFixed(3)),
                     h('td', Object.assign({ class: 'num pending' }, span), jobsLink({ team: team.name, state: 'Pending' }, team.jobs.pending)),
                     h('td', Object.assign({ class: 'num running' }, span), jobsLink({ team: team.name, state: 'Running' }, team.jobs.running)),
                     h('td', Object.assign({ class: 'num suspended' }, span), jobsLink({ team: team.name, state: 'Suspended' }, team.jobs.suspended)));
        }
        if (!t) {
          cells.push(h('td', { colspan: 7, class: 'muted', text: 'no quota and nothing running' }));
        } else {
          const { bar, key } = quotaBar(team.name, t, scales[t.instance_type]);
          const unit = key === 'accelerators' ? '' : ' vCPU';
          cells.push(h('td', { text: t.instance_type }),
                     h('td', { class: 'num nominal', text: num(t.nominal[key]) + unit }),
                     h('td', { class: 'num usage', text: num(t.usage[key]) }),
                     h('td', { class: 'num borrowed', text: num(t.borrowed[key]) }),
                     h('td', { class: 'num lent', text: num(t.lent[key]) }),
                     h('td', { class: 'num', text: num(t.max[key]) }),
                     h('td', {}, bar));
        }
        rows.push(h('tr', { 'data-team': team.name, 'data-type': t ? t.instance_type : '', 'data-group': team.group || null }, cells));
      });
    }
    const table = h('table', { id: 'teams' },
      h('tr', {}, ['team', 'weight', 'share', 'pending', 'running', 'susp\u00adended', 'instance type', 'nominal', 'in use', 'borrowed', 'lent', 'max', '']
        .map((t, i) => h('th', { class: i >= 1 && i <= 5 || i >= 7 && i <= 11 ? 'num' : '', text: t }))),
      rows);
    const legend = h('div', { class: 'legend' }, h('span', {}, h('i', { class: 'use' }), 'in use within quota'),
      h('span', {}, h('i', { class: 'lent' }), 'lent to other teams'), h('span', {}, h('i', { class: 'borrow' }), 'borrowed beyond quota'),
      h('span', { text: '| nominal quota, ¦ the most the team may hold; every bar of one instance type has the same scale' }));
    // Who lends to whom, as the server attributes it (idle pool first, then the lending teams).
    const flows = [];
    for (const c of d.cohort) for (const f of c.lending || []) {
      const key = c.capacity.accelerators > 0 ? 'accelerators' : 'vcpu';
      if (!f.amount[key]) continue;
      flows.push(h('tr', { 'data-from': f.from === null ? '' : f.from, 'data-to': f.to, 'data-type': c.instance_type },
        h('td', { class: 'lender', text: f.from === null ? 'idle pool (nobody\'s quota)' : f.from }), h('td', { text: '→' }),
        h('td', { class: 'borrower', text: f.to }), h('td', { text: c.instance_type }),
        h('td', { class: 'num amount', text: num(f.amount[key]) + (key === 'vcpu' ? ' vCPU' : '') })));
    }
    const lending = flows.length
      ? h('table', { id: 'lending' }, h('tr', {}, ['lender', '', 'borrower', 'instance type', 'amount'].map((t, i) => h('th', { class: i === 4 ? 'num' : '', text: t }))), flows)
      : h('p', { class: 'muted', id: 'lending-none', text: 'Nobody borrows now.' });
    const cohort = h('table', { id: 'cohort' },
      h('tr', {}, ['instance type', 'capacity', 'nominal (all teams)', 'lending pool', 'pool in use', 'idle'].map((t, i) => h('th', { class: i ? 'num' : '', text: t }))),
      d.cohort.map(c => h('tr', { 'data-type': c.instance_type }, h('td', { text: c.instance_type }),
        ...['capacity', 'nominal', 'pool', 'pool_used', 'idle'].map(k => h('td', { class: 'num ' + k, text: num(c[k].accelerators || c[k].vcpu) })))));
    return h('div', {}, h('h1', { text: 'Teams' }),
      h('p', { class: 'muted', text: 'Share: the borrowed dominant share divided by the fair-share weight; the lowest borrows first.' }),
      table, legend,
      h('h2', { text: 'Lending: who borrows from whom' }),
      h('p', { class: 'muted', text: 'What each borrower holds beyond its quota, by where it comes from: the idle pool first, then the lending teams in proportion to their unused quota (the pool is shared: the pairs are the server\'s attribution).' }),
      lending,
      h('h2', { text: 'Cohort (accelerators, or vCPUs for types without)' }), cohort);
  },
};

// ---- Queue ----------------------------------------------------------------------------------------------------

const QUEUE_PAGE = 100;
PAGES.queue = {
  teams: null,
  open: new Set(),  // the rows whose reason the person opened: a redraw keeps them open
  async draw(route) {
    const p = route.params;
    const offset = Math.max(0, parseInt(p.get('offset') || '0', 10) || 0);
    const q = new URLSearchParams({ offset, limit: QUEUE_PAGE });
    for (const k of ['team', 'priority', 'state']) if (p.get(k)) q.set(k, p.get(k));
    // A member's filter offers its own teams only: other teams' jobs are not listed to it anyway.
    const member = state.caller && state.caller.role === 'member';
    const [d, teams] = await Promise.all([api('/v1/dashboard/queue?' + q),
      member ? state.caller.teams.map(name => ({ name })) : this.teams || api('/v1/teams')]);
    this.teams = member ? null : teams;
    const current = { team: p.get('team') || '', priority: p.get('priority') || '', state: p.get('state') || '' };
    const teamSel = h('select', { name: 'team' }, h('option', { value: '', text: 'all teams' }),
      teams.map(t => h('option', { value: t.name, text: t.name, selected: t.name === current.team })));
    const stateSel = h('select', { name: 'state' }, ['', 'Pending', 'Suspended'].map(v => h('option', { value: v, text: v || 'Pending and Suspended', selected: v === current.state })));
    const prio = h('input', { name: 'priority', value: current.priority, placeholder: 'any', size: 12 });
    const form = h('form', { class: 'filters', id: 'queue-filters', onsubmit: e => {
      e.preventDefault();
      setParams('queue', { team: teamSel.value, priority: prio.value.trim(), state: stateSel.value });
    } }, h('label', {}, 'team', teamSel), h('label', {}, 'priority class', prio), h('label', {}, 'state', stateSel),
      h('button', { type: 'submit', text: 'Filter' }));
    teamSel.addEventListener('change', () => form.requestSubmit());
    stateSel.addEventListener('change', () => form.requestSubmit());
    // The wait: the server's category (one table from reason code to category, server/views/wait_category.cpp), as a
    // coloured word; the reason's prose one click away.
    const waitCell = j => h('td', { class: 'wait' }, h('details', keepOpen(this.open, j.name),
      h('summary', {}, h('span', { class: 'cat cat-' + j.wait.category, 'data-category': j.wait.category, text: j.wait.label })),
      h('div', { class: 'reason', text: j.reason }), h('div', { class: 'muted', text: 'code: ' + j.reason_code })));
    const rows = d.items.map(j => h('tr', { 'data-job': j.name, 'data-category': j.wait.category, class: j.never_fits ? 'never-fits' : '' },
      h('td', { class: 'num position', text: j.position }), h('td', {}, jobLink(j.name)), h('td', { text: j.team }),
      h('td', { text: j.priority }), h('td', {}, badge(j.state)),
      h('td', { class: 'types', text: j.instance_types.length ? j.instance_types.join(', ') : 'none' }),
      h('td', { class: 'num', text: j.accelerators }),
      h('td', { class: 'num waited', text: fmtDuration(j.waited_s) }),
      h('td', { class: 'estimate', text: j.never_fits ? 'never' : j.estimated_start !== undefined ? fmtTime(j.estimated_start) : '—' }),
      waitCell(j)));
    const table = h('table', { id: 'queue' }, h('tr', {}, ['#', 'job', 'team', 'priority', 'state', 'instance type', 'acc.', 'waited', 'estimated start', 'waits for']
      .map((t, i) => h('th', { class: i === 0 || i === 6 || i === 7 ? 'num' : '', text: t }))), rows);
    const never = d.items.filter(j => j.never_fits).length;
    const neverNote = never ? h('p', { id: 'never-fits-note', class: 'never-fits-note', text: `${never} job${never === 1 ? '' : 's'} on this page will never run as the cluster is built (marked in red): no amount of waiting helps; change the job.` }) : null;
    const page = (o) => setParams('queue', Object.assign({}, current, { offset: o }));
    const pager = h('div', { class: 'pager' },
      h('button', { type: 'button', disabled: offset === 0, onclick: () => page(Math.max(0, offset - QUEUE_PAGE)), text: '← previous' }),
      h('span', { id: 'queue-count', text: d.matched ? `${offset + 1}–${offset + d.items.length} of ${d.matched} matching; ${d.total} waiting in all` : `none matching; ${d.total} waiting in all` }),
      h('button', { type: 'button', disabled: offset + d.items.length >= d.matched, onclick: () => page(offset + QUEUE_PAGE), text: 'next →' }));
    const hidden = d.hidden ? h('p', { class: 'muted', text: `${d.hidden} waiting jobs of other teams are counted in the positions but not listed.` }) : null;
    return h('div', {}, h('h1', { text: 'Queue' }),
      h('p', { class: 'muted', text: 'Waiting jobs in the order the scheduler considers them. The estimated start counts only capacity coming free as running jobs with a known duration end; quota or topology may delay it.' }),
      form, pager, neverNote, table, hidden);
  },
};

// ---- Jobs -----------------------------------------------------------------------------------------------------

// Usage per team from GET /v1/usage (server/views/usage_ledger.h): accelerator-hours used, borrowed, lent and lost, and
// queueing, over the period the selector picks. A member sees its own teams only (the server leaves the rest out).
const USAGE_PERIODS = ['1d', '7d', '30d', '90d'];
PAGES.usage = {
  async draw(route) {
    const since = USAGE_PERIODS.includes(route.params.get('since')) ? route.params.get('since') : '30d';
    const d = await api('/v1/usage?by=team&since=' + since);
    const sel = h('select', { name: 'since', id: 'usage-since' },
      USAGE_PERIODS.map(p => h('option', { value: p, text: 'last ' + p, selected: p === since })));
    sel.addEventListener('change', () => setParams('usage', { since: sel.value }));
    const hours = s => (s / 3600).toFixed(1);
    const cols = [['used_s', 'used'], ['borrowed_s', 'borrowed'], ['lent_s', 'lent'], ['lost_preemption_s', 'lost to preemption'],
      ['lost_failure_s', 'lost to failures'], ['queued_s', 'queued']];
    const row = (name, f, extra) => h('tr', Object.assign({ 'data-team': name }, extra || {}), h('td', { text: name }),
      cols.map(([k]) => h('td', { class: 'num ' + k, text: hours(f[k]) })), h('td', { class: 'num admitted', text: f.admitted }));
    const table = h('table', { id: 'usage' },
      h('tr', {}, h('th', { text: 'team' }), cols.map(([, t]) => h('th', { class: 'num', text: t + ' (h)' })), h('th', { class: 'num', text: 'admitted' })),
      d.rows.map(r => row(r.team, r)), d.rows.length > 1 ? row('total', d.total, { class: 'total' }) : null);
    return h('div', {}, h('h1', { text: 'Usage' }),
      h('p', { class: 'muted', text: `Accelerator-hours from ${fmtTime(d.since)} to ${fmtTime(d.until)}: held by running jobs, held above the team's quota (borrowed), of the team's idle quota held by others (lent), and work lost since the last checkpoint when runs were preempted or failed; queued: hours admitted jobs waited. allot usage --by team,user,priority,instance_type breaks it down further.` }),
      h('form', { class: 'filters', onsubmit: e => e.preventDefault() }, h('label', {}, 'period', sel)),
      d.rows.length ? table : h('p', { class: 'muted', id: 'usage-empty', text: 'No usage in this period.' }));
  },
};

// Jobs in every state, from GET /v1/jobs (a member's own teams only, unless it names one of them; admins and
// viewers every team's), 100 a page in submission order, filtered by team, state, priority class and type. A job
// array is one row (arrays=summary: its tasks that match the filters counted per state), whose name opens the
// same page on its tasks (array=NAME: every task a row, paged, under the same filters).
const JOBS_PAGE = 100;
const JOB_STATES = ['Running', 'Pending', 'Suspended', 'Failed', 'Succeeded', 'Cancelled'];
// An array's tasks per state, as "running 10, pending 9,980, succeeded 10" (the states with tasks, in JOB_STATES
// order); each count a span of its own, so that a test reads the figures and not the words.
function arrayCounts(tasks) {
  const parts = JOB_STATES.filter(st => tasks[st] > 0).map(st =>
    h('span', { class: 'task-count', 'data-state': st, 'data-count': tasks[st], text: `${st.toLowerCase()} ${tasks[st].toLocaleString('en-US')}` }));
  if (!parts.length) return h('span', { class: 'muted', text: 'no tasks' });
  return h('span', { class: 'task-counts' }, parts.map((el, i) => i ? [', ', el] : el));
}
PAGES.jobs = {
  teams: null,
  open: new Set(),
  async draw(route) {
    const p = route.params;
    const current = { team: p.get('team') || '', state: p.get('state') || '', priority: p.get('priority') || '',
                      instance_type: p.get('instance_type') || '' };
    const arrayName = p.get('array') || '';
    const q = new URLSearchParams({ limit: JOBS_PAGE });
    for (const [k, v] of Object.entries(current)) if (v) q.set(k, v);
    if (arrayName) q.set('array', arrayName); else q.set('arrays', 'summary');
    if (p.get('continue')) q.set('continue', p.get('continue'));
    const member = state.caller && state.caller.role === 'member';
    let d, teams, arr = null;
    try {
      [d, teams, arr] = await Promise.all([api('/v1/jobs?' + q),
        member ? state.caller.teams.map(name => ({ name })) : this.teams || api('/v1/teams'),
        arrayName ? api('/v1/jobs/' + encodeURIComponent(arrayName)) : null]);
    } catch (e) {
      if (e.status === 401 || !arrayName) throw e;
      return h('div', {}, h('h1', { text: 'Tasks of array ' + arrayName }), h('p', {}, h('a', { href: jobsHref(current), text: '← every job' })),
        h('p', { class: 'error', text: e.message }));
    }
    this.teams = member ? null : teams;
    const scope = Object.assign({}, current, arrayName ? { array: arrayName } : {});
    const teamSel = h('select', { name: 'team' }, h('option', { value: '', text: member ? 'my teams' : 'all teams' }),
      teams.map(t => h('option', { value: t.name, text: t.name, selected: t.name === current.team })));
    const stateSel = h('select', { name: 'state' }, h('option', { value: '', text: 'every state' }),
      JOB_STATES.map(v => h('option', { value: v, text: v, selected: v === current.state })));
    const types = state.instanceTypes || [];
    const typeSel = h('select', { name: 'instance_type' }, h('option', { value: '', text: 'any type' }),
      (types.includes(current.instance_type) || !current.instance_type ? types : types.concat(current.instance_type))
        .map(v => h('option', { value: v, text: v, selected: v === current.instance_type })));
    const prio = h('input', { name: 'priority', value: current.priority, placeholder: 'any', size: 12 });
    const form = h('form', { class: 'filters', id: 'jobs-filters', onsubmit: e => {
      e.preventDefault();
      setParams('jobs', { team: teamSel.value, state: stateSel.value, priority: prio.value.trim(), instance_type: typeSel.value, array: arrayName });
    } }, h('label', {}, 'team', teamSel), h('label', {}, 'state', stateSel), h('label', {}, 'priority class', prio),
      h('label', {}, 'instance type', typeSel), h('button', { type: 'submit', text: 'Filter' }));
    for (const sel of [teamSel, stateSel, typeSel]) sel.addEventListener('change', () => form.requestSubmit());
    const typeOf = j => {
      const placed = [...new Set(j.placement.map(ps => ps.instance_type))];
      if (placed.length) return placed.join(', ');
      const asked = [...new Set(j.pod_sets.map(ps => ps.instance_type).filter(Boolean))];
      return asked.length ? asked.join(', ') : 'any';
    };
    const jobRow = j => h('tr', { 'data-job': j.name, 'data-state': j.state },
      h('td', {}, jobLink(j.name)), h('td', { text: j.team }), h('td', {}, badge(j.state)), h('td', { text: j.priority || 'none' }),
      h('td', { class: 'types', text: typeOf(j) }), h('td', { class: 'num', text: j.pod_sets.reduce((n, ps) => n + ps.replicas, 0) }),
      h('td', { text: fmtTime(j.submitted_at) }),
      h('td', { class: 'reason' }, h('details', keepOpen(this.open, j.name), h('summary', {}, h('span', { class: 'code', text: j.reason_code })), h('div', { text: j.reason }))));
    // An array: its name opens its tasks under the same filters; its state and counts are those of the tasks
    // that match the filters (the server counts them, docs/dashboard.md, "Jobs").
    const arrayRow = a => h('tr', { 'data-job': a.name, 'data-kind': 'array', 'data-state': a.state },
      h('td', {}, h('a', { href: jobsHref(Object.assign({}, current, { array: a.name })), class: 'array-link', text: a.name }),
        h('span', { class: 'muted', text: ` array of ${a.array.count.toLocaleString('en-US')}` })),
      h('td', { text: a.team }), h('td', {}, badge(a.state)), h('td', { text: a.priority || 'none' }),
      h('td', { class: 'types muted', text: 'per task' }), h('td', { class: 'num', text: `≤${a.array.parallel} at once` }),
      h('td', { text: fmtTime(a.submitted_at) }), h('td', { class: 'array-tasks' }, arrayCounts(a.tasks)));
    const rows = d.items.map(j => j.kind === 'array' ? arrayRow(j) : jobRow(j));
    const table = h('table', { id: 'jobs' }, h('tr', {}, ['job', 'team', 'state', 'priority', 'instance type', 'replicas', 'submitted', arrayName ? 'reason' : 'reason (an array: its tasks)']
      .map((t, i) => h('th', { class: i === 5 ? 'num' : '', text: t }))), rows);
    const from = p.get('continue') || '';
    const noun = arrayName ? ['task', 'tasks'] : ['row', 'rows'];
    const pager = h('div', { class: 'pager' },
      h('button', { type: 'button', disabled: !from, onclick: () => setParams('jobs', scope), text: '⇤ first page' }),
      h('span', { id: 'jobs-count', text: d.items.length ? `${d.items.length} ${noun[d.items.length === 1 ? 0 : 1]}${d.continue || from ? ' on this page' : ''}` : 'no jobs match' }),
      h('button', { type: 'button', disabled: !d.continue, onclick: () => setParams('jobs', Object.assign({}, scope, { continue: d.continue })), text: 'next →' }));
    if (arrayName) {
      const about = h('dl', { class: 'kv', id: 'array-summary' },
        h('dt', { text: 'state' }), h('dd', {}, badge(arr.state)),
        h('dt', { text: 'team' }), h('dd', { text: arr.team || '' }),
        h('dt', { text: 'tasks' }), h('dd', {}, `${arr.array.count.toLocaleString('en-US')}, at most ${arr.array.parallel} running at once: `, arrayCounts(arr.tasks)),
        arr.waiting_reason ? [h('dt', { text: 'first waiting' }), h('dd', {}, jobLink(arr.waiting_reason.task), ': ', h('span', { class: 'reason', text: arr.waiting_reason.reason }))] : null);
      return h('div', {}, h('h1', {}, 'Tasks of array ', h('span', { id: 'array-name', text: arrayName })),
        h('p', {}, h('a', { href: jobsHref(current), id: 'array-back', text: '← every job' }),
          h('span', { class: 'muted', text: ' Its tasks in index order, each a job of its own; the filters apply to them.' })),
        about, form, pager, table);
    }
    const whose = member ? `Your teams' jobs (${state.caller.teams.join(', ')}): other teams' jobs are counted on the Cluster and Teams pages, not listed.`
      : 'Every team\'s jobs.';
    return h('div', {}, h('h1', { text: 'Jobs' }),
      h('p', { class: 'muted', text: whose + ' In submission order, oldest first; finished jobs stay until the retention takes them. A job array is one row counting its tasks that match the filters; its name lists them.' }),
      form, pager, table);
  },
};

// ---- Job ------------------------------------------------------------------------------------------------------

const KNOWN_JOB_FIELDS = new Set(['name', 'team', 'priority', 'priority_weight', 'state', 'reason', 'submitted_at', 'nodes',
  'node_count', 'borrowing', 'preemptions', 'restarts', 'work_done_s', 'placement', 'started_at', 'duration_s', 'pod_sets', 'history']);

// Any value as readable text, for fields this page does not know by name (added by newer servers).
function generic(value) {
  if (value === null || typeof value !== 'object') return h('span', { class: 'generic', text: String(value) });
  if (Array.isArray(value) && value.length && value.every(v => v && typeof v === 'object' && !Array.isArray(v))) {
    const keys = [...new Set(value.flatMap(v => Object.keys(v)))];
    return h('table', { class: 'generic-table' }, h('tr', {}, keys.map(k => h('th', { text: k }))),
      value.map(v => h('tr', {}, keys.map(k => h('td', {}, v[k] === undefined ? '' : (typeof v[k] === 'object' && v[k] !== null ? generic(v[k]) : String(v[k])))))));
  }
  return h('pre', { class: 'generic', text: JSON.stringify(value, null, 2) });
}

PAGES.job = {
  logs: { replica: 0, follow: true, timer: null, text: '', job: '', reading: false },
  reset() { if (this.logs.timer) clearInterval(this.logs.timer); this.logs.timer = null; },
  async draw(route) {
    const name = route.arg;
    const input = h('input', { name: 'job', value: name, placeholder: 'job name', size: 30 });
    const form = h('form', { class: 'filters', id: 'job-form', onsubmit: e => { e.preventDefault(); location.hash = '#/job/' + encodeURIComponent(input.value.trim()); } },
      h('label', {}, 'job', input), h('button', { type: 'submit', text: 'Show' }));
    if (!name) return h('div', {}, h('h1', { text: 'Job' }), form, h('p', { class: 'muted', text: 'Pick a job in the queue, or type its name.' }));
    let j;
    try { j = await api('/v1/jobs/' + encodeURIComponent(name)); } catch (e) {
      if (e.status === 401) throw e;
      return h('div', {}, h('h1', { text: 'Job ' + name }), form, h('p', { class: 'error', text: e.message }));
    }
    // An array's name (typed in, or a link): its own page is the Jobs page on its tasks, with its summary above.
    if (j.kind === 'array') {
      location.replace(jobsHref({ array: j.name }));
      return h('div', {}, h('h1', { text: 'Job array ' + j.name }), h('p', {}, h('a', { href: jobsHref({ array: j.name }), text: 'its tasks' })));
    }
    // A waiting job's place in the queue and its estimated start (the Queue page's, for this one job).
    let queued = null;
    if (j.state === 'Pending' || j.state === 'Suspended') {
      try {
        const q = await api('/v1/dashboard/queue?limit=1&job=' + encodeURIComponent(j.name));
        if (q.items.length) queued = { item: q.items[0], total: q.total };
      } catch (e) { if (e.status === 401) throw e; }
    }
    const kv = h('dl', { class: 'kv', id: 'job-summary' });
    const add = (k, v) => kv.append(h('dt', { text: k }), h('dd', {}, v));
    add('state', badge(j.state));
    add('reason', h('span', { class: 'reason', text: j.reason }));
    if (queued) {
      const it = queued.item;
      add('waits for', h('span', { class: 'cat cat-' + it.wait.category, 'data-category': it.wait.category, text: it.wait.label }));
      add('queue position', h('span', { id: 'job-position', text: `${it.position} of ${queued.total} waiting` }));
      let estimate;
      if (it.never_fits) estimate = 'never: it does not fit the cluster as built';
      else if (it.estimated_start !== undefined) {
        const inS = toSeconds(it.estimated_start) - Date.now() / 1000;
        estimate = it.estimate_from === 'reservation'
          ? `${fmtTime(it.estimated_start)} (in ~${fmtDuration(Math.max(0, inS))}; its backfill reservation: running jobs reaching their time limits free its nodes by then, and no later job may take them)`
          : `${fmtTime(it.estimated_start)} (in ~${fmtDuration(Math.max(0, inS))}; counts capacity only: ` +
            'running jobs with a known duration ending on time, the jobs ahead holding what they take; quota or topology may delay it)';
      } else {
        estimate = 'none: no running job with a known duration frees what it needs, or something other than capacity blocks it (see its reason)';
      }
      add('estimated start', h('span', { id: 'job-estimate', text: estimate }));
    }
    if (j.reservation) add('reserved', h('span', { id: 'job-reservation', text: `from ${fmtTime(j.reservation.start_at)} on ${j.reservation.nodes.join(', ')} (backfill)` }));
    add('team', j.team);
    add('priority', (j.priority || 'none') + ' (weight ' + j.priority_weight + ')');
    add('submitted', fmtTime(j.submitted_at));
    if (j.started_at !== undefined) add('running since', fmtTime(j.started_at));
    if (j.duration_s !== undefined) add('expected duration', fmtDuration(j.duration_s));
    add('borrowing', j.borrowing ? 'yes' : 'no');
    add('preemptions', h('span', { id: 'job-preemptions', text: j.preemptions }));
    add('restarts', h('span', { id: 'job-restarts', text: j.restarts }));
    add('work kept', fmtDuration(j.work_done_s));
    if (j.nodes.length) add('topology', h('a', { href: '#/topology?job=' + encodeURIComponent(j.name), text: 'where its replicas sit' }));

    const placement = [];
    for (const ps of j.placement) for (const r of ps.replicas)
      placement.push(h('tr', {}, h('td', { class: 'num', text: r.rank }), h('td', {}, h('a', { href: '#/topology?job=' + encodeURIComponent(j.name) + '&node=' + encodeURIComponent(r.node), text: r.node })),
        h('td', { text: ps.instance_type }), h('td', { text: r.accelerators.join(', ') }), h('td', { text: r.numa_domains.join(', ') }), h('td', { text: r.cpus })));
    const placeTable = placement.length ? h('table', { id: 'placement' }, h('tr', {}, ['rank', 'node', 'instance type', 'accelerators', 'NUMA', 'cpus'].map(t => h('th', { text: t }))), placement)
      : h('p', { class: 'muted', text: 'Not placed: the job is not running.' });

    const history = (j.history || []).slice().reverse();
    const histTable = h('table', { id: 'history' }, h('tr', {}, ['at', 'from', 'to', 'reason'].map(t => h('th', { text: t }))),
      history.map(t => h('tr', {}, h('td', { text: fmtTime(t.at) }), h('td', {}, badge(t.from)), h('td', {}, badge(t.to)), h('td', { class: 'reason', text: t.reason }))));
    // Preemptions: the history's moves out of Running that name a preemption; fuller records, when the server
    // gives them, appear below under their own field names.
    const pre = history.filter(t => t.from === 'Running' && /preempt/i.test(t.reason));
    const preTable = pre.length ? h('table', { id: 'preemptions' }, h('tr', {}, ['at', 'to', 'rule and reason'].map(t => h('th', { text: t }))),
      pre.map(t => h('tr', {}, h('td', { text: fmtTime(t.at) }), h('td', {}, badge(t.to)), h('td', { class: 'reason', text: t.reason }))))
      : h('p', { class: 'muted', text: 'Never preempted.' });
    const extra = Object.keys(j).filter(k => !KNOWN_JOB_FIELDS.has(k));
    const extraBox = extra.length ? h('div', { id: 'job-extra' }, h('h2', { text: 'More' }),
      h('dl', { class: 'kv' }, extra.map(k => [h('dt', { text: k }), h('dd', { 'data-field': k }, generic(j[k]))]))) : null;
    const specBox = h('details', {}, h('summary', { text: 'pod sets' }), generic(j.pod_sets));

    // Logs: the tail of one replica, read again every two seconds while "follow" is on.
    const replicas = j.pod_sets.reduce((n, p) => n + p.replicas, 0);
    const L = this.logs;
    if (L.job !== j.name) { L.job = j.name; L.replica = 0; L.text = ''; }
    const pre_ = h('pre', { class: 'logs', id: 'logs', text: L.text || '(no output yet)' });
    const replicaSel = h('select', { onchange: e => { L.replica = +e.target.value; L.text = ''; fetchLogs(); } },
      Array.from({ length: replicas }, (_, i) => h('option', { value: i, text: 'replica ' + i, selected: i === L.replica })));
    const follow = h('input', { type: 'checkbox', checked: L.follow, onchange: e => { L.follow = e.target.checked; } });
    const fetchLogs = async () => {
      if (L.reading) return;  // one read at a time: a slow or hung server does not pile them up
      L.reading = true;
      try {
        const text = await api('/v1/jobs/' + encodeURIComponent(j.name) + '/logs?replica=' + L.replica + '&tail=200');
        const box = document.getElementById('logs');
        L.text = text;
        if (box && box.textContent !== (text || '(no output yet)')) {
          const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
          box.textContent = text || '(no output yet)';
          if (atEnd) box.scrollTop = box.scrollHeight;
        }
      } catch (e) {
        const box = document.getElementById('logs');
        if (box && e.status !== 401) box.textContent = 'Logs are not readable: ' + e.message;
      } finally {
        L.reading = false;
      }
    };
    if (!L.timer) L.timer = setInterval(() => { if (L.follow && state.route.page === 'job') fetchLogs(); }, 2000);
    setTimeout(() => { if (L.follow) pre_.scrollTop = pre_.scrollHeight; fetchLogs(); }, 0);

    return h('div', {}, h('h1', {}, 'Job ', h('span', { id: 'job-name', text: j.name })), form, kv,
      h('h2', { text: 'Placement' }), placeTable,
      h('h2', { text: 'Preemptions' }), preTable,
      h('h2', { text: 'History' }), histTable,
      extraBox, specBox,
      h('h2', {}, 'Logs ', replicaSel, ' ', h('label', { class: 'muted' }, follow, ' follow')), pre_);
  },
};

// ---- Topology -------------------------------------------------------------------------------------------------

// A node's state on the Topology page, in the order that decides it: health first, then cordon and suspicion
// (no new work lands there), then how much of it is in use.
const NODE_STATES = [
  ['free', 'free'], ['partial', 'partly used'], ['full', 'full'], ['unhealthy', 'unhealthy'], ['suspect', 'suspect'], ['cordoned', 'cordoned']];
function nodeClass(n) {
  if (n.health !== 'Schedulable') return 'unhealthy';
  if (n.cordoned) return 'cordoned';
  if (n.suspect) return 'suspect';
  if (!n.in_use) return 'free';
  return n.in_use >= n.accelerators ? 'full' : 'partial';
}
const nodeStateLabel = c => NODE_STATES.find(([k]) => k === c)[1];
// Accelerators free where new work may land: on Schedulable nodes that are neither cordoned nor suspect.
function freeOn(n) { return n.health === 'Schedulable' && !n.cordoned && !n.suspect ? Math.max(0, n.accelerators - n.in_use) : 0; }
function domainTotals(d) {
  if (!d.children) return { free: freeOn(d), total: d.accelerators || 0 };
  return d.children.map(domainTotals).reduce((a, b) => ({ free: a.free + b.free, total: a.total + b.total }), { free: 0, total: 0 });
}

PAGES.topology = {
  async draw(route) {
    const jobName = route.params.get('job') || '';
    const focus = route.params.get('node') || '';
    const [t, job] = await Promise.all([api('/v1/dashboard/topology'),
      jobName ? api('/v1/jobs/' + encodeURIComponent(jobName)).catch(e => ({ error: e.message })) : null]);
    const mine = new Map();
    if (job && !job.error) for (const ps of job.placement) for (const r of ps.replicas) mine.set(r.node, (mine.get(r.node) || []).concat(r.rank));
    let shown = 0;
    // Every square is reachable by keyboard (Tab) and read out by its label: name, state, free accelerators.
    const leaf = n => {
      shown++;
      const ranks = mine.get(n.node);
      const cls = nodeClass(n);
      const label = `${n.node}: ${nodeStateLabel(cls)}, ${freeOn(n)} of ${n.accelerators} accelerators free` +
        ` (${n.instance_type}, ${n.health}${n.cordoned ? ', cordoned' : ''}${n.suspect ? ', suspect' : ''}, ${n.replicas} replicas)` +
        (ranks ? `; ${jobName} ranks ${ranks.join(', ')}` : '');
      return h('span', { class: 'node ' + cls + (ranks || n.node === focus ? ' highlight' : ''), title: label, 'aria-label': label,
                         role: 'img', tabindex: 0, 'data-node': n.node, 'data-health': n.health, 'data-state': cls, 'data-free': freeOn(n) });
    };
    const domain = d => {
      if (!d.children) return leaf(d);
      const leaves = d.children.filter(c => !c.children).length;
      const tot = domainTotals(d);
      return h('div', { class: 'domain ' + d.level, 'data-domain': d.name, 'data-free': tot.free },
        h('div', { class: 'domain-title', text: `${d.level} ${d.name}` + (leaves ? ` · ${leaves} node${leaves === 1 ? '' : 's'}` : '') +
          ` · ${tot.free} of ${tot.total} accelerators free` }),
        h('div', { class: 'domain-children', role: 'group', 'aria-label': `${d.level} ${d.name}` }, d.children.map(domain)));
    };
    const tree = h('div', { id: 'topology' }, t.domains.map(domain));
    const input = h('input', { name: 'job', value: jobName, placeholder: 'job name', size: 30 });
    const form = h('form', { class: 'filters', onsubmit: e => { e.preventDefault(); setParams('topology', { job: input.value.trim() }); } },
      h('label', {}, 'show where a job runs', input), h('button', { type: 'submit', text: 'Show' }));
    const legend = h('div', { class: 'legend', id: 'topology-legend' },
      NODE_STATES.map(([k, text]) => h('span', { 'data-state': k }, h('i', { class: 'node-key ' + k }), text)),
      h('span', { text: '▢ outlined: the chosen job\'s replicas (hover a node, or Tab to it, for details)' }));
    const note = job && job.error ? h('p', { class: 'error', text: job.error }) :
      job ? h('p', { id: 'topology-job', text: `${jobName}: ${mine.size} node${mine.size === 1 ? '' : 's'} (${job.state})` }) : null;
    return h('div', {}, h('h1', { text: 'Topology' }),
      h('p', { class: 'muted', text: 'Levels: ' + t.levels.join(' → ') + '. Free accelerators: on Schedulable nodes neither cordoned nor suspect.' }),
      form, note, legend, tree,
      shown ? null : h('p', { class: 'muted', text: 'No nodes.' }));
  },
};

// ---- Events ---------------------------------------------------------------------------------------------------

PAGES.events = {
  loaded: false,
  reset() { this.loaded = false; },
  async draw(route) {
    if (!this.loaded) {
      // The last few hundred events, then whatever the live loop adds.
      const last = state.cursor || 0;
      const page = await api('/v1/events?since=' + Math.max(0, last - 300));
      const seen = new Set(state.events.map(e => e.seq));
      for (const e of page.events) if (!seen.has(e.seq)) state.events.push(e);
      state.events.sort((a, b) => b.seq - a.seq);
      this.loaded = true;
    }
    const text = route.params.get('q') || '';
    const kind = route.params.get('kind') || '';
    const kinds = [...new Set(state.events.map(e => e.kind))].sort();
    const input = h('input', { name: 'q', value: text, placeholder: 'job, node or words', size: 30 });
    const kindSel = h('select', { name: 'kind' }, h('option', { value: '', text: 'every kind' }),
      kinds.map(k => h('option', { value: k, text: k, selected: k === kind })));
    const form = h('form', { class: 'filters', id: 'event-filters', onsubmit: e => { e.preventDefault(); setParams('events', { q: input.value.trim(), kind: kindSel.value }); } },
      h('label', {}, 'filter', input), h('label', {}, 'kind', kindSel), h('button', { type: 'submit', text: 'Filter' }));
    kindSel.addEventListener('change', () => form.requestSubmit());
    const needle = text.toLowerCase();
    const match = e => (!kind || e.kind === kind) &&
      (!needle || [e.kind, e.job, e.node, e.message].some(v => v && v.toLowerCase().includes(needle)));
    const rows = [];
    for (const e of state.events) {
      if (!match(e)) continue;
      if (rows.length >= 200) break;
      rows.push(h('tr', { 'data-seq': e.seq }, h('td', { class: 'num', text: e.seq }), h('td', { text: fmtTime(e.at) }),
        h('td', { class: 'kind' }, badge(e.kind)), h('td', {}, e.job ? jobLink(e.job) : ''),
        h('td', {}, e.node ? h('a', { href: '#/topology?node=' + encodeURIComponent(e.node), text: e.node }) : ''),
        h('td', { class: 'reason', text: e.message })));
    }
    return h('div', {}, h('h1', { text: 'Events' }),
      h('p', { class: 'muted', text: 'Live, newest first; the last 200 that match are shown (filter to find older ones).' }), form,
      h('table', { id: 'events', class: 'events' }, h('tr', {}, ['#', 'at', 'kind', 'job', 'node', 'what happened'].map(t => h('th', { text: t }))), rows));
  },
};

// ---- start ----------------------------------------------------------------------------------------------------

window.addEventListener('hashchange', () => { if (state.token) navigate(); });
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('login-form').addEventListener('submit', e => {
    e.preventDefault();
    const field = document.getElementById('token');
    const value = field.value;
    field.value = '';
    login(value);
  });
  document.getElementById('logout').addEventListener('click', () => logout(''));
  const zone = document.getElementById('zone');
  const showZone = () => {
    zone.textContent = state.zone === 'local' ? 'times: local' : 'times: UTC';
    zone.title = 'times are written in ' + (state.zone === 'local' ? 'this browser\'s zone (with its offset)' : 'UTC (Z)') + '; click to switch';
    zone.dataset.zone = state.zone;
  };
  showZone();
  zone.addEventListener('click', () => {
    state.zone = state.zone === 'local' ? 'utc' : 'local';
    localStorage.setItem('allot-zone', state.zone);  // a preference, not a secret: kept across tabs
    showZone();
    if (state.token) render(false);
  });
  if (state.token) login(state.token); else showLogin('');
});
