"""Job-change notifications: one signal per committed change of a job's events, for the API's
event streams (api/sse.py), instead of every open stream polling the database.

Publishing. Every event and every state transition goes through `service.jobs._event`, which
calls `mark_changed(session, job_id)`. At commit:

- PostgreSQL: `SELECT pg_notify('kernelopt_job_events', <job id>)` runs inside the same
  transaction, just before it commits. PostgreSQL delivers a notification only when (and if)
  its transaction commits, to every connection LISTENing on the channel in that database: a
  listener never hears of an event it cannot read yet, a rolled-back event is never announced,
  and any process that writes (an API replica, a Celery worker, a reaper) publishes with
  nothing but the database URL it already has. Notifications of one transaction with the same
  payload are folded into one by the server.
- SQLite (the embedded mode: one process): after the commit, the in-process feed of that
  database calls its subscribers directly.

Listening. `feed_for(url)` is this process's one `ChangeFeed` for a database. On PostgreSQL it
owns one thread with one dedicated connection that LISTENs (not taken from any pool, so it
costs no request a connection or a thread); it starts with the first subscriber, reconnects
with back-off when the connection drops, and stops a while after the last subscriber left.
Subscribers are callbacks `callback(job_ids)`; `job_ids=None` means "anything may have changed"
(sent when the listener has (re)connected: notifications sent while it was away are lost, so a
subscriber re-reads everything it follows).
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable

from sqlalchemy import event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

log = logging.getLogger("kernelopt.notify")

CHANNEL = "kernelopt_job_events"
_PENDING = "kernelopt_changed_jobs"  # session.info key: (dialect name, url key, {job ids})

Callback = Callable[[frozenset[str] | None], None]


def _url_key(url) -> str:
    return make_url(str(url) if not isinstance(url, str) else url).render_as_string(hide_password=False)


# ---------------------------------------------------------------- publishing

def mark_changed(session: Session, job_id: str) -> None:
    """Announce, when this session's transaction commits, that `job_id` has new events."""
    pending: tuple[str, str, set[str]] | None = session.info.get(_PENDING)
    if pending is None:
        bind = session.get_bind()
        pending = session.info[_PENDING] = (bind.dialect.name, _url_key(bind.engine.url), set())
    pending[2].add(job_id)


@event.listens_for(Session, "before_commit")
def _notify_in_transaction(session: Session) -> None:
    pending = session.info.get(_PENDING)
    if pending is None or pending[0] != "postgresql" or not pending[2]:
        return
    for job_id in sorted(pending[2]):
        session.execute(select(func.pg_notify(CHANNEL, job_id)))
    pending[2].clear()  # announced with this transaction: delivered on commit, dropped on rollback


@event.listens_for(Session, "after_commit")
def _notify_after_commit(session: Session) -> None:
    pending = session.info.pop(_PENDING, None)
    if pending is not None and pending[0] != "postgresql" and pending[2]:
        feed = _FEEDS.get(pending[1])
        if feed is not None:
            feed.publish(pending[2])


@event.listens_for(Session, "after_rollback")
def _forget_after_rollback(session: Session) -> None:
    session.info.pop(_PENDING, None)


# ---------------------------------------------------------------- listening

class ChangeFeed:
    """This process's subscription to one database's job-change notifications."""

    LINGER_S = 30.0  # the PostgreSQL listener outlives its last subscriber by this long
    PING_S = 30.0  # a LISTEN connection that has been quiet this long is checked with SELECT 1

    def __init__(self, url: str):
        self.url = url
        self.postgres = make_url(url).get_backend_name() == "postgresql"
        self._subs: dict[int, Callback] = {}
        self._next = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._idle_since = time.monotonic()
        # set while notifications are being received (always, in-process)
        self.connected = threading.Event()
        if not self.postgres:
            self.connected.set()
        self.notifications = 0  # received (PostgreSQL) or published (in-process), for metrics and tests
        self.connects = 0

    # -- subscribers --------------------------------------------------------------------------
    def subscribe(self, callback: Callback) -> Callable[[], None]:
        with self._lock:
            token = self._next
            self._next += 1
            self._subs[token] = callback
            if self.postgres and self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._listen, name="kernelopt-listen", daemon=True)
                self._thread.start()

        def unsubscribe() -> None:
            with self._lock:
                if self._subs.pop(token, None) is not None and not self._subs:
                    self._idle_since = time.monotonic()

        return unsubscribe

    def publish(self, job_ids: Iterable[str] | None) -> None:
        """Tell every subscriber (the in-process path; the listener thread calls it too)."""
        ids = frozenset(job_ids) if job_ids is not None else None
        if ids is not None:
            self.notifications += len(ids)
        with self._lock:
            subs = list(self._subs.values())
        for callback in subs:
            try:
                callback(ids)
            except Exception:  # one broken subscriber must not starve the others
                log.exception("job-change subscriber failed")

    def close(self) -> None:
        self._stop.set()

    # -- the PostgreSQL listener thread -------------------------------------------------------
    def _idle_too_long(self) -> bool:
        """True (and the thread is forgotten) when nobody has listened for LINGER_S."""
        with self._lock:
            if self._stop.is_set() or (not self._subs and time.monotonic() - self._idle_since > self.LINGER_S):
                self._thread = None
                return True
            return False

    def _connect(self):
        import psycopg

        u = make_url(self.url).set(drivername="postgresql")
        return psycopg.connect(u.render_as_string(hide_password=False), autocommit=True, connect_timeout=10)

    def _listen(self) -> None:
        backoff = 0.5
        while not self._idle_too_long():
            conn = None
            try:
                conn = self._connect()
                conn.execute(f"LISTEN {CHANNEL}")
                self.connects += 1
                self.connected.set()
                backoff = 0.5
                self.publish(None)  # what was committed while nobody listened: re-read it all
                quiet_since = time.monotonic()
                while not self._idle_too_long():
                    # each notification as it arrives (the generator ends after a second of silence,
                    # so that idleness and the stop flag are checked)
                    for n in conn.notifies(timeout=1.0):
                        self.publish((n.payload,))
                        quiet_since = time.monotonic()
                        if self._stop.is_set():
                            break
                    if time.monotonic() - quiet_since > self.PING_S:
                        conn.execute("SELECT 1")  # a silently dead connection raises here
                        quiet_since = time.monotonic()
            except Exception as exc:
                self.connected.clear()
                with self._lock:
                    if self._stop.is_set() or not self._subs:  # nobody to reconnect for
                        self._thread = None
                        break
                log.warning("job-change listener: %s: %s; reconnecting in %.1f s", type(exc).__name__, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
            finally:
                self.connected.clear()
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()


_FEEDS: dict[str, ChangeFeed] = {}
_FEEDS_LOCK = threading.Lock()


def feed_for(url: str) -> ChangeFeed:
    """The process's one ChangeFeed for the database at `url`."""
    key = _url_key(url)
    with _FEEDS_LOCK:
        feed = _FEEDS.get(key)
        if feed is None:
            feed = _FEEDS[key] = ChangeFeed(key)
        return feed
