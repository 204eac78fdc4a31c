import { api, el, fatal, fragmentParams, problemText, reasonText, seatName, tileEl, tokenFor } from './api.js';
import { followTable } from './sse.js';
import { checkChain, checkDeal, selfTest } from './verify.js';

const root = document.getElementById('replay-app');
const tableId = root.dataset.table;
const number = Number(root.dataset.hand);
const token = tokenFor(tableId);
const $ = (id) => document.getElementById(id);
const SUITS = ['blanks', 'ones', 'twos', 'threes', 'fours', 'fives', 'sixes'];

let table = null;
let steps = 0;
let step = 0;
let seen = 0; // the steps there were when the viewer was last at the end (or the page opened)
let record = null; // the hand's record as last read
const cache = new Map();
let transfers = [];
let points = false; // a points game: scores, not chips and a pool

function showProblem(text) { $('problem').textContent = text || ''; $('problem').hidden = !text; }

async function load(k) {
  if (!cache.has(k)) {
    cache.set(k, api(`/v1/tables/${tableId}/hands/${number}/replay?step=${k}`, { token }).then((r) => {
      if (!r.ok) { cache.delete(k); throw new Error(problemText(r)); }
      return r.data;
    }));
  }
  return cache.get(k);
}

function describe(e) {
  if (!e) return 'Before the hand: nothing has happened yet.';
  const d = e.data || {};
  const who = d.seat !== undefined ? seatName(table, d.seat) : '';
  switch (e.type) {
    // A recorded or results hand is dealt by hand: no seed, so no commitment to show.
    case 'hand_started': return `Hand ${d.number} starts; ${seatName(table, d.dealer)} deals.`
      + (d.commitment ? ` Commitment ${String(d.commitment).slice(0, 16)}…` : '');
    case 'stake_posted': return `${who} put ${d.amount} in the pool (${reasonText(d.reason)}).`;
    case 'tiles_dealt': return 'The tiles are dealt.';
    case 'trump_turned': return `The turn-up is ${d.tile}: ${SUITS[d.trump] ?? d.trump} are trumps.`;
    case 'player_decided': return `${who} decided to ${d.choice}${d.for_pool ? ' for the pool' : ''}${d.take_turn_up ? ', taking the turn-up' : ''}.`;
    case 'tile_played': return `${who} played ${d.tile}.`;
    case 'trick_won': return `${who} won trick ${d.trick}.`;
    case 'miss_drawn': return `${who} missed: put out ${(d.put_out || []).join(' ')} and drew ${(d.tiles || []).join(' ')}.`;
    case 'tiles_discarded': return `${who} discarded ${(d.tiles || []).join(' ')}.`;
    case 'turn_up_taken': return `${who} took the turn-up.`;
    case 'hand_completed': return `The hand is over: tricks ${Object.entries(d.tricks_won || {}).map(([k, v]) => `${seatName(table, Number(k))} ${v}`).join(', ')}` +
      ((d.looed || []).length ? `; looed: ${d.looed.map((k) => seatName(table, k)).join(', ')}.` : '.');
    case 'seed_revealed': return `The seed is revealed: ${String(d.seed || '').slice(0, 16)}… (anyone can now re-derive the deal).`;
    case 'tricks_paid': return `Tricks are paid from the pool: ${Object.entries(d.payments || {}).filter(([, v]) => v).map(([k, v]) => `${seatName(table, Number(k))} ${v}`).join(', ') || 'nothing'}.`;
    case 'player_looed': return `${who}: looed.`;
    case 'penalty_assessed': return `${who} paid ${d.amount} into the pool for the loo.`;
    case 'hand_voided': return `The hand is voided (${d.reason || 'no reason given'}): every chip or point it moved is given back; it stays in the record.`;
    case 'hand_settled': return points
      ? `The hand is settled: ${Object.entries(d.scores || {}).map(([k, v]) => `${seatName(table, Number(k))} ${v}`).join(', ')} points.`
      : `The hand is settled: the pool holds ${d.pool}.`;
    default: return `${e.type.replace(/_/g, ' ')}${who ? ': ' + who : ''}.`;
  }
}

