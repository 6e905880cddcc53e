"""The per-team cap on open event streams (KERNELOPT_MAX_SSE_STREAMS_PER_TEAM).

An open stream holds a slot from the moment it is accepted until its response ends (the
client left, the job ended, the server stops). Past the cap a new stream is refused with
429 and Retry-After; a team's polls and other requests are not affected.

Where the slots are counted:

- With a broker (KERNELOPT_BROKER_URL), in Redis, over every API process: one sorted set per
  team, one member per open stream, scored by the time its lease ends. Taking a slot is one
  Lua script (drop expired leases, count, add if under the cap) on Redis' own clock. Each
  process renews the leases of its open streams every LEASE_S / 3 seconds, so the slots of a
  process that died without releasing them free themselves within LEASE_S seconds.
- Without one, in this process (the embedded server is one process). With several API
  processes and no broker the cap applies to each process separately.

If Redis cannot be reached (a connect or command that fails is tried three more times, 0.1-1 s apart),
the process counts its own streams (and says so in the log):
streams keep working, the cap is then per process until Redis is back.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

log = logging.getLogger("kernelopt.api")

LEASE_S = 60.0
KEY = "kernelopt:sse-streams:team:{team_id}"

# Idempotent: a call retried after a timeout whose first run did take the slot finds its token and keeps it.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return n
end
if n >= tonumber(ARGV[1]) then
  return -n
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 2))
return n + 1
"""

