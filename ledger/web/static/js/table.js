import { ENTERED_FIRST, MOVED_FIRST, api, backEl, el, fatal, movedOn, newKey, problemText, reasonText, seatName, tileEl, tokenFor } from './api.js';
import { wireCopyButtons } from './copy.js';
import { followTable } from './sse.js';

const root = document.getElementById('table-app');
const tableId = root.dataset.table;
const token = tokenFor(tableId);
const $ = (id) => document.getElementById(id);
const SUITS = ['blanks', 'ones', 'twos', 'threes', 'fours', 'fives', 'sixes'];
const DECISION = { play: 'Play', miss: 'Miss (draw new tiles)', drop: 'Drop' };

let table = null;
let busy = false;
let selected = new Set();
let hint = null; // {version, action, why}: the expert's move for this seat, when asked

function showProblem(text, code = '') {
  const p = $('problem');
  p.textContent = text || '';
  p.dataset.code = text ? code : '';
  p.classList.toggle('notice', code === 'version_conflict');  // news, not the player's error
  p.hidden = !text;
}

function ends(tile) { return tile.split('-').map(Number); }
function isTrump(tile, trump) { return trump !== null && trump !== undefined && ends(tile).includes(trump); }

// Why a tile in my hand is not among the legal plays (RULES.md §6), as far as we can tell.
function reasonFor(tile, hand, legalTiles) {
  if (!legalTiles.length) return 'not your turn';
  const trick = currentTrick(hand);
  if (!trick) {
    return 'you must lead a trump (rules 6.1 and 6.2)';
  }
  const s = trick.suit;
  const follows = legalTiles.some((t) => !isTrump(t, hand.trump) && ends(t).includes(s)) ||
    (s === hand.trump);
  if (follows) return `you must follow ${SUITS[s]}, the suit led (rule 6.3)`;
  return `you cannot follow ${SUITS[s]}: you must play a trump (rule 6.4)`;
}

function currentTrick(hand) {
  const tricks = hand.tricks || [];
  const last = tricks[tricks.length - 1];
  return last && (last.winner === null || last.winner === undefined) ? last : null;
}

async function act(body) {
  if (busy) return;
  busy = true;
  showProblem('');
  const r = await api(`/v1/tables/${tableId}/actions`, {
    token, method: 'POST', body: { ...body, expected_version: table.version },
    headers: { 'Idempotency-Key': newKey() },
  });
  busy = false;
  if (movedOn(r)) {  // the table moved on under this page: say so in words, show it as it is
    if (await refresh()) showProblem(MOVED_FIRST, 'version_conflict');
    return;
  }
  if (!r.ok) {
    showProblem('Move refused: ' + problemText(r), (r.data && r.data.code) || '');
    if (r.status === 409) await refresh();
    return;
  }
  selected = new Set();
  missDrawn = '';
  render(r.data.table);
}

function label(a, hand) {
  if (a.type === 'decide') {
    if (a.for_pool) return 'Play for the pool';
    if (a.take_turn_up) return `Play, take ${hand.turn_up}, discard ${a.discard.join(' ')}`;
    return DECISION[a.choice] || a.choice;
  }
  if (a.type === 'play') return a.suit === undefined ? a.tile : `${a.tile} as ${SUITS[a.suit]}`;
  if (a.type === 'discard') return 'Discard ' + a.tiles.join(' ');
  return a.type;
}

function sameAction(a, b) {
  return !!a && !!b && JSON.stringify(Object.entries(a).filter(([k]) => k !== 'seat').sort())
    === JSON.stringify(Object.entries(b).filter(([k]) => k !== 'seat').sort());
}

// GET /v1/tables/{id}/hint (options.hints): the expert's move from this seat's view.
async function askHint() {
  const r = await api(`/v1/tables/${tableId}/hint`, { token });
  if (!r.ok) {
    showProblem('No hint: ' + problemText(r));
    return;
  }
  hint = r.data;
  renderMoves(table);
}

function hintRow(t, legal) {
  if (!t.options || !t.options.hints || !t.viewer || t.viewer.role !== 'seat' || !legal.length) {
    return null;
  }
  const current = hint && hint.version === t.version ? hint : null;
  return el('div', { class: 'move-row hint-row' },
    el('button', { type: 'button', class: 'hint-button', id: 'hint-button', onclick: askHint },
      'Hint'),
    current ? el('span', { id: 'hint-text', class: 'hint', dataset: { action: JSON.stringify(current.action) } },
      `Expert: ${label(current.action, t.hand)}. ${current.why}`) : null);
}

function actionButton(a, hand, content) {
  const suggested = hint && table && hint.version === table.version && sameAction(hint.action, a);
  return el('button', {
    type: 'button', class: 'move' + (suggested ? ' suggested' : ''), onclick: () => act(a),
    dataset: { action: JSON.stringify(a) },
  }, content || label(a, hand));
}

