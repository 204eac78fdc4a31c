import { api, el, fatal, reasonText, seatName, tokenFor } from './api.js';
import { followTable } from './sse.js';

const root = document.getElementById('chips-app');
const tableId = root.dataset.table;
const token = tokenFor(tableId);
const $ = (id) => document.getElementById(id);
const COLOURS = ['#1f6f50', '#c2410c', '#1d4ed8', '#9333ea', '#6b7280'];
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

// [{hand, values: {account: balance}}] after each hand, from the ledger's transfers (pool)
// or scores (points: from each seat's starting score, 15 in Rounce, as the table shows them).
// A points game's ledger also has `transfers` (empty), so the table's scoring decides.
function series(ledger, accounts, points) {
  const totals = Object.fromEntries(accounts.map((a) => [a, points ? (ledger.start || {})[a] ?? 0 : 0]));
  const byHand = new Map();
  for (const t of points ? [] : ledger.transfers || []) {
    totals[t.from] -= t.amount;
    totals[t.to] += t.amount;
    byHand.set(t.hand, { ...totals });
  }
  for (const s of points ? ledger.scores || [] : []) {
    totals['seat:' + s.seat] += s.delta;
    byHand.set(s.hand, { ...totals });
  }
  return [...byHand.entries()].sort((a, b) => a[0] - b[0]).map(([hand, values]) => ({ hand, values }));
}

// A line chart in plain SVG: one line per account, a zero line, hands along the bottom.
function chart(rows, accounts, names) {
  const W = 640; const H = 280; const L = 48; const R = 12; const T = 12; const B = 30;
  const all = rows.flatMap((r) => accounts.map((a) => r.values[a])).concat([0]);
  const lo = Math.min(...all); const hi = Math.max(...all);
  const span = hi - lo || 1;
  const x = (i) => L + (rows.length > 1 ? (i * (W - L - R)) / (rows.length - 1) : (W - L - R) / 2);
  const y = (v) => T + ((hi - v) * (H - T - B)) / span;
  const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', id: 'balance-chart' });
  for (const v of [lo, 0, hi]) {
    s.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: v === 0 ? '#888' : '#e5e5e5' }),
      svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, v));
  }
  rows.forEach((r, i) => s.append(svg('text', { x: x(i), y: H - 10, 'text-anchor': 'middle', 'font-size': 11, fill: '#555' }, r.hand)));
  accounts.forEach((a, k) => {
    const colour = COLOURS[k % COLOURS.length];
    const pts = rows.map((r, i) => `${x(i)},${y(r.values[a])}`).join(' ');
    s.append(svg('polyline', { points: pts, fill: 'none', stroke: colour, 'stroke-width': 2.5,
      'stroke-dasharray': a === 'pool' ? '6 4' : 'none' }));
    rows.forEach((r, i) => {
      const dot = svg('circle', { cx: x(i), cy: y(r.values[a]), r: 3.5, fill: colour,
        'data-account': a, 'data-hand': r.hand, 'data-value': r.values[a] });
      dot.append(svg('title', {}, `${names[a]} after hand ${r.hand}: ${r.values[a]}`));
      s.append(dot);
    });
  });
  return s;
}

function flows(ledger, hand, names, points) {
  const rows = (ledger.transfers || []).filter((t) => t.hand === hand);
  const scores = (ledger.scores || []).filter((t) => t.hand === hand);
  const table = $('flows');
  if (points) {
    table.replaceChildren(el('tr', {}, el('th', {}, 'Player'), el('th', {}, 'Points'), el('th', {}, 'Why')),
      ...scores.map((s) => el('tr', {}, el('td', {}, names['seat:' + s.seat]), el('td', {}, s.delta), el('td', {}, reasonText(s.reason)))));
    return;
  }
  table.replaceChildren(el('tr', {}, el('th', {}, 'From'), el('th', {}, 'To'), el('th', {}, 'Chips'), el('th', {}, 'Why')),
    ...rows.map((t) => el('tr', { dataset: { from: t.from, to: t.to, amount: t.amount } },
      el('td', {}, names[t.from]), el('td', {}, names[t.to]), el('td', {}, t.amount), el('td', {}, reasonText(t.reason)))));
}

// The table and its ledger read again and drawn afresh: at the start, then whenever the
// table's feed says something happened (followTable), so a hand being played shows its
// stakes and settlement as they land. The hand picked below the chart stays picked.
async function readOnce() {
  const [t, l] = await Promise.all([api(`/v1/tables/${tableId}`, { token }), api(`/v1/tables/${tableId}/ledger`, { token })]);
  if (!t.ok || !l.ok) return t.ok ? l : t;
  render(t.data, l.data);
  return t;
}

// One read at a time; a refresh asked for during one reads again after it.
let busy = null;
let again = false;
async function refresh() {
  if (busy) { again = true; return busy; }
  busy = (async () => {
    let r;
    do { again = false; r = await readOnce(); } while (again);
    return r;
  })();
  try { return await busy; } finally { busy = null; }
}

function render(table, ledger) {
  const points = table.scoring === 'points';
  const accounts = table.seats.map((s) => 'seat:' + s.seat).concat(points ? [] : ['pool']);
  const names = Object.fromEntries(accounts.map((a) => [a, a === 'pool' ? 'Pool' : seatName(table, Number(a.split(':')[1]))]));
  const rows = series(ledger, accounts, points);
  if (points) {
    document.querySelector('#chips-app h1').textContent = 'How the points went';
    $('chart-title').textContent = 'Points after every hand';
    $('flows-title').textContent = 'Points in each hand';
  }
  root.dataset.version = table.version;
  root.dataset.hands = rows.length;
  if (!rows.length) { $('chart').textContent = points ? 'No hand has been scored yet.' : 'No chips have moved yet.'; return; }
  $('chart').replaceChildren(chart(rows, accounts, names));
  $('legend').replaceChildren(...accounts.map((a, k) => el('span', {},
    el('i', { style: `background:${COLOURS[k % COLOURS.length]}` }), names[a])));
  // The stakes of a hand not yet played are in the ledger too: that row is not "after" it.
  const live = table.hand && table.hand.phase !== 'complete' ? table.hand.number : null;
  const liveNote = table.status === 'playing' ? ' (in play: its stakes so far)' : ' (abandoned: its stakes)';
  const handLabel = (n) => (n === live ? `${n}${liveNote}` : String(n));
  $('after-each-hand').replaceChildren(
    el('tr', {}, el('th', {}, 'After hand'), accounts.map((a) => el('th', {}, names[a]))),
    ...rows.map((r) => el('tr', { dataset: { hand: r.hand } }, el('td', {}, handLabel(r.hand)),
      accounts.map((a) => el('td', { dataset: { account: a } }, r.values[a])))));
  const pick = $('hand-pick');
  const picked = rows.some((r) => String(r.hand) === pick.value) ? Number(pick.value) : rows[0].hand;
  pick.replaceChildren(...rows.map((r) => el('option', { value: r.hand }, `Hand ${handLabel(r.hand)}`)));
  pick.value = picked;
  pick.onchange = () => flows(ledger, Number(pick.value), names, points);
  flows(ledger, picked, names, points);
}

async function start() {
  if (!token) { fatal({ status: 401 }); return; }
  const t = await refresh();
  if (!t.ok) { fatal(t); return; }
  followTable({ tableId, token, version: t.data.version, refresh, badge: $('live') });
}

start();
