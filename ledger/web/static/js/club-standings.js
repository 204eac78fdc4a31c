import { el } from './api.js';
import { $, clubId, clubPath, clubToken, openClub, problemOf, read, readAll, showProblem } from './club.js';
import { follow } from './sse.js';

const SVG = 'http://www.w3.org/2000/svg';
const COLOURS = ['#1f6f50', '#c2410c', '#1d4ed8', '#9333ea', '#b45309', '#0e7490', '#be185d', '#4d7c0f'];
const FIELDS = ['rank', 'name', 'tables', 'hands', 'chips', 'points', 'games_won', 'tricks', 'loos', 'looed_chips'];

await openClub();
const form = $('standings-filters');
const body = document.querySelector('#standings tbody');

const seasons = await readAll('/seasons');
if (seasons.ok) for (const s of seasons.items) $('filter-season').append(el('option', { value: s.id }, s.name));
// A season named in the fragment (#season=ID: the seasons page links here so) is chosen, and
// a game and scoring too (#variant=&scoring=: a member's ledger links back so).
function seasonFromHash() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const name of ['season', 'variant', 'scoring']) {
    const select = form.elements[name];
    const wanted = params.get(name);
    if (wanted && [...select.options].some((o) => o.value === wanted)) select.value = wanted;
  }
}
seasonFromHash();
window.addEventListener('hashchange', () => { seasonFromHash(); load(); });

function filters() {
  const out = {};
  for (const [k, v] of new FormData(form)) if (v) out[k] = v;
  return out;
}

function svg(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

// Each member's running total after every hand of the chosen tables (in the order the
// tables were created, hands in order), from the member ledgers: [{key, label}], {member: [v]}.
async function series(rows, f) {
  const tables = await readAll('/tables', f);
  if (!tables.ok) return null;
  const order = new Map(tables.items.map((t, i) => [t.id, i]));
  const points = f.scoring === 'points';
  const deltas = new Map(); // member -> Map(key -> delta)
  const keys = new Map(); // key -> [tableIndex, hand]
  // The ledger in the standings' own view (its filters): its `counted` add up to the row's
  // points, also where Loo for points and Rounce mix (Rounce then counts up).
  const view = new URLSearchParams();
  for (const k of ['season', 'variant', 'scoring']) if (f[k]) view.set(k, f[k]);
  const query = view.toString() ? '?' + view : '';
  const ledgers = await Promise.all(rows.map((row) => read(`/members/${encodeURIComponent(row.member)}/ledger` + query)));
  rows.forEach((row, i) => {
    const r = ledgers[i];
    const mine = new Map();
    deltas.set(row.member, mine);
    if (!r.ok) return;
    const add = (table, hand, d) => {
      if (!order.has(table)) return;
      const key = `${order.get(table)}:${hand}`;
      keys.set(key, [order.get(table), hand]);
      mine.set(key, (mine.get(key) || 0) + d);
    };
    if (points) {
      const scores = r.data.scores || [];
      for (const s of scores) add(s.table, s.hand, s.counted ?? s.delta);
      // A table's starting score (Rounce counts down from 15) is in the standings' points:
      // it counts with the member's first hand at that table.
      for (const st of r.data.starts || []) {
        const hands = scores.filter((x) => x.table === st.table).map((x) => x.hand);
        const counted = st.counted ?? st.points;
        if (counted && hands.length) add(st.table, Math.min(...hands), counted);
      }
    } else {
      for (const t of r.data.transfers || []) {
        const me = 'seat:' + t.seat;
        add(t.table, t.hand, (t.to === me ? t.amount : 0) - (t.from === me ? t.amount : 0));
      }
    }
  });
  const sorted = [...keys.entries()].sort((a, b) => a[1][0] - b[1][0] || a[1][1] - b[1][1]).map(([k]) => k);
  const values = {};
  for (const row of rows) {
    let total = 0;
    const mine = deltas.get(row.member);
    values[row.member] = [0, ...sorted.map((k) => (total += mine.get(k) || 0))];
  }
  return { count: sorted.length, values };
}

function chart(rows, s, metric) {
  const W = 640; const H = 300; const L = 48; const R = 12; const T = 12; const B = 30;
  const n = s.count + 1;
  const all = rows.flatMap((r) => s.values[r.member]).concat([0]);
  const lo = Math.min(...all); const hi = Math.max(...all); const span = hi - lo || 1;
  const x = (i) => L + (n > 1 ? (i * (W - L - R)) / (n - 1) : 0);
  const y = (v) => T + ((hi - v) * (H - T - B)) / span;
  const out = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', id: 'standings-chart' });
  for (const v of new Set([lo, 0, hi])) {
    out.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: v === 0 ? '#888' : '#e5e5e5' }),
      svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, v));
  }
  // Along the bottom: the hands in season order (each while they fit, else the first and last).
  const every = n <= 25 ? 1 : n - 1;
  for (let i = 0; i < n; i += every) {
    out.append(svg('text', { x: x(i), y: H - 10, 'text-anchor': i ? 'middle' : 'start', 'font-size': 11, fill: '#555' },
      i ? i : 'start'));
  }
  rows.forEach((row, k) => {
    const colour = COLOURS[k % COLOURS.length];
    const vals = s.values[row.member];
    out.append(svg('polyline', { points: vals.map((v, i) => `${x(i)},${y(v)}`).join(' '), fill: 'none',
      stroke: colour, 'stroke-width': 2.5, 'stroke-linejoin': 'round', 'data-member': row.member }));
    vals.forEach((v, i) => {
      if (i === 0 || (n > 60 && i !== n - 1)) return;
      const dot = svg('circle', { cx: x(i), cy: y(v), r: i === n - 1 ? 4.5 : 3, fill: colour,
        'data-member': row.member, 'data-index': i, 'data-value': v, ...(i === n - 1 ? { 'data-final': 'true' } : {}) });
      dot.append(svg('title', {}, `${row.name}: ${v} ${metric} after hand ${i} of ${s.count}`));
      out.append(dot);
    });
  });
  return out;
}

