"""Over real HTTP (uvicorn on a loopback port): Server-Sent Events with resume, the streamed
upload limit on a real socket, and `kernelopt submit` end to end with a scripted worker."""
from __future__ import annotations

import json
import re
import socket
import threading
import time

import httpx
import pytest

from tests.service.api.conftest import LiveServer, ScriptedWorker, make_api


def read_sse(url: str, key: str, headers: dict | None = None, params: dict | None = None,
             timeout: float = 20.0) -> list[dict]:
    """All messages of one SSE response until the server closes it: [{'id','event','data'}...]."""
    messages, current = [], {}
    with httpx.stream("GET", url, headers={"Authorization": f"Bearer {key}", **(headers or {})}, params=params,
                      timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line == "":
                if current:
                    messages.append(current)
                current = {}
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(": ")
                current[field] = value
    return [m for m in messages if "data" in m]


def test_sse_streams_events_with_ids_and_resumes_from_last_event_id(api, worker, live):
    job = api.submit().json()
    worker.claim(job["id"])
    ids = [worker.event(job["id"], "load", f"step {i}") for i in range(5)]
    worker.finish(job["id"], artifacts={"report.json": b"{}"})
    url = f"{live.url}/v1/jobs/{job['id']}/events"

    everything = read_sse(url, api.key)
    assert everything[-1]["event"] == "end" and "id" not in everything[-1]
    assert json.loads(everything[-1]["data"])["status"] == "succeeded"
    events = everything[:-1]
    event_ids = [int(m["id"]) for m in events]
    assert event_ids == sorted(event_ids) and len(set(event_ids)) == len(event_ids)
    assert set(ids) <= set(event_ids)
    kinds = [m["event"] for m in events]
    assert kinds[0] == "status" and kinds[-1] == "status"  # queued ... succeeded
    assert json.loads(events[0]["data"])["message"] == "queued"

    # resume after the third scripted event: exactly the later ones, then the end
    resumed = read_sse(url, api.key, headers={"Last-Event-ID": str(ids[2])})
    assert [int(m["id"]) for m in resumed[:-1]] == [i for i in event_ids if i > ids[2]]
    assert resumed[-1]["event"] == "end"
    # ?after= does the same
    by_query = read_sse(url, api.key, params={"after": ids[2]})
    assert [m.get("id") for m in by_query] == [m.get("id") for m in resumed]
    # resuming after the last event of a finished job: just the end
    tail = read_sse(url, api.key, headers={"Last-Event-ID": str(event_ids[-1])})
    assert [m["event"] for m in tail] == ["end"]
    r = httpx.get(url, headers={"Authorization": f"Bearer {api.key}", "Last-Event-ID": "abc"})
    assert r.status_code == 422


def test_sse_follows_a_running_job_live_and_reconnects_without_loss(api, worker, live):
    job = api.submit().json()
    worker.claim(job["id"])
    url = f"{live.url}/v1/jobs/{job['id']}/events"
    written: list[int] = []

    def work():
        for i in range(6):
            time.sleep(0.15)
            written.append(worker.event(job["id"], "search", f"candidate {i}"))
        worker.finish(job["id"], outcome="optimized", speedup=1.3)

    t = threading.Thread(target=work)
    t.start()
    # first connection: read two scripted events, then drop the connection
    got: list[int] = []
    with httpx.stream("GET", url, headers={"Authorization": f"Bearer {api.key}"}, timeout=20) as r:
        for line in r.iter_lines():
            if line.startswith("id: "):
                got.append(int(line[4:]))
                if len([i for i in got if i in written]) >= 2:
                    break
    last = got[-1]
    # reconnect with Last-Event-ID and read to the end
    rest = read_sse(url, api.key, headers={"Last-Event-ID": str(last)})
    t.join()
    got += [int(m["id"]) for m in rest if "id" in m]
    assert rest[-1]["event"] == "end"
    assert json.loads(rest[-1]["data"])["outcome"] == "optimized"
    assert set(written) <= set(got)
    assert len(got) == len(set(got)), "an event was delivered twice"


def test_upload_over_limit_on_a_real_socket_is_cut_short(settings, team_key):
    limit = 64 * 1024
    a = make_api(settings.model_copy(update={"max_upload_bytes": limit}), team_key)
    with a.client, LiveServer(a.app) as server:
        jobs, blobs = a.count_jobs(a.team.id), a.count_blobs()
        boundary = "xyzzy"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.py\"\r\n"
                f"Content-Type: text/x-python\r\n\r\n").encode()
        request = (f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {a.key}\r\n"
                   f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n").encode()
        chunk = b"#" * 65536
        sent = 0
        response = b""
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(request + b"%x\r\n" % len(head) + head + b"\r\n")
            sock.setblocking(False)
            try:
                for _ in range(1000):  # up to 64 MiB; the server must answer long before that
                    try:
                        response += sock.recv(65536)
                        if response:
                            break
                    except BlockingIOError:
                        pass
                    sock.setblocking(True)
                    sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    sock.setblocking(False)
                    sent += 1
            except (BrokenPipeError, ConnectionResetError):
                pass
            sock.setblocking(True)
            deadline = time.monotonic() + 10
            while b"\r\n\r\n" not in response and time.monotonic() < deadline:
                try:
                    more = sock.recv(65536)
                except ConnectionResetError:
                    break
                if not more:
                    break
                response += more
        assert response.startswith(b"HTTP/1.1 413"), response[:200]
        assert sent < 200, f"sent {sent} chunks (of 64 KiB) before the 413"
        assert (a.count_jobs(a.team.id), a.count_blobs()) == (jobs, blobs)
        # and an honest client with Content-Length over the limit gets the 413 too
        r = httpx.post(f"{server.url}/v1/jobs", headers={"Authorization": f"Bearer {a.key}"},
                       files={"file": ("m.py", b"#" * (4 * 1024 * 1024))}, timeout=20)
        assert r.status_code == 413 and "limit" in r.json()["detail"]


# ---------------------------------------------------------------- kernelopt submit

def run_submit(argv: list[str], url: str, key: str, monkeypatch) -> int:
    import argparse

    from kernelopt.cli.submit import register

    monkeypatch.setenv("KERNELOPT_URL", url)
    monkeypatch.setenv("KERNELOPT_API_KEY", key)
    parser = argparse.ArgumentParser(prog="kernelopt")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["submit", *argv])
    return args.func(args)