function render(r) {
  const s = r.state;
  const hand = s.hand;
  showPosition();
  $('event').textContent = describe(r.event);
  const up = $('turn-up');
  up.replaceChildren();
  if (hand && hand.turn_up) {
    up.append(el('span', {}, 'Turn-up '), tileEl(hand.turn_up), el('span', {}, ` trumps: ${SUITS[hand.trump] ?? 'none'}`));
  }
  if (!points) up.append(el('span', { class: 'pool', dataset: { pool: s.pool } }, ` Pool: ${s.pool}`));
  const trick = hand && hand.tricks.length ? hand.tricks[hand.tricks.length - 1] : null;
  $('trick').replaceChildren(...(trick ? [
    el('p', {}, `Trick ${hand.tricks.length}: ${seatName(table, trick.leader)} led ${SUITS[trick.suit] ?? ''}` +
      (trick.winner !== null && trick.winner !== undefined ? `; ${seatName(table, trick.winner)} won it` : '')),
    el('div', { class: 'played', id: 'trick-plays' }, trick.plays.map((p) =>
      el('figure', {}, tileEl(p.tile), el('figcaption', {}, seatName(table, p.seat))))),
  ] : []));
  $('seats').replaceChildren(...table.seats.map((seat) => {
    const held = hand && hand.hands ? hand.hands[seat.seat] : [];
    const tiles = Array.isArray(held) ? held : [];
    const decision = hand && hand.decisions ? hand.decisions[seat.seat] : undefined;
    return el('div', { class: 'seat', dataset: { seat: seat.seat } },
      el('div', { class: 'seat-head' }, el('strong', {}, seat.name),
        hand && hand.dealer === seat.seat ? el('span', { class: 'tag' }, 'dealer') : null,
        decision ? el('span', { class: 'tag' }, decision) : null),
      el('div', { class: 'seat-meta', dataset: points ? { score: (s.scores || {})[seat.seat] } : { balance: s.balances[seat.seat] } },
        `${points ? 'score ' + (s.scores || {})[seat.seat] : 'balance ' + s.balances[seat.seat]} · tricks ${hand && hand.tricks_won ? hand.tricks_won[seat.seat] ?? 0 : 0}`),
      el('div', { class: 'tiles' }, tiles.map((t) => tileEl(t))));
  }));
  const box = $('settlement');
  box.replaceChildren();
  if (r.step === steps) {
    const mine = transfers.filter((t) => t.hand === number);
    if (mine.length && points) {
      box.append(el('h3', {}, 'Settlement'), el('table', { class: 'data', id: 'settlement-scores' },
        el('tr', {}, el('th', {}, 'Player'), el('th', {}, 'Points'), el('th', {}, 'Why')),
        mine.map((t) => el('tr', { dataset: { seat: t.seat, delta: t.delta } }, el('td', {}, seatName(table, t.seat)),
          el('td', {}, t.delta), el('td', {}, reasonText(t.reason))))));
    } else if (mine.length) {
      box.append(el('h3', {}, 'Settlement'), el('table', { class: 'data' },
        el('tr', {}, el('th', {}, 'From'), el('th', {}, 'To'), el('th', {}, 'Chips'), el('th', {}, 'Why')),
        mine.map((t) => el('tr', {}, el('td', {}, account(t.from)), el('td', {}, account(t.to)),
          el('td', {}, t.amount ?? t.delta), el('td', {}, reasonText(t.reason))))));
    }
  }
}

function account(a) {
  if (a === undefined) return '';
  return a === 'pool' ? 'Pool' : seatName(table, Number(String(a).split(':')[1]));
}

// Where the viewer is, of how many steps. A hand in play gains steps while it is watched
// (follow): the count grows and "n new steps" offers the latest, the viewer's step stays.
function showPosition() {
  const label = $('step-label');
  label.textContent = `Step ${step} of ${steps}`;
  label.dataset.step = step;
  label.dataset.steps = steps;
  $('first').disabled = $('prev').disabled = step === 0;
  $('next').disabled = $('last').disabled = step === steps;
  if (step === steps) seen = steps;
  const fresh = steps - seen;
  const button = $('new-steps');
  button.hidden = fresh <= 0;
  button.dataset.count = Math.max(0, fresh);
  button.textContent = `${fresh} new step${fresh === 1 ? '' : 's'}: show the latest »`;
}

async function go(k) {
  step = Math.max(0, Math.min(steps, k));
  history.replaceState(null, '', `#step=${step}`);
  try {
    const r = await load(step);
    if (r.step === step) render(r);
    if (step < steps) load(step + 1).catch(() => {});
  } catch (err) {
    showProblem(err.message);
  }
}

