"""The `loo` command: serve, worker, db, bench, and the game commands registered below."""

from __future__ import annotations

import errno
import importlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from gunicorn.app.base import BaseApplication

from ledger.bootstrap import ConfigError, Settings, bootstrap, one_line, open_database, redact
from ledger.store.base import StoreError, StoreUnavailable

log = logging.getLogger("ledger.cli")

# ---- registration point ------------------------------------------------------------------
# Subcommands that live in other modules: name -> "module:attribute", imported only when
# used, so `loo serve` never loads them. Add a line here for a new top-level command.
LAZY_COMMANDS = {
    "play": "ledger.cli.game:play_cmd",
    "tournament": "ledger.cli.tournament:tournament_cmd",
    "replay": "ledger.cli.record:replay_cmd",
    "audit": "ledger.cli.record:audit_cmd",
    "verify": "ledger.cli.history:verify_cmd",
    "export": "ledger.cli.history:export_cmd",
    "import": "ledger.cli.history:import_cmd",
    "club": "ledger.cli.club:club_cmd",
    "standings": "ledger.cli.club:standings_cmd",
    "tail": "ledger.cli.tail:tail_cmd",
    "checkpoint-key": "ledger.cli.keys:checkpoint_key_cmd",
}


class LooGroup(click.Group):
    """A group that loads LAZY_COMMANDS on demand and turns config errors into one line."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attr = self.lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        from ledger.cli.output import PIPE_CLOSED, flush_stdout, silence_stdout, why

        try:
            try:
                result = super().invoke(ctx)
            except SystemExit:  # a command's own status (loo verify's 1): its output first
                flush_stdout()
                raise
            flush_stdout()  # a write error held in the buffer is this command's, not lost
            return result
        except BrokenPipeError:
            # The reader left (`loo export T | head -1`): nothing more to say, and nobody to
            # say it to; the status of a process whose pipe closed, as `loo play` ends.
            silence_stdout()
            raise SystemExit(PIPE_CLOSED) from None
        except OSError as err:
            # Output that cannot be written (a full disk, a device error), or any other
            # input or output failing: one line, status 1, never a traceback, nor a status
            # 0 after the output was lost.
            if err.filename is not None:
                said = f"{err.filename}: {why(err)}"
            elif err.errno in OUTPUT_ERRORS:
                silence_stdout()
                said = f"cannot write to standard output: {why(err)}"
            else:
                said = one_line(err)
            click.echo(f"error: {said}", err=True)
            raise SystemExit(1) from None
        except ConfigError as err:
            fail(str(err))
        except StoreUnavailable as err:
            fail(f"DATABASE_URL: {one_line(err)}")
        except KeyboardInterrupt:
            # Ctrl-C: the shell's convention (128 + SIGINT), as `loo play` ends, rather than
            # click's "Aborted!" and status 1, which reads like a failure of the command.
            interrupted()
        except click.Abort as err:
            # click.prompt / click.confirm turn both Ctrl-C and the end of the input into
            # Abort ("Aborted!", status 1), keeping what they caught as the context: Ctrl-C at
            # a prompt is an interruption like any other; the input ending there is the
            # command's failure, said so. An Abort a command raises itself stays click's.
            if isinstance(err.__context__, KeyboardInterrupt):
                interrupted()
            if isinstance(err.__context__, EOFError):
                click.echo("\nerror: the input ended at a prompt, before an answer", err=True)
                raise SystemExit(1) from None
            raise


# What a write to standard output fails with, beside a closed pipe: a full disk or quota,
# a file grown too large, a device error, a closed descriptor.
OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})


def interrupted() -> None:
    """Ctrl-C: one line on stderr, exit status 130, never a traceback."""
    click.echo("\ninterrupted", err=True)
    raise SystemExit(130) from None


def fail(message: str) -> None:
    """Configuration errors: one line on stderr, exit status 2, never a traceback."""
    click.echo(f"error: {message}", err=True)
    raise SystemExit(2)


def settings() -> Settings:
    """Settings from the environment; also applies LOO_LOG_LEVEL and LOO_LOG_FORMAT."""
    from ledger.observe import configure

    s = Settings.from_env()
    configure(s.log_level, s.log_format)
    return s


@click.group(cls=LooGroup, lazy=LAZY_COMMANDS)
@click.version_option(package_name="domino-loo-ledger")
def main() -> None:
    """Domino Loo ledger. Configured by DATABASE_URL, REDIS_URL, LOO_QUEUE_PREFIX, LOO_LOG_LEVEL.

    \b
    Exit status: 0 done; 1 refused or failed (no such table, a check failed,
    output that could not be written); 2 a usage or configuration error;
    130 interrupted (Ctrl-C); 141 the reader of the output left (| head).
    """


# ---- serve -------------------------------------------------------------------------------
# Requests are mostly Python on the CPU, so a worker's threads share one GIL: a few per
# process keep a request waiting on the database from idling the core without making
# many take turns. On 2 cores `loo bench api` gave p99 18-22 ms and 1,370-1,450 req/s
# with 2, 19-22 ms and 1,470-1,620 req/s with 3, 23-24 ms with 4 (28-31 before the
# workers balanced their connections).
DEFAULT_THREADS = 3


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=click.IntRange(0, 65535), show_default=True)
@click.option("--workers", default=1, type=click.IntRange(1, 64), show_default=True,
              help="more than 1: that many gunicorn worker processes")
@click.option("--threads", default=DEFAULT_THREADS, type=click.IntRange(1, 64),
              show_default=True, help="request threads per gunicorn worker process "
              "(slow clients never hold one: requests are read first)")
@click.option("--streams", default=None, type=click.IntRange(1, 10_000),
              help="open event streams (SSE) per process at most, on threads of their own "
              "beyond --threads, so listeners never take the request threads; more are "
              "refused 503 [default: LOO_SSE_MAX_STREAMS, else 32]")
def serve(host: str, port: int, workers: int, threads: int, streams: int | None) -> None:
    """Serve the HTTP API (the schema is upgraded first)."""
    with metrics_dir():
        _serve(host, port, workers, threads, streams)


@contextmanager
def metrics_dir() -> Iterator[None]:
    """PROMETHEUS_MULTIPROC_DIR for this server's processes: a temporary directory it owns
    and removes, unless the variable is set (then it is the operator's to empty between
    runs). Set before anything imports prometheus-client, which reads it once."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    path, owner = tempfile.mkdtemp(prefix="loo-metrics-"), os.getpid()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # gunicorn installs its own
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        # gunicorn's workers leave through here too (SystemExit after the fork): only the
        # process that made the directory removes it.
        if os.getpid() == owner:
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
            shutil.rmtree(path, ignore_errors=True)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds, so `loo serve` removes its metrics directory


