// A new club table (API.md Club tables): the game, how hands are entered, a season, a member
// (or a guest, or a bot on a shuffled table) on each seat, the first dealer and the options
// the API takes. The answer's tokens are shown once: a link per seat, the table's admin token.
import { api, el, problemText } from './api.js';
import { $, canWrite, clubId, openClub, readAll, write } from './club.js';
import { wireCopyButtons } from './copy.js';

const club = await openClub();
const form = $('new-table');
const DEAL_NOTES = {
  shuffled: 'The service shuffles and deals; each player moves from their own link (shown once the table is made).',
  recorded: 'The club plays with real tiles; the scorer enters each deal and every move, and the service checks them against the rules.',
  results: 'The scorer enters each hand\'s decisions and tricks; the service settles the chips or points.',
};
let people = [];
let policies = ['heuristic', 'random'];
let rows = [];

async function start() {
  const [seasons, members, bots] = await Promise.all([
    readAll('/seasons'), readAll('/members', { archived: 'false' }), api('/v1/bots')]);
  if (seasons.ok) {
    for (const s of seasons.items.filter((x) => !x.closed)) $('nt-season').append(el('option', { value: s.id }, s.name));
  }
  people = members.ok ? members.items : [];
  if (bots.ok && bots.data && Array.isArray(bots.data.items)) policies = bots.data.items.map((b) => b.name);
  rows = [0, 1, 2, 3].map(seatRow);
  $('nt-seats').replaceChildren(...rows);
  // Seat i starts with the i-th member (a guest once the members run out).
  rows.forEach((row, i) => { row.querySelector('select').value = people[i] ? people[i].id : ''; });
  $('nt-variant').addEventListener('change', () => {
    $('nt-first-dealer').value = $('nt-variant').value === 'rounce' ? 'lots' : '0';  // each game's usual way
    fitGame();
  });
  for (const id of ['nt-scoring', 'nt-deal', 'nt-penalty']) $(id).addEventListener('change', fitGame);
  $('nt-players').addEventListener('change', fitSeats);
  form.addEventListener('submit', submit);
  fitSeats();
  fitGame();
  form.hidden = false;
  form.dataset.ready = 'true';
}

// ---- seats --------------------------------------------------------------------------------

function seatRow(i) {
  const who = el('select', { id: `nt-who-${i}`, name: `who-${i}`, 'aria-label': `Seat ${i + 1}: who` },
    people.map((m) => el('option', { value: m.id }, m.name)),
    el('option', { value: '' }, 'a guest'));
  const name = el('input', { id: `nt-name-${i}`, name: `name-${i}`, maxlength: 60, autocomplete: 'off',
    'aria-label': `Seat ${i + 1}: guest's name`, placeholder: 'guest\'s name' });
  const by = el('select', { id: `nt-bot-${i}`, name: `bot-${i}`, 'aria-label': `Seat ${i + 1}: played by` },
    el('option', { value: '' }, 'a person'), policies.map((p) => el('option', { value: p }, `the ${p} bot`)));
  const row = el('div', { class: 'seat-pick', dataset: { seat: i } },
    el('span', { class: 'seat-no' }, `Seat ${i + 1}`),
    el('label', {}, 'Who', who), el('label', { class: 'guest-name' }, 'Name', name),
    el('label', { class: 'shuffled-only played-by' }, 'Played by', by));
  who.addEventListener('change', fitSeats);
  name.addEventListener('input', fitDealers);
  by.addEventListener('change', () => {
    if (by.value && !who.value && !name.value.trim()) name.value = `Bot ${'ABCD'[i]}`;
    fitDealers();
  });
  return row;
}

function players() { return Number($('nt-players').value); }

function seatName(i) {
  const who = $(`nt-who-${i}`);
  if (who.value) return who.selectedOptions[0].textContent;
  return $(`nt-name-${i}`).value.trim() || `seat ${i + 1}`;
}

