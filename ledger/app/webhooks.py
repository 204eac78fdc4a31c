"""Webhooks (API.md "Webhooks (Standard Webhooks)"): signed, in order, at least once.

- An endpoint is a `webhook_added` event of the club's stream. Its secret is never stored:
  it is an HMAC of the event's `salt` under the deployment's secret (the service can sign
  with it again; the answer to the POST shows it once as `whsec_` + base64).
- What an endpoint is owed is derived from the event store: the club's feed (its stream and
  its tables', as a spectator sees them) after the endpoint's cursor, the last position
  delivered, kept in `webhook_cursors` beside the events with the log of attempts.
- One delivery run per endpoint at a time (a lease on its cursor row): it POSTs the owed
  events one by one in position order and moves the cursor after each 2xx; a failure is
  logged and retried later with exponential backoff (LOO_WEBHOOK_RETRY_BASE seconds,
  doubling, at most LOO_WEBHOOK_RETRY_MAX apart, each wait up to a fifth shorter at random
  so endpoints that failed together do not retry in lockstep; a 429 or 503 with
  Retry-After waits what the receiver asked, within the same bounds; never given up:
  nothing after it is delivered before it).
- One message, one body: the same message keeps its `webhook-id` and its bytes on every
  attempt (only the timestamp and signature are new). Its body is the club feed's event as
  it stood at the event's own position (a table's event redacted as the table was then),
  so neither a retry after the hand completed nor a run that resends after a crash sends
  other bytes under the same `webhook-id`.
- A receiver answering 410 Gone has no endpoint there any more: the attempt is logged, the
  worker appends `webhook_disabled` to the club's stream and delivers nothing more to it
  until the owner appends `webhook_enabled` (POST .../webhooks/{wid}/enable); delivery then
  resumes with the message that was answered 410, nothing skipped.
- SSRF guard: a URL whose host resolves to a loopback, private, link-local, multicast,
  reserved or unspecified address is refused at registration (422) and again at every
  delivery (re-resolved; the connection goes to the address checked), unless
  LOO_WEBHOOK_ALLOW_PRIVATE=1.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

from ledger.app import encoding
from ledger.app.feed import PAGE, SPECTATOR, attach_checkpoints, club_event, table_events
from ledger.app.projector import Projection, decode, project
from ledger.app.service import Ledger
from ledger.app.views import live_hand
from ledger.core import club as cl
from ledger.core import events as ev
from ledger.core.errors import Invalid, NotFound
from ledger.store.base import StoredEvent

log = logging.getLogger(__name__)

# Seconds a delivery run holds its endpoint: renewed every LEASE / 5 while the run lives (by
# a thread of its own, however long a POST hangs), so a run killed mid-way (its worker's
# SIGKILL) frees the endpoint LEASE seconds later at most.
LEASE = 15.0
HELD_BACK_AGAIN = 0.2  # seconds: a look again at events committed but not yet readable


# ---- Standard Webhooks signatures ----------------------------------------------------------

def secret_bytes(secret: str) -> bytes:
    """The key of a `whsec_...` secret: the base64 after the prefix."""
    raw = secret.removeprefix("whsec_")
    return base64.b64decode(raw + "=" * (-len(raw) % 4))


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`."""
    mac = hmac.new(secret_bytes(secret), f"{msg_id}.{timestamp}.".encode() + body,
                   hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether one of the `v1,` signatures in the headers is this body's (for receivers)."""
    want = sign(secret, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    return any(hmac.compare_digest(want, sig) for sig in headers["webhook-signature"].split())


def endpoint_secret(server_secret: bytes, club_id: str, webhook_id: str, salt: str) -> str:
    """The endpoint's secret, derived again whenever the service signs."""
    key = hmac.new(server_secret, f"webhook|{club_id}|{webhook_id}|{salt}".encode(),
                   hashlib.sha256).digest()
    return "whsec_" + base64.b64encode(key).decode()


# ---- configuration -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class WebhookConfig:
    allow_private: bool = False
    retry_base: float = 5.0  # seconds before the first retry
    retry_max: float = 3600.0  # the longest wait between two attempts
    timeout: float = 10.0  # seconds to connect, and then for the answer

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> WebhookConfig:
        """LOO_WEBHOOK_ALLOW_PRIVATE (1 or 0), LOO_WEBHOOK_RETRY_BASE, _RETRY_MAX and
        _TIMEOUT (seconds). A value that is not one is a ConfigError, which Settings.from_env
        raises at start (a typo no longer falls back to the default without a word)."""
        from ledger.bootstrap import ConfigError

        def number(var: str, default: float, high: float) -> float:
            raw = environ.get(var, "").strip()
            if not raw:
                return default
            try:
                value = float(raw)
            except ValueError:
                value = float("nan")
            if not 0 < value <= high:
                raise ConfigError(f"{var}: {raw!r} is not a number of seconds above 0 and at "
                                  f"most {high:g}")
            return value

        private = environ.get("LOO_WEBHOOK_ALLOW_PRIVATE", "").strip()
        if private not in ("", "0", "1"):
            raise ConfigError(f"LOO_WEBHOOK_ALLOW_PRIVATE: {private!r} is not 1 (allow "
                              "loopback and private webhook URLs) or 0")
        return cls(allow_private=private == "1",
                   retry_base=number("LOO_WEBHOOK_RETRY_BASE", 5.0, 86400),
                   retry_max=number("LOO_WEBHOOK_RETRY_MAX", 3600.0, 7 * 86400),
                   timeout=number("LOO_WEBHOOK_TIMEOUT", 10.0, 600))

    def backoff(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds before retry number `attempt` (1, 2, ...): doubling, capped at
        retry_max, then up to a fifth shorter at random (`rand()` in [0, 1)): endpoints
        that failed together (a receiver's outage) spread out instead of retrying in
        lockstep, and no wait is ever longer than retry_max."""
        return min(self.retry_max, self.retry_base * 2 ** min(attempt - 1, 40)) * (
            1.0 - JITTER * min(max(rand(), 0.0), 1.0))

    def wait(self, attempt: int, sent: Sent, now: float,
             rand: Callable[[], float] = random.random) -> float:
        """Seconds before the next attempt after failed attempt number `attempt`: what a
        429 or 503's Retry-After asks (seconds, or an HTTP date), at least retry_base and
        at most retry_max; else the backoff."""
        if sent.status in (429, 503) and sent.retry_after is not None:
            asked = retry_after_seconds(sent.retry_after, now)
            if asked is not None:
                return min(self.retry_max, max(self.retry_base, asked))
        return self.backoff(attempt, rand)


JITTER = 0.2  # a retry's wait is up to this fraction shorter, at random


def retry_after_seconds(value: str, now: float) -> float | None:
    """A Retry-After header's wait in seconds from `now` (RFC 9110 10.2.3: a number of
    seconds, or an HTTP date); None when it is neither. A date in the past is 0."""
    from email.utils import parsedate_to_datetime

    value = value.strip()
    if value and value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP date is GMT all the same
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


# ---- SSRF guard ----------------------------------------------------------------------------

class UrlRefused(Invalid):
    pass


_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def _forbidden(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv6 address that carries an IPv4 one reaches that one: judged by it too.
        # (6to4 2002::/16 is not "private" to ipaddress: 2002:7f00:1:: went to 127.0.0.1.)
        inner: list[ipaddress.IPv4Address] = []
        if ip.ipv4_mapped is not None:
            inner.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            inner.append(ip.sixtofour)
        if ip.teredo is not None:
            inner += ip.teredo  # (server, client)
        if any(ip in net for net in _NAT64):
            inner.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if any(_forbidden(a) for a in inner):
            return True
        if ip.ipv4_mapped is not None:
            return False  # judged by the IPv4 address it maps
    return (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
            or ip.is_reserved or ip.is_unspecified or not ip.is_global)


def check_url(url: str, allow_private: bool,
              resolve: Callable[[str, int], list[str]] | None = None) -> tuple[str, int, str]:
    """(host, port, address to connect to) of an http(s) URL whose host resolves only to
    public addresses (the host as a request names it: `ascii_host`); UrlRefused (422)
    otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UrlRefused("invalid_url", "url is not a valid URL", field="url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlRefused("invalid_url", "url must be an http:// or https:// URL with a host",
                         field="url")
    if parts.username or parts.password:
        raise UrlRefused("invalid_url", "url must not carry credentials", field="url")
    if parts.port == 0:  # else `or` above made it the default port: a server nobody named
        raise UrlRefused("invalid_url", "url names port 0: name the port the receiver "
                         "listens on (1-65535), or none for the scheme's default",
                         field="url")
    host = parts.hostname
    try:
        host = ascii_host(host)
        addresses = (resolve or _resolve)(host, port)
    except (OSError, UnicodeError):
        raise UrlRefused("unresolvable_url", f"the host {host!r} does not resolve",
                         field="url") from None
    if not addresses:
        raise UrlRefused("unresolvable_url", f"the host {host!r} does not resolve",
                         field="url")
    if not allow_private:
        for a in addresses:
            if _forbidden(ipaddress.ip_address(a.split("%")[0])):
                raise UrlRefused("private_url", f"{host!r} resolves to {a}, a loopback, "
                                 "private, link-local or reserved address: webhooks go to "
                                 "public addresses only", field="url")
    return host, port, addresses[0]


def ascii_host(host: str) -> str:
    """A URL's host as a request names it: an IP address as it is, a name in Unicode in its
    IDNA (punycode) ASCII form ("bücher.example" is "xn--bcher-kva.example"), as DNS, TLS and
    the Host header take it; UnicodeError for a name IDNA cannot write."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return host.encode("idna").decode("ascii") if not host.isascii() else host


def authority(host: str, port: int, default_port: int) -> str:
    """The Host header of a request to host:port (RFC 9110 7.2 with RFC 3986 3.2.2): an IPv6
    address in brackets, the port only when it is not the scheme's default."""
    name = f"[{host}]" if ":" in host else host
    return name if port == default_port else f"{name}:{port}"


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(i[4][0]) for i in infos))


# ---- sending -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Sent:
    status: int | str  # the HTTP status, or timeout / refused / blocked / error
    duration_ms: int
    retry_after: str | None = None  # the answer's Retry-After header, if it had one

    @property
    def ok(self) -> bool:
        return isinstance(self.status, int) and 200 <= self.status < 300


class Sender:
    """POSTs of one delivery run to one endpoint: the URL is checked (resolved again) when
    the run starts and whenever its connection failed, and the connection goes to the
    address checked; a keep-alive connection carries the run's POSTs one after the other."""

    def __init__(self, url: str, config: WebhookConfig) -> None:
        self.url, self.config = url, config
        parts = urlsplit(url)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.https = parts.scheme == "https"
        self.pool: Any = None
        self.host = ""

    def _connect(self) -> bool:
        import urllib3

        try:
            host, port, address = check_url(self.url, self.config.allow_private)
        except UrlRefused:
            return False
        timeout = urllib3.Timeout(connect=self.config.timeout, read=self.config.timeout)
        kwargs: dict[str, Any] = {"timeout": timeout, "retries": False, "maxsize": 1}
        if self.https:
            self.pool = urllib3.HTTPSConnectionPool(address, port, server_hostname=host,
                                                    assert_hostname=host, **kwargs)
        else:
            self.pool = urllib3.HTTPConnectionPool(address, port, **kwargs)
        self.host = authority(host, port, 443 if self.https else 80)
        return True

    def post(self, headers: dict[str, str], body: bytes) -> Sent:
        import urllib3

        start = time.monotonic()

        def took() -> int:
            return int((time.monotonic() - start) * 1000)

        if self.pool is None and not self._connect():
            return Sent("blocked", took())
        try:
            resp = self.pool.urlopen("POST", self.path, body=body,
                                     headers={**headers, "Host": self.host}, redirect=False,
                                     preload_content=False)
            resp.read(65536)  # enough to finish; the answer's body is not kept
            resp.release_conn()
            return Sent(resp.status, took(), resp.headers.get("Retry-After"))
        except urllib3.exceptions.NewConnectionError:  # (a ConnectTimeoutError subclass too)
            return self._failed("refused", took())
        except urllib3.exceptions.TimeoutError:
            return self._failed("timeout", took())
        except urllib3.exceptions.HTTPError:
            return self._failed("error", took())
        except Exception:  # noqa: BLE001 - anything else is this attempt's failure too
            # Not the run's: an exception out of here ended the run with no attempt logged
            # and nothing retried (a host name urllib3 could not encode did, d9a951b).
            log.exception("webhook POST to %s failed", self.url)
            return self._failed("error", took())

    def _failed(self, status: str, ms: int) -> Sent:
        self.close()
        return Sent(status, ms)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def post(url: str, headers: dict[str, str], body: bytes, config: WebhookConfig) -> Sent:
    """One POST to the address checked just now (no redirects followed, strict timeouts)."""
    sender = Sender(url, config)
    try:
        return sender.post(headers, body)
    finally:
        sender.close()


FLUSH_EVERY, FLUSH_SECONDS = 50, 0.5  # delivered events between cursor and log writes


class _Heartbeat:
    """Renews a delivery run's lease every LEASE / 5 seconds until stopped; `lost` is set
    when another run holds the endpoint (this one then stops before its next POST)."""

    def __init__(self, store: Any, webhook_id: str, club_id: str, owner: str,
                 now: Callable[[], float]) -> None:
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._args = (store, webhook_id, club_id, owner, now)
        self._thread = threading.Thread(target=self._run, name="loo-webhook-lease",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        store, webhook_id, club_id, owner, now = self._args
        while not self._stop.wait(LEASE / 5):
            try:
                row = store.webhook_claim(webhook_id, club_id, 0, owner, now(), now() + LEASE)
            except Exception:  # noqa: BLE001 - the store is down: the run fails as well
                log.warning("webhook %s: the lease could not be renewed", webhook_id)
                continue
            if row is None:
                self.lost.set()
                return

    def stop(self) -> None:
        """Stop renewing; returns once no renewal is under way (the run then releases)."""
        self._stop.set()
        self._thread.join(timeout=LEASE)


# ---- delivery ------------------------------------------------------------------------------

def disable(ledger: Ledger, club_id: str, webhook_id: str, sent: Sent, position: int,
            at: float) -> None:
    """Append `webhook_disabled` to the club's stream (nothing if the endpoint was removed
    or disabled meanwhile)."""
    from ledger.app.clubs import Clubs

    e = ev.WebhookDisabled(
        id=webhook_id, reason=f"the receiver answered {sent.status} Gone: it has no endpoint "
        "there any more", status=int(sent.status), position=position,
        at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)))
    try:
        Clubs(ledger).execute(club_id, lambda club: cl.disable_webhook(club, e))
    except NotFound:
        pass  # removed meanwhile: nothing more is delivered to it either way


