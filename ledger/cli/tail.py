"""`loo tail TABLE | --club ID`: follow a feed's Server-Sent Events over HTTP, one line per
event, reconnecting with Last-Event-ID whenever the stream ends or breaks (so no event is
shown twice or skipped); a club's (or with --latest N, any feed's) last events first, read as
a JSON page (?latest=), the stream going on from where it read up to. Also the small SSE
client the tests and `loo bench feed` use."""

from __future__ import annotations

import http.client
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import click


@dataclass(frozen=True, slots=True)
class Frame:
    """One dispatched SSE event, or a comment line (`comment` set, the rest empty)."""

    id: str | None = None
    event: str = "message"
    data: str = ""
    comment: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


class StreamRefused(Exception):
    def __init__(self, status: int, body: bytes, retry_after: str | None) -> None:
        super().__init__(f"HTTP {status}: {body[:300].decode(errors='replace')}")
        self.status, self.body, self.retry_after = status, body, retry_after


def _get(url: str, token: str | None, accept: str, timeout: float,
         ) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """A connection to `url`'s host, its path with the query, and a GET's headers."""
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    headers = {"Accept": accept}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return conn, parts.path + (f"?{parts.query}" if parts.query else ""), headers


def open_stream(url: str, token: str | None, last_id: str | None = None,
                timeout: float = 30.0) -> tuple[http.client.HTTPConnection,
                                                http.client.HTTPResponse]:
    """GET `url` with Accept: text/event-stream; StreamRefused unless it answers 200."""
    conn, path, headers = _get(url, token, "text/event-stream", timeout)
    if last_id is not None:
        headers["Last-Event-ID"] = last_id
    conn.request("GET", path or "/", headers=headers)
    resp = conn.getresponse()
    if resp.status != 200:
        body = resp.read()
        conn.close()
        raise StreamRefused(resp.status, body, resp.getheader("Retry-After"))
    return conn, resp


def read_page(url: str, token: str | None, timeout: float = 30.0) -> Any:
    """GET `url` as JSON (a feed's page); StreamRefused unless it answers 200."""
    conn, path, headers = _get(url, token, "application/json", timeout)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        kind = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        # Anything but JSON is not the service's page (a stream would never end: unread).
        body = resp.read() if kind.endswith("json") else b""
    finally:
        conn.close()
    if resp.status != 200:
        raise StreamRefused(resp.status, body, resp.getheader("Retry-After"))
    try:
        page = json.loads(body)
    except ValueError:
        page = None
    if not (isinstance(page, dict) and isinstance(page.get("next"), int)
            and isinstance(page.get("events"), list)
            and all(isinstance(e, dict) and isinstance(e.get("position"), int)
                    and isinstance(e.get("type"), str) for e in page["events"])):
        # Not a feed's page: not the service's answer (_refusal says so).
        raise StreamRefused(resp.status, body, None)
    return page


def page_frames(events: list[dict[str, Any]]) -> list[Frame]:
    """A JSON page's events as the stream sends them (id: position, event: type)."""
    return [Frame(str(e["position"]), e["type"], json.dumps(e)) for e in events]


def frames(resp: http.client.HTTPResponse) -> Iterator[Frame]:
    """Parse an event stream (the WHATWG rules this service's streams need) until it ends."""
    event_id: str | None = None
    kind, data = "message", []
    while True:
        line = resp.readline()
        if not line:
            return
        text = line.decode().rstrip("\r\n")
        if not text:
            if data:
                yield Frame(event_id, kind, "\n".join(data))
            kind, data = "message", []
            continue
        if text.startswith(":"):
            yield Frame(comment=text[1:].strip())
            continue
        field, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            event_id = value
        elif field == "event":
            kind = value
        elif field == "data":
            data.append(value)


