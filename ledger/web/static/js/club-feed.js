// The club's feed in words (API.md Feeds): GET /v1/clubs/{id}/events, its own stream and all
// its tables' events as a spectator sees them, each event a sentence, newest first. The
// club's latest events are read first, however long ago they happened (?latest=, then
// ?before= its `earlier` until some besides moves are shown; "Show earlier" reads back
// from there), then the page follows the feed's Server-Sent Events from the head the first
// read reached (sse.js: resumed with Last-Event-ID, closed when the page is left). The moves
// of a hand (each tile played, each stake) wait behind "every move"; what changes the
// club's standings is always shown.
import { el, reasonText } from './api.js';
import { $, clubId, clubPath, clubToken, openClub, problemOf, read, readAll, showProblem } from './club.js';
import { follow } from './sse.js';

const PAGE = 200; // events read back a page
const STEPS = 4; // pages read back at most a step (the first, or a "Show earlier")
const ENOUGH = 20; // events besides moves a step reads back to, when the club has them
const KEEP = STEPS * PAGE; // events kept on the page (all once "Show earlier" asked for more)
const SUITS = ['blanks', 'ones', 'twos', 'threes', 'fours', 'fives', 'sixes'];
const MOVES = new Set(['table_created', 'seat_filled', 'dealer_chosen', 'stake_posted', 'tiles_dealt',
  'trump_turned', 'player_decided', 'miss_drawn', 'tiles_discarded', 'turn_up_taken', 'tile_played',
  'trick_won', 'hand_completed', 'tricks_paid', 'penalty_assessed', 'points_scored', 'seed_revealed',
  'spectator_added', 'spectator_revoked']);

const members = new Map(); // member id -> name
const seasons = new Map(); // season id -> name
const tables = new Map(); // table id -> {names: [], scoring}
const tokens = new Map(); // token id -> "the scorer token “Thursday”"
const seen = new Set(); // positions shown
const list = $('feed');

function table(id) {
  if (!tables.has(id)) tables.set(id, { names: [], scoring: null });
  return tables.get(id);
}
function who(t, seat) { return t.names[seat] || `seat ${Number(seat) + 1}`; }
function quoted(text) { return `“${text}”`; }
function chips(n) { return `${n} chip${Math.abs(n) === 1 ? '' : 's'}`; }
function signed(n) { return n > 0 ? `+${n}` : String(n).replace('-', '−'); }

// ---- one event, one sentence ----------------------------------------------------------------

function clubSentence(e) {
  const d = e.data || {};
  switch (e.type) {
    case 'club_created': return `The club ${quoted(d.name)} was founded.`;
    case 'member_joined': members.set(d.id, d.name); return `${d.name} joined the club.`;
    case 'member_renamed': {
      const was = members.get(d.id);
      members.set(d.id, d.name);
      return was && was !== d.name ? `${was} is now called ${d.name}.` : `A member is now called ${d.name}.`;
    }
    case 'member_archived': return `${members.get(d.id) || 'A member'} was archived (kept in the record, no new tables).`;
    case 'season_started': seasons.set(d.id, d.name);
      return `Season ${quoted(d.name)} started (from ${d.starts_on}${d.ends_on ? ` to ${d.ends_on}` : ''}).`;
    case 'season_closed': return `Season ${quoted(seasons.get(d.id) || d.id)} was closed: no new tables in it.`;
    case 'token_issued': {
      const what = `${d.role === 'owner' ? 'an' : 'a'} ${d.role} token${d.label ? ` for ${quoted(d.label)}` : ''}`;
      tokens.set(d.id, what);
      return `${what[0].toUpperCase()}${what.slice(1)} was issued.`;
    }
    case 'token_revoked': return tokens.has(d.id) ? `${tokens.get(d.id).replace(/^an? /, 'The ')} was revoked.` : 'A token was revoked.';
    case 'club_table_added': {
      const t = table(d.table_id);
      t.scoring = d.scoring;
      (d.members || []).forEach((m, i) => { if (m && members.has(m) && !t.names[i]) t.names[i] = members.get(m); });
      const season = d.season ? ` in season ${quoted(seasons.get(d.season) || d.season)}` : '';
      return `A new table: ${d.variant === 'rounce' ? 'Rounce' : 'Loo'} for ${d.scoring === 'points' ? 'points' : 'chips'}${season}.`;
    }
    case 'webhook_added': return `A webhook to ${d.url} was added (${(d.events || []).includes('*') ? 'every event' : (d.events || []).map(reasonText).join(', ')}).`;
    case 'webhook_removed': return 'A webhook was removed.';
    case 'webhook_disabled': return `A webhook was switched off: ${reasonText(d.reason)}${d.status ? ` (its address answered ${d.status})` : ''}.`;
    case 'webhook_enabled': return 'A webhook was switched on again.';
    default: return `The club: ${reasonText(e.type)}.`;
  }
}