def _serve(host: str, port: int, workers: int, threads: int, streams: int | None) -> None:
    s = settings()
    from ledger.api.feeds import feed_config

    if streams is not None:
        os.environ["LOO_SSE_MAX_STREAMS"] = str(streams)
    streams = feed_config().max_streams  # checks the LOO_SSE_* and LOO_FEED_* variables
    from ledger.api.app import max_body_bytes, trusted_proxies
    from ledger.api.limits import exempts_loopback, parse_limits

    # Here, not in every worker, where a bad value failed the worker's boot (a traceback and
    # status 3, after "serving on" had been said).
    from ledger.serve.gunicorn_worker import read_seconds

    max_body_bytes(os.environ), trusted_proxies(os.environ)
    parse_limits(os.environ), exempts_loopback(os.environ), read_seconds(os.environ)
    container = bootstrap(s)  # checks the config and upgrades the schema once, up front
    container.close()  # each gunicorn worker composes its own after the fork
    listener = listen(host, port)  # a port in use: one line and exit 2, before gunicorn
    bound_host, bound_port = listener.getsockname()[:2]
    url = f"http://[{bound_host}]:{bound_port}" if ":" in bound_host \
        else f"http://{bound_host}:{bound_port}"
    jobs = f"RQ queue {s.queue_name!r}" if s.redis_url else "in-process"
    click.echo(f"loo: serving on {url}, store {redact(s.database_url)}, "
               f"jobs {jobs}, {workers} process(es)"
               + f" x {threads} threads", err=True)
    # gunicorn always, the embedded default's single process included: its worker reads
    # each request on its event loop before a thread runs it, so slow clients are shed
    # (ledger/serve/gunicorn_worker.py), where a development server gave each its thread.
    # It takes over the socket bound here (fd://), so it never retries a busy port itself.
    GunicornApp(s, {"bind": f"fd://{listener.detach()}", "workers": workers,
                    "threads": threads + streams}, request_threads=threads).run()


