import { api, el, newKey, problemText, rememberToken } from './api.js';
import { wireCopyButtons } from './copy.js';

const form = document.getElementById('new-game');
const problem = document.getElementById('new-game-problem');
const botSelect = document.getElementById('bot-select');

// Bot strengths from GET /v1/bots when the service has it; random and heuristic otherwise.
// (Asked only when the spec lists it, so an older service logs no 404.)
api('/openapi.json').then((spec) => (spec.ok && spec.data.paths && spec.data.paths['/v1/bots']
  ? api('/v1/bots') : { ok: false })).then((r) => {
  const items = r.ok && r.data ? (r.data.items || r.data.bots || r.data) : null;
  if (!Array.isArray(items) || !items.length) return;
  botSelect.replaceChildren(...items.map((b) => {
    const name = typeof b === 'string' ? b : (b.name || b.id);
    return el('option', { value: name, selected: name === 'heuristic' }, name);
  }));
});

// Rounce is always scored in points (RULES.md §9): the form says so rather than taking a
// Pool choice and starting a points game anyway.
const variantSelect = form.elements.variant;
const scoringSelect = document.getElementById('scoring-select');
const scoringNote = document.getElementById('scoring-note');
function fitScoring() {
  const rounce = variantSelect.value === 'rounce';
  const pool = scoringSelect.querySelector('option[value="pool"]');
  pool.disabled = rounce;
  if (rounce) scoringSelect.value = 'points';
  scoringNote.hidden = !rounce;
}
variantSelect.addEventListener('change', fitScoring);
fitScoring();

form.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  problem.hidden = true;
  const f = new FormData(form);
  const n = Number(f.get('seats'));
  const bot = f.get('bot');
  const seats = [{ name: f.get('name') || 'You' }];
  for (let i = 1; i < n; i++) seats.push({ name: 'Bot ' + 'ABC'[i - 1], bot });
  const variant = f.get('variant');
  const body = {
    variant, scoring: f.get('scoring'), seats,
    first_dealer: 'lots', deal: 'shuffled',
    options: { auto_deal: true, ...(f.get('hints') ? { hints: true } : {}) },
  };
  const button = form.querySelector('button');
  button.disabled = true;
  const r = await api('/v1/tables', { method: 'POST', body });
  button.disabled = false;
  if (!r.ok) {
    problem.textContent = problemText(r);
    problem.hidden = false;
    return;
  }
  sessionStorage.setItem('loo:admin:' + r.data.id, r.data.admin_token);
  rememberToken(r.data.id, r.data.seats[0].token);
  location.href = '/tables/' + r.data.id;
});

document.getElementById('open-table').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const id = String(f.get('table')).trim();
  location.href = '/tables/' + encodeURIComponent(id) + '#token=' + encodeURIComponent(String(f.get('token')).trim());
});

// Clubs: the token goes to this tab's session storage, never into an address.
const clubProblem = document.getElementById('club-problem');
document.getElementById('open-club').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  const id = String(f.get('club')).trim();
  sessionStorage.setItem('loo:club:' + id, String(f.get('token')).trim());
  location.href = '/clubs/' + encodeURIComponent(id);
});
document.getElementById('new-club').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  clubProblem.hidden = true;
  const f = new FormData(ev.target);
  const r = await api('/v1/clubs', { method: 'POST', body: { name: String(f.get('name')).trim() },
    headers: { 'Idempotency-Key': newKey() } });
  if (!r.ok) {
    clubProblem.textContent = 'No club created: ' + problemText(r);
    clubProblem.hidden = false;
    return;
  }
  sessionStorage.setItem('loo:club:' + r.data.id, r.data.token);
  document.getElementById('new-club-id').textContent = r.data.id;
  document.getElementById('new-club-token').textContent = r.data.token;
  document.getElementById('new-club-link').href = '/clubs/' + encodeURIComponent(r.data.id);
  document.getElementById('new-club-done').hidden = false;
  wireCopyButtons(document.getElementById('new-club-done'));
  ev.target.reset();
});