let missDrawn = ''; // what is typed in the recorded miss's box, kept across redraws
function missForm(a) {
  const n = a.drawn && a.drawn.count;
  const input = el('input', { id: 'miss-drawn', name: 'drawn', autocomplete: 'off', value: missDrawn,
    placeholder: 'e.g. 6-3 5-1', oninput: (ev) => { missDrawn = ev.target.value; } });
  return el('form', { class: 'move-row', id: 'miss-form', onsubmit: (ev) => {
    ev.preventDefault();
    act({ ...a, drawn: input.value.split(/[\s,;]+/).filter(Boolean) });
  } }, el('label', { class: 'row-label' }, `Miss: the ${n ?? ''} tiles drawn `, input),
  el('button', { type: 'submit', class: 'move', dataset: { action: JSON.stringify(a) } }, 'Miss'));
}

function renderMoves(t) {
  const box = $('moves');
  const hand = t.hand;
  const legal = t.legal_actions || [];
  box.replaceChildren();
  if (t.status !== 'playing') {  // a closed table's abandoned hand still names a turn
    const won = t.winner !== null && t.winner !== undefined ? `: ${seatName(t, t.winner)} won` : '';
    box.append(el('p', { class: 'waiting', id: 'table-over' }, t.status === 'closed'
      ? `This table is closed${t.scoring !== 'points' && t.pool ? `; ${t.pool} chips were left in the pool` : ''}.`
      : `The game is over${won}.`));
    return;
  }
  if (needsEntry(t)) {
    box.append(el('p', { class: 'waiting' }, `Enter hand ${hand ? hand.number + 1 : 1} in the form below.`));
    return;
  }
  if (!hand) {
    box.append(el('p', {}, 'Waiting for the next hand.'));
    return;
  }
  const mySeat = t.viewer && t.viewer.seat;
  const actor = legal.length ? (legal[0].seat ?? mySeat) : mySeat;
  if (!legal.length) {
    const who = hand.turn === null || hand.turn === undefined ? 'nobody' : seatName(t, hand.turn);
    const text = hand.phase === 'complete' || hand.phase === 'settling'
      ? 'This hand is over.' : `Waiting for ${who}.`;
    box.append(el('p', { class: 'waiting' }, text));
  } else if (t.viewer && t.viewer.role === 'admin') {
    box.append(el('p', { class: 'hint' }, `Acting as the admin for ${seatName(t, actor)}.`));
  }
  const myTiles = Array.isArray(hand.hands?.[actor]) ? hand.hands[actor] : [];
  if (hand.phase === 'deciding') {
    const plain = legal.filter((a) => !a.take_turn_up);
    const takes = legal.filter((a) => a.take_turn_up);
    box.append(el('div', { class: 'move-row' }, plain.map((a) => actionButton(a, hand))));
    if (takes.length) {
      box.append(el('div', { class: 'move-row' },
        el('span', { class: 'row-label' }, `Play, take the turn-up ${hand.turn_up} and discard:`),
        takes.map((a) => actionButton(a, hand, tileEl(a.discard[0])))));
    }
    // Recorded tables: a miss names the tiles really drawn, which no list can offer
    // (README: `to_complete`); the scorer or the seat types them in.
    for (const a of (t.to_complete || []).filter((x) => x.type === 'decide' && x.choice === 'miss')) {
      box.append(missForm(a));
    }
  } else if (hand.phase === 'discarding') {
    const discards = legal.filter((a) => a.type === 'discard');
    if (discards.length) {
      const need = discards[0].tiles.length;
      box.append(el('p', {}, `Choose ${need} tile${need > 1 ? 's' : ''} to discard:`));
      box.append(el('div', { class: 'move-row' }, myTiles.map((tile) => el('button', {
        type: 'button', class: 'move toggle', 'aria-pressed': selected.has(tile) ? 'true' : 'false',
        dataset: { tile },
        onclick: () => {
          if (selected.has(tile)) selected.delete(tile); else selected.add(tile);
          renderMoves(table);
          // The buttons are drawn anew: keep a keyboard player's place on this tile.
          [...document.querySelectorAll('#moves button.toggle')].find((b) => b.dataset.tile === tile)?.focus();
        },
      }, tileEl(tile)))));
      const key = [...selected].sort().join(',');
      const match = discards.find((a) => [...a.tiles].sort().join(',') === key);
      box.append(el('div', { class: 'move-row' }, el('button', {
        type: 'button', class: 'move primary', id: 'discard-button', disabled: !match,
        onclick: () => match && act(match),
        dataset: match ? { action: JSON.stringify(match) } : {},
      }, match ? 'Discard ' + match.tiles.join(' ') : `Discard (choose ${need})`)));
    }
  } else if (hand.phase === 'playing') {
    const plays = legal.filter((a) => a.type === 'play');
    const legalTiles = plays.map((a) => a.tile);
    const row = el('div', { class: 'move-row' });
    for (const tile of myTiles) {
      const mine = plays.filter((a) => a.tile === tile);
      if (!mine.length) {
        row.append(el('button', { type: 'button', class: 'move', disabled: true,
          title: reasonFor(tile, hand, legalTiles), 'aria-label': `${tile}: ${reasonFor(tile, hand, legalTiles)}` },
        tileEl(tile)));
      } else {
        for (const a of mine) {
          row.append(actionButton(a, hand, a.suit === undefined ? tileEl(tile)
            : [tileEl(tile), el('span', { class: 'as' }, 'as ' + SUITS[a.suit])]));
        }
      }
    }
    box.append(row);
    const blocked = myTiles.filter((tile) => !legalTiles.includes(tile));
    if (legalTiles.length && blocked.length) {
      box.append(el('p', { class: 'hint', id: 'why-disabled' },
        `Greyed tiles: ${reasonFor(blocked[0], hand, legalTiles)}.`));
    }
  }
  const others = legal.filter((a) => !['decide', 'discard', 'play'].includes(a.type));
  if (others.length) box.append(el('div', { class: 'move-row' }, others.map((a) => actionButton(a, hand))));
  const row = hintRow(t, legal);
  if (row) box.append(row);
}

