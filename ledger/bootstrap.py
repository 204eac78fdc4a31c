"""Composition root: Settings from the environment -> store, queue, ledger (one place)."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from rq import Queue

    from ledger.app.dispatch import Dispatcher
    from ledger.app.service import Ledger
    from ledger.store.base import EventStore

DEFAULT_DATABASE_URL = "sqlite:///loo.db"  # relative: ./loo.db in the working directory
DATABASE_SCHEMES = ("sqlite", "postgresql", "postgres", "memory")  # memory: tests only
REDIS_SCHEMES = ("redis", "rediss", "unix")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("json", "text")
# Every variable Settings reads; docker-compose.yml and the README are tested against it.
ENV_VARS = ("DATABASE_URL", "REDIS_URL", "LOO_QUEUE_PREFIX", "LOO_LOG_LEVEL", "LOO_LOG_FORMAT",
            "LOO_CHECKPOINT_KEY", "LOO_CHECKPOINT_KEY_FILE", "LOO_CHECKPOINT_RETIRED_KEYS",
            "LOO_CHECKPOINT_REVOKED_KEYS")
DEFAULT_KEY_FILE = "loo-checkpoint.key"  # PostgreSQL without a key: in the working directory
_DB_HINT = "use postgresql://user@host:5432/db or sqlite:///path/loo.db; unset means ./loo.db"


class ConfigError(Exception):
    """Configuration that cannot work: one line naming the variable and what is wrong."""


def redact(url: str) -> str:
    """The URL without its password, fit for a message or a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def one_line(err: BaseException) -> str:
    """A driver's message (psycopg's spans lines) as one line."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    queue_name: str = "loo"
    log_level: str = "INFO"
    log_format: str = "json"
    checkpoint_key: str | None = None
    checkpoint_key_file: str | None = None
    # Public keys of checkpoint keys replaced by a rotation: their checkpoints still audit.
    checkpoint_retired_keys: tuple[str, ...] = ()
    # Public keys revoked (leaked): what they signed fails the audit, named as revoked.
    checkpoint_revoked_keys: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        """Read and check the variables; an empty value counts as unset."""
        env = {k: environ.get(k, "").strip() for k in ENV_VARS}
        db = env["DATABASE_URL"] or DEFAULT_DATABASE_URL
        _check_scheme("DATABASE_URL", db, DATABASE_SCHEMES, _DB_HINT)
        if db.startswith("sqlite:") and (not db.startswith("sqlite:///")
                                         or db == "sqlite:///"):
            # The store opens only sqlite:///PATH: every entry point says so, before
            # `loo checkpoint-key` made a key file of "sqlite://x" ('//x.checkpoint-key', at
            # the root) or showed a key of "sqlite:///" that no process would ever use.
            raise ConfigError(f"DATABASE_URL: {redact(db)!r} names no file: use "
                              "sqlite:///path/loo.db (three slashes, then the file's path; "
                              "sqlite:////abs/path/loo.db for an absolute one)")
        if db.startswith("sqlite:") and ("?" in db or "#" in db):
            # The store takes the rest of the URL as the file's name: "loo.db?mode=ro" would
            # quietly be a new, empty, writable database of that name.
            raise ConfigError(f"DATABASE_URL: {redact(db)!r}: a sqlite:/// URL takes no "
                              "options ('?' or '#'), only the file's path")
        redis_url = env["REDIS_URL"] or None
        if redis_url is not None:
            _check_scheme("REDIS_URL", redis_url, REDIS_SCHEMES,
                          "use redis://host:6379/0; unset means jobs run in-process")
            _check_redis_db(redis_url)
        queue = env["LOO_QUEUE_PREFIX"] or "loo"
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", queue):
            raise ConfigError(f"LOO_QUEUE_PREFIX: {queue!r} is not a queue name "
                              "(letters, digits, '.', '_' and '-')")
        level = (env["LOO_LOG_LEVEL"] or "INFO").upper()
        if level not in LOG_LEVELS:
            raise ConfigError(f"LOO_LOG_LEVEL: {level!r} is not one of {', '.join(LOG_LEVELS)}")
        log_format = (env["LOO_LOG_FORMAT"] or "json").lower()
        if log_format not in LOG_FORMATS:
            raise ConfigError(f"LOO_LOG_FORMAT: {log_format!r} is not one of "
                              f"{', '.join(LOG_FORMATS)}")
        key = env["LOO_CHECKPOINT_KEY"] or None
        if key is not None:
            from ledger.app.checkpoints import parse_key

            try:
                parse_key(key)
            except ValueError as err:
                raise ConfigError(f"LOO_CHECKPOINT_KEY: {err} (an Ed25519 private key seed; "
                                  "e.g. python -c 'import os; print(os.urandom(32).hex())')"
                                  ) from None
        retired = retired_keys(env["LOO_CHECKPOINT_RETIRED_KEYS"])
        revoked = retired_keys(env["LOO_CHECKPOINT_REVOKED_KEYS"],
                               "LOO_CHECKPOINT_REVOKED_KEYS", "of a key that leaked")
        from ledger.app.webhooks import WebhookConfig

        WebhookConfig.from_env(environ)  # LOO_WEBHOOK_*: checked at start, read when used
        return cls(database_url=db, redis_url=redis_url, queue_name=queue, log_level=level,
                   log_format=log_format, checkpoint_key=key,
                   checkpoint_key_file=env["LOO_CHECKPOINT_KEY_FILE"] or None,
                   checkpoint_retired_keys=retired, checkpoint_revoked_keys=revoked)


def retired_keys(value: str, var: str = "LOO_CHECKPOINT_RETIRED_KEYS",
                 which: str = "GET /v1/checkpoints/key gave before a rotation",
                 ) -> tuple[str, ...]:
    """LOO_CHECKPOINT_RETIRED_KEYS (or `var`, LOO_CHECKPOINT_REVOKED_KEYS): comma-separated
    Ed25519 public keys (hex or base64; empty entries, as of a trailing comma, are skipped),
    each checked; a ConfigError names the first that is not one."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ledger.app.checkpoints import parse_key

    entries = [e.strip() for e in value.split(",")]
    for n, entry in enumerate(entries, 1):
        if not entry:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(parse_key(entry))
        except ValueError as err:
            shown = entry if len(entry) <= 16 else entry[:12] + "…"
            raise ConfigError(f"{var}: entry {n} ({shown!r}) is not a public key: it {err} "
                              f"(comma-separated, each a public_key {which})") from None
    return tuple(e for e in entries if e)


