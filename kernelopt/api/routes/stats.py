"""/v1/stats: a team's outcome counts, geomean speedups and GPU-hours over a time range or a tag."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from kernelopt.api.deps import SessionDep, TeamDep
from kernelopt.api.routes.jobs import AUTH, Tag, _utc
from kernelopt.api.schemas import Stats
from kernelopt.service import job_queries

router = APIRouter(prefix="/v1", tags=["stats"])


@router.get("/stats", response_model=Stats, summary="Team statistics", responses={**AUTH})
def team_stats(
    session: SessionDep, team: TeamDep,
    since: Annotated[datetime | None, Query(description="jobs created at or after (ISO 8601; UTC if no zone)")] = None,
    until: Annotated[datetime | None, Query(description="jobs created before")] = None,
    tag: Tag = None,
) -> Stats:
    since, until = _utc(since), _utc(until)
    if since is not None and until is not None and since > until:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="`since` is after `until`")
    return Stats(team=team.name, since=since, until=until, tag=tag,
                 **job_queries.team_stats(session, team.id, since=since, until=until, tag=tag))
