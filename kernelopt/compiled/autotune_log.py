"""What Inductor's max-autotune spent during a capture, read from its own summary lines.

A network's capture is mostly Inductor's autotuning: it times every template choice of every GEMM and convolution
shape against the library call (on an H100, 469 of ResNet-18's 502 s of compile). For each shape Inductor writes
one line to stderr, `... AUTOTUNE benchmarking takes B seconds and P seconds precompiling for N choices`. The
capture child passes its stderr through `AutotuneTee`, which forwards everything and keeps those lines, so that

- a finished capture records the totals (`CapturedGraph.autotune`) and the compile stage says them;
- a capture stopped at the job's limit still leaves them: each line rewrites a small progress file in the work
  directory (`AUTOTUNE_FILE`), which the job reads, as data, into the timeout's cause.

The numbers are the child's own account (it runs the submission's code): they are shown as what Inductor
reported, never used for a verdict, and read back only through `AutotuneSummary.from_dict`.
"""
from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

#: the progress file a capture child keeps in its work directory
AUTOTUNE_FILE = "compile_autotune.json"

_LINE = re.compile(r"AUTOTUNE benchmarking takes ([0-9.]+) seconds and ([0-9.]+) seconds precompiling "
                   r"for (\d+) choices")


@dataclass(frozen=True)
class AutotuneSummary:
    """Inductor's autotune summary lines, added up: shapes tuned, choices timed, the seconds it reported."""

    shapes: int = 0
    choices: int = 0
    benchmarking_s: float = 0.0  # what Inductor calls benchmarking: includes compiling a choice it times
    precompiling_s: float = 0.0
    slowest_shape_s: float = 0.0

    @classmethod
    def of(cls, text: str) -> "AutotuneSummary":
        found = [(float(b), float(p), int(n)) for b, p, n in _LINE.findall(text)]
        return cls(shapes=len(found), choices=sum(n for _, _, n in found),
                   benchmarking_s=round(sum(b for b, _, _ in found), 1),
                   precompiling_s=round(sum(p for _, p, _ in found), 1),
                   slowest_shape_s=round(max((b + p for b, p, _ in found), default=0.0), 1))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> "AutotuneSummary | None":
        """A summary a child wrote, read as data (None when absent or not of this shape)."""
        if not isinstance(data, dict):
            return None
        counts: list[int] = []
        for key in ("shapes", "choices"):
            c = data.get(key)
            if not (isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 10**7):
                return None
            counts.append(c)
        seconds: list[float] = []
        for key in ("benchmarking_s", "precompiling_s", "slowest_shape_s"):
            s = data.get(key)
            if not (isinstance(s, (int, float)) and not isinstance(s, bool) and 0 <= s < 10**7):
                return None
            seconds.append(round(float(s), 1))
        return cls(counts[0], counts[1], seconds[0], seconds[1], seconds[2])

    def describe(self) -> str:
        """'' where nothing was autotuned; else one clause for the compile stage's line."""
        if not self.shapes:
            return ""
        return (f"Inductor's autotuning reported {self.benchmarking_s + self.precompiling_s:.0f} s over "
                f"{self.shapes} shape(s), {self.choices} choices (slowest shape {self.slowest_shape_s:.0f} s)")


class AutotuneTee:
    """`sys.stderr` for the block, forwarded as it is, with Inductor's autotune lines kept (and each one written
    to `progress`, replaced whole, so a child killed mid-compile leaves what it had)."""

    def __init__(self, progress: Path | None = None):
        self.progress = progress
        self.lines: list[str] = []
        self._partial = ""
        self._real: TextIO | None = None
        self._lock = threading.Lock()  # compile threads write too

    def __enter__(self) -> "AutotuneTee":
        if self.progress is not None:  # an earlier compile's account (a retry, a rerun in this directory) is not this one's
            try:
                self.progress.unlink(missing_ok=True)
            except OSError:
                pass
        self._real = sys.stderr
        sys.stderr = self  # type: ignore[assignment]  # Inductor writes through sys.stderr, looked up per call
        return self

    def __exit__(self, *exc: object) -> None:
        if self._real is not None:
            sys.stderr = self._real
        with self._lock:
            rest, self._partial = self._partial, ""
        self._scan(rest + "\n")

    def write(self, text: str) -> int:
        assert self._real is not None
        n = self._real.write(text)
        self._scan(text)
        return n

    def flush(self) -> None:
        if self._real is not None:
            self._real.flush()

    def __getattr__(self, name: str):  # fileno, isatty, encoding...: the real stream's
        return getattr(self._real, name)

    def _scan(self, text: str) -> None:
        with self._lock:
            *complete, partial = (self._partial + text).split("\n")
            self._partial = partial[-4096:]  # a line without an end is never kept whole
            found = [line for line in complete if _LINE.search(line)]
            if not found:
                return
            self.lines.extend(found)
            if self.progress is None:
                return
            try:
                tmp = self.progress.with_name(self.progress.name + ".tmp")
                tmp.write_text(json.dumps(self.summary().to_dict()))
                tmp.replace(self.progress)
            except OSError:  # an account of the compile is never worth failing it
                pass

    def summary(self) -> AutotuneSummary:
        return AutotuneSummary.of("\n".join(self.lines))
