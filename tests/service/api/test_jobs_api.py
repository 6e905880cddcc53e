"""The REST API on both databases (PostgreSQL and the embedded SQLite, via the parametrized
`settings` fixture): auth, scoping, submission rules, listing, cancel, artifacts, stats, health."""
from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

import pytest

from tests.service.api.conftest import make_api

# ---------------------------------------------------------------- auth and scoping

def test_no_key_or_bad_key_is_401_with_www_authenticate(api):
    for headers in ({}, {"Authorization": "Bearer ko_not-a-real-key"}, {"Authorization": "Basic abc"},
                    {"Authorization": "Bearer "}):
        for method, path in (("GET", "/v1/jobs"), ("GET", "/v1/jobs/abc"), ("POST", "/v1/jobs"),
                             ("GET", "/v1/stats"), ("POST", "/v1/jobs/abc/cancel")):
            r = api.client.request(method, path, headers=headers)
            assert r.status_code == 401, (method, path, headers, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
            assert isinstance(r.json()["detail"], str) and r.json()["detail"]
    assert api.client.get("/v1/jobs", headers=api.headers()).status_code == 200


def test_another_teams_job_is_404(api, worker):
    job = api.submit().json()
    worker.run(job["id"], artifacts={"report.json": b"{}"})
    _, other_key = api.new_team()
    h = api.headers(other_key)
    for method, path in (("GET", f"/v1/jobs/{job['id']}"), ("POST", f"/v1/jobs/{job['id']}/cancel"),
                         ("GET", f"/v1/jobs/{job['id']}/events"), ("GET", f"/v1/jobs/{job['id']}/artifacts"),
                         ("GET", f"/v1/jobs/{job['id']}/artifacts/report.json")):
        r = api.client.request(method, path, headers=h)
        assert r.status_code == 404, (path, r.text)
        assert "detail" in r.json()
    assert api.client.get("/v1/jobs", headers=h).json()["items"] == []
    assert api.client.get("/v1/stats", headers=h).json()["total"] == 0
    # the owner still sees it
    assert api.client.get(f"/v1/jobs/{job['id']}", headers=api.headers()).status_code == 200


def test_revoked_key_is_refused(api):
    from kernelopt.service.auth import revoke_api_key

    assert api.client.get("/v1/jobs", headers=api.headers()).status_code == 200
    with api.sessionmaker() as s:
        assert revoke_api_key(s, api.key)
    assert api.client.get("/v1/jobs", headers=api.headers()).status_code == 401


def test_auth_cache_serves_polls_without_the_key_lookup(settings, team_key, monkeypatch):
    a = make_api(settings, team_key, auth_cache_ttl_s=30.0)
    with a.client:
        assert a.client.get("/v1/jobs", headers=a.headers()).status_code == 200
        from kernelopt.service import auth

        def boom(*_):
            raise AssertionError("key looked up again")

        monkeypatch.setattr(auth, "authenticate", boom)
        assert a.client.get("/v1/jobs", headers=a.headers()).status_code == 200
        monkeypatch.undo()
        assert a.client.get("/v1/jobs", headers=a.headers("ko_wrong-key-xxxxxxxx")).status_code == 401


# ---------------------------------------------------------------- submission

def test_submit_answers_202_with_location_and_enqueues(api):
    r = api.submit(b"import torch\n", options=json.dumps({"dtype": "bf16", "time_budget_s": 120}), tag="ci")
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["status"] == "queued" and job["tag"] == "ci" and job["filename"] == "model.py"
    assert job["options"]["dtype"] == "bf16" and job["options"]["time_budget_s"] == 120
    assert job["links"]["events"] == f"/v1/jobs/{job['id']}/events"
    assert api.dispatcher.enqueued == [job["id"]]
    got = api.client.get(r.headers["location"], headers=api.headers())
    assert got.status_code == 200 and got.json()["id"] == job["id"]
    # the input is stored content-addressed
    from kernelopt.storage.blobs import BlobStore
    with api.sessionmaker() as s:
        from kernelopt.storage.models import Job
        row = s.get(Job, job["id"])
        assert BlobStore(api.settings.blobs_dir).read_bytes(row.input_blob) == b"import torch\n"


def test_submit_with_weights(api):
    r = api.submit(weights=b"\x00" * 1000)
    assert r.status_code == 202 and r.json()["has_weights"] is True


def test_idempotency_same_key_returns_the_same_job(api):
    before = api.count_jobs(api.team.id)
    first = api.submit(b"x = 1\n", options='{"dtype": "fp16"}', idempotency_key="retry-me")
    second = api.submit(b"x = 1\n", options='{"dtype": "fp16"}', idempotency_key="retry-me")
    assert first.status_code == 202
    assert second.status_code in (200, 202)
    assert second.json()["id"] == first.json()["id"]
    assert second.headers["location"] == first.headers["location"]
    assert api.count_jobs(api.team.id) == before + 1
    # another team may use the same key for its own job
    _, other = api.new_team()
    third = api.submit(b"x = 1\n", options='{"dtype": "fp16"}', idempotency_key="retry-me", key=other)
    assert third.status_code == 202 and third.json()["id"] != first.json()["id"]


@pytest.mark.parametrize("change", ["file", "options", "weights", "tag"])
def test_idempotency_same_key_different_body_is_409(api, change):
    api.submit(b"x = 1\n", options='{"dtype": "fp16"}', idempotency_key="k-" + change)
    kwargs = {"content": b"x = 1\n", "options": '{"dtype": "fp16"}', "idempotency_key": "k-" + change}
    if change == "file":
        kwargs["content"] = b"x = 2\n"
    elif change == "options":
        kwargs["options"] = '{"dtype": "bf16"}'
    elif change == "weights":
        kwargs["weights"] = b"w"
    else:
        kwargs["tag"] = "nightly"
    r = api.submit(**kwargs)
    assert r.status_code == 409, r.text
    assert "Idempotency-Key" in r.json()["detail"]
    assert api.count_jobs(api.team.id) == 1


@pytest.mark.parametrize("options", [
    "{not json", "[1, 2]", '"fp16"', '{"dtype": "int8"}', '{"precision": "loose"}', '{"bogus_option": 1}',
    '{"gamma": 0.5}', '{"gamma": "fast"}', '{"time_budget_s": -1}', '{"time_budget_s": "10"}',
    '{"seeds": "abc"}', '{"seeds": [1, "2"]}', '{"iterations": 2.5}', '{"generators": "launch_config"}',
    '{"generators": ["launch_config", "no_such_generator"]}', '{"generators": []}',
])
def test_bad_options_are_422_and_store_nothing(api, options):
    blobs, jobs = api.count_blobs(), api.count_jobs()
    r = api.submit(options=options)
    assert r.status_code == 422, r.text
    assert isinstance(r.json()["detail"], str) and r.json()["detail"]
    assert (api.count_blobs(), api.count_jobs()) == (blobs, jobs)
    assert api.dispatcher.enqueued == []


def test_bad_forms_are_4xx_not_5xx(api):
    h = api.headers()
    assert api.client.post("/v1/jobs", headers=h, data={"options": "{}"}).status_code == 422  # no file
    assert api.client.post("/v1/jobs", headers=h, json={"file": "x"}).status_code == 415
    assert api.client.post("/v1/jobs", headers=h, files={"file": ("m.py", b"")}).status_code == 422  # empty
    assert api.client.post("/v1/jobs", headers=h, files={"file": ("", b"x")}).status_code == 422
    r = api.client.post("/v1/jobs", headers={**h, "Content-Type": "multipart/form-data"}, content=b"garbage")
    assert r.status_code == 422
    r = api.client.post("/v1/jobs", headers={**h, "Content-Type": "multipart/form-data; boundary=zz"},
                        content=b"--zz\r\ngarbage")
    assert 400 <= r.status_code < 500
    # text PostgreSQL cannot store (NUL) is refused up front
    assert api.submit(tag="a\x00b").status_code == 422
    assert api.client.get("/v1/jobs", params={"tag": "a\x00b"}, headers=h).status_code == 422
    assert api.client.get("/v1/stats", params={"tag": "\x00"}, headers=h).status_code == 422
    assert api.client.get("/v1/jobs/ab%00cd", headers=h).status_code in (404, 422)
    assert api.count_jobs(api.team.id) == 0


def test_filename_is_reduced_to_a_base_name(api):
    r = api.submit(filename="../../etc/evil.py")
    assert r.status_code == 202 and r.json()["filename"] == "evil.py"


def test_upload_over_limit_is_413_and_stores_nothing(settings, team_key):
    limit = 64 * 1024
    a = make_api(settings.model_copy(update={"max_upload_bytes": limit}), team_key)
    with a.client:
        blobs, jobs = a.count_blobs(), a.count_jobs()
        big = b"#" * (limit + 1)
        r = a.submit(big)
        assert r.status_code == 413, r.text
        assert "limit" in r.json()["detail"]
        # file + weights together count
        r = a.submit(b"#" * (limit // 2 + 10), weights=b"w" * (limit // 2 + 10))
        assert r.status_code == 413
        # a body far over the limit, streamed without Content-Length (chunked): refused while it streams
        status, chunks_read = asgi_post_chunked(a, chunks=200, chunk_size=65536)
        assert status == 413
        assert chunks_read < 10, f"the server read {chunks_read} of 200 chunks before refusing"
        # a lying Content-Length does not get a large body through either
        assert (a.count_blobs(), a.count_jobs()) == (blobs, jobs)
        assert a.dispatcher.enqueued == []
        # just under the limit is fine
        assert a.submit(b"#" * (limit - 10)).status_code == 202


def asgi_post_chunked(a, chunks: int, chunk_size: int, content_length: int | None = None) -> tuple[int, int]:
    """POST a multipart body chunk by chunk straight into the ASGI app; (status, chunks it pulled)."""
    import anyio

    boundary = "b0undary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.py\"\r\n"
            f"Content-Type: text/x-python\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    pulled = 0
    sent: list = []

    async def receive():
        nonlocal pulled
        pulled += 1
        if pulled == 1:
            return {"type": "http.request", "body": head, "more_body": True}
        if pulled <= chunks + 1:
            return {"type": "http.request", "body": b"#" * chunk_size, "more_body": True}
        return {"type": "http.request", "body": tail, "more_body": False}

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"test"), (b"authorization", f"Bearer {a.key}".encode()),
               (b"content-type", f"multipart/form-data; boundary={boundary}".encode())]
    if content_length is not None:
        headers.append((b"content-length", str(content_length).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/jobs", "raw_path": b"/v1/jobs", "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 12345), "server": ("test", 80)}
    anyio.run(a.app, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], max(0, pulled - 1)


def test_upload_limit_does_not_trust_content_length(settings, team_key):
    limit = 64 * 1024
    a = make_api(settings.model_copy(update={"max_upload_bytes": limit}), team_key)
    with a.client:
        jobs, blobs = a.count_jobs(a.team.id), a.count_blobs()
        # claims 100 bytes, sends 12 MiB
        status, chunks_read = asgi_post_chunked(a, chunks=200, chunk_size=65536, content_length=100)
        assert status == 413 and chunks_read < 10
        assert (a.count_jobs(a.team.id), a.count_blobs()) == (jobs, blobs)


def test_queued_jobs_per_team_limit_is_429_with_retry_after(settings, team_key):
    a = make_api(settings.model_copy(update={"max_queued_jobs_per_team": 2}), team_key)
    with a.client:
        assert a.submit(b"a").status_code == 202
        assert a.submit(b"b").status_code == 202
        r = a.submit(b"c")
        assert r.status_code == 429, r.text
        assert int(r.headers["retry-after"]) >= 1
        assert "queued" in r.json()["detail"]
        assert a.count_jobs(a.team.id) == 2
        # cancelling one frees a place
        first = a.client.get("/v1/jobs", headers=a.headers()).json()["items"][0]["id"]
        assert a.client.post(f"/v1/jobs/{first}/cancel", headers=a.headers()).status_code == 200
        assert a.submit(b"c").status_code == 202


def test_enqueue_failure_is_503_and_a_replay_enqueues_again(settings, team_key):
    a = make_api(settings, team_key)

    class Flaky:
        calls = 0

        def enqueue(self, job_id):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise ConnectionError("broker down")

    a.app.state.dispatcher = Flaky()
    with a.client:
        r = a.submit(idempotency_key="once")
        assert r.status_code == 503 and "Idempotency-Key" in r.json()["detail"]
        r = a.submit(idempotency_key="once")
        assert r.status_code == 200 and Flaky.calls == 2
        assert a.count_jobs(a.team.id) == 1


# ---------------------------------------------------------------- get, list, cancel

def test_get_job_reports_outcome_timings_and_links(api, worker):
    job = api.submit().json()
    worker.run(job["id"], outcome="optimized", speedup=1.25, cause="speedup 1.25x >= gamma")
    got = api.client.get(f"/v1/jobs/{job['id']}", headers=api.headers()).json()
    assert got["status"] == "succeeded" and got["outcome"] == "optimized"
    assert got["speedup"] == pytest.approx(1.25) and got["cause"].startswith("speedup")
    assert got["timings"] == {"load": 0.1, "search": 1.5}
    assert got["stage"] == "search" and got["progress"] == 1.0
    assert got["started_at"] and got["finished_at"] and got["attempts"] == 1
    assert set(got["links"]) == {"self", "events", "artifacts", "cancel"}
    assert api.client.get("/v1/jobs/doesnotexist", headers=api.headers()).status_code == 404


def test_failed_job_reports_its_error(api, worker):
    job = api.submit().json()
    worker.claim(job["id"])
    worker.fail(job["id"], "ImportError: No module named 'nope'")
    got = api.client.get(f"/v1/jobs/{job['id']}", headers=api.headers()).json()
    assert got["status"] == "failed" and got["outcome"] == "failed"
    assert "No module named" in got["error"]
    assert got["cause"] == "failed: ImportError: No module named 'nope'"  # every ended job states a cause


def test_list_filters_and_cursor_pagination(api, worker):
    ids = [api.submit(f"x = {i}\n".encode(), tag="even" if i % 2 == 0 else "odd").json()["id"] for i in range(7)]
    worker.run(ids[0], outcome="optimized", speedup=1.2)
    worker.run(ids[1], outcome="fallback")
    assert api.client.post(f"/v1/jobs/{ids[2]}/cancel", headers=api.headers()).status_code == 200
    h = api.headers()

    def listing(**params):
        r = api.client.get("/v1/jobs", params=params, headers=h)
        assert r.status_code == 200, r.text
        return r.json()

    everything = listing(limit=200)
    assert [j["id"] for j in everything["items"]] == ids[::-1]  # newest first
    assert everything["next_cursor"] is None
    assert {j["id"] for j in listing(status="succeeded")["items"]} == {ids[0], ids[1]}
    assert {j["id"] for j in listing(status="cancelled")["items"]} == {ids[2]}
    assert {j["id"] for j in listing(status="queued")["items"]} == set(ids[3:])
    assert [j["id"] for j in listing(outcome="optimized")["items"]] == [ids[0]]
    assert {j["id"] for j in listing(tag="even")["items"]} == {ids[i] for i in (0, 2, 4, 6)}
    assert {j["id"] for j in listing(tag="odd", status="succeeded")["items"]} == {ids[1]}
    # time range
    created = {j["id"]: j["created_at"] for j in everything["items"]}
    pivot = created[ids[3]]
    after = {j["id"] for j in listing(created_after=pivot)["items"]}
    before = {j["id"] for j in listing(created_before=pivot)["items"]}
    assert after == set(ids[3:]) and before == set(ids[:3])
    future = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    assert listing(created_after=future)["items"] == []
    # pages of 3 walk every job exactly once, in order
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = listing(**params)
        seen += [j["id"] for j in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1] and pages == 3
    # a new job arriving between pages does not shift the next page
    first = listing(limit=3)
    api.submit(b"late = 1\n")
    second = listing(limit=3, cursor=first["next_cursor"])
    assert [j["id"] for j in second["items"]] == ids[::-1][3:6]
    # bad parameters are 422, not 500
    for params in ({"cursor": "not-a-cursor"}, {"status": "sleeping"}, {"limit": 0}, {"limit": 10_000},
                   {"created_after": "yesterday"}, {"outcome": "great"}):
        assert api.client.get("/v1/jobs", params=params, headers=h).status_code == 422, params


def test_cancel_queued_running_and_finished_jobs(api, worker):
    h = api.headers()
    queued = api.submit(b"q").json()
    r = api.client.post(f"/v1/jobs/{queued['id']}/cancel", headers=h)
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["finished_at"]
    assert api.client.post(f"/v1/jobs/{queued['id']}/cancel", headers=h).status_code == 200  # idempotent

    running = api.submit(b"r").json()
    worker.claim(running["id"])
    r = api.client.post(f"/v1/jobs/{running['id']}/cancel", headers=h)
    assert r.status_code == 202 and r.json()["status"] == "running" and r.json()["cancel_requested"] is True

    done = api.submit(b"d").json()
    worker.run(done["id"])
    r = api.client.post(f"/v1/jobs/{done['id']}/cancel", headers=h)
    assert r.status_code == 409 and "finished" in r.json()["detail"]
    assert api.client.post("/v1/jobs/nope/cancel", headers=h).status_code == 404


# ---------------------------------------------------------------- artifacts

def test_artifacts_list_and_download(api, worker):
    report = json.dumps({"outcome": "fallback"}).encode()
    module = b"import torch\nclass ModelNew(torch.nn.Module):\n    pass\n" * 1000
    job = api.submit().json()
    worker.run(job["id"], artifacts={"report.json": report, "optimized_module.py": module,
                                     "diffs/kernel_0.diff": b"--- a\n+++ b\n", "r\u00e9sum\u00e9.md": b"# ok\n"})
    h = api.headers()
    listing = api.client.get(f"/v1/jobs/{job['id']}/artifacts", headers=h)
    assert listing.status_code == 200
    items = {a["name"]: a for a in listing.json()["items"]}
    assert set(items) == {"report.json", "optimized_module.py", "diffs/kernel_0.diff", "r\u00e9sum\u00e9.md"}
    assert items["optimized_module.py"]["size"] == len(module)
    import hashlib
    assert items["report.json"]["sha256"] == hashlib.sha256(report).hexdigest()
    for name, content in (("report.json", report), ("optimized_module.py", module),
                          ("diffs/kernel_0.diff", b"--- a\n+++ b\n"), ("r\u00e9sum\u00e9.md", b"# ok\n")):
        r = api.client.get(items[name]["url"], headers=h)
        assert r.status_code == 200, (name, r.text)
        assert r.content == content
        assert r.headers["content-disposition"].startswith("attachment;")
        assert int(r.headers["content-length"]) == len(content)
    assert 'filename="report.json"' in api.client.get(items["report.json"]["url"], headers=h).headers[
        "content-disposition"]
    assert api.client.get(f"/v1/jobs/{job['id']}/artifacts/missing.txt", headers=h).status_code == 404
    # a queued job has no artifacts yet
    other = api.submit(b"other").json()
    assert api.client.get(f"/v1/jobs/{other['id']}/artifacts", headers=h).json()["items"] == []


def _tamper(path, append: bytes | None = None) -> None:
    import os

    os.chmod(path, 0o644)
    if append is not None:
        with open(path, "ab") as f:
            f.write(append)
    else:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))