def _check_scheme(var: str, url: str, schemes: tuple[str, ...], hint: str) -> None:
    scheme = urlsplit(url).scheme if "://" in url else ""
    if not scheme:
        raise ConfigError(f"{var}: {redact(url)!r} is not a URL ({hint})")
    if scheme not in schemes:
        raise ConfigError(f"{var}: unsupported scheme {scheme!r} in {redact(url)} ({hint})")


def _check_redis_db(url: str) -> None:
    """The path of a redis:// URL is the database number: redis-py reads "/abc" as db 0 and
    "/1/5" as db 15 without a word, which would put the jobs in another deployment's db."""
    parts = urlsplit(url)
    if parts.scheme != "unix" and not re.fullmatch(r"/?|/[0-9]+/?", parts.path):
        raise ConfigError(f"REDIS_URL: {parts.path[1:]!r} in {redact(url)} is not a database "
                          "number (use redis://host:6379/0)")


@dataclass(frozen=True, slots=True)
class Container:
    """What every entry point needs, built once per process."""

    settings: Settings
    store: EventStore
    queue: Queue | None  # None: jobs run in-process
    dispatcher: Dispatcher
    ledger: Ledger

    def close(self) -> None:
        stop = getattr(self.dispatcher, "close", None)
        if stop is not None:
            stop()  # the in-process timers: none fires on a closed store
        runner = getattr(self.ledger, "webhooks", None)
        if runner is not None:
            runner.stop()  # in-process webhook delivery: nor does it
        self.store.close()
        if self.queue is not None:
            self.queue.connection.close()