def listen(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A listening TCP socket on host:port, as gunicorn would make it (SO_REUSEADDR, its
    default backlog), or a configuration error naming the address and the reason."""
    # As gunicorn picks it: IPv6 for an IPv6 literal, else IPv4 (so "localhost" is 127.0.0.1).
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host.strip("[]"), port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as err:
        raise ConfigError(f"--host: cannot resolve {host!r}: {err.strerror}") from None
    except UnicodeError:  # the resolver's IDNA step: a label longer than 63 characters
        shown = host if len(host) <= 60 else host[:57] + "..."
        raise ConfigError(f"--host: {shown!r} is not a host name: its labels, between the "
                          "dots, are 1 to 63 characters") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(backlog)
    except OSError as err:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: "
                          f"{err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


def start_webhooks(container: Any) -> None:
    """In-process webhook delivery (no REDIS_URL) starts with the server: what a restart
    left owed goes out without waiting for the club's next event."""
    runner = getattr(container.ledger, "webhooks", None)
    if runner is not None:
        runner.start()


def recover_timers_in_background(container: Any) -> None:
    """Embedded default: schedule the turn timers the stored tables owe, off the start-up
    path (a restarted server still times out a seat). With RQ they wait in Redis, and
    `loo worker`'s reconciler schedules any that were lost."""
    if container.queue is not None:
        return
    from workers.reconcile import recover_timers

    def run() -> None:
        try:
            count = recover_timers(container.ledger)
        except Exception:  # the server serves all the same; the next move schedules anew
            log.exception("recovering turn timers failed")
            return
        if count:
            log.info("turn timers: %d table(s) with a seat on the clock scheduled", count)

    threading.Thread(target=run, name="loo-recover-timers", daemon=True).start()


def worker_class() -> str:
    """gthread, balanced across worker processes where this gunicorn's gthread allows it."""
    from gunicorn.workers.gthread import ThreadWorker

    if hasattr(ThreadWorker, "set_accept_enabled"):  # gunicorn >= 27
        return "ledger.serve.gunicorn_worker.BalancedThreadWorker"
    return "gthread"


class GunicornApp(BaseApplication):  # type: ignore[misc]
    """gunicorn through its Python API; each worker composes its own container after the fork."""

    def __init__(self, s: Settings, options: dict[str, Any],
                 request_threads: int | None = None) -> None:
        from ledger.serve.gunicorn_worker import ConnectionCounts

        self.settings, self.options = s, options
        # Of gunicorn's `threads`, those that run ordinary requests; the rest are for event
        # streams only (ledger/serve/gunicorn_worker.py). None: all of them run anything.
        self.request_threads = request_threads
        # Shared by the workers forked from here; room for as many again being replaced.
        self.connection_counts = ConnectionCounts(slots=2 * int(options.get("workers", 1)) + 2)
        super().__init__()

    def load_config(self) -> None:
        # JSON logs: the app writes the access line itself (with the request id and route).
        access = None if self.settings.log_format == "json" else "-"
        config = {"worker_class": worker_class(), "threads": DEFAULT_THREADS, "accesslog": access,
                  "logger_class": "ledger.serve.gunicorn_worker.AccessLogger",
                  "loglevel": self.settings.log_level.lower(), **self.options}
        if "control_socket_disable" in self.cfg.settings:  # gunicorn >= 27
            # Its default path is shared by every gunicorn of this user: two would clash.
            config["control_socket_disable"] = True
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from ledger.api.app import create_app

        container = bootstrap(self.settings, upgrade=False)
        recover_timers_in_background(container)
        app = create_app(container)
        start_webhooks(container)
        return app


# ---- worker ------------------------------------------------------------------------------
@main.command()
@click.option("--burst", is_flag=True, help="run the queued jobs, then exit")
@click.option("--reconcile-every", type=click.FloatRange(min=0), default=60.0, show_default=True,
              metavar="SECONDS", help="re-enqueue the jobs of tables waiting on a worker "
              "(at start, then this often; 0: never)")
def worker(burst: bool, reconcile_every: float) -> None:
    """Run an RQ worker on the project's queue (needs REDIS_URL)."""
    s = settings()
    if s.redis_url is None:
        raise ConfigError("REDIS_URL: not set; `loo worker` takes its jobs from Redis "
                          "(e.g. REDIS_URL=redis://127.0.0.1:6379/0); without it the API "
                          "runs jobs in-process and needs no worker")
    import redis

    from workers import runtime
    from workers.worker import LooWorker, Maintenance

    container = bootstrap(s)
    runtime.install(container.ledger)  # jobs in this process use this ledger
    queue = container.queue
    assert queue is not None

    def reconcile() -> None:
        reconcile_once(container.ledger)

    if reconcile_every > 0:
        reconcile()
    maintenance: Maintenance | None = None
    while True:
        rq_worker = LooWorker([queue], connection=queue.connection, serializer=queue.serializer)
        if maintenance is None:
            maintenance = Maintenance(rq_worker, queue, reconcile, reconcile_every, s.log_level)
            if hasattr(container.dispatcher, "on_unreachable"):  # a job's follow-up was lost
                container.dispatcher.on_unreachable = maintenance.redis_lost
            if burst:
                maintenance.tick()  # abandoned and due jobs first, then drain the queue
            else:
                maintenance.start()
        maintenance.worker = rq_worker
        try:
            rq_worker.work(burst=burst, logging_level=s.log_level)
        except redis.RedisError as err:  # its teardown could not reach Redis either
            log.error("rq worker: %s", err)
        if burst or rq_worker.stop_signalled or not _wait_for_redis(queue):
            maintenance.stop()
            return
        # rq ends its loop on an error it did not expect (Redis lost mid-job): go on.
        log.warning("rq worker loop ended; starting it again")
        maintenance.redis_lost()


def _wait_for_redis(queue: Any) -> bool:
    """Until Redis answers (True), or a stop signal (False)."""
    import redis
    from rq.exceptions import StopRequested

    delay = 0.1
    while True:
        try:
            queue.connection.ping()
            return True
        except redis.RedisError:
            pass
        except StopRequested:
            return False
        try:
            time.sleep(delay)
        except StopRequested:
            return False
        delay = min(delay * 2, 1.0)


def reconcile_once(ledger: Any) -> None:
    from workers.reconcile import reconcile
    from workers.webhooks import sweep

    try:
        sweep(ledger)  # every endpoint's delivery job, once (a queued one is not doubled)
    except Exception:
        log.exception("webhook sweep failed")

    try:
        done = reconcile(ledger)
    except Exception:  # the next round tries again; the worker keeps working
        log.exception("reconcile failed")
        return
    if done.waiting or done.failed:
        log.info("reconcile: %d table(s) waiting on a worker, %d job(s) enqueued (the others "
                 "were still queued, scheduled or running), %d failed", done.waiting,
                 done.enqueued, done.failed)


# ---- db ----------------------------------------------------------------------------------
@main.group()
def db() -> None:
    """The event store's schema."""


@db.command("upgrade")
@click.option("--service-role", default=None, metavar="ROLE",
              help="PostgreSQL: also create ROLE (if missing) for the service to connect as, "
                   "allowed to read and append only (its password: $LOO_SERVICE_PASSWORD)")
def db_upgrade(service_role: str | None) -> None:
    """Create or migrate the event store schema at DATABASE_URL (as the database owner).

    With --service-role, the service then connects as that role: it can read and append
    events but never rewrite them, nor drop or disable the triggers that keep them
    append-only. An applied migration edited since is refused.
    """
    s = settings()
    store = open_database(s)
    try:
        if service_role is not None:
            from ledger.store.postgres import PostgresStore

            if not isinstance(store, PostgresStore):
                raise ConfigError("--service-role: roles exist on PostgreSQL only "
                                  "(DATABASE_URL is not a postgresql:// URL)")
            try:
                store.grant_service_role(service_role,
                                         os.environ.get("LOO_SERVICE_PASSWORD") or None)
            except StoreError as err:
                raise ConfigError(f"--service-role: {err}") from None
            click.echo(f"service role {service_role}: SELECT and INSERT on the events; "
                       "connect the service as it")
    finally:
        store.close()
    click.echo(f"event store ready: {redact(s.database_url)}")


# ---- bench -------------------------------------------------------------------------------
@main.group(short_help="Benchmarks (see make bench).")
def bench() -> None:
    """Benchmarks, from a checkout (pip install -e '.[bench]' adds the reference programs)."""


def bench_module(name: str) -> Any:
    """The checkout's bench/NAME module: benchmarks stay out of the runtime wheel."""
    try:
        return importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as e:
        if e.name not in ("bench", f"bench.{name}"):
            raise
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if not (root / "bench" / f"{name}.py").is_file():
        raise ConfigError(
            "loo bench: the benchmarks live in the source checkout (bench/); "
            "run it from a checkout installed with pip install -e '.[bench]'"
        ) from None
    sys.path.insert(0, str(root))
    return importlib.import_module(f"bench.{name}")


@bench.command("engine")
@click.option("--seconds", type=click.FloatRange(min=0.1), default=3.0, show_default=True)
def bench_engine(seconds: float) -> None:
    """Rules engine: random-legal hands per second, and peak memory."""
    engine = bench_module("engine")

    engine.run(seconds=seconds, out=click.echo)


@bench.command("bots")
@click.option("--hands", type=click.IntRange(min=16), default=2000, show_default=True,
              help="hands per pair of policies (rounded up to whole duplicate samples)")
@click.option("--samples", type=click.IntRange(min=1), default=48, show_default=True,
              help="the expert's guesses a move in this bench")
@click.option("--budget-ms", type=click.FloatRange(min=1), default=None,
              help="the expert's time budget a move [default: none: exactly --samples "
                   "guesses, so the run is reproducible]")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="with --redis-url: also time bot replies through RQ against in-process "
              "on this PostgreSQL database [default: $DATABASE_URL]")