function tableSentence(e, t) {
  const d = e.data || {};
  const n = e.hand;
  switch (e.type) {
    case 'table_created': t.scoring = d.scoring;
      return `A table was set up for ${d.players} players (${d.variant === 'rounce' ? 'Rounce' : 'Loo'}, ${d.deal === 'shuffled' ? 'dealt here' : d.deal === 'recorded' ? 'played with real tiles' : 'results entered'}).`;
    case 'seat_filled': t.names[d.seat] = d.name;
      return `${d.name} sits at seat ${d.seat + 1}${d.bot ? ` (the ${d.bot} bot)` : ''}.`;
    case 'dealer_chosen': return `${who(t, d.seat)} deals first${d.method === 'lots' ? ' (drawn by lots)' : ''}.`;
    case 'hand_started': return `Hand ${d.number} began; ${who(t, d.dealer)} deals.`;
    case 'stake_posted': return `${who(t, d.seat)} put ${chips(d.amount)} in the pool (${reasonText(d.reason)}).`;
    case 'tiles_dealt': return `Hand ${n}: the tiles were dealt.`;
    case 'trump_turned': return `Hand ${n}: ${d.tile} turned up; ${SUITS[d.trump]} are trumps.`;
    case 'player_decided': {
      const how = d.choice === 'drop' ? 'dropped' : d.choice === 'miss' ? 'chose to miss (new tiles)'
        : d.for_pool ? 'plays for the pool' : d.take_turn_up ? 'plays and takes the turn-up' : 'plays';
      return `${who(t, d.seat)} ${how}.`;
    }
    case 'miss_drawn': return `${who(t, d.seat)} drew new tiles.`;
    case 'tiles_discarded': return `${who(t, d.seat)} discarded ${d.tiles ? d.tiles.length : ''} tile${d.tiles && d.tiles.length === 1 ? '' : 's'}.`;
    case 'turn_up_taken': return `${who(t, d.seat)} took the turn-up${d.tile ? ` ${d.tile}` : ''}.`;
    case 'tile_played': return `${who(t, d.seat)} played ${d.tile}${d.suit !== null && d.suit !== undefined ? `, leading ${SUITS[d.suit]}` : ''}.`;
    case 'trick_won': return `${who(t, d.seat)} won trick ${d.trick}.`;
    case 'hand_won_without_play': return `${who(t, d.seat)} won hand ${n} without play (${d.reason === 'all_dropped' ? 'everyone else dropped' : 'the only one left in'}).`;
    case 'hand_completed': return `Hand ${n} was played out.`;
    case 'tricks_paid': return `Hand ${n}: each trick was worth ${chips(d.trick_value)}.`;
    case 'player_looed': return `${who(t, d.seat)} was looed in hand ${n} (took no trick).`;
    case 'penalty_assessed': return `${who(t, d.seat)} pays ${chips(d.amount)} into the pool for the loo.`;
    case 'points_scored': return `Hand ${n}: ${(d.deltas || []).map((x) => `${who(t, x.seat)} ${signed(x.delta)} (${reasonText(x.reason)})`).join(', ')}.`;
    case 'seed_revealed': return `Hand ${n}: the deal's seed was revealed (the deal can now be checked).`;
    case 'hand_settled': {
      const points = t.scoring === 'points' || (t.scoring === null && !perSeat(d.balances).some(([, v]) => v));
      const each = perSeat(points ? d.scores : d.balances).map(([s, v]) => `${who(t, s)} ${points ? v : signed(v)}`).join(', ');
      return `Hand ${n} settled. ${points ? 'Scores' : 'Chips'}: ${each}${points ? '' : `; the pool holds ${chips(d.pool)}`}.`;
    }
    case 'turn_timed_out': return `Time ran out for ${who(t, d.seat)} (${d.seconds} s a turn): the table moved for them.`;
    case 'timers_woken': return `Hand ${n}: the turn timers run again.`;
    case 'hand_voided': return `Hand ${d.number} was voided: ${d.reason}. Its chips and points were given back.`;
    case 'game_won': return d.seat === null || d.seat === undefined ? 'The game ended in a tie.' : `${who(t, d.seat)} won the game.`;
    case 'table_closed': return `The table was closed${d.reason === 'max_hands' ? ' (its last hand was played)' : ''}${d.leftover ? `; ${chips(d.leftover)} were left in the pool` : ''}.`;
    case 'spectator_added': return `A spectator link was shared${d.label ? ` (${quoted(d.label)})` : ''}.`;
    case 'spectator_revoked': return 'A spectator link was revoked.';
    default: return `${reasonText(e.type)[0].toUpperCase()}${reasonText(e.type).slice(1)}.`;
  }
}

// A per-seat figure as the events carry it ({"0": v, "1": w}), as [seat, value] pairs.
function perSeat(value) {
  return Object.entries(value || {}).map(([s, v]) => [Number(s), v]).sort((a, b) => a[0] - b[0]);
}

function tableLabel(t) { return t.names.filter(Boolean).join(', ') || 'a table'; }

function whenText(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false });
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