function renderSeats(t) {
  const hand = t.hand || {};
  const turn = t.status === 'playing' && hand.phase !== 'complete' ? hand.turn : undefined;
  // The dealer of the hand shown (once it is complete the table's `dealer` is the next one).
  const dealer = hand.dealer ?? t.dealer;
  const box = $('seats');
  box.replaceChildren(...t.seats.map((s) => {
    const held = hand.hands ? hand.hands[s.seat] : null;
    const tiles = Array.isArray(held) ? held.map((x) => tileEl(x))
      : held ? Array.from({ length: held.count }, backEl) : [];
    const tags = [];
    if (dealer === s.seat) tags.push(el('span', { class: 'tag' }, 'dealer'));
    if (turn === s.seat) tags.push(el('span', { class: 'tag turn' }, 'to play'));
    if (s.bot) tags.push(el('span', { class: 'tag bot' }, s.bot + ' bot'));
    if (t.viewer && t.viewer.seat === s.seat) tags.push(el('span', { class: 'tag you' }, 'you'));
    const decision = hand.decisions ? hand.decisions[s.seat] : undefined;
    const money = t.scoring === 'points' ? `${s.score} points` : `${s.balance} chips`;
    return el('div', { class: 'seat' + (turn === s.seat ? ' active' : ''), dataset: { seat: s.seat } },
      el('div', { class: 'seat-head' }, el('strong', {}, s.name), ...tags),
      el('div', { class: 'seat-meta' },
        el('span', { class: 'balance', dataset: { balance: s.balance, score: s.score } }, money),
        el('span', {}, ` · tricks ${hand.tricks_won ? (hand.tricks_won[s.seat] ?? 0) : 0}`),
        decision ? el('span', {}, ` · ${decision}`) : null),
      el('div', { class: 'tiles' }, tiles));
  }));
}

function renderCentre(t) {
  const hand = t.hand;
  $('hand-number').textContent = hand ? hand.number : '–';
  const up = $('turn-up');
  up.replaceChildren();
  if (hand && hand.turn_up) {
    up.append(el('span', {}, 'Turn-up '), tileEl(hand.turn_up),
      el('span', {}, ` trumps: ${hand.trump === null || hand.trump === undefined ? 'none' : SUITS[hand.trump]}`),
      ...(hand.turn_up_taken ? [el('span', { class: 'tag' }, 'turn-up taken')] : []));
  }
  if (t.scoring !== 'points') {
    up.append(el('span', { class: 'pool', dataset: { pool: t.pool } }, ` Pool: ${t.pool} chips`));
  }
  const trickBox = $('trick');
  trickBox.replaceChildren();
  const trick = hand ? currentTrick(hand) : null;
  if (trick) {
    trickBox.append(el('p', {}, `${seatName(t, trick.leader)} led ${SUITS[trick.suit] ?? ''}`),
      el('div', { class: 'played' }, trick.plays.map((p) =>
        el('figure', {}, tileEl(p.tile), el('figcaption', {}, seatName(t, p.seat))))));
  }
  const list = $('tricks');
  list.replaceChildren(...(hand ? hand.tricks : []).filter((x) => x.winner !== null && x.winner !== undefined)
    .map((x) => el('li', {}, x.plays.map((p) => el('span', { class: 'play' }, seatName(t, p.seat) + ' ', tileEl(p.tile))),
      el('span', { class: 'winner' }, ` → ${seatName(t, x.winner)}`))));
}

function renderSummary(t) {
  const hand = t.hand;
  const parts = [`${t.variant === 'rounce' ? 'Rounce' : 'Loo'}, ${t.scoring} scoring`, `status ${t.status}`];
  if (hand) parts.push(`hand ${hand.number}: ${hand.phase}`);
  if (t.status === 'playing' && hand && hand.turn !== null && hand.turn !== undefined && hand.phase !== 'complete') parts.push(`${seatName(t, hand.turn)} to act`);
  if (t.winner !== null && t.winner !== undefined) parts.push(`winner: ${seatName(t, t.winner)}`);
  const who = t.viewer ? (t.viewer.role === 'seat' ? `you are ${seatName(t, t.viewer.seat)}` : `viewing as ${t.viewer.role}`) : '';
  $('summary').textContent = parts.join(' · ') + (who ? ' · ' + who : '');
  $('summary').dataset.version = t.version;
  const hands = $('hands');
  const done = hand ? (hand.phase === 'complete' ? hand.number : hand.number - 1) : 0;
  hands.replaceChildren(...Array.from({ length: done }, (_, i) => el('li', { dataset: { hand: i + 1 } },
    el('a', { href: `/tables/${tableId}/hands/${i + 1}/replay${location.search}` }, `Hand ${i + 1}: replay and verify`))));
  if (!done) hands.append(el('li', {}, 'No hand is complete yet.'));
}