@click.option("--redis-url", envvar="REDIS_URL", default=None, help="[default: $REDIS_URL]")
def bench_bots(hands: int, samples: int, budget_ms: float | None, database_url: str | None,
               redis_url: str | None) -> None:
    """Bots: duplicate matches expert/heuristic/random, chips per hand with 95% CIs; with
    PostgreSQL and Redis, the bot reply time through RQ against in-process."""
    bots = bench_module("bots")

    bots.run(hands=hands, budget_ms=budget_ms, samples=samples, out=click.echo)
    s = Settings.from_env({"DATABASE_URL": database_url or "", "REDIS_URL": redis_url or ""})
    if s.redis_url is None or not s.database_url.startswith("postgres"):
        click.echo("bot replies through RQ: not measured (needs a postgresql:// DATABASE_URL "
                   "and REDIS_URL)")
        return
    bots.bot_replies(s.database_url, s.redis_url, out=click.echo)


@bench.command("store")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database for the PostgreSQL parts [default: $DATABASE_URL]")
def bench_store(database_url: str | None) -> None:
    """Event store: appends/s and replay against bare drivers and eventsourcing."""
    store = bench_module("store")

    store.run(database_url or "", out=click.echo)


@bench.command("workers")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="[default: $DATABASE_URL]")
@click.option("--redis-url", envvar="REDIS_URL", default=None, help="[default: $REDIS_URL]")
@click.option("--hands", type=click.IntRange(min=4), default=160, show_default=True)
def bench_workers(database_url: str | None, redis_url: str | None, hands: int) -> None:
    """All-bot hands/minute through RQ and one worker, against in-process jobs."""
    s = Settings.from_env({"DATABASE_URL": database_url or "", "REDIS_URL": redis_url or ""})
    if s.redis_url is None:
        raise ConfigError("REDIS_URL: not set; `loo bench workers` measures jobs through Redis")
    workers = bench_module("workers")

    workers.run(s.database_url, s.redis_url, hands=hands, out=click.echo)


