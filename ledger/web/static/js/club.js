// What every club page shares: the club token (pasted once, kept in this tab's session
// storage, sent only as the API's Authorization header), the club's name and the caller's
// role, writes with an Idempotency-Key, lists read to their end, problems in place.
import { api, el, newKey } from './api.js';

export const root = document.getElementById('club-app');
export const clubId = root.dataset.club;
export const $ = (id) => document.getElementById(id);
const KEY = 'loo:club:' + clubId;

export function clubToken() { return sessionStorage.getItem(KEY); }
export function clubPath(rest = '') { return `/v1/clubs/${encodeURIComponent(clubId)}${rest}`; }

// A refused request in plain words (problem+json detail, else its title or status).
export function problemOf(r) {
  const d = r.data || {};
  if (r.status === 401) return 'This token does not open this club (missing, wrong or revoked).';
  return d.detail || d.title || ('HTTP ' + r.status);
}

export function showProblem(text, where = 'problem') {
  const p = $(where);
  p.textContent = text || '';
  p.hidden = !text;
}

export function read(path) { return api(clubPath(path), { token: clubToken() }); }

export async function write(path, body = {}, method = 'POST') {
  return api(clubPath(path), { token: clubToken(), method, body,
    headers: { 'Idempotency-Key': newKey() } });
}

// Every item of a club list, following its cursor (at most 500 a page).
export async function readAll(path, params = {}) {
  const items = [];
  let cursor = null;
  for (let pages = 0; pages < 200; pages++) {
    const q = new URLSearchParams({ ...params, limit: '500' });
    if (cursor) q.set('cursor', cursor);
    const r = await read(`${path}?${q}`);
    if (!r.ok) return { ok: false, status: r.status, data: r.data };
    items.push(...r.data.items);
    cursor = r.data.next;
    if (!cursor) break;
  }
  return { ok: true, items };
}

export function canWrite(club) { return club.role === 'owner' || club.role === 'scorer'; }

function showClub(club) {
  $('club-name').textContent = club.name;
  const role = $('club-role');
  role.textContent = club.role || '';
  role.hidden = !club.role;
  $('forget-token').hidden = false;
  $('club-gate').hidden = true;
  $('club-content').hidden = false;
  document.title = `${club.name} · ${document.title}`;
  for (const node of document.querySelectorAll('.writer-only')) node.hidden = !canWrite(club);
  for (const node of document.querySelectorAll('.owner-only')) node.hidden = club.role !== 'owner';
}

// The club as this tab's token opens it; asks for a token (once) when there is none or it
// is refused. Resolves when the club is open.
export function openClub() {
  $('forget-token').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    location.reload();
  });
  return new Promise((resolve) => {
    const tryToken = async (token, where) => {
      const r = await api(clubPath(), { token });
      if (r.ok) {
        sessionStorage.setItem(KEY, token);
        showClub(r.data);
        resolve(r.data);
        return;
      }
      if (r.status === 404) {
        root.replaceChildren(el('section', { class: 'card error-page', id: 'fatal', dataset: { status: 404 } },
          el('h1', {}, 'No such club'), el('p', {}, 'There is no club with this id.'),
          el('p', {}, el('a', { href: '/' }, 'Back to the start page'))));
        return;
      }
      sessionStorage.removeItem(KEY);
      $('club-gate').hidden = false;
      if (where) showProblem(problemOf(r), where);
    };
    $('club-token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      showProblem('', 'gate-problem');
      const token = $('club-token').value.trim();
      $('club-token').value = '';
      if (token) tryToken(token, 'gate-problem');
    });
    const saved = clubToken();
    if (saved) tryToken(saved, 'gate-problem'); else $('club-gate').hidden = false;
  });
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(0, 16).replace('T', ' ');
}