def follow(url: str, token: str | None, last_id: str | None = None, *,
           timeout: float = 60.0, max_reconnects: int | None = None,
           lost: Callable[[Exception], None] | None = None) -> Iterator[Frame]:
    """Every event of the feed, across reconnects (resuming after the last id seen). A
    service that cannot be reached at the first connection is an error (OSError); once a
    stream was open, a service gone (restarted, a network outage) is tried again, every
    0.2 s doubling to 5 s, `lost` told each time."""
    reconnects, opened, delay = 0, False, 0.2
    while True:
        try:
            conn, resp = open_stream(url, token, last_id, timeout)
        except (OSError, http.client.HTTPException) as err:
            if not opened:
                raise
            if lost is not None:
                lost(err)
            reconnects += 1
            if max_reconnects is not None and reconnects > max_reconnects:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
            continue
        except StreamRefused as err:
            if err.status != 503:
                raise
            try:
                wait = float(err.retry_after or 5)
            except ValueError:  # an HTTP date, or nonsense: the usual wait
                wait = 5.0
            time.sleep(min(wait, 60.0) if wait >= 0.1 else 5.0)  # (NaN: 5)
            continue
        opened, delay = True, 0.2
        try:
            for f in frames(resp):
                if f.comment is None and f.id is not None:
                    last_id = f.id
                yield f
        except (OSError, http.client.HTTPException):
            pass  # a broken stream: reconnect from the last id
        finally:
            conn.close()
        reconnects += 1
        if max_reconnects is not None and reconnects > max_reconnects:
            return
        time.sleep(0.2)


def line_for(f: Frame) -> str:
    """One line for an event: position, stream (club feeds), type, hand and the data."""
    doc = f.json()
    if f.event == "checkpoint":
        return (f"{f.id} {doc.get('stream', doc.get('table'))} checkpoint "
                f"version={doc.get('version')} hash={str(doc.get('hash'))[:16]}")
    where = f" {doc['stream']}" if "stream" in doc else ""
    hand = f" hand={doc['hand']}" if doc.get("hand") is not None else ""
    data = json.dumps(doc.get("data", {}), separators=(",", ":"), ensure_ascii=False)
    return f"{f.id}{where} v{doc.get('version')} {f.event}{hand} {data}"


def _service_url(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """--url: an http(s) URL with a host and a valid port, or a usage error naming it. The
    feed's path is put after it, so it takes no query or fragment; the token goes in --token,
    never in the URL (which errors show); a host name must be one (no spaces, labels of at
    most 63 characters), where the resolver failed on it with a traceback."""
    try:
        parts = urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # ValueError when out of range or not a number
    except ValueError:
        ok = False
    if not ok:
        raise click.BadParameter(f"{value!r} is not an http:// or https:// URL of the service "
                                 "(e.g. http://127.0.0.1:8000)")
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in value):
        raise click.BadParameter(f"{value!r}: a URL holds no spaces or control characters")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise click.BadParameter(f"{value!r}: the service's URL takes no query or fragment "
                                 "(the feed's path is put after it)")
    if parts.username is not None or parts.password is not None:
        raise click.BadParameter("the service's URL takes no user or password: give the "
                                 "token with --token (env LOO_TOKEN)")
    host = str(parts.hostname)
    try:
        host.encode("idna")
    except UnicodeError:
        shown = host if len(host) <= 60 else host[:57] + "..."
        raise click.BadParameter(f"{shown!r} is not a host name: its labels, between the "
                                 "dots, are 1 to 63 characters") from None
    return value


