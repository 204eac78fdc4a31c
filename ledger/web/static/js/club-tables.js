import { el } from './api.js';
import { $, canWrite, openClub, problemOf, readAll, showProblem, when } from './club.js';

const club = await openClub();
const body = document.querySelector('#tables tbody');
const form = $('table-filters');
const seasonNames = {};

const [seasons, members] = await Promise.all([readAll('/seasons'), readAll('/members')]);
if (seasons.ok) {
  for (const s of seasons.items) {
    seasonNames[s.id] = s.name;
    $('filter-season').append(el('option', { value: s.id }, s.name));
  }
}
if (members.ok) {
  for (const m of members.items) $('filter-member').append(el('option', { value: m.id }, m.name + (m.archived ? ' (archived)' : '')));
}

function tableLink(t, path, text) {
  // The table page opens with this tab's club token (?club= names the club, not a secret).
  return el('a', { href: `/tables/${encodeURIComponent(t.id)}${path}?club=${encodeURIComponent(club.id)}` }, text);
}

async function load() {
  const params = {};
  for (const [k, v] of new FormData(form)) if (v) params[k] = v;
  const r = await readAll('/tables', params);
  if (!r.ok) { showProblem(problemOf(r)); return; }
  showProblem('');
  const view = canWrite(club) ? 'Admin view' : 'Spectator view';
  body.replaceChildren(...r.items.slice().reverse().map((t) => el('tr', { dataset: { table: t.id, status: t.status } },
    el('td', {}, ...when(t.created_at).split(' ').map((part, i) => [i ? ' ' : '', el('span', { class: 'when' }, part)])),
    el('td', {}, t.seats.map((s) => s.name).join(', ')),
    el('td', {}, t.season ? (seasonNames[t.season] || t.season) : '–'),
    el('td', {}, `${t.variant === 'rounce' ? 'Rounce' : 'Loo'}, ${t.scoring}`),
    el('td', {}, t.status), el('td', {}, t.hands),
    el('td', { class: 'actions' }, tableLink(t, '', view), ' · ', tableLink(t, '/chips', 'Chips')))));
  $('tables-empty').hidden = r.items.length > 0;
  body.dataset.loaded = new URLSearchParams(params).toString();
}

form.addEventListener('change', load);
load();
