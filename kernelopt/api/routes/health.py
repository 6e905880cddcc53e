"""/healthz (the process answers), /readyz (database and broker reachable), /metrics (Prometheus)."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import JSONResponse
from sqlalchemy import text

from kernelopt.api.schemas import Health, Readiness
from kernelopt.service.sandbox_gate import sandbox_status

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, summary="Readiness: database (and broker when configured)",
            responses={503: {"model": Readiness, "description": "a dependency is unreachable"}})
def readyz(request: Request):
    state = request.app.state
    checks: dict[str, str] = {}
    try:
        with state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"unreachable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    broker_url = state.settings.broker_url
    if broker_url:
        try:
            state.broker_ping()
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"unreachable: {type(exc).__name__}: {exc}"
    else:
        checks["broker"] = "embedded"
    checks["sandbox"], sandbox_may_run = _sandbox_check(state.settings, state.engine)
    ok = all(v in ("ok", "embedded") for k, v in checks.items() if k != "sandbox") and sandbox_may_run
    body = Readiness(status="ready" if ok else "not ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=status.HTTP_200_OK if ok else status.HTTP_503_SERVICE_UNAVAILABLE)


def _sandbox_check(settings, engine) -> tuple[str, bool]:
    """Which sandbox layers jobs run under (probed once per process; the team count is read each time), and
    whether jobs may run under them. A probe that failed does not make the API unready: it says so."""
    try:
        status_ = sandbox_status(settings, engine)
        return status_.check(), status_.may_run
    except Exception as exc:  # noqa: BLE001 - readiness must answer
        return f"unknown: {type(exc).__name__}: {exc}", True


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}})
def metrics(request: Request) -> Response:
    payload, content_type = request.app.state.metrics.render()
    return Response(payload, media_type=content_type)