def _token(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """--token: what an Authorization header can carry (the service's tokens are printable
    ASCII); a control character or a letter beyond Latin-1 cannot be sent at all."""
    if not value or any(not 0x20 < ord(ch) < 0x7F for ch in value):
        raise click.BadParameter("a token is printable ASCII, without spaces, as the service "
                                 "gives them out")
    return value


def _refusal(err: StreamRefused, url: str) -> str:
    """The service's refusal in one line: its problem+json `detail` and `code` if it sent one."""
    try:
        doc = json.loads(err.body)
        return f"HTTP {err.status} {doc['code']}: {doc['detail']}"
    except (ValueError, TypeError, KeyError):
        # Not the service's problem+json: another server, or a path before the service.
        return (f"HTTP {err.status} from {url}, which is not the service's answer: is --url "
                "the loo service (e.g. http://127.0.0.1:8000)?")


# `loo tail --club` without --after or --latest: the club's last events, then live (a club's
# feed grows for as long as it plays; its whole history is --after 0).
CLUB_LATEST = 10
LATEST_MAX = 500  # a page of the feeds (?latest=)


@click.command("tail", short_help="Follow a table's or a club's events live, one a line.")
@click.argument("table", required=False)
@click.option("--club", "club_id", default=None, help="follow a club's feed instead")
@click.option("--url", envvar="LOO_URL", default="http://127.0.0.1:8000", show_default=True,
              callback=_service_url, help="the service (env LOO_URL)")
@click.option("--token", envvar="LOO_TOKEN", required=True, callback=_token,
              help="a token of the table or club (env LOO_TOKEN)")
@click.option("--after", type=click.IntRange(0, 2**63 - 1), default=None,
              help="start after this position (0: the whole history)  [default: a table's "
              f"first event; a club's last {CLUB_LATEST}, as --latest {CLUB_LATEST}]")
@click.option("--latest", type=click.IntRange(1, LATEST_MAX), default=None, metavar="N",
              help=f"first the last N events (1-{LATEST_MAX}), then live; not with --after")
@click.option("--comments", is_flag=True, help="print keep-alive comments too")
def tail_cmd(table: str | None, club_id: str | None, url: str, token: str, after: int | None,
             latest: int | None, comments: bool) -> None:
    """Follow TABLE's events (or --club ID's) live, one line per event, until interrupted
    (Ctrl-C: status 130). A table is shown from its first event, a club from its last
    10 (--after 0: from its first); --latest N shows the last N first. A stream that ends
    or breaks is resumed after the last event shown, also after the service was away
    (restarted); a refusal, or a service that cannot be reached at the start, ends it
    (status 1)."""
    if (table is None) == (club_id is None):
        raise click.UsageError("name a TABLE or give --club ID (one of them)")
    if latest is not None and after is not None:
        raise click.BadParameter("--latest reads the last events, then follows on from "
                                 "them; --after starts at a position: give one of them",
                                 param_hint="'--latest'")
    what, given = ("club", club_id) if club_id is not None else ("table", table)
    assert given is not None
    if not given:
        raise click.BadParameter(f"an empty id names no {what}",
                                 param_hint="'--club'" if what == "club" else "'TABLE'")
    try:
        given.encode()
    except UnicodeEncodeError:  # bytes that are not UTF-8 name nothing (as `loo replay` says)
        raise click.ClickException(f"no {what} {given!r}") from None
    # Any id is one path segment: "../x", spaces and letters beyond ASCII are sent escaped.
    path = (f"/v1/clubs/{quote(given, safe='')}/events" if what == "club"
            else f"/v1/tables/{quote(given, safe='')}/events")
    where = url.rstrip("/") + path
    said: list[str] = []  # the outage being waited out, said once

    def lost(err: Exception) -> None:
        if not said:
            said.append(str(err))
            click.echo(f"loo tail: {url} does not answer ({err}); trying again until it "
                       "does (Ctrl-C to stop)", err=True)

    if latest is None and after is None and club_id is not None:
        latest = CLUB_LATEST
    if latest is not None:
        # The page first, then the stream from where it reads up to: a club page's `next`
        # (a position); a table page's counts versions, so after its last event's position.
        asked = f"{where}?latest={latest}"
        try:
            page = read_page(asked, token)
        except StreamRefused as err:
            raise click.ClickException(_refusal(err, asked)) from None
        except (OSError, http.client.HTTPException) as err:
            raise click.ClickException(f"cannot follow {where}: {err}") from None
        shown = page_frames(page["events"])
        for f in shown:
            click.echo(line_for(f))
        sys.stdout.flush()
        after = page["next"] if what == "club" else int(shown[-1].id or 0) if shown else 0
    stream = follow(where, token, str(after or 0), lost=lost)
    while True:
        try:
            f = next(stream)
            said.clear()
        except StopIteration:
            return
        except StreamRefused as err:
            raise click.ClickException(_refusal(err, where)) from None
        except (OSError, http.client.HTTPException) as err:
            raise click.ClickException(f"cannot follow {where}: {err}") from None
        # Output errors are the `loo` group's: a reader that left (`| head`) ends it quietly.
        if f.comment is not None:
            if comments:
                click.echo(f": {f.comment}")
            continue
        click.echo(line_for(f))
        sys.stdout.flush()