// The chips of the last complete hand, from the ledger endpoint: read once per hand, and
// again on any change while that hand stands complete (a void gives everything back).
let lastShown = null;
async function renderLastHand(t) {
  const hand = t.hand;
  const done = hand ? (hand.phase === 'complete' ? hand.number : hand.number - 1) : 0;
  if (!done) return;
  const book = await ledgerFor(t);
  if (!book || lastShown === ledgerKey) return;
  lastShown = ledgerKey;
  const voided = voidedHands(book);
  const who = (a) => (a === 'pool' ? 'Pool' : seatName(t, Number(String(a).split(':')[1])));
  const rows = (book.transfers || []).filter((x) => x.hand === done && !['ante', 'dealer_ante'].includes(x.reason))
    .map((x) => el('tr', { dataset: { reason: x.reason } }, el('td', {}, who(x.from)), el('td', {}, '→ ' + who(x.to)), el('td', {}, x.amount), el('td', {}, reasonText(x.reason))));
  const scores = (book.scores || []).filter((x) => x.hand === done)
    .map((x) => el('tr', { dataset: { reason: x.reason } }, el('td', {}, seatName(t, x.seat)), el('td', {}, ''), el('td', {}, x.delta), el('td', {}, reasonText(x.reason))));
  const mark = voided.has(done) ? ' (voided: every entry given back)' : '';
  // A points game's ledger has `transfers` too (empty): the table's scoring decides.
  $('last-hand-title').textContent = (t.scoring === 'points' ? `Hand ${done}: points` : `Hand ${done}: where the chips went`) + mark;
  $('last-hand').replaceChildren(...rows, ...scores);
  if (!rows.length && !scores.length) $('last-hand').append(el('tr', {}, el('td', {}, 'Nothing changed hands.')));
  $('last-hand-card').hidden = false;
  for (const li of $('hands').querySelectorAll('li[data-hand]')) {
    li.classList.toggle('voided', voided.has(Number(li.dataset.hand)));
  }
}

function render(t) {
  const hadFocus = document.activeElement && document.activeElement.closest('#moves');
  table = t;
  renderSummary(t);
  renderMoves(t);
  renderSeats(t);
  renderCentre(t);
  renderLastHand(t);
  renderAdmin(t);
  renderEntry(t);
  renderClock();
  readTimers(t);
  $('moves-card').hidden = !!(t.viewer && t.viewer.role === 'spectator');
  const adminToken = sessionStorage.getItem('loo:admin:' + tableId);
  const links = $('table-links');
  links.querySelector('a').textContent = t.scoring === 'points' ? 'Points by hand' : 'Chip flows';
  const club = new URLSearchParams(location.search).get('club');
  if (club && !links.querySelector('.club-link')) {
    links.append(' · ', el('a', { class: 'club-link', href: `/clubs/${encodeURIComponent(club)}/tables` }, 'The club\'s tables'));
    links.querySelector('a').href += location.search;  // chip flows with the club's token
  }
  if (adminToken && !links.querySelector('.admin-link') && t.viewer && t.viewer.role === 'seat') {
    links.append(' · ', el('a', { class: 'admin-link', href: `/tables/${tableId}#token=${encodeURIComponent(adminToken)}`,
      target: '_blank', rel: 'noopener' }, 'Admin view (every tile)'));
  }
  // Keyboard players keep their place: the next move's first button takes the focus.
  if (hadFocus && !document.activeElement.closest('#moves')) {
    const next = document.querySelector('#moves button:not([disabled])');
    if (next) next.focus();
  }
}

async function refresh() {
  const r = await api(`/v1/tables/${tableId}`, { token });
  if (!r.ok && !table && [401, 403, 404].includes(r.status)) {
    fatal(r);
    return false;
  }
  if (!r.ok) {
    showProblem(problemText(r));
    return false;
  }
  if (!table || r.data.version !== table.version) render(r.data);
  return true;
}

// ---- admin tools: void the latest settled hand, share a spectator link -----------------------

let ledgerKey = null;
let ledger = null;
let asking = null; // [key, promise]: one read per key, however many parts of the page ask
function ledgerFor(t) {
  // Read again when a hand completes, and on any change while the last hand stands complete
  // (a void, a close): not on every move.
  const hand = t.hand;
  const key = !hand ? 'none' : hand.phase === 'complete' ? 'c' + t.version : 'p' + hand.number;
  if (key === ledgerKey) return Promise.resolve(ledger);
  if (!asking || asking[0] !== key) {
    asking = [key, api(`/v1/tables/${tableId}/ledger`, { token }).then((r) => {
      if (r.ok) { ledger = r.data; ledgerKey = key; }
      return ledger;
    })];
  }
  return asking[1];
}