def test_a_blob_altered_on_disk_is_never_served(api, worker, caplog):
    """Issue 7: a blob appended to on disk was downloaded as if intact. Now: 500, logged, no bytes."""
    import logging

    report, module = b"# report\n" * 100, b"class ModelNew: pass\n" * 100
    job = api.submit().json()
    worker.run(job["id"], artifacts={"report.md": report, "optimized_module.py": module, "report.json": b"{}"})
    h = api.headers()
    items = {a["name"]: a for a in api.client.get(f"/v1/jobs/{job['id']}/artifacts", headers=h).json()["items"]}
    blobs = api.app.state.blobs
    _tamper(blobs.path(items["report.md"]["sha256"]), append=b"\nrm -rf / # appended by another team\n")
    _tamper(blobs.path(items["optimized_module.py"]["sha256"]))  # same size, one bit changed

    with caplog.at_level(logging.ERROR, logger="kernelopt.api"):
        for name, problem in (("report.md", "recorded"), ("optimized_module.py", "hashes to")):
            r = api.client.get(items[name]["url"], headers=h)
            assert r.status_code == 500, (name, r.status_code, r.content[:200])
            assert r.headers["content-type"].startswith("application/json")
            detail = r.json()["detail"]
            assert "integrity check" in detail and problem in detail and "not served" in detail, detail
            assert report not in r.content and b"ModelNew" not in r.content
    logged = [rec.getMessage() for rec in caplog.records if rec.name == "kernelopt.api"]
    assert any("report.md" in m and "corrupt" in m and job["id"] in m for m in logged), logged
    assert any("optimized_module.py" in m and "corrupt" in m for m in logged), logged
    # The untouched artifact of the same job is still served.
    r = api.client.get(items["report.json"]["url"], headers=h)
    assert r.status_code == 200 and r.content == b"{}"


