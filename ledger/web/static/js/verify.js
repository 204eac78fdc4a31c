// Checks anyone can run on a hand, here in the browser with WebCrypto (API.md "Fair deal"
// and "Hash chain"): commitment = SHA-256(seed), the deal re-derived from the seed, and
// every event's hash linking to the one before.

const enc = new TextEncoder();
const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');

export function hexToBytes(h) {
  if (!/^([0-9a-f]{2})*$/i.test(h)) throw new Error('not hex: ' + h);
  return new Uint8Array(h.match(/../g)?.map((x) => parseInt(x, 16)) || []);
}

export async function sha256hex(data) {
  const bytes = typeof data === 'string' ? enc.encode(data) : data;
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

// Canonical JSON: keys sorted, separators "," and ":", no ASCII escaping (JSON.stringify
// leaves non-ASCII alone, like Python's ensure_ascii=False).
export function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

// The 28 tiles in canonical order (0-0, 0-1, ..., 6-6), written high end first.
export function canonicalTiles() {
  const out = [];
  for (let a = 0; a <= 6; a++) for (let b = a; b <= 6; b++) out.push(`${b}-${a}`);
  return out;
}

export async function shuffle(seedHex) {
  const key = await crypto.subtle.importKey('raw', hexToBytes(seedHex), { name: 'HMAC', hash: 'SHA-256' },
    false, ['sign']);
  let block = new Uint8Array(0);
  let pos = 0;
  let k = 0n;
  async function next32() {
    if (pos + 4 > block.length) {
      const msg = new Uint8Array(8);
      new DataView(msg.buffer).setBigUint64(0, k);
      k += 1n;
      const fresh = new Uint8Array(await crypto.subtle.sign('HMAC', key, msg));
      const rest = block.slice(pos);
      block = new Uint8Array(rest.length + fresh.length);
      block.set(rest);
      block.set(fresh, rest.length);
      pos = 0;
    }
    const x = new DataView(block.buffer, pos, 4).getUint32(0);
    pos += 4;
    return x;
  }
  async function uniform(n) {
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const x = await next32();
      if (x < limit) return x % n;
    }
  }
  const items = canonicalTiles();
  for (let i = 27; i >= 1; i--) {
    const j = await uniform(i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

export function dealFrom(order, players, dealer) {
  const hands = {};
  for (let i = 0; i < players; i++) {
    const seat = (dealer + 1 + i) % players;
    hands[seat] = order.slice(5 * i, 5 * i + 5);
  }
  return { hands, turn_up: order[5 * players], boneyard: order.slice(5 * players + 1) };
}

// API.md's published test vectors: the algorithm here must reproduce them exactly.
export const VECTORS = [
  { seed: '00'.repeat(32), commitment: '66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925',
    order: '1-1 6-4 4-1 5-3 5-4 1-0 6-0 6-1 5-0 3-3 4-4 2-1 5-2 4-3 0-0 3-1 4-2 6-5 6-6 6-3 5-1 6-2 4-0 5-5 3-2 2-2 3-0 2-0' },
  { seed: Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, '0')).join(''),
    commitment: '630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd',
    order: '6-5 5-3 6-3 2-1 6-6 6-1 5-2 3-2 2-0 4-0 3-3 4-4 5-0 6-2 4-3 6-0 6-4 4-2 3-0 3-1 0-0 2-2 5-1 1-0 4-1 1-1 5-4 5-5' },
];

export async function selfTest() {
  for (const v of VECTORS) {
    if (await sha256hex(hexToBytes(v.seed)) !== v.commitment) return `commitment of test seed ${v.seed.slice(0, 8)}… differs`;
    if ((await shuffle(v.seed)).join(' ') !== v.order) return `shuffle of test seed ${v.seed.slice(0, 8)}… differs`;
  }
  const d = dealFrom(VECTORS[0].order.split(' '), 4, 0);
  if (d.hands[1].join(' ') !== '1-1 6-4 4-1 5-3 5-4' || d.hands[0].join(' ') !== '3-1 4-2 6-5 6-6 6-3' || d.turn_up !== '5-1') {
    return 'deal of the first test vector differs';
  }
  return true;
}

const sorted = (tiles) => [...tiles].sort().join(' ');

// The hand's deal against its seed: returns true or what differs.
export async function checkDeal(events, players) {
  const started = events.find((e) => e.type === 'hand_started');
  const dealt = events.find((e) => e.type === 'tiles_dealt');
  const revealed = events.find((e) => e.type === 'seed_revealed');
  const turned = events.find((e) => e.type === 'trump_turned');
  if (!started || !dealt) return { commitment: 'the hand has no hand_started or tiles_dealt event', deal: 'no deal' };
  const seed = (revealed && revealed.data.seed) || dealt.data.seed;
  if (!seed) return { commitment: 'no seed revealed (not a shuffled hand?)', deal: 'no seed to re-derive from' };
  const out = {};
  const digest = await sha256hex(hexToBytes(seed));
  out.commitment = digest === started.data.commitment ? true
    : `SHA-256(seed) is ${digest.slice(0, 12)}…, the commitment says ${String(started.data.commitment).slice(0, 12)}…`;
  const order = await shuffle(seed);
  const d = dealFrom(order, players, started.data.dealer);
  const problems = [];
  if (revealed && Array.isArray(revealed.data.order) && revealed.data.order.join(' ') !== order.join(' ')) {
    problems.push('the revealed shuffled order differs from the seed\'s');
  }
  for (const [seat, tiles] of Object.entries(d.hands)) {
    const got = dealt.data.hands[seat];
    if (!got || sorted(got) !== sorted(tiles)) problems.push(`seat ${seat} was dealt ${got ? got.join(' ') : 'nothing'}, the seed gives ${tiles.join(' ')}`);
  }
  if (turned && turned.data.tile !== d.turn_up) problems.push(`the turn-up was ${turned.data.tile}, the seed gives ${d.turn_up}`);
  if (Array.isArray(dealt.data.boneyard) && dealt.data.boneyard.join(' ') !== d.boneyard.join(' ')) problems.push('the boneyard differs from the seed\'s');
  out.deal = problems.length ? problems[0] : true;
  return out;
}

// Every event from version 1: prev_hash links, and hash = SHA-256(prev_hash + body).
export async function checkChain(tableId, events) {
  let prev = '0'.repeat(64);
  for (const e of events) {
    if (e.prev_hash !== prev) return `event ${e.version} (${e.type}) does not link to the event before it`;
    const body = canonical({ table_id: tableId, version: e.version, type: e.type, hand: e.hand,
      data: e.data, causation: e.causation, recorded_at: e.recorded_at });
    const h = await sha256hex(prev + body);
    if (h !== e.hash) return `event ${e.version} (${e.type}) does not match its hash: it was changed after it was written`;
    prev = e.hash;
  }
  return true;
}