function voidedHands(book) {
  return new Set([...(book?.transfers || []), ...(book?.scores || [])]
    .filter((x) => x.reason === 'void').map((x) => x.hand));
}

// The latest settled hand not yet voided: the one a scorer may void (API.md Corrections).
function voidable(t, book) {
  const hand = t.hand;
  // A hand in play (an auto-dealt table deals the next at once) bars every void: the API
  // refuses it, so the page offers none.
  if (!hand || hand.phase !== 'complete') return null;
  let n = hand.number;
  const voided = voidedHands(book);
  if (hand.voided && hand.phase === 'complete') voided.add(hand.number);
  while (n > 0 && voided.has(n)) n -= 1;
  return n > 0 ? n : null;
}

async function renderAdmin(t) {
  const admin = t.viewer && t.viewer.role === 'admin';
  $('admin-card').hidden = !admin;
  if (!admin) return;
  const n = voidable(t, await ledgerFor(t));
  const button = $('void-button');
  button.hidden = n === null;
  $('void-none').hidden = n !== null;
  const playing = t.hand && t.hand.phase !== 'complete' && t.status === 'playing';
  $('void-none').textContent = playing && t.hand.number > 1
    ? `Hand ${t.hand.number} is being played: only the latest settled hand may be voided, before another starts.`
    : 'No settled hand to void.';
  if (n !== null) {
    button.textContent = `Void hand ${n}`;
    button.dataset.hand = n;
  }
  if (!renderAdmin.listed) { renderAdmin.listed = true; listSpectators(); }
}

function openVoid() {
  $('void-dialog').dataset.hand = $('void-button').dataset.hand;  // what the user confirms
  $('void-number').textContent = $('void-dialog').dataset.hand;
  $('void-problem').hidden = true;
  $('void-confirm').disabled = false;
  $('void-dialog').showModal();
  $('void-reason').focus();
}

async function confirmVoid(ev) {
  ev.preventDefault();
  const n = $('void-dialog').dataset.hand;
  const reason = $('void-reason').value.trim();
  if (!reason) return;
  $('void-confirm').disabled = true;
  const r = await api(`/v1/tables/${tableId}/hands/${n}/void`, {
    token, method: 'POST', body: { reason }, headers: { 'Idempotency-Key': newKey() } });
  $('void-confirm').disabled = false;
  if (!r.ok) {  // the refusal in place, in the dialog
    const p = $('void-problem');
    p.textContent = 'Not voided: ' + problemText(r);
    p.dataset.code = (r.data && r.data.code) || '';
    p.hidden = false;
    return;
  }
  $('void-dialog').close();
  render(r.data.table);
}

const SHARED = 'loo:spectators:' + tableId;
function sharedTokens() { return JSON.parse(sessionStorage.getItem(SHARED) || '{}'); }
function spectatorUrl(secret) { return `${location.origin}/tables/${encodeURIComponent(tableId)}#token=${encodeURIComponent(secret)}`; }

async function shareSpectator() {
  const button = $('share-spectator');
  button.disabled = true;
  const r = await api(`/v1/tables/${tableId}/spectators`, {
    token, method: 'POST', body: { label: 'shared link' }, headers: { 'Idempotency-Key': newKey() } });
  button.disabled = false;
  if (!r.ok) { showProblem('No spectator link: ' + problemText(r)); return; }
  sessionStorage.setItem(SHARED, JSON.stringify({ ...sharedTokens(), [r.data.id]: r.data.token }));
  const link = spectatorUrl(r.data.token);
  $('spectator-link').value = link;
  $('open-spectator').href = link;
  $('share-box').hidden = false;
  $('share-box').dataset.spectator = r.data.id;
  listSpectators();
}

async function listSpectators() {
  const r = await api(`/v1/tables/${tableId}/spectators`, { token });
  if (!r.ok) return;
  const known = sharedTokens();
  const box = $('spectators');
  box.replaceChildren(...r.data.items.map((s) => el('li', { dataset: { spectator: s.id } },
    known[s.id] ? el('a', { href: spectatorUrl(known[s.id]), target: '_blank', rel: 'noopener' }, s.label || s.id)
      : el('span', {}, `${s.label || 'spectator link'} (${s.id})`), ' ',
    el('button', { type: 'button', class: 'small revoke', onclick: async () => {
      const d = await api(`/v1/tables/${tableId}/spectators/${encodeURIComponent(s.id)}`, { token, method: 'DELETE' });
      if (!d.ok && d.status !== 204) { showProblem('Not revoked: ' + problemText(d)); return; }
      const left = sharedTokens();
      delete left[s.id];
      sessionStorage.setItem(SHARED, JSON.stringify(left));
      if ($('share-box').dataset.spectator === s.id) $('share-box').hidden = true;
      listSpectators();
    } }, 'Revoke'))));
  box.dataset.count = r.data.items.length;
}