def test_a_blob_changed_while_it_streams_is_cut_short(api, worker, live, caplog):
    """Verified, then rewritten in place while it streams (over real HTTP): the response ends short of its
    Content-Length, because the last chunk is held back until the second hash matched."""
    import logging
    import time

    import httpx

    big = bytes(range(256)) * (128 * 1024)  # 32 MiB: more than the socket buffers hold
    job = api.submit().json()
    worker.run(job["id"], artifacts={"optimized_module.py": big})
    h = api.headers()
    (item,) = api.client.get(f"/v1/jobs/{job['id']}/artifacts", headers=h).json()["items"]
    path = api.app.state.blobs.path(item["sha256"])
    received = bytearray()
    with caplog.at_level(logging.ERROR, logger="kernelopt.api"), pytest.raises(httpx.HTTPError):
        with httpx.stream("GET", live.url + item["url"], headers=h, timeout=30) as r:
            assert r.status_code == 200 and int(r.headers["content-length"]) == len(big)
            for chunk in r.iter_raw(64 * 1024):
                if not received:
                    time.sleep(0.3)  # the server has filled the socket buffers and waits
                    with open(path, "r+b") as f:  # the last byte, not yet read by the server
                        f.seek(-1, 2)
                        f.write(b"\xff" if big[-1:] != b"\xff" else b"\x00")
                received += chunk
    assert 0 < len(received) < len(big)
    assert any("changed while it was sent" in rec.getMessage() for rec in caplog.records)