async function allEvents(upTo) {
  const out = [];
  let after = 0;
  for (;;) {
    const r = await api(`/v1/tables/${tableId}/events?after=${after}&limit=500`, { token });
    if (!r.ok) throw new Error(problemText(r));
    const batch = r.data.events;
    for (const e of batch) if (e.version <= upTo) out.push(e);
    if (!batch.length || batch[batch.length - 1].version >= upTo || r.data.next === null) return out;
    after = r.data.next;
  }
}

class NotApplicable {
  constructor(why) { this.why = why; }
  toString() { return this.why; }
}

async function verify(handRecord) {
  const list = $('checks');
  const rows = [['selftest', 'The deal algorithm reproduces API.md\'s test vectors'],
    ['commitment', 'The revealed seed matches the commitment made before the deal (SHA-256)'],
    ['deal', 'The deal re-derives from the seed (HMAC-SHA256, Fisher–Yates)'],
    ['chain', 'The hash chain links every event from the table\'s first to this hand\'s last']];
  const items = Object.fromEntries(rows.map(([key, text]) => [key, el('li', { class: 'pending', dataset: { check: key } }, text)]));
  list.replaceChildren(...Object.values(items));
  const results = {};
  const mark = (key, res) => {
    results[key] = res;
    items[key].className = res === true ? 'ok' : res instanceof NotApplicable ? 'na' : 'bad';
    if (res !== true) items[key].append(el('div', { class: 'why' }, String(res)));
  };
  // WebCrypto (crypto.subtle) exists only in a secure context: on a club's
  // plain-http LAN address (192.168.x.y) nothing can be checked here, which is no failure of the record.
  if (!(window.crypto && crypto.subtle)) {
    const why = new NotApplicable('not checked here: this browser has WebCrypto only on https or localhost');
    for (const key of Object.keys(items)) mark(key, why);
    const verdict = $('verdict');
    verdict.className = 'verdict na';
    verdict.textContent = '– Not checked in this browser: open the page over https (or on the server itself), or download the hand and run loo verify';
    verdict.dataset.ok = 'unchecked';
    return;
  }
  // Recorded and results tables deal no tiles from a seed: nothing to check there, which is
  // no failure (the hash chain still is checked).
  const unshuffled = table.deal && table.deal !== 'shuffled' ? new NotApplicable(table.deal === 'results'
    ? 'not applicable: a results table records each hand\'s outcome, not its tiles'
    : 'not applicable: a recorded table\'s tiles are dealt by hand and entered by its scorer')
    // the admin may replay a hand in play: its seed is revealed only when it is complete
    : handRecord.complete === false ? new NotApplicable('not yet: the seed is revealed when the hand is complete')
      : null;
  try {
    mark('selftest', await selfTest());
    // Every check reads the same events: the table's log up to this hand's last event.
    const last = Math.max(...handRecord.events.map((e) => e.version));
    const log = await allEvents(last);
    const deal = unshuffled ? { commitment: unshuffled, deal: unshuffled }
      : await checkDeal(log.filter((e) => e.hand === number), table.seats.length);
    mark('commitment', deal.commitment);
    mark('deal', deal.deal);
    // A hand in play: its deal hides the seed even from the admin, so its hash cannot be
    // recomputed yet; the chain is checked up to the deal, the rest once the hand is complete.
    const dealt = handRecord.complete === false
      ? log.find((e) => e.hand === number && e.type === 'tiles_dealt') : null;
    mark('chain', await checkChain(tableId, dealt ? log.filter((e) => e.version < dealt.version) : log));
    if (dealt) {
      items.chain.append(el('div', { class: 'note' }, `checked up to event ${dealt.version - 1}, before the deal; ` +
        'the rest once the hand is complete (its seed is secret until then)'));
    }
  } catch (err) {
    for (const key of Object.keys(items)) if (!(key in results)) mark(key, 'could not check: ' + err.message);
  }
  const failed = Object.entries(results).filter(([, v]) => v !== true && !(v instanceof NotApplicable));
  const verdict = $('verdict');
  verdict.className = 'verdict ' + (failed.length ? 'bad' : 'ok');
  verdict.textContent = failed.length ? `✘ ${failed.length} check${failed.length > 1 ? 's' : ''} failed: this record does not verify`
    : unshuffled && handRecord.complete === false && table.deal === 'shuffled'
      ? '✔ Verified so far: an unbroken record (the deal is checked once the hand is complete)'
      : unshuffled ? `✔ Verified: an unbroken record (a ${table.deal} table: no shuffle to check)`
      : '✔ Verified: fair deal and an unbroken record';
  verdict.dataset.ok = failed.length ? 'false' : 'true';
}

