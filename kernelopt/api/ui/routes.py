"""/ui: the team dashboard, server-rendered (Jinja2), a few lines of plain JS for live status.

Every page is scoped to the signed-in key's team through the same service reads as the API
(service.job_queries): another team's job is a 404 here too. Writes (cancel, submit, sign-out)
are POSTs that need the session's CSRF token on top of the SameSite=Strict cookie.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from kernelopt.api.deps import TeamRef, in_db_thread, read_db
from kernelopt.api.options import InvalidOptions, parse_options
from kernelopt.api.routes.jobs import download_artifact, job_out
from kernelopt.api.ui import jobview
from kernelopt.api.ui import session as sess
from kernelopt.api.ui.overview import team_overview
from kernelopt.api.ui.reports import MAX_TREE_NODES, llm_usage, read_json, read_trajectory
from kernelopt.core.outcome import OUTCOMES
from kernelopt.core.outcome import cause_code as outcome_cause_code  # the dashboard allows None
from kernelopt.pipeline.report import kept_untimed
from kernelopt.service.auth import authenticate, hash_key
from kernelopt.service.job_queries import InvalidCursor, events_after, get_job, list_artifacts, list_jobs
from kernelopt.service.jobs import QueueFull, create_job, request_cancel
from kernelopt.storage.models import ApiKey, Job

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(prefix="/ui", include_in_schema=False)

JOB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled", "crashed")
TERMINAL = ("succeeded", "failed", "cancelled", "crashed")
MAX_DIFF_BYTES = 256 * 1024
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make the browser send `Origin: null` on POSTs
    "Cache-Control": "no-store",
}


# ---------------------------------------------------------------- session plumbing

def _secret(request: Request) -> bytes:
    secret = getattr(request.app.state, "ui_secret", None)
    if secret is None:
        secret = request.app.state.ui_secret = sess.load_secret(request.app.state.settings.data_dir)
    return secret


async def current(request: Request) -> tuple[TeamRef, sess.UiSession] | None:
    """The signed-in team, or None: a validly signed cookie whose server-side session row still exists
    (not signed out, unexpired) and whose key is unrevoked. Not cached, unlike API keys: a sign-out on
    another replica must end the session at once."""
    s = sess.decode(_secret(request), request.cookies.get(sess.COOKIE))
    if s is None:
        return None
    found = await read_db(request, lambda db: sess.team_of(db, s))
    return (TeamRef(id=found[0], name=found[1]), s) if found is not None else None


def _headers(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response


def render(request: Request, name: str, ctx: dict[str, Any], *, auth=None, status_code: int = 200) -> Response:
    context = {"team": None, "csrf": None, **ctx}
    if auth is not None:
        team, s = auth
        context.update(team=team, csrf=sess.csrf_token(_secret(request), s))
    return _headers(templates.TemplateResponse(request, name, context, status_code=status_code))


def to_login() -> Response:
    return _headers(RedirectResponse("/ui/login", status_code=status.HTTP_303_SEE_OTHER))


def not_found(request: Request, auth, what: str) -> Response:
    return render(request, "error.html", {"title": "Not found", "message": what}, auth=auth, status_code=404)


async def _form(request: Request) -> dict[str, Any]:
    form = await request.form(max_files=0, max_fields=8)
    return {k: v for k, v in form.items() if isinstance(v, str)}


def _same_origin(request: Request) -> None:
    """A browser's cross-site POST carries an Origin of its own: refused, sign-in included (where there is
    no session token yet). A request without Origin (not a browser) goes on to the other checks. Behind a
    proxy that rewrites Host, the proxy must pass X-Forwarded-Host (the host the browser used)."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    hosts = {request.headers.get("host", ""), request.headers.get("x-forwarded-host", "").split(",")[0].strip()}
    if origin == "null" or origin.split("://", 1)[-1].rstrip("/") not in hosts - {""}:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="cross-origin request refused")


def _check_csrf(request: Request, s: sess.UiSession, token: Any) -> None:
    _same_origin(request)
    if not sess.csrf_ok(_secret(request), s, token if isinstance(token, str) else None):
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="missing or wrong CSRF token: reload the page")


# ---------------------------------------------------------------- presentation helpers

def speed_text(job: Any) -> str:
    """A job's speed as the dashboard shows it; a kept baseline nothing timed says so (never a bare 1.00×)."""
    if job.timing == "not-measured":
        return "not measured"
    if job.speedup is None:
        return "—"
    if kept_untimed({"outcome": job.outcome, "baseline_ms": job.baseline_ms, "optimized_ms": job.optimized_ms,
                     "noise_pct": job.noise_pct}):
        return f"{job.speedup:.2f}× (compiler's code kept, not timed)"
    return f"{job.speedup:.2f}×"