# ---------------------------------------------------------------- stats

NO_GPU_RESULT = {"speedup": None, "baseline_ms": None, "optimized_ms": None, "noise_pct": None,
                 "timing": "not-measured", "timing_note": "no GPU: the Triton interpreter checks correctness only"}

def test_stats_counts_geomeans_and_gpu_hours(api, worker):
    h = api.headers()
    a = api.submit(b"a", tag="suite1").json()["id"]
    b = api.submit(b"b", tag="suite1").json()["id"]
    c = api.submit(b"c", tag="suite2").json()["id"]
    d = api.submit(b"d", tag="suite2").json()["id"]
    worker.run(a, outcome="optimized", speedup=2.0)
    worker.run(b, outcome="optimized", speedup=1.125)
    worker.run(c, outcome="matched", speedup=1.0)
    api.client.post(f"/v1/jobs/{d}/cancel", headers=h)
    # A job that ran without a GPU: the engine reports no speed, and neither does the API.
    e = api.submit(b"e", tag="suite2").json()["id"]
    worker.run(e, outcome="fallback", speedup=None, cause="no-gpu: interpreter run", result=NO_GPU_RESULT)
    got = api.client.get(f"/v1/jobs/{e}", headers=h).json()
    assert (got["speedup"], got["baseline_ms"], got["optimized_ms"], got["noise_pct"]) == (None, None, None, None)
    assert got["timing"] == "not-measured" and got["timing_note"] == NO_GPU_RESULT["timing_note"]
    s = api.client.get("/v1/stats", headers=h).json()
    assert s["total"] == 5
    assert s["outcomes"]["optimized"] == 2 and s["outcomes"]["matched"] == 1 and s["outcomes"]["cancelled"] == 1
    assert s["outcomes"]["fallback"] == 1 and s["measured"] == 3 and s["not_measured"] == 1
    assert s["geomean_speedup_optimized"] == pytest.approx(math.sqrt(2.0 * 1.125))
    assert s["geomean_speedup"] == pytest.approx((2.0 * 1.125 * 1.0) ** (1 / 3))  # the no-GPU job is in no geomean
    fields = api.client.get("/openapi.json").json()["components"]["schemas"]["Stats"]["properties"]
    assert "measured jobs only" in fields["geomean_speedup"]["description"]
    assert s["gpu_hours"] == pytest.approx(s["gpu_seconds"] / 3600) and s["gpu_seconds"] >= 0
    t = api.client.get("/v1/stats", params={"tag": "suite1"}, headers=h).json()
    assert t["total"] == 2 and t["tag"] == "suite1" and t["outcomes"]["matched"] == 0
    future = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    assert api.client.get("/v1/stats", params={"since": future}, headers=h).json()["total"] == 0
    assert api.client.get("/v1/stats", params={"until": future}, headers=h).json()["total"] == 5
    r = api.client.get("/v1/stats", params={"since": future, "until": "2000-01-01T00:00:00Z"}, headers=h)
    assert r.status_code == 422