$('void-button').addEventListener('click', openVoid);
$('void-form').addEventListener('submit', confirmVoid);
$('void-cancel').addEventListener('click', () => $('void-dialog').close());
$('share-spectator').addEventListener('click', shareSpectator);
wireCopyButtons($('admin-card'));

// ---- recorded and results tables: the admin enters the next hand --------------------------
// A recorded table's deal (each seat's five tiles and the turn-up) or a results table's
// outcome (decisions, tricks, for the pool): POST /v1/tables/{id}/hands (API.md Hands). A
// refusal is shown in the form, the fields its problem names marked.

const CHOICES = [['', 'choose…'], ['play', 'Play'], ['miss', 'Miss'], ['drop', 'Drop']];
const FIELD_LABELS = { hands: 'Hands', turn_up: 'Turn-up', decisions: 'Decisions', tricks: 'Tricks',
  for_pool: 'For the pool' };
let entryKey = null;
let entering = false;

function needsEntry(t) {
  return !!(t.viewer && t.viewer.role === 'admin' && ['recorded', 'results'].includes(t.deal)
    && t.status === 'playing' && (!t.hand || t.hand.phase === 'complete'));
}

function tilesOf(text) { return text.split(/[\s,;]+/).filter(Boolean); }

function buildEntry(t) {
  const key = `${t.deal}:${t.seats.map((s) => s.name).join('\u0000')}`;
  if (entryKey === key) return;
  entryKey = key;
  $('deal-seats').replaceChildren(...t.seats.map((s) => el('label', { class: 'seat-entry', dataset: { seat: s.seat } },
    el('span', { class: 'entry-name' }, s.name),
    el('input', { id: `deal-hand-${s.seat}`, name: `hand-${s.seat}`, autocomplete: 'off',
      placeholder: 'five tiles', dataset: { field: 'hands', seat: s.seat } }))));
  $('result-seats').replaceChildren(...t.seats.map((s) => el('div', { class: 'seat-entry results', dataset: { seat: s.seat } },
    el('span', { class: 'entry-name', id: `result-name-${s.seat}` }, s.name),
    el('label', {}, 'Decision', el('select', { id: `result-decision-${s.seat}`, name: `decision-${s.seat}`,
      'aria-label': `${s.name}: decision`, dataset: { field: 'decisions', seat: s.seat } },
    CHOICES.map(([v, text]) => el('option', { value: v }, text)))),
    el('label', {}, 'Tricks', el('input', { id: `result-tricks-${s.seat}`, name: `tricks-${s.seat}`, type: 'number',
      min: 0, max: 5, step: 1, inputmode: 'numeric', 'aria-label': `${s.name}: tricks`,
      dataset: { field: 'tricks', seat: s.seat } })))));
  $('deal-form').hidden = t.deal !== 'recorded';
  $('result-form').hidden = t.deal !== 'results';
  $('result-for-pool').dataset.field = 'for_pool';
  $('deal-turn-up').dataset.field = 'turn_up';
}

function renderEntry(t) {
  const show = needsEntry(t);
  $('enter-hand-card').hidden = !show;
  if (!show) return;
  buildEntry(t);
  const next = t.hand ? t.hand.number + 1 : 1;
  $('enter-hand-number').textContent = next;
  $('enter-hand-card').dataset.hand = next;
  $('for-pool-label').hidden = t.scoring === 'points';
  // The next hand's dealer (once a hand is complete the table's `dealer` is the next one's).
  for (const s of t.seats) {
    for (const box of document.querySelectorAll(`#enter-hand-card .seat-entry[data-seat="${s.seat}"] .entry-name`)) {
      box.textContent = s.name + (t.dealer === s.seat ? ' (dealer)' : '');
    }
  }
}

