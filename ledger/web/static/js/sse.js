// Server-Sent Events read with fetch() (API.md Feeds). The feeds take their token only in
// the Authorization header, which EventSource cannot send, so the stream is read here: frames
// parsed, `id:` kept, and a stream the server ends (its time limit) resumed at once with
// Last-Event-ID, so every event arrives once, in order. A refused stream (503: the server's
// bound of open streams) is tried again after Retry-After, an unavailable one with backoff;
// meanwhile the caller polls. A badge element, when given, shows which (data-live
// "stream" | "poll", data-why, and counters the tests read).

import { api } from './api.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function follow({ url, token, lastId = null, onEvent, badge = null, what = 'the event stream' }) {
  const state = { mode: 'poll', lastId: lastId === null ? null : String(lastId), events: 0, connects: 0 };
  const seen = new Set();
  let duplicates = 0;
  let retryAfter = 5;
  const show = (mode, why) => {
    state.mode = mode;
    if (!badge) return;
    badge.hidden = false;
    badge.dataset.live = mode;
    if (why) badge.dataset.why = why;
    badge.textContent = mode === 'stream' ? 'Live' : 'Polling';
    badge.title = mode === 'stream' ? `following ${what}` : 'asking the server every second';
  };
  if (badge) {
    badge.dataset.start = state.lastId ?? '';
    badge.dataset.duplicates = 0;
  }
  show('poll');

  // A page the browser keeps in its back/forward cache when it is left (any navigation away)
  // kept its stream open there, and a browser has six connections to a host: the seventh page
  // opened within a minute or so waited for one (59 s measured) before it even loaded. The
  // stream is closed when the page is hidden (pagehide) and followed again, from its last
  // event, when the page is shown again from that cache (pageshow, persisted).
  let controller = null;
  let hidden = false;
  let shown = null; // resolves when a hidden page is shown again
  window.addEventListener('pagehide', () => {
    hidden = true;
    if (controller) controller.abort();
  });
  window.addEventListener('pageshow', (ev) => {
    if (!ev.persisted || !hidden) return;
    hidden = false;
    if (shown) { shown(); shown = null; }
  });

  function frameDone(frame) {
    if (frame.id !== null) state.lastId = frame.id;
    if (!frame.data.length && !frame.event) return;
    if (frame.id !== null) {
      if (seen.has(frame.id)) duplicates += 1;
      seen.add(frame.id);
    }
    state.events += 1;
    if (badge) {
      Object.assign(badge.dataset, { events: state.events, lastId: state.lastId ?? '',
        lastEvent: frame.event || 'message', duplicates });
    }
    let data = null;
    try { data = JSON.parse(frame.data.join('\n')); } catch (_) { data = null; }
    onEvent(frame.event || 'message', data, frame.id);
  }

  async function once() {
    const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + token };
    if (state.lastId !== null) headers['Last-Event-ID'] = state.lastId;
    let resp;
    controller = new AbortController();
    try {
      resp = await fetch(url, { headers, cache: 'no-store', signal: controller.signal });
    } catch (_) {
      return hidden ? 'hidden' : 'unavailable';
    }
    const type = resp.headers.get('content-type') || '';
    if (resp.status === 503) {
      retryAfter = Number(resp.headers.get('Retry-After')) || 5;
      resp.body?.cancel();
      return 'busy';
    }
    if (!resp.ok || !type.startsWith('text/event-stream')) { resp.body?.cancel(); return 'refused'; }
    show('stream');
    state.connects += 1;
    if (badge) badge.dataset.connects = state.connects;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let frame = { id: null, event: null, data: [] };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return 'ended';
        buf += value;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') { frameDone(frame); frame = { id: null, event: null, data: [] }; continue; }
          if (line.startsWith(':')) continue;  // a keep-alive comment
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') frame.id = val;
          else if (field === 'event') frame.event = val;
          else if (field === 'data') frame.data.push(val);
        }
      }
    } catch (_) {
      return hidden ? 'hidden' : 'unavailable';
    }
  }

  (async () => {
    let failures = 0;
    for (;;) {
      const how = hidden ? 'hidden' : await once();
      if (how === 'ended') { failures = 0; continue; }  // the server's time limit: resume
      if (how === 'hidden') {  // left for another page: resume once shown again, if ever
        await new Promise((resolve) => { shown = resolve; if (!hidden) resolve(); });
        failures = 0;
        continue;
      }
      show('poll', how);
      if (how === 'refused') return;
      failures += 1;
      await sleep(how === 'busy' ? retryAfter * 1000 : Math.min(30000, 1000 * 2 ** failures));
    }
  })();
  return state;
}

// A page that shows a table and follows it live (the table, its chip flows, a hand's replay):
// the table's feed from its latest event on (VERSION: the table's version as the page read
// it), REFRESH called (coalesced, 100 ms) after events; while the stream is refused or
// unavailable, every 700 ms (every 15 s besides when it flows). Each page reads back what
// it shows through REFRESH, so the stream only says when.
export async function followTable({ tableId, token, version, refresh, badge = null, onEvent = null }) {
  const r = await api(`/v1/tables/${encodeURIComponent(tableId)}/events?after=${Math.max(0, version - 1)}&limit=1`, { token });
  const events = r.ok ? r.data.events : [];
  let pending = null;
  const soon = () => {
    if (!pending) pending = setTimeout(() => { pending = null; refresh(); }, 100);
  };
  const live = follow({ url: `/v1/tables/${encodeURIComponent(tableId)}/events`, token, badge,
    lastId: events.length ? events[events.length - 1].position : null,
    onEvent: (type, data, id) => { if (!onEvent || onEvent(type, data, id)) soon(); },
    what: 'the table\'s event stream' });
  const poll = async () => {
    await refresh();
    setTimeout(poll, live.mode === 'stream' ? 15000 : 700);
  };
  setTimeout(poll, 700);
  return live;
}
