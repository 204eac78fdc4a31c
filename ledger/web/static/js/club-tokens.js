// The club's tokens (API.md Clubs, tokens, members; owner only): issue one with a role and
// what it is for (its secret shown once), list the live ones, revoke one behind a
// confirmation. And a table's spectator links (API.md Spectators): share one (shown once),
// list and revoke them, for any table of the club.
import { api, el, newKey, problemText } from './api.js';
import { $, clubId, clubPath, clubToken, openClub, problemOf, readAll, write } from './club.js';
import { wireCopyButtons } from './copy.js';

const ROLES = {
  owner: 'Everything, as you can: tokens and webhooks too. Give it only to someone who runs the club with you.',
  scorer: 'Makes tables, enters and corrects hands, manages members and seasons; no tokens or webhooks.',
  viewer: 'Reads everything public: tables, standings, the feed and exports. For a club screen or a member who follows.',
};

function say(id, text) {
  const p = $(id);
  p.textContent = text || '';
  p.hidden = !text;
}

// ---- club tokens ---------------------------------------------------------------------------

async function listTokens() {
  const r = await readAll('/tokens');
  if (r.status === 401) {  // this tab's own token was revoked: ask for another
    sessionStorage.removeItem('loo:club:' + clubId);
    location.reload();
    return;
  }
  if (!r.ok) { say('tokens-problem', problemOf(r)); return; }
  say('tokens-problem', '');
  const body = document.querySelector('#tokens tbody');
  body.replaceChildren(...r.items.map((t) => el('tr', { dataset: { token: t.id, role: t.role } },
    el('td', { class: 'token-label' }, t.label || '(no label)'), el('td', {}, t.role),
    el('td', {}, el('code', { class: 'token-id' }, t.id)),
    el('td', { class: 'actions' }, el('button', { type: 'button', class: 'small revoke',
      onclick: () => askRevoke({ what: `the ${t.role} token “${t.label || t.id}”`,
        path: clubPath(`/tokens/${encodeURIComponent(t.id)}`),
        after: () => { if ($('issued').dataset.token === t.id) $('issued').hidden = true; listTokens(); } }) },
      'Revoke')))));
  body.dataset.count = r.items.length;
}

async function issue(ev) {
  ev.preventDefault();
  say('issue-problem', '');
  const f = new FormData(ev.target);
  const label = String(f.get('label') || '').trim();
  const role = String(f.get('role'));
  $('issue-button').disabled = true;
  const r = await write('/tokens', { role, label: label || null });
  $('issue-button').disabled = false;
  if (!r.ok) { say('issue-problem', 'No token issued: ' + problemOf(r)); return; }
  $('issued-role').textContent = r.data.role;
  $('issued-for').textContent = r.data.label ? ` for “${r.data.label}”` : '';
  $('issued-club').textContent = clubId;
  $('issued-token').textContent = r.data.token;
  $('issued').hidden = false;
  $('issued').dataset.token = r.data.id;
  $('issued').focus();
  ev.target.reset();
  fitRole();
  listTokens();
}

function fitRole() { $('role-note').textContent = ROLES[$('token-role').value]; }

// ---- revoking, behind a confirmation -------------------------------------------------------

let revoking = null; // {what, path, after}

function askRevoke(job) {
  revoking = job;
  $('revoke-what').textContent = job.what;
  say('revoke-problem', '');
  $('revoke-confirm').disabled = false;
  $('revoke-dialog').showModal();
}

async function confirmRevoke(ev) {
  ev.preventDefault();
  if (!revoking) return;
  $('revoke-confirm').disabled = true;
  const r = await api(revoking.path, { token: clubToken(), method: 'DELETE',
    headers: { 'Idempotency-Key': newKey() } });
  $('revoke-confirm').disabled = false;
  if (!r.ok) {  // e.g. the club's last owner token (409 last_owner_token): said in place
    say('revoke-problem', 'Not revoked: ' + problemOf(r));
    $('revoke-problem').dataset.code = (r.data && r.data.code) || '';
    return;
  }
  $('revoke-dialog').close();
  const { after } = revoking;
  revoking = null;
  after();
}