// Where a problem+json points: [field, seat] pairs, from its `field`, the paths of its
// schema `errors`, the seats named in its detail (each of them, for a field that has one box
// a seat), the places a deal's repeated tile was entered ("in seat 0's hand and as the
// turn-up": the refusal has no `field`, and nothing was marked), or else the first field its
// detail names.
const PER_SEAT = new Set(['hands', 'decisions', 'tricks']);
function problemFields(d) {
  const found = [];
  const detail = d.detail || '';
  const seatsOf = (re) => [...new Set([...detail.matchAll(re)].map((m) => Number(m[1])))];
  const seatsIn = seatsOf(/\bseat (\d)\b/g);
  const add = (path) => {
    const parts = path.filter((p) => p !== 'result' && p !== 'value');
    if (!parts.length || !(parts[0] in FIELD_LABELS)) return;
    if (!PER_SEAT.has(parts[0])) found.push([parts[0], null]);  // one box: the turn-up
    else if (/^\d$/.test(parts[1] || '')) found.push([parts[0], Number(parts[1])]);
    else if (seatsIn.length) for (const seat of seatsIn) found.push([parts[0], seat]);
    else found.push([parts[0], null]);
  };
  const walk = (node, path) => {
    if (Array.isArray(node) || typeof node !== 'object' || node === null) { add(path); return; }
    for (const [k, v] of Object.entries(node)) walk(v, [...path, k]);
  };
  if (d.field) add([d.field]);
  if (d.errors && d.errors.json) walk(d.errors.json, []);
  if (!found.length) {
    const hands = seatsOf(/\bseat (\d)'s hand\b/g);
    for (const seat of hands) found.push(['hands', seat]);
    if (hands.length && /\bas the turn-up\b/.test(detail)) found.push(['turn_up', null]);
  }
  if (!found.length) {
    const named = Object.keys(FIELD_LABELS).find((f) => new RegExp(`\\b${f.replace('_', '[_ -]')}\\b`, 'i').test(detail));
    if (named) add([named]);
  }
  return found;
}

function clearEntryProblem(form) {
  for (const node of form.querySelectorAll('[aria-invalid]')) {
    node.removeAttribute('aria-invalid');
    node.removeAttribute('aria-describedby');
  }
  const p = form.querySelector('.problem');
  p.hidden = true;
  p.textContent = '';
  p.classList.remove('notice');
}

function showEntryProblem(form, r) {
  const d = r.data || {};
  const p = form.querySelector('.problem');
  const fields = problemFields(d);
  const marked = [];
  for (const [field, seat] of fields) {
    const sel = `[data-field="${field}"]` + (seat === null ? '' : `[data-seat="${seat}"]`);
    for (const node of form.querySelectorAll(sel)) {
      node.setAttribute('aria-invalid', 'true');
      node.setAttribute('aria-describedby', p.id);
      marked.push(node);
    }
  }
  const where = fields.length ? FIELD_LABELS[fields[0][0]] + (fields[0][1] !== null && !/\bseat \d\b/.test(d.detail || '')
    ? ` (${seatName(table, fields[0][1])})` : '') + ': ' : '';
  p.textContent = `Not recorded: ${where}${problemText(r)}`;
  p.dataset.code = d.code || '';
  p.dataset.field = fields.length ? fields[0][0] : '';
  p.hidden = false;
  (marked[0] || form.querySelector('input, select')).focus();
}

async function enterHand(form, body) {
  if (entering) return;
  entering = true;
  clearEntryProblem(form);
  const submit = form.querySelector('button[type=submit]');
  submit.disabled = true;
  const r = await api(`/v1/tables/${tableId}/hands`, {
    token, method: 'POST', body: { ...body, expected_version: table.version },
    headers: { 'Idempotency-Key': newKey() } });
  submit.disabled = false;
  entering = false;
  if (movedOn(r)) {  // another scorer entered first: the form is for the hand after theirs
    if (await refresh()) {
      const p = form.querySelector('.problem');
      p.textContent = ENTERED_FIRST;
      p.dataset.code = 'version_conflict';
      p.classList.add('notice');
      p.hidden = false;
    }
    return;
  }
  if (!r.ok) {
    showEntryProblem(form, r);
    if (r.status === 409) await refresh();
    return;
  }
  form.reset();
  render(r.data.table);
  // The next hand (a results table) goes on from the top of the form; a recorded hand is
  // now played move by move above.
  if (!$('enter-hand-card').hidden) form.querySelector('input, select').focus();
  else document.querySelector('#moves button:not([disabled]), #moves input')?.focus();
}

$('deal-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const hands = {};
  for (const s of table.seats) hands[s.seat] = tilesOf($(`deal-hand-${s.seat}`).value);
  enterHand(ev.currentTarget, { hands, turn_up: $('deal-turn-up').value.trim() });
});

$('result-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const decisions = {};
  const tricks = {};
  for (const s of table.seats) {
    const choice = $(`result-decision-${s.seat}`).value;
    if (choice) decisions[s.seat] = choice;
    const won = $(`result-tricks-${s.seat}`).value.trim();
    if (won !== '') tricks[s.seat] = Number(won);
  }
  const result = { decisions };
  if (Object.keys(tricks).length) result.tricks = tricks;
  if (table.scoring !== 'points' && $('result-for-pool').checked) result.for_pool = true;
  enterHand(ev.currentTarget, { result });
});

// ---- turn timers ----------------------------------------------------------------------------
// With options.turn_seconds the service acts for a person who lets a turn's seconds pass (it
// drops where it may, else plays the lowest legal tile; README "Turn timers"). The page says
// who is on the clock and the seconds left, counted from the turn's first moment (the latest
// event's recorded_at, set against the server's Date header, so a phone's wrong clock does not
// matter), and names each move the table made for someone (a `turn_timed_out` event and the
// move after it): without that, a hand vanished under a player who had looked away.

const TIMER_MOVES = ['player_decided', 'tile_played', 'tiles_discarded'];
let timersRead = null; // the version up to which the events were read for timeouts
let clock = null; // {version, seat, deadline}: the deadline in this browser's clock (ms)
let ticking = null;
let noteVersion = 0; // the turn_timed_out event the notice names

function turnSeconds(t) { return (t && t.options && t.options.turn_seconds) || null; }

// The person to act who is on the clock (never a bot, nor a recorded or results table, nor
// while the timers rest: timers_idle, a whole hand went by that the timers played alone).
function onTheClock(t) { return t && t.timers_idle ? null : personToAct(t); }