_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) * 2))
return #ARGV - 1
"""


@dataclass(frozen=True)
class Slot:
    team_id: int
    token: str
    in_redis: bool


class StreamsFull(Exception):
    def __init__(self, open_streams: int, limit: int, shared: bool):
        super().__init__(f"{open_streams} open event streams (limit {limit})")
        self.open_streams, self.limit, self.shared = open_streams, limit, shared


class StreamSlots:
    """Open event streams per team, at most `limit` each (see the module's docstring)."""

    def __init__(self, limit: int, broker_url: str | None = None, *, lease_s: float = LEASE_S):
        self.limit = limit
        self.broker_url = broker_url
        self.lease_s = lease_s
        self._local: dict[int, int] = {}
        self._lock = threading.Lock()
        self._clients: dict[asyncio.AbstractEventLoop, tuple] = {}  # loop -> (redis.asyncio client, scripts)
        self._held: dict[asyncio.AbstractEventLoop, dict[str, int]] = {}  # loop -> {token: team}
        self._renewers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
        self._releasing: dict[asyncio.AbstractEventLoop, list[tuple[int, str]]] = {}  # queued for _flush
        self._flushers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
        self._prefix = f"{socket.gethostname()}:{os.getpid()}:"
        self._warned_at = 0.0

    @property
    def shared(self) -> bool:
        return self.broker_url is not None

    # -- local ---------------------------------------------------------------------------------
    def _take_local(self, team_id: int) -> Slot:
        with self._lock:
            n = self._local.get(team_id, 0)
            if n >= self.limit:
                raise StreamsFull(n, self.limit, False)
            self._local[team_id] = n + 1
        return Slot(team_id, "", False)

    def _give_local(self, team_id: int) -> None:
        with self._lock:
            n = self._local.get(team_id, 0) - 1
            if n > 0:
                self._local[team_id] = n
            else:
                self._local.pop(team_id, None)

    def local_count(self, team_id: int) -> int:
        return self._local.get(team_id, 0)

    # -- Redis ---------------------------------------------------------------------------------
    def _client(self):
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            import redis.asyncio
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialWithJitterBackoff

            # A few connections, waited for (not refused) when a thousand streams start or end at once.
            # A connect or a command that times out on a loaded host is tried again (three more times,
            # 0.1-1 s apart) before this process falls back to counting its own streams.
            pool = redis.asyncio.BlockingConnectionPool.from_url(
                self.broker_url, max_connections=8, timeout=5, socket_timeout=2, socket_connect_timeout=2,
                retry=Retry(ExponentialWithJitterBackoff(cap=1.0, base=0.1), 3))
            redis_client = redis.asyncio.Redis(connection_pool=pool)
            client = self._clients[loop] = (redis_client, redis_client.register_script(_ACQUIRE),
                                            redis_client.register_script(_RENEW))
        return client

    def _redis_down(self, exc: Exception) -> None:
        if time.monotonic() - self._warned_at > 60:
            self._warned_at = time.monotonic()
            log.warning("event-stream cap: Redis unavailable (%s: %s); counting this process's streams only",
                        type(exc).__name__, exc)

    async def acquire(self, team_id: int) -> Slot:
        """A slot for one more stream of the team, or StreamsFull."""
        if not self.shared:
            return self._take_local(team_id)
        token = self._prefix + uuid.uuid4().hex[:16]
        try:
            _, take, _ = self._client()
            n = await take(keys=[KEY.format(team_id=team_id)],
                                               args=[self.limit, self.lease_s, token])
        except Exception as exc:  # redis.RedisError, OSError: fall back to this process's count
            self._redis_down(exc)
            return self._take_local(team_id)
        if int(n) < 0:
            raise StreamsFull(-int(n), self.limit, True)
        loop = asyncio.get_running_loop()
        self._held.setdefault(loop, {})[token] = team_id
        task = self._renewers.get(loop)
        if task is None or task.done():
            self._renewers[loop] = loop.create_task(self._renew(loop))
        return Slot(team_id, token, True)

    async def release(self, slot: Slot) -> None:
        """Give a slot back. Nothing here waits for Redis (a stream ending by cancellation must
        not lose its release half-way): the token is queued and one task per loop removes the
        queued tokens in batches (one ZREM per team)."""
        if not slot.in_redis:
            self._give_local(slot.team_id)
            return
        loop = asyncio.get_running_loop()
        self._held.get(loop, {}).pop(slot.token, None)
        self._releasing.setdefault(loop, []).append((slot.team_id, slot.token))
        task = self._flushers.get(loop)
        if task is None or task.done():
            self._flushers[loop] = loop.create_task(self._flush(loop))

    async def _flush(self, loop) -> None:
        await asyncio.sleep(0)  # let the other streams ending in this tick queue theirs
        while self._releasing.get(loop):
            await self._zrem(self._releasing.pop(loop))

    async def _zrem(self, slots: list[tuple[int, str]]) -> None:
        by_team: dict[int, list[str]] = {}
        for team_id, token in slots:
            by_team.setdefault(team_id, []).append(token)
        try:
            async with self._client()[0].pipeline(transaction=False) as pipe:
                for team_id, tokens in by_team.items():
                    pipe.zrem(KEY.format(team_id=team_id), *tokens)
                await pipe.execute()
        except Exception as exc:  # their leases run out on their own
            self._redis_down(exc)

    async def _renew(self, loop) -> None:
        """Renew the leases of this loop's open streams until it has none."""
        while self._held.get(loop):
            await asyncio.sleep(self.lease_s / 3)
            by_team: dict[int, list[str]] = {}
            for token, team_id in list(self._held.get(loop, {}).items()):
                by_team.setdefault(team_id, []).append(token)
            try:
                _, _, renew = self._client()
                for team_id, tokens in by_team.items():
                    await renew(keys=[KEY.format(team_id=team_id)], args=[self.lease_s, *tokens])
            except Exception as exc:
                self._redis_down(exc)

    async def close(self) -> None:
        """At shutdown: give back every slot this loop still holds, stop its tasks."""
        loop = asyncio.get_running_loop()
        for tasks in (self._renewers, self._flushers):
            task = tasks.pop(loop, None)
            if task is not None:
                task.cancel()
        left = self._releasing.pop(loop, []) + [(team, token) for token, team in self._held.pop(loop, {}).items()]
        if left and loop in self._clients:
            await self._zrem(left)
        client = self._clients.pop(loop, None)
        if client is not None:
            await client[0].aclose(close_connection_pool=True)