// A member sits at one seat of a table: one chosen at a seat is not offered at another.
function fitSeats() {
  const n = players();
  const taken = new Map();
  rows.forEach((row, i) => {
    row.hidden = i >= n;
    const who = row.querySelector('select');
    if (i < n && who.value) taken.set(who.value, i);
    row.querySelector('.guest-name').hidden = !!who.value;
  });
  rows.forEach((row, i) => {
    for (const option of row.querySelector('select').options) {
      option.disabled = !!option.value && taken.has(option.value) && taken.get(option.value) !== i;
    }
  });
  fitDealers();
}

function fitDealers() {
  const select = $('nt-first-dealer');
  const was = select.value;
  const lots = el('option', { value: 'lots' }, 'draw lots (the highest tile deals)');
  select.replaceChildren(lots, ...Array.from({ length: players() }, (_, i) => el('option', { value: i }, seatName(i))));
  if ([...select.options].some((o) => o.value === was)) select.value = was;
  else select.value = $('nt-variant').value === 'rounce' ? 'lots' : '0';
}

// ---- the game's kind decides which options apply ------------------------------------------

function fitGame() {
  const rounce = $('nt-variant').value === 'rounce';
  const scoring = $('nt-scoring');
  scoring.querySelector('option[value=pool]').disabled = rounce;
  if (rounce) scoring.value = 'points';
  $('nt-scoring-note').hidden = !rounce;
  const points = scoring.value === 'points';
  const shuffled = $('nt-deal').value === 'shuffled';
  for (const node of form.querySelectorAll('.pool-only')) node.hidden = points;
  for (const node of form.querySelectorAll('.points-only')) node.hidden = !points;
  for (const node of form.querySelectorAll('.shuffled-only')) node.hidden = !shuffled;
  $('nt-target-text').textContent = rounce ? 'Each player starts at (points)' : 'Game to (points)';
  $('nt-deal-note').textContent = DEAL_NOTES[$('nt-deal').value];
  $('nt-multiplier-label').hidden = $('nt-penalty').value !== 'capped';
}

// ---- the request ----------------------------------------------------------------------------

function whole(id) {
  const raw = $(id).value.trim();
  return raw === '' ? null : Number(raw);
}

function body() {
  const deal = $('nt-deal').value;
  const shuffled = deal === 'shuffled';
  const scoring = $('nt-scoring').value;
  const seats = [];
  for (let i = 0; i < players(); i++) {
    const member = $(`nt-who-${i}`).value;
    const seat = member ? { member } : { name: $(`nt-name-${i}`).value.trim() };
    const bot = shuffled ? $(`nt-bot-${i}`).value : '';
    if (bot) seat.bot = bot;
    seats.push(seat);
  }
  const first = $('nt-first-dealer').value;
  const options = {};
  if (scoring === 'pool') {
    options.ante = whole('nt-ante');
    options.dealer_ante = whole('nt-dealer-ante');
    const mode = $('nt-penalty').value;
    options.loo_penalty = mode === 'capped' ? { mode, multiplier: whole('nt-multiplier') } : { mode };
  } else {
    options.target = whole('nt-target');
  }
  options.lead_trump_threshold = whole('nt-threshold');
  const maxHands = whole('nt-max-hands');
  if (maxHands !== null) options.max_hands = maxHands;
  if (shuffled) {
    options.auto_deal = $('nt-auto-deal').checked;
    if ($('nt-hints').checked) options.hints = true;
    const seconds = whole('nt-turn-seconds');
    if (seconds !== null) options.turn_seconds = seconds;
  }
  for (const [k, v] of Object.entries(options)) if (v === null) delete options[k];
  const out = { variant: $('nt-variant').value, scoring, deal, seats,
    first_dealer: first === 'lots' ? 'lots' : Number(first), options };
  if ($('nt-season').value) out.season = $('nt-season').value;
  return out;
}

// A refusal names the seat or option it is about (problem+json `field`, e.g. "seats.1.name"
// or "ante"): that box is marked and takes the focus.
const FIELDS = { variant: 'nt-variant', scoring: 'nt-scoring', deal: 'nt-deal', season: 'nt-season',
  first_dealer: 'nt-first-dealer', ante: 'nt-ante', dealer_ante: 'nt-dealer-ante', loo_penalty: 'nt-penalty',
  lead_trump_threshold: 'nt-threshold', target: 'nt-target', max_hands: 'nt-max-hands',
  turn_seconds: 'nt-turn-seconds', hints: 'nt-hints', auto_deal: 'nt-auto-deal' };