@dataclass(frozen=True, slots=True)
class Run:
    """What a delivery run did: delivered n, and when the next attempt is due (if one is)."""

    delivered: int
    retry_at: float | None = None
    state: str = "done"  # done / retry / busy / removed / disabled


class _Removal:
    """Whether the endpoint was removed since the run began, looked up at most every
    CHECK seconds (one read of the club's stream after the version last read)."""

    CHECK = 0.25

    def __init__(self, store: Any, club_id: str, webhook_id: str) -> None:
        self.store, self.club_id, self.webhook_id = store, club_id, webhook_id
        self.version = store.version(club_id)  # the run's club: it was folded up to here
        self.checked = time.monotonic()

    def seen(self) -> bool:
        if time.monotonic() - self.checked < self.CHECK:
            return False
        self.checked = time.monotonic()
        for s in self.store.load(self.club_id, after_version=self.version):
            self.version = s.version
            if s.type == "webhook_removed":
                gone = decode(s)
                if isinstance(gone, ev.WebhookRemoved) and gone.id == self.webhook_id:
                    return True
        return False


class _Bodies:
    """Each message's body: the club feed's event as it stood at the event's own position.
    A table's event is redacted by the table folded up to that event (its live hand then),
    not as the table is now, so every attempt of one message (a retry after the hand
    completed, a resend after a run died) carries the same bytes. The folds go forward with
    the events the run reads (each table read from the store once, when first needed)."""

    def __init__(self, ledger: Ledger, club_id: str) -> None:
        self.ledger, self.club_id = ledger, club_id
        self.folds: dict[str, Projection] = {}

    def passed(self, s: StoredEvent) -> None:
        """The run read `s` (of one of the club's tables): a fold of its table goes on."""
        p = self.folds.get(s.table_id)
        if p is None:
            return
        if p.version == s.version - 1:
            self.folds[s.table_id] = project([s], p)
        elif p.version < s.version:
            del self.folds[s.table_id]  # a gap (never, in position order): read it again

    def doc(self, s: StoredEvent) -> dict[str, Any]:
        if s.table_id == self.club_id:
            return club_event(s)
        p = self.folds.get(s.table_id)
        if p is None or p.version != s.version:
            base = p if p is not None and p.version < s.version else None
            p = project(self.ledger.events(s.table_id, base.version if base else 0,
                                           s.version), base)
            self.folds[s.table_id] = p
        (doc,) = table_events(self.ledger, s.table_id, [s], SPECTATOR,
                              live=live_hand(p))
        return doc | {"stream": s.table_id}

    def game_checkpoint(self, s: StoredEvent) -> dict[str, Any] | None:
        """The checkpoint of the settlement `s` (a hand_settled) begins when the hand also
        won the game: it names the game_won appended with it, which carries it in the feeds.
        An endpoint that asked for hand_settled and not game_won gets it on hand_settled, so
        every settled hand's signed head reaches it (API.md Checkpoints: they go out in
        webhooks). The saved checkpoint, or the one its writer saves (the same bytes)."""
        head = self.ledger.events(s.table_id, s.version, s.version + 1)
        if not head or head[0].type != "game_won":
            return None
        out: list[dict[str, Any]] = [{}]
        attach_checkpoints(self.ledger, s.table_id, head, out)
        return out[0].get("checkpoint")