function item(e) {
  const club = e.stream === 'club';
  const t = club ? null : table(e.stream);
  const text = club ? clubSentence(e) : tableSentence(e, t);
  const where = club ? el('span', { class: 'feed-where' }, 'Club')
    : el('a', { class: 'feed-where', href: `/tables/${encodeURIComponent(e.stream)}?club=${encodeURIComponent(clubId)}` },
      tableLabel(t));
  const replay = !club && e.type === 'hand_settled'
    ? [' ', el('a', { class: 'feed-replay', href: `/tables/${encodeURIComponent(e.stream)}/hands/${e.hand}/replay?club=${encodeURIComponent(clubId)}` }, 'Replay')]
    : [];
  return el('li', { class: MOVES.has(e.type) ? 'move' : 'notable',
    dataset: { position: e.position, type: e.type, stream: e.stream } },
  el('time', { datetime: e.recorded_at }, whenText(e.recorded_at)), ' ', where, ' ',
  el('span', { class: 'feed-text' }, text, ...replay));
}

let keep = KEEP;
let earlier = null; // the position to ask ?before= for what precedes the events shown
const earlierButton = $('feed-earlier');

// Events come oldest first: each is read in order (names are learnt as they come), then
// shown newest first. Past `keep` events the oldest shown go, and "Show earlier" reads
// them again from there; once it was asked for, none go (the reader is reading them).
function show(events, { older = false } = {}) {
  const fresh = events.filter((e) => !seen.has(e.position));
  for (const e of fresh) seen.add(e.position);
  const nodes = fresh.map(item);
  if (older) {
    list.append(...nodes.reverse());
    keep = Infinity;
  } else list.prepend(...nodes.reverse());
  if (list.children.length > keep) {
    while (list.children.length > keep) {
      seen.delete(Number(list.lastElementChild.dataset.position));
      list.lastElementChild.remove();
    }
    earlier = Number(list.lastElementChild.dataset.position);
  }
  earlierButton.hidden = earlier === null;
  $('feed-empty').hidden = list.querySelector('li.notable, #feed.every-move li') !== null;
  list.dataset.count = list.children.length;
  list.dataset.start = list.lastElementChild ? list.lastElementChild.dataset.position : '';
  if (fresh.length && !older) list.dataset.last = fresh[fresh.length - 1].position;
}

// The club's latest events (`fromHead`), or those before `earlier`, a page at a time until
// ENOUGH besides moves came or the club's first event; the head the first read reached;
// the answer that refused a read, if one did.
async function readBack(fromHead) {
  let found = [];
  let head = null;
  for (let pages = 0; pages < STEPS && (fromHead || earlier !== null); pages++) {
    const r = await read(fromHead ? `/events?latest=${PAGE}` : `/events?before=${earlier}&limit=${PAGE}`);
    if (!r.ok) return { found, head, refused: r };
    if (fromHead) head = r.data.next;
    fromHead = false;
    found = [...r.data.events, ...found];
    earlier = r.data.earlier;
    if (found.filter((e) => !MOVES.has(e.type)).length >= ENOUGH) break;
  }
  return { found, head, refused: null };
}

// ---- start ------------------------------------------------------------------------------------

await openClub();
const [m, s, tl] = await Promise.all([readAll('/members'), readAll('/seasons'), readAll('/tables')]);
if (m.ok) for (const x of m.items) members.set(x.id, x.name);
if (s.ok) for (const x of s.items) seasons.set(x.id, x.name);
if (tl.ok) {
  for (const x of tl.items) {
    const t = table(x.id);
    t.scoring = x.scoring;
    for (const seat of x.seats) t.names[seat.seat] = seat.name;
  }
}
// The club's latest events, however long ago they happened; the head they were read at is
// where following begins.
const first = await readBack(true);
if (first.refused) showProblem(problemOf(first.refused));
show(first.found);
const head = first.head;
list.dataset.head = head ?? '';

earlierButton.addEventListener('click', async () => {
  earlierButton.disabled = true;
  const back = await readBack(false);
  showProblem(back.refused ? problemOf(back.refused) : '');
  // Names are learnt from the oldest events first: read the older ones in order.
  show(back.found, { older: true });
  earlierButton.disabled = false;
});

$('every-move').addEventListener('change', (ev) => {
  list.classList.toggle('every-move', ev.target.checked);
  $('feed-empty').hidden = list.querySelector('li.notable, #feed.every-move li') !== null;
});

// Followed from the head the latest events were read at (not read: not followed, rather
// than from the club's beginning; the problem is shown and a reload tries again).
if (head !== null) {
  let latest = head; // the last position read, by the stream or by polling
  const more = (events) => {
    if (events.length) latest = Math.max(latest, events[events.length - 1].position);
    show(events);
  };
  const live = follow({
    url: clubPath('/events'), token: clubToken(), badge: $('live'), what: 'the club\'s events', lastId: head,
    onEvent: (_type, data) => {
      if (!data || data.position === undefined) return;
      try { more([data]); } catch (err) { console.error('feed: event not shown', data.type, err); }
    },
  });
  // No stream (refused or unavailable): ask every 5 s instead.
  setInterval(async () => {
    if (live.mode === 'stream') return;
    const r = await read(`/events?after=${latest}&limit=500`);
    if (r.ok) more(r.data.events);
  }, 5000);
}
list.dataset.ready = 'true';