def open_database(settings: Settings, *, upgrade: bool = True,
                  create: bool = True) -> EventStore:
    """The event store at DATABASE_URL, its schema created or migrated unless told not to.
    Without `create` (commands that only read what is there), a SQLite file that does not
    exist is a ConfigError rather than a new, empty ledger."""
    from ledger.store import open_store
    from ledger.store.base import StoreUnavailable

    errors: tuple[type[BaseException], ...] = (StoreUnavailable, OSError, sqlite3.DatabaseError)
    try:
        import psycopg

        # Any driver error while opening or migrating is the URL's doing: no such schema in
        # its search_path, a role that may not create tables, a read-only server, ...
        errors += (psycopg.Error,)
    except ImportError:  # pragma: no cover - psycopg is a dependency
        pass
    url = settings.database_url
    if not create:
        require_ledger(url)
    try:
        store = open_store(url)
        if upgrade:
            store.upgrade()
    except errors as err:
        # The store's own message may already name the URL and the variable: say it once.
        text = re.sub(r"\s*\(check DATABASE_URL\)", "", one_line(err))
        if redact(url) not in text:
            text = f"cannot use {redact(url)} ({text})"
        raise ConfigError(f"DATABASE_URL: {text}") from err
    return store


def require_ledger(url: str) -> None:
    """A ConfigError when DATABASE_URL names a SQLite file that does not exist: opening it
    would create an empty ledger. (A PostgreSQL database that is not there, its server says.)"""
    if not url.startswith("sqlite:///"):
        return
    path = url[len("sqlite:///"):]
    if not path or path == ":memory:" or os.path.exists(path):
        return
    shown = path if os.path.isabs(path) or path.startswith(".") else f"./{path}"
    if url == DEFAULT_DATABASE_URL:
        raise ConfigError(f"no ledger at {shown} (set DATABASE_URL or run `loo serve`/"
                          "`loo play` first)")
    raise ConfigError(f"DATABASE_URL: no ledger at {shown} (no such file: check the path, or "
                      "run `loo db upgrade` to create an empty one)")


def checkpoint_signer(settings: Settings, create: bool = True, *,
                      missing_ok: bool = False) -> Any:
    """The checkpoint key, never stored in the database: LOO_CHECKPOINT_KEY, else the key
    file LOO_CHECKPOINT_KEY_FILE, else a key file made on first start beside the SQLite
    file (`loo.db.checkpoint-key`) or, on PostgreSQL, ./loo-checkpoint.key (every process
    must share one key: set the variable, or point them at one file). It also trusts the
    public keys of LOO_CHECKPOINT_RETIRED_KEYS (keys replaced by a rotation) and refuses
    those of LOO_CHECKPOINT_REVOKED_KEYS (keys that leaked). Without `create`, a missing key
    file is a ConfigError rather than a new key, or with `missing_ok` a key of this process
    alone (for commands that sign nothing: a reader must not leave a key file the service
    would then take for its own)."""
    from cryptography.hazmat.primitives import serialization

    from ledger.app.checkpoints import parse_key

    signer = _current_signer(settings, create, missing_ok)
    seed = signer.private.private_bytes(serialization.Encoding.Raw,
                                        serialization.PrivateFormat.Raw,
                                        serialization.NoEncryption())
    retired = [parse_key(k) for k in settings.checkpoint_retired_keys]
    if seed in retired:  # the secret in a variable meant for public keys: say so, not trust it
        raise ConfigError(f"LOO_CHECKPOINT_RETIRED_KEYS: entry {retired.index(seed) + 1} is "
                          "the current checkpoint key's private key, not a public key (list "
                          "the public_key of each retired key)")
    revoked = [parse_key(k) for k in settings.checkpoint_revoked_keys]
    if seed in revoked:
        raise ConfigError(f"LOO_CHECKPOINT_REVOKED_KEYS: entry {revoked.index(seed) + 1} is "
                          "the current checkpoint key's private key, not a public key (list "
                          "the public_key of each revoked key)")
    try:
        signer = signer.revoking(revoked)
    except ValueError as err:
        n = revoked.index(signer.public_bytes) + 1
        raise ConfigError(f"LOO_CHECKPOINT_REVOKED_KEYS: entry {n}: {err}") from None
    return signer.retiring(retired)


