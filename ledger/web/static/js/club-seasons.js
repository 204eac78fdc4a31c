import { el } from './api.js';
import { $, canWrite, openClub, problemOf, readAll, showProblem, write } from './club.js';

const club = await openClub();
const writer = canWrite(club);
const body = document.querySelector('#seasons tbody');

async function load() {
  const r = await readAll('/seasons');
  if (!r.ok) { showProblem(problemOf(r)); return; }
  body.replaceChildren(...r.items.map((s) => el('tr', { dataset: { season: s.id, closed: s.closed } },
    el('td', {}, s.name), el('td', {}, s.starts_on || ''), el('td', {}, s.ends_on || ''),
    el('td', {}, s.closed ? 'closed' : 'open',
      writer && !s.closed ? el('button', { type: 'button', class: 'small close-season', onclick: async () => {
        const w = await write(`/seasons/${s.id}/close`);
        if (!w.ok) { showProblem(problemOf(w)); return; }
        showProblem('');
        load();
      } }, 'Close') : null),
    el('td', {}, el('a', { href: `/clubs/${encodeURIComponent(club.id)}/standings#season=${encodeURIComponent(s.id)}` }, 'Standings')))));
  $('seasons-empty').hidden = r.items.length > 0;
  body.dataset.loaded = String(r.items.length);
}

const form = $('start-season');
form.elements.starts_on.value = new Date().toISOString().slice(0, 10);
form.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = new FormData(form);
  const payload = { name: String(f.get('name')).trim(), starts_on: f.get('starts_on') };
  if (f.get('ends_on')) payload.ends_on = f.get('ends_on');
  const r = await write('/seasons', payload);
  if (!r.ok) { showProblem(problemOf(r)); return; }
  showProblem('');
  form.elements.name.value = '';
  load();
});
load();