def start_position(ledger: Ledger, club_id: str, webhook_id: str) -> int:
    """An endpoint is owed what comes after its own webhook_added event."""
    for s in ledger.store.load(club_id):
        if s.type == "webhook_added" and s.data.get("id") == webhook_id:
            return s.position
    return 0


def deliver(ledger: Ledger, club: cl.Club, club_id: str, webhook_id: str,
            config: WebhookConfig, now: Callable[[], float] = time.time,
            attempted: Callable[[Sent], None] = lambda sent: None,
            rand: Callable[[], float] = random.random) -> Run:
    """Deliver what the endpoint is owed, in position order, until it is all delivered or
    one attempt fails (then a retry is due; see the module docstring). `attempted` is told
    of every POST's outcome (the metrics); `rand` draws the backoff's jitter."""
    store = ledger.store
    try:
        hook = club.webhook(webhook_id)
    except NotFound:
        return Run(0, state="removed")
    if hook.disabled is not None:
        return Run(0, state="disabled")
    owner = uuid.uuid4().hex
    start = (start_position(ledger, club_id, webhook_id)
             if store.webhook_cursor(webhook_id) is None else 0)
    row = store.webhook_claim(webhook_id, club_id, start, owner, now(), now() + LEASE)
    if row is None:  # another run holds it: look again when its lease ends, if not sooner
        held = store.webhook_cursor(webhook_id) or {}
        return Run(0, held.get("lease_until") or now() + 1.0, state="busy")
    position, attempt, due = row["position"], row["attempt"], row["retry_at"]
    delivered, lost = 0, False
    removal = _Removal(store, club_id, webhook_id)
    log_rows: list[dict[str, Any]] = []
    sender = Sender(hook.url, config)
    flushed_at = time.monotonic()
    beat = _Heartbeat(store, webhook_id, club_id, owner, now)

    def flush(until: float | None) -> bool:
        """The attempts so far and the cursor, in one write each (not one per event)."""
        nonlocal flushed_at
        if log_rows:
            store.webhook_log(webhook_id, list(log_rows))
            log_rows.clear()
        flushed_at = time.monotonic()
        return store.webhook_save(webhook_id, owner, position, attempt, due, until)

    try:
        if due is not None and now() < due:
            return Run(0, due, "retry")
        due = None
        secret = endpoint_secret(store.server_secret(), club_id, webhook_id, hook.salt)
        streams = {club_id} | {t.table_id for t in club.tables}
        bodies = _Bodies(ledger, club_id)
        while True:
            page = store.read_all(after_position=position, limit=PAGE)
            if not page:
                # Events committed behind an appender still in progress (PostgreSQL) are not
                # read yet, and no later commit may come to start another run: look again
                # soon. An endpoint's last events waited for the club's next one (CI saw 1
                # of 3 settled hands delivered in 60 s).
                if store.held_back(position):
                    return Run(delivered, now() + HELD_BACK_AGAIN, "busy")
                return Run(delivered)
            for s in page:
                mine = s.table_id in streams or (
                    s.type == "table_created" and s.data.get("club") == club_id)
                if mine:
                    streams.add(s.table_id)
                    if s.table_id != club_id:
                        bodies.passed(s)
                if not mine or not hook.wants(s.type):
                    position = s.position
                    continue
                if beat.lost.is_set():
                    lost = True  # another run took the endpoint over: stop here
                    return Run(delivered, state="busy")
                if removal.seen():  # DELETEd meanwhile: not one POST more (a backlog
                    return Run(delivered, state="removed")  # may hold thousands)
                doc = bodies.doc(s)
                if s.type == "hand_settled" and "checkpoint" not in doc \
                        and not hook.wants("game_won"):
                    cp = bodies.game_checkpoint(s)
                    if cp is not None:
                        doc["checkpoint"] = cp
                body = encoding.dumps(doc)
                msg_id = f"msg_{webhook_id}_{s.position}"
                stamp = int(now())
                headers = {"content-type": "application/json", "webhook-id": msg_id,
                           "webhook-timestamp": str(stamp),
                           "webhook-signature": sign(secret, msg_id, stamp, body),
                           "user-agent": "loo-ledger-webhooks/1"}
                sent = sender.post(headers, body)
                attempted(sent)
                attempt += 1
                log_rows.append({
                    "message_id": msg_id, "event": s.type, "position": s.position,
                    "stream": doc["stream"], "status": sent.status, "attempt": attempt,
                    "duration_ms": sent.duration_ms,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now()))})
                if sent.status == 410:  # Gone: no endpoint there any more (see above)
                    if not flush(now() + LEASE):  # the attempt logged before the event
                        lost = True
                        return Run(delivered, state="busy")
                    disable(ledger, club_id, webhook_id, sent, s.position, now())
                    return Run(delivered, state="disabled")
                if not sent.ok:
                    due = now() + config.wait(attempt, sent, now(), rand)
                    return Run(delivered, due, "retry")
                position, attempt = s.position, 0
                delivered += 1
                if len(log_rows) >= FLUSH_EVERY or \
                        time.monotonic() - flushed_at >= FLUSH_SECONDS:
                    if not flush(now() + LEASE):
                        lost = True  # another run took the endpoint over: stop here
                        return Run(delivered, state="busy")
            if not flush(now() + LEASE):
                lost = True
                return Run(delivered, state="busy")
    finally:
        beat.stop()
        sender.close()
        if not lost:  # write what is left and release the lease, keeping where it got to
            flush(None)