@bench.command("api")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database [default: $DATABASE_URL]")
@click.option("--seconds", type=click.FloatRange(min=0.5), default=10.0, show_default=True)
@click.option("--clients", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--threads", type=click.IntRange(1, 64), default=DEFAULT_THREADS,
              show_default=True, help="threads per worker process, for both servers")
def bench_api(database_url: str | None, seconds: float, clients: int, threads: int) -> None:
    """`loo serve --workers 2` under load against a bare one-INSERT Flask endpoint."""
    s = Settings.from_env({"DATABASE_URL": database_url or ""})
    if not s.database_url.startswith("postgresql"):
        raise ConfigError("DATABASE_URL: `loo bench api` needs a postgresql:// database")
    api = bench_module("api")

    api.run(s.database_url, seconds=seconds, clients=clients, threads=threads, out=click.echo)


@bench.command("parts")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database for the pool, replay and worker parts "
                   "[default: $DATABASE_URL]")
@click.option("--only", multiple=True, metavar="PART",
              type=click.Choice(["json_encode", "json_decode", "replay_decode", "pool",
                                 "worker"]), help="measure only this part (repeatable)")
def bench_parts(database_url: str | None, only: tuple[str, ...]) -> None:
    """Each hand-made part (JSON encoder and decoder, LIFO pool, gunicorn worker) against
    the stock part it stands in for."""
    parts = bench_module("parts")

    parts.run(database_url or "", only=only, out=click.echo)