let loading = 0;
async function load() {
  const mine = ++loading;
  const f = filters();
  const r = await read('/standings?' + new URLSearchParams(f));
  if (mine !== loading) return;
  if (!r.ok) { showProblem(problemOf(r)); return; }
  showProblem('');
  const rows = r.data.rows;
  $('standings').dataset.scoring = f.scoring || 'pool';
  // Each member's name opens the entries behind the row (these filters carried over).
  const ledger = (row) => el('a', { class: 'member-ledger-link',
    href: `/clubs/${encodeURIComponent(clubId)}/members/${encodeURIComponent(row.member)}/ledger#${new URLSearchParams(f)}`,
    title: `What makes up ${row.name}'s row` }, row.name);
  body.replaceChildren(...rows.map((row) => el('tr', { dataset: { member: row.member } },
    FIELDS.map((k) => el('td', { dataset: { field: k } }, k === 'name' ? ledger(row) : row[k])))));
  $('standings-empty').hidden = rows.length > 0;
  const metric = f.scoring === 'points' ? 'points' : 'chips';
  $('season-chart-title').textContent = (metric === 'points' ? 'Points' : 'Chips') + ' over the season';
  const s = rows.length ? await series(rows, f) : null;
  if (mine !== loading) return;
  if (!s || !s.count) {
    $('season-chart').replaceChildren(el('p', { class: 'hint' }, 'Nothing to draw yet.'));
    $('season-legend').replaceChildren();
  } else {
    $('season-chart').replaceChildren(chart(rows, s, metric));
    $('season-legend').replaceChildren(...rows.map((row, k) => el('span', {},
      el('i', { style: `background:${COLOURS[k % COLOURS.length]}` }), row.name)));
  }
  body.dataset.asOf = r.data.as_of;
  body.dataset.loaded = new URLSearchParams(f).toString();
}

// The CSV comes from the API with the token in its Authorization header (a plain link
// could not send it), then is saved from memory.
$('csv-download').addEventListener('click', async () => {
  const f = filters();
  let resp;
  try {
    resp = await fetch(clubPath('/standings?' + new URLSearchParams({ ...f, format: 'csv' })), {
      headers: { Accept: 'text/csv', Authorization: 'Bearer ' + clubToken() } });
  } catch (err) { showProblem('The server does not answer: ' + err.message); return; }
  if (!resp.ok) {
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    showProblem(problemOf({ status: resp.status, data }));
    return;
  }
  const url = URL.createObjectURL(await resp.blob());
  const a = el('a', { href: url, download: `standings${f.season ? '-' + $('filter-season').selectedOptions[0].text : ''}.csv`.replace(/[^\w.-]+/g, '_') });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
});

// A phone shows the telling columns; this shows every one (the name stays in view).
$('all-columns').addEventListener('click', (ev) => {
  const all = $('standings').classList.toggle('all-columns');
  ev.currentTarget.setAttribute('aria-pressed', String(all));
  ev.currentTarget.textContent = all ? 'Show fewer columns' : 'Show every column';
});

form.addEventListener('change', load);
await load();

// Live: the club's feed (every table of the club); the standings are read again when a
// hand is settled or voided, a game won, a table closed or added, a member renamed.
const MOVES_STANDINGS = new Set(['hand_settled', 'hand_voided', 'game_won', 'table_closed',
  'club_table_added', 'member_joined', 'member_renamed', 'member_archived']);
let again = null;
const live = follow({
  url: clubPath('/events'), token: clubToken(), badge: $('live'), what: 'the club\'s events',
  lastId: body.dataset.asOf ?? null,
  onEvent: (type) => {
    if (MOVES_STANDINGS.has(type) && !again) again = setTimeout(() => { again = null; load(); }, 300);
  },
});
setInterval(() => { if (live.mode !== 'stream') load(); }, 10000);  // no stream: now and then
