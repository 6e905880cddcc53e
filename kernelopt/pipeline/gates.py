"""Gates 3 and 4 on a whole model, in the job's children: the one sequence every whole-model candidate takes
(a combination of replaced kernels from the waterfall, or a rewritten graph)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from kernelopt.core.timing import Timing, merge_timings
from kernelopt.pipeline.context import JobContext
from kernelopt.verify.gate4_perf import MORE_ROUNDS, check_performance, needs_more_rounds
from kernelopt.verify.result import GateResult
from kernelopt.verify.stitched_model import StitchedRequest, gate3_stitched, time_stitched


@dataclass
class ModelVerdict:
    gate3: GateResult
    gate4: Optional[GateResult] = None  # None: Gate 3 failed, or no GPU to time on
    timing: Optional[Timing] = None

    @property
    def passed(self) -> bool:
        return self.gate3.passed and self.gate4 is not None and self.gate4.passed


def gates_3_4(ctx: JobContext, req: StitchedRequest, gamma: float, timed: bool = True) -> ModelVerdict:
    """Gate 3 (against eager, float64 fallback), then Gate 4 (interleaved timing; more rounds when the first
    five cannot tell). `timed=False` stops after Gate 3 (no GPU: no speed is measured)."""
    g3 = ctx.child(gate3_stitched, req, limit_s=600, what="Gate 3")
    if not g3.passed or not timed:
        return ModelVerdict(g3)
    timing = ctx.child(time_stitched, req, limit_s=600, what="Gate 4 timing")
    g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
    if needs_more_rounds(g4):  # too noisy to tell from 5 rounds: measure more, decide on all of them
        more = ctx.child(time_stitched, dataclasses.replace(req, rounds=MORE_ROUNDS), limit_s=600,
                         what="Gate 4 timing (more rounds)")
        timing = merge_timings(timing, more)
        g4 = check_performance(timing.rounds["baseline"], timing.rounds["candidate"], gamma)
    return ModelVerdict(g3, g4, timing)


def gate3_text(metrics: dict) -> str:
    """Gate 3's branch, with rho where that branch computed one (no 'rho None' in a report)."""
    rho = metrics.get("rho")
    return f"{metrics.get('branch')}, rho {rho:.3g}" if rho is not None else str(metrics.get("branch"))