# ---------------------------------------------------------------- health, readiness, metrics, docs

def test_healthz_readyz_metrics_and_openapi(api, worker):
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["database"] == "ok"
    job = api.submit().json()
    api.client.get(f"/v1/jobs/{job['id']}", headers=api.headers())
    api.client.get("/v1/jobs/nope", headers=api.headers())
    text = api.client.get("/metrics").text
    assert 'kernelopt_http_requests_total{method="GET",route="/v1/jobs/{job_id}",status="200"} 1.0' in text
    assert 'kernelopt_http_requests_total{method="GET",route="/v1/jobs/{job_id}",status="404"} 1.0' in text
    assert 'kernelopt_http_requests_total{method="POST",route="/v1/jobs",status="202"} 1.0' in text
    assert 'kernelopt_http_request_duration_seconds_bucket{le="0.05",method="GET",route="/v1/jobs/{job_id}"}' in text
    assert 'kernelopt_jobs{status="queued"}' in text
    assert "kernelopt_jobs_submitted_total 1.0" in text
    doc = api.client.get("/openapi.json").json()
    assert {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/events", "/v1/stats"} <= set(doc["paths"])
    assert "multipart/form-data" in doc["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]


def test_readyz_is_503_when_the_database_is_unreachable(tmp_path):
    from fastapi.testclient import TestClient

    from kernelopt.api.app import create_app
    from kernelopt.service.settings import Settings
    from tests.service.api.conftest import RecordingDispatcher, free_port
    s = Settings(database_url=f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing",
                 data_dir=tmp_path)
    app = create_app(s, RecordingDispatcher())
    with TestClient(app) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["database"].startswith("unreachable")
        assert c.get("/healthz").status_code == 200
        r = c.get("/v1/jobs", headers={"Authorization": "Bearer ko_whatever-key"})
        assert r.status_code == 503 and "database" in r.json()["detail"]


def test_readyz_checks_the_broker_when_configured(pg_url, redis_url, tmp_path):
    from fastapi.testclient import TestClient

    from kernelopt.api.app import create_app
    from kernelopt.service.settings import Settings
    from tests.service.api.conftest import RecordingDispatcher, free_port

    good = create_app(Settings(database_url=pg_url, broker_url=redis_url, data_dir=tmp_path), RecordingDispatcher())
    with TestClient(good) as c:
        r = c.get("/readyz")
        checks = r.json()["checks"]
        assert r.status_code == 200 and checks["database"] == "ok" and checks["broker"] == "ok", checks
        assert checks["sandbox"].startswith("ok: all layers"), checks
    bad = create_app(Settings(database_url=pg_url, broker_url=f"redis://127.0.0.1:{free_port()}/0", data_dir=tmp_path),
                     RecordingDispatcher())
    with TestClient(bad) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["broker"].startswith("unreachable")


def test_docs_pages_load_every_asset_from_the_api_itself(api):
    """/docs and /redoc work offline: every script, style and icon they name is served here, none by a CDN."""
    import re

    for page in ("/docs", "/redoc"):
        r = api.client.get(page)
        assert r.status_code == 200 and "text/html" in r.headers["content-type"]
        assert not re.findall(r"https?://", r.text), f"{page} refers to another host"
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", r.text)
        assert any(a.endswith(".js") for a in assets), (page, assets)
        for url in assets:
            assert url.startswith("/"), (page, url)
            got = api.client.get(url)
            assert got.status_code == 200 and len(got.content) > 1000, (page, url, got.status_code)
    assert "swagger-ui.css" in api.client.get("/docs").text
    assert "/openapi.json" in api.client.get("/docs").text