// ---- a table's spectator links -------------------------------------------------------------

function tablePath(rest = '') {
  return `/v1/tables/${encodeURIComponent($('spectator-table').value)}/spectators${rest}`;
}

async function listTables() {
  const r = await readAll('/tables');
  if (!r.ok) { say('spectators-problem', problemOf(r)); return; }
  const select = $('spectator-table');
  // The newest first, playing tables before the rest.
  const order = r.items.slice().reverse().sort((a, b) => (a.status === 'playing' ? 0 : 1) - (b.status === 'playing' ? 0 : 1));
  select.replaceChildren(...order.map((t) => el('option', { value: t.id },
    `${t.seats.map((s) => s.name).join(', ')} (${t.created_at.slice(0, 10)}, ${t.status})`)));
  $('spectator-form').hidden = !order.length;
  if (!order.length) say('spectators-problem', '');
  $('spectators-none').hidden = !!order.length;
  if (!order.length) $('spectators-none').textContent = 'The club has no table yet.';
  else listSpectators();
}

async function listSpectators() {
  const table = $('spectator-table').value;
  const r = await api(tablePath('?limit=500'), { token: clubToken() });
  if (table !== $('spectator-table').value) return;  // another table was chosen meanwhile
  if (!r.ok) { say('spectators-problem', problemText(r)); return; }
  say('spectators-problem', '');
  const box = $('spectators');
  box.replaceChildren(...r.data.items.map((s) => el('li', { dataset: { spectator: s.id } },
    el('span', {}, s.label || 'spectator link'), ' ', el('code', { class: 'token-id' }, s.id), ' ',
    el('button', { type: 'button', class: 'small revoke', onclick: () => askRevoke({
      what: `the spectator link “${s.label || s.id}”`, path: tablePath(`/${encodeURIComponent(s.id)}`),
      after: () => { if ($('spectator-made').dataset.spectator === s.id) $('spectator-made').hidden = true; listSpectators(); },
    }) }, 'Revoke'))));
  box.dataset.count = r.data.items.length;
  box.dataset.table = table;
  $('spectators-none').textContent = 'This table has no spectator link.';
  $('spectators-none').hidden = r.data.items.length > 0;
}

async function share(ev) {
  ev.preventDefault();
  const label = $('spectator-label').value.trim();
  $('spectator-button').disabled = true;
  const r = await api(tablePath(), { token: clubToken(), method: 'POST', body: { label: label || null },
    headers: { 'Idempotency-Key': newKey() } });
  $('spectator-button').disabled = false;
  if (!r.ok) { say('spectators-problem', 'No spectator link: ' + problemText(r)); return; }
  const link = `${location.origin}/tables/${encodeURIComponent($('spectator-table').value)}#token=${encodeURIComponent(r.data.token)}`;
  $('spectator-link').value = link;
  $('spectator-made').hidden = false;
  $('spectator-made').dataset.spectator = r.data.id;
  $('spectator-label').value = '';
  listSpectators();
}

// ---- start ---------------------------------------------------------------------------------

const club = await openClub();
if (club.role !== 'owner') {
  $('not-owner-role').textContent = club.role || 'viewer';
  $('not-owner').hidden = false;
} else {
  $('tokens-app').hidden = false;
  $('issue-token').addEventListener('submit', issue);
  $('token-role').addEventListener('change', fitRole);
  $('revoke-form').addEventListener('submit', confirmRevoke);
  $('revoke-cancel').addEventListener('click', () => $('revoke-dialog').close());
  $('spectator-form').addEventListener('submit', share);
  $('spectator-table').addEventListener('change', () => { $('spectator-made').hidden = true; listSpectators(); });
  wireCopyButtons($('tokens-app'));
  fitRole();
  await Promise.all([listTokens(), listTables()]);
}
