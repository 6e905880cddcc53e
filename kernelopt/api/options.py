"""The job options a client may send, validated once at the API boundary (one pydantic model).

`JobOptionsIn` is the API's contract for the `options` form field: strict JSON types (no
"10" for 10, no true for 1), finite numbers in ranges, non-empty seed and generator lists,
known precisions, dtypes, devices and generators. A bad option is a 422 naming the field,
raised before anything is stored, so SQLite and PostgreSQL see exactly the same values
(NaN or Infinity never reach a JSON column).

The engine keeps its own type, `pipeline.options.JobOptions`: `to_engine()` converts into
it, and its defaults are the only defaults (a field left out is left to the engine). The
generator names come from the engine's registry (`search.registry.available()`), the
precision names from `verify.precision.PrecisionPolicy`, the dtypes from `core.tolerance.Dtype`:
nothing is listed twice.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from kernelopt.core.precision import PrecisionPolicy
from kernelopt.core.text import clip
from kernelopt.core.tolerance import DTYPES
from kernelopt.pipeline.options import JobOptions
from kernelopt.search import registry as generator_registry

_ENGINE = JobOptions()  # the engine's defaults, shown in the schema; never re-stated here
DEVICES = ("auto", "cuda", "interpreter")  # pipeline.options.JobOptions.device
PRECISIONS = tuple(p.value for p in PrecisionPolicy)
MAX_SEEDS = 16
MAX_SEED = 2**63 - 1  # torch.manual_seed takes 64-bit seeds; JSON numbers beyond 2**63 are not portable


class InvalidOptions(ValueError):
    """The `options` field is not acceptable. `errors`: [{"field": ..., "message": ...}]."""

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        parts = [f"`{e['field']}`: {e['message']}" if e["field"] else e["message"] for e in errors]
        super().__init__("invalid options: " + "; ".join(parts))


def _finite(gt: float | None = None, ge: float | None = None, le: float | None = None, default: Any = None,
            description: str = "") -> Any:
    return Field(default, gt=gt, ge=ge, le=le, allow_inf_nan=False, description=description)


class JobOptionsIn(BaseModel):
    """Options of one job (the `options` form field of POST /v1/jobs, a JSON object).

    Every field is optional; a field left out takes the engine's default."""

    model_config = ConfigDict(extra="forbid", strict=True, title="JobOptions")

    dtype: Literal[DTYPES] = Field(_ENGINE.dtype, description="input and weight dtype")  # type: ignore[valid-type]
    precision: Literal[PRECISIONS] = Field(  # type: ignore[valid-type]
        _ENGINE.precision, description="Gate 3 policy: strict, or tf32 (reduced-precision dots allowed)")
    time_budget_s: float = _finite(gt=0, le=7 * 24 * 3600, default=_ENGINE.time_budget_s,
                                   description="seconds for the whole job, compile included "
                                               "(capped by the server's job time limit)")
    generators: list[str] = Field(
        list(_ENGINE.generators), min_length=1, max_length=16,
        description="candidate generators, from: " + ", ".join(generator_registry.available()))
    gamma: float = _finite(ge=1.0, le=100.0, default=_ENGINE.gamma,
                           description="Gate 4: the end-to-end speedup a candidate must reach")
    rho_max: float = _finite(ge=1.0, le=1e6, default=_ENGINE.rho_max,
                             description="Gate 3 float64 fallback: largest accepted d_opt / d_ref")
    seeds: list[int] = Field(list(_ENGINE.seeds), min_length=1, max_length=MAX_SEEDS,
                             description="input seeds of Gates 2 and 3")
    iterations: int = Field(_ENGINE.iterations, ge=1, le=1000, description="search iterations")
    plans_per_iteration: int = Field(_ENGINE.plans_per_iteration, ge=1, le=256)
    beam_width: int = Field(_ENGINE.beam_width, ge=1, le=256)
    max_candidates_per_kernel: int = Field(_ENGINE.max_candidates_per_kernel, ge=1, le=10_000)
    chains: int = Field(_ENGINE.chains, ge=1, le=16, description="search chains per kernel (DiverseSelect)")
    executor_retries: int = Field(_ENGINE.executor_retries, ge=0, le=32,
                                  description="K: gate failures fed back to the LLM executor per plan")
    memory_size: int = Field(_ENGINE.memory_size, ge=1, le=256, description="Q: experience items per planner prompt")
    memory_success: float = _finite(ge=1.0, le=100.0, default=_ENGINE.memory_success,
                                    description="s+: kernel speedup remembered as a success")
    memory_slowdown: float = _finite(ge=1.0, le=100.0, default=_ENGINE.memory_slowdown,
                                     description="s-: kernel slowdown remembered as a slowdown")
    meltdown_failures: int = Field(_ENGINE.meltdown_failures, ge=0, le=1000,
                                   description="a chain failing this many times in a row is stopped (0: never)")
    device: Literal[DEVICES] = Field(_ENGINE.device, description="auto, cuda or interpreter")  # type: ignore[valid-type]

    @field_validator("generators")
    @classmethod
    def _known_generators(cls, names: list[str]) -> list[str]:
        known = generator_registry.available()
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"unknown generator(s) {', '.join(map(repr, unknown))}; available: {', '.join(known)}")
        if len(set(names)) != len(names):
            raise ValueError("a generator is listed twice")
        return names

    @field_validator("seeds")
    @classmethod
    def _seed_range(cls, seeds: list[int]) -> list[int]:
        bad = [s for s in seeds if not 0 <= s <= MAX_SEED]
        if bad:
            raise ValueError(f"seeds must be integers in [0, 2**63 - 1], got {bad[0]}")
        return seeds

    def to_engine(self) -> JobOptions:
        """The engine's options: the fields the client set, the engine's defaults for the rest."""
        return JobOptions(**self.model_dump(exclude_unset=True))