@bench.command("feed")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database (a fresh schema, dropped after); "
                   "unset: a fresh SQLite file")
@click.option("--seconds", type=click.FloatRange(min=1), default=10.0, show_default=True)
@click.option("--clients", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="SSE subscribers on the club feed")
@click.option("--tables", type=click.IntRange(1, 64), default=8, show_default=True)
def bench_feed(database_url: str | None, seconds: float, clients: int, tables: int) -> None:
    """Commit-to-delivery latency of the SSE club feed against polling every 100 ms."""
    feed = bench_module("feed")

    feed.run(database_url or "", seconds=seconds, clients=clients, tables=tables,
             out=click.echo)


@bench.command("export")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database (a fresh schema, dropped after); "
                   "unset: a fresh SQLite file")
@click.option("--hands", type=click.IntRange(min=2), default=300, show_default=True)
def bench_export(database_url: str | None, hands: int) -> None:
    """loo-hh hands exported per second against reading the same events bare."""
    export = bench_module("export")

    export.run(database_url or "", hands=hands, out=click.echo)


@bench.command("standings")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database (a fresh schema, dropped after); "
                   "unset: a fresh SQLite file")
@click.option("--tables", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--hands", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--members", type=click.IntRange(min=4), default=50, show_default=True)
@click.option("--clients", type=click.IntRange(min=1), default=8, show_default=True)
def bench_standings(database_url: str | None, tables: int, hands: int, members: int,
                    clients: int) -> None:
    """A club's standings read (p99 under concurrent clients) against a bare SELECT of the
    same rows, and the read model's rebuild from zero."""
    standings = bench_module("standings")

    standings.run(database_url or "", tables=tables, hands=hands, members=members,
                  clients=clients, out=click.echo)


@bench.command("audit")
@click.option("--database-url", envvar="DATABASE_URL", default=None,
              help="a postgresql:// database (a fresh schema, dropped after); "
                   "unset: a fresh SQLite file")
@click.option("--hands", type=click.IntRange(min=2), default=3000, show_default=True)
def bench_audit(database_url: str | None, hands: int) -> None:
    """GET .../audit and .../ledger of a long table against reading its events bare."""
    audit = bench_module("audit")

    audit.run(database_url or "", hands=hands, out=click.echo)
