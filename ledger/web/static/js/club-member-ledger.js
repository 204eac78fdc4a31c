// A member's ledger: the transfers (pool scoring) or scores (points scoring) behind the
// member's standings row, for the season, game and scoring the standings showed (carried in
// the fragment), each linked to its hand's replay at the event that caused it; the total
// set against the standings row; shown a page at a time.
import { el } from './api.js';
import { $, clubId, openClub, problemOf, read, readAll, showProblem } from './club.js';

const PAGE = 25;
const memberId = $('member-ledger-app').dataset.member;
const form = $('ledger-filters');
const body = document.querySelector('#ledger tbody');

await openClub();

const [member, seasons] = await Promise.all([read(`/members/${encodeURIComponent(memberId)}`),
  readAll('/seasons')]);
if (!member.ok) {
  showProblem(member.status === 404 ? 'There is no such member in this club.' : problemOf(member));
  $('member-ledger-app').hidden = true;
  throw new Error('no member');
}
$('member-name').textContent = member.data.name;
document.title = `${member.data.name} · ${document.title}`;
if (seasons.ok) for (const s of seasons.items) $('filter-season').append(el('option', { value: s.id }, s.name));

// The filters from the fragment (#season=&variant=&scoring=, as the standings link here).
function fromHash() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const name of ['season', 'variant', 'scoring']) {
    const select = form.elements[name];
    const wanted = params.get(name) ?? (name === 'scoring' ? 'pool' : '');
    if ([...select.options].some((o) => o.value === wanted)) select.value = wanted;
  }
}

function filters() {
  const out = {};
  for (const [k, v] of new FormData(form)) if (v) out[k] = v;
  return out;
}

function signed(n) { return n > 0 ? `+${n}` : String(n); }

let entries = [];
let page = 0;
const names = new Map(); // table id -> [seat names]

function account(table, a) {
  if (a === 'pool') return 'the pool';
  const seat = Number(String(a).split(':')[1]);
  return (names.get(table) || [])[seat] ?? `seat ${seat}`;
}

function replayLink(x) {
  const href = `/tables/${encodeURIComponent(x.table)}/hands/${x.hand}/replay?club=${encodeURIComponent(clubId)}#version=${x.version}`;
  return el('a', { href, class: 'replay-link', dataset: { version: x.version },
    'aria-label': `Replay hand ${x.hand} at event ${x.version}` }, `Hand ${x.hand}`, el('span', { class: 'as' }, `event ${x.version}`));
}

function row(x) {
  const table = el('a', { href: `/tables/${encodeURIComponent(x.table)}?club=${encodeURIComponent(clubId)}`, title: x.table },
    el('code', { class: 'table-id' }, x.table.slice(0, 8)));
  return el('tr', { dataset: { table: x.table, hand: x.hand ?? '', version: x.version ?? '', delta: x.delta } },
    el('td', {}, table),
    el('td', {}, x.hand === undefined ? 'start' : replayLink(x)),
    el('td', { class: 'what' }, x.what),
    el('td', { dataset: { field: 'delta' } }, signed(x.delta)),
    el('td', { dataset: { field: 'running' } }, x.running));
}

function show() {
  const pages = Math.max(1, Math.ceil(entries.length / PAGE));
  page = Math.min(Math.max(0, page), pages - 1);
  const shown = entries.slice(page * PAGE, (page + 1) * PAGE);
  body.replaceChildren(...shown.map(row));
  $('ledger-empty').hidden = entries.length > 0;
  $('ledger-pager').hidden = entries.length <= PAGE;
  $('ledger-page').textContent = `Entries ${page * PAGE + 1}–${page * PAGE + shown.length} of ${entries.length}`;
  $('ledger-prev').disabled = page === 0;
  $('ledger-next').disabled = page >= pages - 1;
  body.dataset.page = page;
}

let loading = 0;
async function load() {
  const mine = ++loading;
  const f = filters();
  const points = f.scoring === 'points';
  // The ledger in the standings' own view (its filters): its `counted` add up to the row,
  // also where Loo for points and Rounce mix (a Rounce score then counts up).
  const view = new URLSearchParams(f).toString();
  const [book, tables, standings] = await Promise.all([
    read(`/members/${encodeURIComponent(memberId)}/ledger${view ? '?' + view : ''}`),
    readAll('/tables', f),
    read('/standings?' + new URLSearchParams(f)),
  ]);
  if (mine !== loading) return;
  const refused = [book, tables, standings].find((r) => !r.ok);
  if (refused) { showProblem(problemOf(refused)); return; }
  showProblem('');
  // Only the tables the standings row counts (the ledger lists every table of the season).
  const order = new Map(tables.items.map((t, i) => [t.id, i]));
  for (const t of tables.items) names.set(t.id, t.seats.map((s) => s.name));
  const out = [];
  if (points) {
    for (const s of book.data.starts || []) {
      const counted = s.counted ?? s.points;
      if (order.has(s.table) && counted) out.push({ table: s.table, delta: counted, what: 'starting score', version: 0 });
    }
    for (const s of book.data.scores || []) {
      if (!order.has(s.table)) continue;
      const counted = s.counted ?? s.delta;
      const what = s.reason.replace(/_/g, ' ') + (counted !== s.delta ? ` (${signed(s.delta)} at Rounce, counted up here)` : '');
      out.push({ ...s, delta: counted, what });
    }
  } else {
    for (const t of book.data.transfers || []) {
      if (!order.has(t.table)) continue;
      const me = 'seat:' + t.seat;
      const delta = (t.to === me ? t.amount : 0) - (t.from === me ? t.amount : 0);
      const other = t.to === me ? `from ${account(t.table, t.from)}` : `to ${account(t.table, t.to)}`;
      out.push({ ...t, delta, what: `${t.reason.replace(/_/g, ' ')} ${other}` });
    }
  }
  out.sort((a, b) => order.get(a.table) - order.get(b.table) || a.version - b.version);
  let running = 0;
  for (const x of out) x.running = (running += x.delta);
  entries = out;
  page = 0;
  show();
  const metric = points ? 'points' : 'chips';
  const standingsRow = standings.data.rows.find((r) => r.member === memberId);
  const figure = standingsRow ? standingsRow[metric] : 0;
  $('total-label').textContent = `Total ${metric}`;
  $('ledger-total').textContent = running;
  $('ledger-total').dataset.total = running;
  $('standings-figure').textContent = figure;
  $('standings-figure').dataset.figure = figure;
  $('ledger-count').textContent = out.length;
  $('totals-check').textContent = running === figure
    ? `✔ These entries add up to the ${metric} of ${member.data.name}'s standings row.`
    : `✘ These entries add up to ${running}, the standings row says ${figure}.`;
  const back = new URLSearchParams(f);
  $('back-to-standings').href = `/clubs/${encodeURIComponent(clubId)}/standings${back.toString() ? '#' + back : ''}`;
  body.dataset.loaded = new URLSearchParams(f).toString();
}

form.addEventListener('change', () => {
  history.replaceState(null, '', location.pathname + location.search + '#' + new URLSearchParams(filters()));
  load();
});
window.addEventListener('hashchange', () => { fromHash(); load(); });
$('ledger-prev').addEventListener('click', () => { page -= 1; show(); });
$('ledger-next').addEventListener('click', () => { page += 1; show(); });
fromHash();
await load();