def _auto_worker(api, **finish):
    """A scripted worker that runs whatever job appears next."""
    worker = ScriptedWorker(api)
    done = threading.Event()

    def loop():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not api.dispatcher.enqueued:
            time.sleep(0.02)
        job_id = api.dispatcher.enqueued[0]
        worker.claim(job_id)
        worker.event(job_id, "load", "importing the submission", kind="stage_started")
        time.sleep(0.3)
        worker.event(job_id, "search", "candidate 1 accepted")
        if finish.pop("fail", None):
            worker.fail(job_id, "SyntaxError: invalid syntax (model.py, line 1)")
        else:
            worker.finish(job_id, **finish)
        done.set()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return done


@pytest.mark.parametrize("finish, expected", [
    ({"outcome": "optimized", "speedup": 1.4, "cause": "speedup 1.40x"}, 0),
    ({"outcome": "matched", "speedup": 1.0, "cause": "no candidate beat gamma"}, 0),
    ({"outcome": "fallback", "speedup": 1.0, "cause": "no-gpu: interpreter"}, 0),
    ({"outcome": "fallback", "speedup": 1.0, "cause": "timeout: search exceeded its budget"}, 5),
    ({"outcome": "optimized", "speedup": 0.9, "cause": "regressed"}, 6),
    ({"fail": True}, 1),
])
def test_submit_wait_download_and_exit_codes(api, live, tmp_path, monkeypatch, capsys, finish, expected):
    problem = tmp_path / "model.py"
    problem.write_text("import torch\n")
    artifacts = {"report.json": b'{"outcome": "x"}', "optimized_module.py": b"class ModelNew: pass\n",
                 "diffs/k0.diff": b"-a\n+b\n"}
    if not finish.get("fail"):
        finish["artifacts"] = artifacts
    done = _auto_worker(api, **finish)
    out = tmp_path / "out"
    code = run_submit([str(problem), "--wait", "--download", str(out), "--tag", "ci", "--options",
                       '{"dtype": "fp32"}'], live.url, api.key, monkeypatch)
    assert done.wait(10)
    printed = capsys.readouterr().out
    assert code == expected, printed
    assert "load: importing the submission" in printed and "search: candidate 1 accepted" in printed
    # Job-level events have no stage: "[hh:mm:ss] queued", not "[hh:mm:ss] : queued".
    assert re.search(r"^\[\d\d:\d\d:\d\d\] queued$", printed, re.M), printed
    assert "] :" not in printed and not re.search(r"— *$", printed, re.M), printed  # no empty stage, no dangling dash
    last = [line for line in printed.splitlines() if line.startswith("job ")][-1]
    if not finish.get("fail"):
        for name, content in artifacts.items():
            assert (out / name).read_bytes() == content
        assert last.endswith(f"— {finish['cause']}"), last
    else:
        assert "SyntaxError" in printed
        assert last.endswith(": outcome failed"), last  # the error follows on its own line