def _message(err: ErrorDetails) -> str:
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    kind = err.get("type")
    if kind == "finite_number":
        msg = "must be a finite number (not NaN or Infinity)"
    elif kind == "too_short" and err.get("ctx", {}).get("min_length") == 1:
        msg = "must not be empty"
    elif kind == "literal_error":
        msg = msg.replace("Input should be", "must be one of")
    msg = msg.replace("Input should be", "must be").replace("greater than or equal to", ">=") \
        .replace("less than or equal to", "<=").replace("greater than", ">").rstrip(".")
    if "input" in err and err.get("type") not in ("missing",) and not isinstance(err["input"], (dict, list)):
        msg += f", got {clip(json.dumps(err['input'], default=str), 80)}"
    return msg


def _field(err: ErrorDetails) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    return ".".join(loc[:1]) + "".join(f"[{p}]" for p in loc[1:])


def parse_options(text: str | None) -> dict:
    """The `options` form field (a JSON object) → the job's effective options (the engine's
    JobOptions as a dict), or InvalidOptions naming every bad field."""
    if text is None or not text.strip():
        raw: Any = {}
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidOptions([{"field": "", "message": f"`options` is not valid JSON: {exc}"}]) from None
    if not isinstance(raw, dict):
        raise InvalidOptions([{"field": "", "message": (
            "`options` must be a JSON object, e.g. {\"dtype\": \"bf16\", \"time_budget_s\": 600}")}])
    return validate_options(raw)


def validate_options(raw: dict) -> dict:
    """Options as a dict (decoded JSON, or what `kernelopt optimize` was given) → the job's effective
    options (the engine's JobOptions as a dict), or InvalidOptions naming every bad field. The one
    check of a job's options, for the API and the command line alike."""
    try:
        model = JobOptionsIn.model_validate(raw)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            if err.get("type") == "extra_forbidden":
                errors.append({"field": _field(err), "message": "unknown option; known: "
                               + ", ".join(JobOptionsIn.model_fields)})
            else:
                errors.append({"field": _field(err), "message": _message(err)})
        raise InvalidOptions(errors) from None
    try:
        options = model.to_engine().to_dict()
    except (TypeError, ValueError) as exc:  # the engine's own checks: kept in step with the model by a test
        raise InvalidOptions([{"field": "", "message": str(exc)}]) from None
    return options


def options_summary() -> str:
    """One line per option for the OpenAPI document, from the model itself."""
    lines = []
    for name, prop in JobOptionsIn.model_json_schema()["properties"].items():
        if "enum" in prop:
            what = "|".join(map(str, prop["enum"]))
        elif prop.get("type") == "array":
            what = f"list of {prop['items'].get('type', 'value')} ({prop.get('minItems', 0)}..{prop.get('maxItems')})"
        else:
            lo = prop.get("exclusiveMinimum", prop.get("minimum"))
            op = "<" if "exclusiveMinimum" in prop else "<="
            what = f"{prop.get('type')}, {lo} {op} x <= {prop.get('maximum')}" if lo is not None else prop.get("type")
        lines.append(f"{name} ({what}; default {json.dumps(prop.get('default'))})")
    return ("JSON object of job options, all optional; a bad value is a 422 naming the option: "
            + ", ".join(lines))