function fieldBox(d) {
  const paths = [];
  if (d.field) paths.push(String(d.field));
  const walk = (node, path) => {
    if (node && typeof node === 'object' && !Array.isArray(node)) {
      for (const [k, v] of Object.entries(node)) walk(v, [...path, k]);
    } else paths.push(path.join('.'));
  };
  if (d.errors && d.errors.json) walk(d.errors.json, []);
  for (const path of paths) {
    const parts = path.split('.').filter((p) => p !== 'options');
    if (parts[0] === 'seats' && /^\d$/.test(parts[1] || '')) {
      return $(parts[2] === 'bot' ? `nt-bot-${parts[1]}` : $(`nt-who-${parts[1]}`).value ? `nt-who-${parts[1]}` : `nt-name-${parts[1]}`);
    }
    if (FIELDS[parts[0]]) return $(FIELDS[parts[0]]);
  }
  return null;
}

function showRefusal(r) {
  for (const node of form.querySelectorAll('[aria-invalid]')) {
    node.removeAttribute('aria-invalid');
    node.removeAttribute('aria-describedby');
  }
  const p = $('nt-problem');
  p.textContent = 'No table created: ' + problemText(r);
  p.dataset.code = (r.data && r.data.code) || '';
  p.hidden = false;
  const box = fieldBox(r.data || {});
  if (box) {
    if (box.closest('details')) box.closest('details').open = true;
    box.setAttribute('aria-invalid', 'true');
    box.setAttribute('aria-describedby', 'nt-problem');
    box.focus();
  }
}

// What the page can tell before asking: a guest's seat needs the guest's name.
function unnamedGuest() {
  for (let i = 0; i < players(); i++) {
    if (!$(`nt-who-${i}`).value && !$(`nt-name-${i}`).value.trim()) return i;
  }
  return null;
}

async function submit(ev) {
  ev.preventDefault();
  $('nt-problem').hidden = true;
  const guest = unnamedGuest();
  if (guest !== null) {
    showRefusal({ data: { detail: `seat ${guest + 1} is a guest: type the guest's name (or choose a member)`,
      field: `seats.${guest}.name`, code: 'guest_name_missing' } });
    return;
  }
  const button = $('nt-submit');
  button.disabled = true;
  const r = await write('/tables', body());
  button.disabled = false;
  if (!r.ok) { showRefusal(r); return; }
  done(r.data);
}

// ---- created: each secret once --------------------------------------------------------------

function done(t) {
  form.hidden = true;
  const open = $('nt-open');
  open.href = `/tables/${encodeURIComponent(t.id)}?club=${encodeURIComponent(clubId)}`;
  const deal = $('nt-deal').value;
  $('nt-links-why').textContent = deal === 'shuffled'
    ? 'Send each player their own link: it shows their tiles and lets them move from their phone.'
    : 'The scorer enters every move, so players need no link; a seat\'s link shows what that seat may see.';
  const list = $('nt-seat-links');
  list.replaceChildren(...t.seats.map((s) => {
    if (s.bot) return el('li', { dataset: { seat: s.seat } }, `${s.name}: a bot, it plays by itself.`);
    const link = `${location.origin}/tables/${encodeURIComponent(t.id)}#token=${encodeURIComponent(s.token)}`;
    const id = `nt-link-${s.seat}`;
    return el('li', { dataset: { seat: s.seat } },
      el('label', { for: id }, `${s.name}'s link`),
      el('div', { class: 'secret-row' }, el('input', { id, class: 'share-link', readonly: true, value: link }),
        el('button', { type: 'button', class: 'small', id: `nt-copy-${s.seat}`, dataset: { copy: id } }, 'Copy')));
  }));
  $('nt-admin-token').textContent = t.admin_token;
  $('nt-done').hidden = false;
  $('nt-done').dataset.table = t.id;
  wireCopyButtons($('nt-done'));
  $('nt-done').focus();
}

if (canWrite(club)) await start(); else $('not-writer').hidden = false;