def _current_signer(settings: Settings, create: bool, missing_ok: bool = False) -> Any:
    from ledger.app.checkpoints import Signer, parse_key

    if settings.checkpoint_key:
        return Signer.from_seed(parse_key(settings.checkpoint_key))
    path = checkpoint_key_path(settings)
    if path is None:
        return Signer.generate()
    if not create and not os.path.exists(path):
        if missing_ok:
            return Signer.generate()
        raise ConfigError(f"LOO_CHECKPOINT_KEY_FILE: there is no checkpoint key in {path!r} yet "
                          "(the service makes it on its first start; if it runs with "
                          "LOO_CHECKPOINT_KEY or another LOO_CHECKPOINT_KEY_FILE, set the same "
                          "here)")
    try:
        return Signer.from_file(path, create=create)
    except (OSError, ValueError) as err:
        raise ConfigError(f"LOO_CHECKPOINT_KEY_FILE: cannot use {path!r} as the checkpoint "
                          f"key ({one_line(err)})") from err


def checkpoint_key_path(settings: Settings) -> str | None:
    """The file holding the checkpoint key when LOO_CHECKPOINT_KEY is unset; None when the
    key lives only in memory (an in-memory database: tests)."""
    url = settings.database_url
    path = settings.checkpoint_key_file
    if path is not None:
        return path
    if url.startswith("memory:"):
        return None
    if url.startswith("sqlite:"):
        db = url.split(":", 1)[1].removeprefix("///")
        return f"{db}.checkpoint-key" if db and db != ":memory:" else None
    return DEFAULT_KEY_FILE


def connect_queue(settings: Settings) -> Queue | None:
    """The RQ queue at REDIS_URL (checked with a ping), or None for in-process jobs."""
    if settings.redis_url is None:
        return None
    import redis

    from workers.queue import make_queue

    url = settings.redis_url
    try:
        queue = make_queue(url, settings.queue_name, socket_timeout=3)
        queue.connection.ping()
    except (redis.RedisError, ValueError, OSError) as err:
        raise ConfigError(f"REDIS_URL: cannot connect to {redact(url)} ({one_line(err)})") from err
    return queue


def bootstrap(settings: Settings, *, upgrade: bool = True, create: bool = True) -> Container:
    """Compose the store, the queue (or in-process jobs) and the ledger service. Without
    `create`, a ledger that does not exist yet is a ConfigError (open_database)."""
    from ledger.app.service import Ledger
    from ledger.metrics import CountingStore
    from workers.queue import InlineDispatcher, RqDispatcher

    store: Any = CountingStore(open_database(settings, upgrade=upgrade, create=create))
    try:
        queue = connect_queue(settings)
    except ConfigError:
        store.close()
        raise
    dispatcher: Any = RqDispatcher(queue) if queue is not None else InlineDispatcher()
    try:
        signer = checkpoint_signer(settings, create=create, missing_ok=not create)
    except ConfigError:
        store.close()
        raise
    ledger = Ledger(store, dispatcher, signer=signer)
    if queue is None:
        dispatcher.bind(ledger=ledger)  # in-process jobs use this ledger, not a new one
        from workers.webhooks import InlineWebhooks

        ledger.webhooks = InlineWebhooks(ledger)  # type: ignore[attr-defined]
        ledger.on_club_commit = ledger.webhooks.kick  # type: ignore[attr-defined]
    else:
        from workers.reconcile import Redelivery
        from workers.webhooks import rq_trigger

        ledger.on_club_commit = rq_trigger(dispatcher)
        # A job Redis refused is handed over again as soon as it answers (`loo worker`
        # replaces this with its own reconcile on reconnect).
        redelivery = Redelivery(ledger, queue.connection.ping)
        dispatcher.on_unreachable, dispatcher.on_close = redelivery.missed, redelivery.close
    return Container(settings, store, queue, dispatcher, ledger)


def build_ledger(settings: Settings) -> Ledger:
    """The ledger service alone (CLI commands and workers that need nothing else)."""
    return bootstrap(settings).ledger
