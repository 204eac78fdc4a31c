// The public HTTP API, from the browser. Tokens come from the URL fragment
// (#token=...), which browsers never send to the server, and stay in session storage.

export function fragmentParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ''));
}

export function tokenFor(tableId) {
  const params = fragmentParams();
  const key = 'loo:token:' + tableId;
  const given = params.get('token');
  if (given) {
    sessionStorage.setItem(key, given);
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }
  // A new token pasted into this page's address (#token=...) opens the table with it.
  if (!tokenFor.watching) {
    tokenFor.watching = true;
    window.addEventListener('hashchange', () => { if (fragmentParams().get('token')) location.reload(); });
  }
  // Opened from a club's pages (?club=<id>, no secret): that tab's club token, which opens
  // the club's tables (owner and scorer as the admin, viewer as a spectator).
  const club = new URLSearchParams(location.search).get('club');
  const clubToken = club ? sessionStorage.getItem('loo:club:' + club) : null;
  return clubToken || sessionStorage.getItem(key);
}

// An Idempotency-Key. crypto.randomUUID exists only in a secure context (https or
// localhost): on a club's plain-http LAN address (192.168.x.y) it is undefined, and every write threw. A
// version-4 UUID from crypto.getRandomValues, which every context has, otherwise.
export function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function rememberToken(tableId, token) {
  sessionStorage.setItem('loo:token:' + tableId, token);
}

export async function api(path, { token, method = 'GET', body, headers = {} } = {}) {
  const h = { Accept: 'application/json', ...headers };
  if (token) h.Authorization = 'Bearer ' + token;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    return { ok: false, status: 0, data: { title: 'Network error', detail: 'the server does not answer: ' + err.message } };
  }
  let data = null;
  try { data = await resp.json(); } catch (_) { data = null; }
  return { ok: resp.ok, status: resp.status, data, date: resp.headers.get('Date') };
}

// A refused request in plain words, from its problem+json.
export function problemText(r) {
  const d = r.data || {};
  if (r.status === 401) return 'This link has no valid token for this table (it may be wrong or expired). Open the table again from the start page.';
  let text = d.detail || d.title || ('HTTP ' + r.status);
  if (d.rule) text += ' (rule ' + d.rule + ')';
  return text;
}

// A write refused because the table moved on since this page last read it (409
// version_conflict: another seat, the scorer or the table's timer moved first). The API's
// detail speaks of versions; a player is told what happened, and the page reads the table again.
export function movedOn(r) {
  return r.status === 409 && (r.data || {}).code === 'version_conflict';
}
export const MOVED_FIRST = 'Someone else moved first; the table has been refreshed. Look at it again before you move.';
export const ENTERED_FIRST = 'Someone else changed this table first; the table has been refreshed. Check the hand before you enter it again.';

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// A domino tile "6-3" as a small two-halved face.
export function tileEl(tile, extra = {}) {
  const [a, b] = tile.split('-');
  return el('span', { class: 'tile', title: tile, 'aria-label': 'tile ' + tile, ...extra },
    el('span', { class: 'half' }, a), el('span', { class: 'half' }, b));
}

export function backEl() {
  return el('span', { class: 'tile back', 'aria-label': 'hidden tile' });
}

// A ledger entry's reason as words: `dealer_ante` is "dealer ante", `won_without_play`
// "won without play" (the codes are the API's; a page shows no identifier).
export function reasonText(reason) {
  return String(reason ?? '').replace(/_/g, ' ');
}

export function seatName(table, seat) {
  const s = (table.seats || [])[seat];
  return s ? s.name : 'seat ' + seat;
}

// A page that cannot work (no token, a wrong or expired one, an unknown table): say so
// plainly in place of the page, with the way back.
export function fatal(r) {
  const status = r.status || 0;
  const title = status === 404 ? 'No such table' : status === 401 || status === 403 || !status
    ? 'This link does not open this table' : 'Something went wrong';
  const detail = status === 404 ? 'There is no table with this id (or no such hand).'
    : status === 401 || !status ? 'The token is missing, wrong or no longer valid. Open the table again from the start page with its id and a token.'
      : problemText(r);
  const main = document.getElementById('main');
  main.replaceChildren(el('section', { class: 'card error-page', id: 'fatal', dataset: { status } },
    el('h1', {}, title), el('p', {}, detail), el('p', {}, el('a', { href: '/' }, 'Back to the start page'))));
}