def test_submit_json_without_wait_and_usage_errors(api, live, tmp_path, monkeypatch, capsys):
    problem = tmp_path / "k.py"
    problem.write_text("x = 1\n")
    assert run_submit([str(problem), "--json"], live.url, api.key, monkeypatch) == 0
    job = json.loads(capsys.readouterr().out)
    assert job["status"] == "queued" and job["filename"] == "k.py"
    assert run_submit([str(tmp_path / "missing.py")], live.url, api.key, monkeypatch) == 2
    assert run_submit([str(problem), "--options", "{bad"], live.url, api.key, monkeypatch) == 2
    assert run_submit([str(problem)], live.url, "ko_wrong-key-0000000", monkeypatch) == 7
    assert "401" in capsys.readouterr().err
    assert run_submit([str(problem), "--options", '{"dtype": "int3"}'], live.url, api.key, monkeypatch) == 7
    assert run_submit([str(problem), "--wait", "--timeout", "1"], live.url, api.key, monkeypatch) == 5


def test_exit_code_table():
    from kernelopt.cli.submit import exit_code_for

    def job(status, outcome=None, speedup=None, cause=""):
        return {"status": status, "outcome": outcome, "speedup": speedup, "cause": cause}

    assert exit_code_for(job("succeeded", "optimized", 1.2)) == 0
    assert exit_code_for(job("succeeded", "optimized", 1.0)) == 0
    assert exit_code_for(job("succeeded", "optimized", 0.97)) == 6
    assert exit_code_for(job("succeeded", "matched", 1.0)) == 0
    assert exit_code_for(job("succeeded", "fallback", 1.0, "library-dominated")) == 0
    assert exit_code_for(job("succeeded", "fallback", None, "timeout: 1800 s")) == 5
    assert exit_code_for(job("succeeded", "fallback", None, "crash: child died")) == 3
    assert exit_code_for(job("failed", "failed", None, "ImportError")) == 1
    assert exit_code_for(job("crashed")) == 3
    assert exit_code_for(job("cancelled")) == 4


def test_submit_lines_say_when_speed_was_not_measured():
    from kernelopt.cli.submit import event_line, final_line

    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] queued", event_line({"stage": None, "message": "queued"}))
    assert event_line({"stage": "load", "message": "importing"}).endswith("] load: importing")
    assert event_line({"stage": "load", "message": ""}).endswith("] load")
    note = "no GPU: the Triton interpreter checks correctness only"
    line = final_line({"id": "j1", "status": "succeeded", "outcome": "fallback", "speedup": None,
                       "timing": "not-measured", "timing_note": note, "cause": "no-gpu: interpreter"})
    assert line == f"job j1 succeeded: outcome fallback, speed not measured ({note}) — no-gpu: interpreter"
    assert final_line({"id": "j2", "status": "succeeded", "outcome": "optimized", "speedup": 1.25,
                       "timing": "measured", "cause": "speedup 1.25x"}) == \
        "job j2 succeeded: outcome optimized, speedup 1.250x — speedup 1.25x"
    # a failed job's cause ("failed: " and its error's first line) is left to the error line that follows
    assert final_line({"id": "j3", "status": "failed", "outcome": "failed", "cause": "failed: SyntaxError: x"}) == \
        "job j3 failed: outcome failed"
    assert final_line({"id": "j4", "status": "cancelled"}) == "job j4 cancelled"
    # a graph-break fallback: the compiler's code is kept and nothing was timed, so the 1.0 says what it is
    kept = final_line({"id": "j5", "status": "succeeded", "outcome": "fallback", "speedup": 1.0, "timing": "measured",
                       "baseline_ms": None, "optimized_ms": None, "noise_pct": None, "cause": "graph-break: x"})
    assert kept == ("job j5 succeeded: outcome fallback, speedup 1.000x (the compiler's own code is deployed; "
                    "the job ended before timing it) — graph-break: x")