// The person to act at a timed shuffled table, on the clock or not.
function personToAct(t) {
  const hand = t && t.hand;
  if (!turnSeconds(t) || t.status !== 'playing' || !hand || hand.mode !== 'shuffled') return null;
  if (['complete', 'dealing'].includes(hand.phase) || hand.turn === null || hand.turn === undefined) return null;
  const seat = t.seats[hand.turn];
  return seat && !seat.bot ? hand.turn : null;
}

function isMe(t, seat) { return !!(t.viewer && t.viewer.role === 'seat' && t.viewer.seat === seat); }

function timedOutText(t, events) {
  const at = events.map((e) => e.type).lastIndexOf('turn_timed_out');
  if (at < 0) return null;
  const e = events[at];
  const seat = e.data.seat;
  const move = events.slice(at + 1).find((x) => TIMER_MOVES.includes(x.type) && x.data && x.data.seat === seat);
  const d = move ? move.data : {};
  let what = 'moved';
  if (move && move.type === 'player_decided') what = d.choice === 'drop' ? 'dropped' : `chose to ${d.choice}`;
  else if (move && move.type === 'tile_played') what = `played ${d.tile}`;
  else if (move && move.type === 'tiles_discarded') what = Array.isArray(d.tiles) ? `discarded ${d.tiles.join(' ')}` : 'discarded';
  const mine = isMe(t, seat);
  return { seat, version: e.version, hand: e.hand, text: `Hand ${e.hand}: time ran out for ${mine ? 'you' : seatName(t, seat)} `
    + `(${e.data.seconds} s a turn), so the table ${what} for ${mine ? 'you' : 'them'}.` };
}

async function readTimers(t) {
  const seconds = turnSeconds(t);
  if (!seconds || (timersRead !== null && t.version <= timersRead)) return;
  const after = timersRead === null ? t.version - 1 : Math.max(timersRead, t.version - 100);
  timersRead = t.version;
  const r = await api(`/v1/tables/${tableId}/events?after=${Math.max(0, after)}&limit=100`, { token });
  if (!r.ok) return;
  const events = r.data.events || [];
  const note = timedOutText(t, events);
  if (note && note.version > noteVersion) {  // an older read answering late changes nothing
    noteVersion = note.version;
    const box = $('timed-out');
    box.textContent = note.text;
    box.dataset.seat = note.seat;
    box.dataset.hand = note.hand;
    box.hidden = false;
  }
  const head = events[events.length - 1];
  const seat = onTheClock(t);
  if (head && head.version === t.version && seat !== null && table === t) {
    const server = Date.parse(r.date || '');  // whole seconds: the middle of that second
    const offset = Number.isNaN(server) ? 0 : server + 500 - Date.now();
    clock = { version: t.version, seat, deadline: Date.parse(head.recorded_at) + seconds * 1000 - offset };
    renderClock();
  }
}

function renderClock() {
  const box = $('turn-clock');
  const t = table;
  const waiting = t && t.timers_idle ? personToAct(t) : null;
  if (waiting !== null) {  // the table waits for its people: no countdown, and says why
    if (ticking) { clearInterval(ticking); ticking = null; }
    const mine = isMe(t, waiting);
    box.textContent = `${mine ? 'Your turn' : `Waiting for ${seatName(t, waiting)}`}: the turn `
      + 'timer rests (the last hand went by with no player moving); it starts again at the next move.';
    box.dataset.idle = '';
    box.dataset.seat = waiting;
    delete box.dataset.left;
    delete box.dataset.urgent;
    if (mine) box.dataset.mine = ''; else delete box.dataset.mine;
    box.hidden = false;
    return;
  }
  delete box.dataset.idle;
  const seat = onTheClock(t);
  if (seat === null || !clock || clock.version !== t.version) {
    box.hidden = true;
    if (ticking) { clearInterval(ticking); ticking = null; }
    return;
  }
  const seconds = turnSeconds(t);
  const left = Math.max(0, Math.min(seconds, Math.ceil((clock.deadline - Date.now()) / 1000)));
  const mine = isMe(t, seat);
  box.textContent = left === 0
    ? `Time is up for ${mine ? 'you' : seatName(t, seat)}: the table moves for ${mine ? 'you' : 'them'} now.`
    : mine ? `Your turn: ${left} s left (${seconds} s a turn), then the table moves for you (it drops where it may).`
      : `${seatName(t, seat)} has ${left} s left to move (${seconds} s a turn).`;
  box.dataset.seat = seat;
  box.dataset.left = left;
  if (left <= 5) box.dataset.urgent = ''; else delete box.dataset.urgent;
  if (mine) box.dataset.mine = ''; else delete box.dataset.mine;
  box.hidden = false;
  if (!ticking) ticking = setInterval(renderClock, 250);
}

// ---- live updates ----------------------------------------------------------------------------
// The table's SSE feed (sse.js): each event refreshes the table view (the API redacts it
// for this token); short polling while the stream is refused or unavailable.

async function start() {
  if (!token) { fatal({ status: 401 }); return; }
  if (!(await refresh())) return;
  followTable({ tableId, token, version: table.version, refresh, badge: $('live') });
}

start();