def cause_code(cause: str | None) -> str | None:
    return outcome_cause_code(cause) if cause else None


def live_row(job: Any) -> dict[str, Any]:
    return {"status": job.status, "stage": job.stage or "", "outcome": job.outcome or "",
            "cause": cause_code(job.cause) or "", "speedup": speed_text(job) if job.status in TERMINAL else "",
            "progress": round(job.progress or 0.0, 3), "terminal": job.status in TERMINAL}


templates.env.globals.update(speed_text=speed_text, cause_code=cause_code)
templates.env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M:%S") if d else ""


# ---------------------------------------------------------------- sign-in / sign-out

@router.get("/login")
async def login_page(request: Request) -> Response:
    if await current(request) is not None:
        return _headers(RedirectResponse("/ui/", status_code=303))
    return render(request, "login.html", {"title": "Sign in", "error": None})


@router.post("/login")
async def login(request: Request) -> Response:
    _same_origin(request)
    key = (await _form(request)).get("api_key", "").strip()

    def check(session) -> tuple[int, int] | None:
        team = authenticate(session, key)
        if team is None:
            return None
        key_id = session.scalar(select(ApiKey.id).where(ApiKey.key_hash == hash_key(key),
                                                        ApiKey.revoked_at.is_(None)))
        return (key_id, team.id) if key_id is not None else None

    found = await read_db(request, check) if key else None
    if found is None:
        return render(request, "login.html", {"title": "Sign in", "error": "That API key is not valid."},
                      status_code=401)
    s = sess.new_session(*found)

    def record() -> None:
        with request.app.state.sessionmaker() as db:
            sess.store(db, s)

    await in_db_thread(request, record)
    response = _headers(RedirectResponse("/ui/", status_code=303))
    response.set_cookie(sess.COOKIE, sess.encode(_secret(request), s), max_age=sess.TTL_S, path="/ui",
                        httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    auth = await current(request)
    if auth is not None:
        _check_csrf(request, auth[1], (await _form(request)).get("csrf"))

        def end() -> None:
            with request.app.state.sessionmaker() as db:
                sess.drop(db, auth[1])

        await in_db_thread(request, end)
    response = to_login()
    response.delete_cookie(sess.COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


# ---------------------------------------------------------------- overview

@router.get("/")
async def overview(request: Request) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    team = auth[0]

    def read(session):
        recent, _ = list_jobs(session, team.id, limit=10)
        return team_overview(session, team.id), [job_out(j) for j in recent]

    figures, recent = await read_db(request, read)
    return render(request, "overview.html", {"title": "Overview", **figures, "jobs": recent}, auth=auth)


# ---------------------------------------------------------------- jobs

@router.get("/jobs")
async def jobs_page(
    request: Request,
    status_: Annotated[str | None, Query(alias="status", max_length=16)] = None,
    outcome: Annotated[str | None, Query(max_length=16)] = None,
    tag: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    team = auth[0]
    status_ = status_ if status_ in STATUSES else None
    outcome = outcome if outcome in OUTCOMES else None
    tag = tag.strip() if tag and tag.strip() else None

    def read(session):
        try:
            jobs, nxt = list_jobs(session, team.id, status=status_, outcome=outcome, tag=tag, cursor=cursor or None,
                                  limit=50)
        except InvalidCursor:
            jobs, nxt = list_jobs(session, team.id, status=status_, outcome=outcome, tag=tag, limit=50)
        return [job_out(j) for j in jobs], nxt

    jobs, nxt = await read_db(request, read)
    filters = {k: v for k, v in (("status", status_), ("outcome", outcome), ("tag", tag)) if v}
    next_url = f"/ui/jobs?{urlencode({**filters, 'cursor': nxt})}" if nxt else None
    return render(request, "jobs.html", {"title": "Jobs", "jobs": jobs, "filters": filters, "next_url": next_url,
                                         "statuses": STATUSES, "outcomes": OUTCOMES}, auth=auth)


@router.get("/live")
async def live(request: Request, ids: Annotated[str, Query(max_length=66 * 100)] = "") -> Response:
    """Status of up to 100 of the team's jobs, for the pages' live updates (polled while any is running)."""
    auth = await current(request)
    if auth is None:
        return JSONResponse({"detail": "signed out"}, status_code=401)
    team = auth[0]
    wanted = [i for i in ids.split(",") if JOB_ID.match(i)][:100]

    def read(session):
        if not wanted:
            return {}
        rows = session.scalars(select(Job).where(Job.team_id == team.id, Job.id.in_(wanted)))
        return {j.id: live_row(job_out(j)) for j in rows}

    return _headers(JSONResponse(await read_db(request, read)))


@router.get("/jobs/{job_id}")
async def job_page(request: Request, job_id: str) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    team = auth[0]
    if not JOB_ID.match(job_id):
        return not_found(request, auth, "No such job for this team.")
    blobs = request.app.state.blobs

    def read(session):
        job = get_job(session, team.id, job_id)
        if job is None:
            return None
        arts = list_artifacts(session, team.id, job_id) or []
        events = events_after(session, job_id, 0, limit=200)
        return job_out(job), [(a.name, a.size, a.blob_sha256) for a in arts], \
            [(e.at, e.stage, e.kind, e.message) for e in events]

    found = await read_db(request, read)
    if found is None:
        return not_found(request, auth, "No such job for this team.")
    job, arts, events = found

    def diffs():
        out = []
        for name, size, sha in arts:
            if not (name.startswith("diff_") and name.endswith(".diff")):
                continue
            if size > MAX_DIFF_BYTES:
                out.append((name, None, None))
                continue
            try:
                with blobs.open_verified(sha, size) as f:
                    text = f.read().decode("utf-8", "replace")
            except Exception:
                out.append((name, None, None))
                continue
            lines = text.splitlines()
            out.append((name, [(_diff_class(line), line) for line in lines], side_by_side(lines)))
        return out

    def figures() -> dict[str, Any]:
        """The report's sections (api/ui/jobview.py), from the stored report.json and trajectory.jsonl."""
        stored = {name: (sha, size) for name, size, sha in arts}
        report = read_json(blobs, *stored["report.json"]) if "report.json" in stored else None
        report = report if isinstance(report, dict) else {}
        trajectory = read_trajectory(blobs, *stored["trajectory.jsonl"]) if "trajectory.jsonl" in stored else []
        return {"has_report": bool(report), "kernels": jobview.kernel_rows(report),
                "profile": jobview.profile_summary(report),
                "trees": jobview.search_trees(report, trajectory, MAX_TREE_NODES),
                "precision_stmt": jobview.precision_statement(job, report), "eager": jobview.vs_eager(job, report),
                "llm": llm_usage(report)}

    total = sum(v for v in job.timings.values() if isinstance(v, (int, float))) or 0.0
    timeline = [(stage, secs, (100.0 * secs / total) if total else 0.0) for stage, secs in job.timings.items()
                if isinstance(secs, (int, float))]
    return render(request, "job.html", {
        "title": f"Job {job.id[:8]}", "job": job, "artifacts": arts, "events": events[-50:],
        "timeline": timeline, "total_s": total, "diffs": await run_in_threadpool(diffs),
        "terminal": job.status in TERMINAL, **(await run_in_threadpool(figures)),
    }, auth=auth)


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def side_by_side(lines: list[str]) -> list[tuple]:
    """A unified diff as rows (old no, old text, old class, new no, new text, new class): removed and
    added runs paired line by line, context on both sides, a hunk header across."""
    rows: list[tuple] = []
    old = new = left_old = left_new = 0  # line numbers; lines of the hunk still to come
    dels: list[str] = []
    adds: list[str] = []

    def flush() -> None:
        nonlocal old, new
        for i in range(max(len(dels), len(adds))):
            left = (old + 1, dels[i], "del") if i < len(dels) else (None, "", "empty")
            right = (new + 1, adds[i], "add") if i < len(adds) else (None, "", "empty")
            old += i < len(dels)
            new += i < len(adds)
            rows.append(left + right)
        dels.clear()
        adds.clear()

    for line in lines:
        m = HUNK.match(line) if left_old <= 0 and left_new <= 0 else None
        if m:
            flush()
            old, new = int(m.group(1)) - 1, int(m.group(3)) - 1
            left_old, left_new = int(m.group(2) or 1), int(m.group(4) or 1)
            rows.append((None, line, "hunk", None, "", "hunk"))
        elif left_old <= 0 and left_new <= 0:
            continue  # file headers (---/+++) and anything outside a hunk
        elif line.startswith("-"):
            dels.append(line[1:])
            left_old -= 1
        elif line.startswith("+"):
            adds.append(line[1:])
            left_new -= 1
        elif not line.startswith("\\"):
            flush()
            text = line[1:]
            old, new, left_old, left_new = old + 1, new + 1, left_old - 1, left_new - 1
            rows.append((old, text, "ctx", new, text, "ctx"))
    flush()
    return rows


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


@router.get("/jobs/{job_id}/artifacts/{name:path}")
async def download(request: Request, job_id: str, name: str) -> Response:
    """The API's own artifact download (verified streaming), authorized by the session cookie."""
    auth = await current(request)
    if auth is None:
        return to_login()
    if not JOB_ID.match(job_id) or len(name) > 255 or re.search(r"[\x00-\x1f\x7f]", name):
        return not_found(request, auth, "No such artifact.")
    try:
        return await run_in_threadpool(download_artifact, job_id, name, request, auth[0])
    except HTTPException as exc:
        if exc.status_code == 404:
            return not_found(request, auth, str(exc.detail))
        raise


@router.post("/jobs/{job_id}/cancel")
async def cancel(request: Request, job_id: str) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    _check_csrf(request, auth[1], (await _form(request)).get("csrf"))
    team = auth[0]
    if not JOB_ID.match(job_id):
        return not_found(request, auth, "No such job for this team.")

    def write():
        with request.app.state.sessionmaker() as session:
            return request_cancel(session, team.id, job_id) is not None

    if not await in_db_thread(request, write):
        return not_found(request, auth, "No such job for this team.")
    return _headers(RedirectResponse(f"/ui/jobs/{job_id}", status_code=303))


# ---------------------------------------------------------------- submit

@router.get("/submit")
async def submit_page(request: Request) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    return render(request, "submit.html", {"title": "Submit", "error": None, "values": {}}, auth=auth)


@router.post("/submit")
async def submit(request: Request) -> Response:
    auth = await current(request)
    if auth is None:
        return to_login()
    team, s = auth
    settings = request.app.state.settings
    limit = settings.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + 64 * 1024:
        return render(request, "submit.html", {"title": "Submit", "values": {},
                                               "error": f"The upload is larger than {limit} bytes."},
                      auth=auth, status_code=413)
    form = await request.form(max_files=2, max_fields=8)
    try:
        _check_csrf(request, s, form.get("csrf"))
        values = {k: v for k, v in form.items() if isinstance(v, str)}

        def fail(message: str, code: int = 422) -> Response:
            return render(request, "submit.html", {"title": "Submit", "values": values, "error": message},
                          auth=auth, status_code=code)

        file, weights = form.get("file"), form.get("weights")
        if file is None or isinstance(file, str) or not file.filename:
            return fail("Choose a model or kernel file.")
        data = await file.read()
        wdata = await weights.read() if weights is not None and not isinstance(weights, str) else b""
        if not data:
            return fail("The file is empty.")
        if len(data) + len(wdata) > limit:
            return fail(f"The upload is larger than {limit} bytes.", 413)
        options: dict[str, Any] = {}
        for name in ("dtype", "precision"):
            if values.get(name):
                options[name] = values[name]
        if values.get("time_budget_s", "").strip():
            try:
                options["time_budget_s"] = float(values["time_budget_s"])
            except ValueError:
                return fail("The time budget must be a number of seconds.")
        tag = values.get("tag", "").strip() or None
        if tag is not None and (len(tag) > 200 or re.search(r"[\x00-\x1f\x7f]", tag)):
            return fail("The tag must be at most 200 printable characters.")
        try:
            options = parse_options(json.dumps(options))  # the API's one model of the options
        except InvalidOptions as exc:
            return fail(str(exc))
        filename = re.sub(r"[\x00-\x1f\x7f/\\]", "_", file.filename.rsplit("/", 1)[-1])[:255] or "upload.py"

        def store():
            with request.app.state.sessionmaker() as session:
                try:
                    job, _ = create_job(session, team.id, filename, data, options, wdata or None, None, tag,
                                        request.app.state.blobs, settings)
                    return job.id
                except QueueFull as exc:
                    return exc

        job_id = await in_db_thread(request, store)
        if not isinstance(job_id, str):
            return fail(f"Too many queued jobs for this team (limit {settings.max_queued_jobs_per_team}); "
                        "try again later.", 429)
        try:
            await run_in_threadpool(request.app.state.dispatcher.enqueue, job_id)
        except Exception:  # stored: the reaper re-enqueues queued jobs with no message
            pass
        request.app.state.metrics.jobs_submitted.inc()
        return _headers(RedirectResponse(f"/ui/jobs/{job_id}", status_code=303))
    finally:
        await form.close()
