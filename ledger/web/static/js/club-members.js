import { el } from './api.js';
import { $, canWrite, clubId, openClub, problemOf, read, showProblem, write } from './club.js';

const club = await openClub();
const writer = canWrite(club);
const body = document.querySelector('#members tbody');

async function load() {
  const q = new URLSearchParams({ limit: '500' });
  const text = $('member-q').value.trim();
  if (text) q.set('q', text);
  if (!$('show-archived').checked) q.set('archived', 'false');
  const r = await read(`/members?${q}`);
  if (!r.ok) { showProblem(problemOf(r)); return; }
  body.replaceChildren(...r.data.items.map(row));
  $('members-empty').hidden = r.data.items.length > 0;
  body.dataset.loaded = q.toString();
}

function row(m) {
  const name = el('td', { class: 'member-name' }, el('a', { class: 'member-ledger-link',
    href: `/clubs/${encodeURIComponent(clubId)}/members/${encodeURIComponent(m.id)}/ledger`,
    title: `${m.name}'s ledger: the chips and points behind the standings` }, m.name));
  const tr = el('tr', { dataset: { member: m.id, archived: m.archived } }, name,
    el('td', {}, m.external_id || ''), el('td', {}, m.archived ? 'archived' : 'active'));
  if (writer) {
    const rename = el('button', { type: 'button', class: 'small rename', onclick: () => renaming(tr, m) }, 'Rename');
    const archive = m.archived ? null : el('button', {
      type: 'button', class: 'small archive',
      onclick: async () => {
        const r = await write(`/members/${m.id}/archive`);
        if (!r.ok) { showProblem(problemOf(r)); return; }
        showProblem('');
        load();
      },
    }, 'Archive');
    tr.append(el('td', { class: 'actions' }, rename, archive));
  }
  return tr;
}

function renaming(tr, m) {
  const input = el('input', { value: m.name, 'aria-label': 'New name for ' + m.name, maxlength: 80, class: 'rename-input' });
  const form = el('form', { class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    const name = input.value.trim();
    if (!name) return;
    const r = await write(`/members/${m.id}`, { name }, 'PATCH');
    if (!r.ok) { showProblem(problemOf(r)); return; }
    showProblem('');
    load();
  } }, input, el('button', { type: 'submit', class: 'small primary' }, 'Save'),
  el('button', { type: 'button', class: 'small', onclick: () => load() }, 'Cancel'));
  tr.querySelector('.member-name').replaceChildren(form);
  input.focus();
}

$('add-member').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const payload = { name: String(f.get('name')).trim() };
  const ext = String(f.get('external_id') || '').trim();
  if (ext) payload.external_id = ext;
  const r = await write('/members', payload);
  if (!r.ok) { showProblem(problemOf(r)); return; }
  showProblem('');
  ev.target.reset();
  load();
});

let typing = null;
$('member-q').addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(load, 200); });
$('show-archived').addEventListener('change', load);
$('member-search').addEventListener('submit', (ev) => { ev.preventDefault(); load(); });
load();