// The hand read again after the table's feed names it (a move, its settlement, a void):
// the step count, the ledger's entries for the settlement, the voided tag, and the checks
// once a hand watched in play is complete.
let reading = null;
let again = false;
async function reread() {
  if (reading) { again = true; return reading; }
  reading = (async () => { do { again = false; await readOnce(); } while (again); })();
  try { await reading; } finally { reading = null; }
}

async function readOnce() {
  const [r, h, l] = await Promise.all([
    api(`/v1/tables/${tableId}/hands/${number}/replay?step=0`, { token }),
    api(`/v1/tables/${tableId}/hands/${number}`, { token }),
    api(`/v1/tables/${tableId}/ledger`, { token }),
  ]);
  if (!r.ok || !h.ok) return;
  if (l.ok) transfers = (points ? l.data.scores : l.data.transfers) || [];
  const before = record;
  record = h.data;
  if (record.hand && record.hand.voided && !$('voided-tag')) {
    document.querySelector('#replay-app h1').append(' ', el('span', { class: 'tag voided', id: 'voided-tag' }, 'voided'));
  }
  if (r.data.steps !== steps) {
    steps = r.data.steps;
    await go(step);  // the same step, drawn again (its settlement shows only at the end)
  }
  if (before && before.complete === false && record.complete !== false) verify(record);
}

async function start() {
  if (!token) { fatal({ status: 401 }); return; }
  // Opened from a club's pages (?club=): the way back keeps that club's token.
  for (const a of document.querySelectorAll('#replay-app .summary a')) a.href += location.search;
  const [t, h, l] = await Promise.all([
    api(`/v1/tables/${tableId}`, { token }),
    api(`/v1/tables/${tableId}/hands/${number}`, { token }),
    api(`/v1/tables/${tableId}/ledger`, { token }),
  ]);
  if (!t.ok) { fatal(t); return; }
  if (!h.ok && h.status !== 403) { fatal(h); return; }
  if (!h.ok) { showProblem(problemText(h)); return; }
  table = t.data;
  if (h.data.hand && h.data.hand.voided) {
    document.querySelector('#replay-app h1').append(' ', el('span', { class: 'tag voided', id: 'voided-tag' }, 'voided'));
  }
  // A points game's ledger has `transfers` too (empty): the table's scoring decides.
  points = table.scoring === 'points';
  transfers = l.ok ? ((points ? l.data.scores : l.data.transfers) || []) : [];
  let first;
  try { first = await load(0); } catch (err) { showProblem(err.message); return; }
  steps = first.steps;
  seen = steps;
  // #version=V (a member's ledger links so): the step after the event of that version.
  const version = Number(fragmentParams().get('version'));
  const at = (h.data.events || []).findIndex((e) => e.version === version);
  const wanted = at >= 0 ? Math.min(at + 1, steps) : version > 0 ? steps
    : Number(fragmentParams().get('step') || 0);
  await go(Number.isInteger(wanted) ? wanted : 0);
  $('first').onclick = () => go(0);
  $('prev').onclick = () => go(step - 1);
  $('next').onclick = () => go(step + 1);
  $('last').onclick = () => go(steps);
  document.addEventListener('keydown', (ev) => {
    if (ev.target.closest && ev.target.closest('input, select, textarea')) return;
    if (ev.key === 'ArrowRight') { ev.preventDefault(); go(step + 1); }
    if (ev.key === 'ArrowLeft') { ev.preventDefault(); go(step - 1); }
    if (ev.key === 'Home') go(0);
    if (ev.key === 'End') go(steps);
  });
  window.addEventListener('hashchange', () => {
    const k = Number(fragmentParams().get('step'));
    if (Number.isInteger(k) && k !== step) go(k);
  });
  record = h.data;
  verify(h.data);
  $('new-steps').onclick = () => go(steps);
  followTable({ tableId, token, version: table.version, refresh: reread, badge: $('live'),
    onEvent: (type, data) => !data || data.hand === undefined || data.hand === null || data.hand === number });
  const dl = $('download');
  if (dl) {
    dl.hidden = false;
    dl.onclick = async () => {
      const r = await api(`/v1/tables/${tableId}/hands/${number}/history`, { token });
      if (!r.ok) { showProblem(problemText(r)); return; }
      const url = URL.createObjectURL(new Blob([JSON.stringify(r.data, null, 2)], { type: 'application/json' }));
      const a = el('a', { href: url, download: `loo-hh-${tableId}-hand-${number}.json` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    };
  }
}

start();
