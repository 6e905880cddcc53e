"""What a child prints reaches this process's log as data: escaped, prefixed with whose it is, bounded.

A child's stdout and stderr (submitted code, generated kernels, the compiler) are read through one pipe and
written to this process's stderr one line at a time, each line prefixed `[<label> pid N] ` and its control
characters escaped, so no child can write a line that reads as the service's own (a forged "job …:
succeeded" record, terminal escapes, a carriage return over a prefix). Lines are cut at `MAX_LINE` characters
and a child's output at `MAX_BYTES`; the rest is read and dropped, so a child never blocks on a full pipe.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import IO, Callable, Optional

#: the label of this process's children in its log (the worker sets it to the job's id for a job's orchestrator)
LABEL_ENV = "KERNELOPT_LOG_LABEL"
MAX_LINE = 2000  # characters of one line
MAX_BYTES = 1 << 20  # of one child's output


def escape(text: str) -> str:
    """`text` with every control character (newlines, carriage returns, escapes) written as `\\xNN`."""
    return "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in text)


def label(pid: int, env: Optional[dict] = None) -> str:
    """`<label> pid N`: the label the child was started with (its environment's LABEL_ENV), else this
    process's, else "child"."""
    return f"{(env or {}).get(LABEL_ENV) or os.environ.get(LABEL_ENV) or 'child'} pid {pid}"


def forward(stream: IO[bytes], prefix: str, write: Optional[Callable[[str], None]] = None) -> threading.Thread:
    """Read `stream` to its end on a daemon thread, writing each line (escaped, prefixed) with `write`
    (this process's stderr by default)."""
    out = write or _stderr

    def run() -> None:
        seen = dropped = 0
        try:
            while True:
                raw = stream.readline(MAX_LINE * 4)
                if not raw:
                    break
                if seen >= MAX_BYTES:
                    dropped += len(raw)
                    continue
                seen += len(raw)
                text = raw.decode("utf-8", "replace").rstrip("\n")
                cut = "…" if len(text) > MAX_LINE else ""
                out(f"[{prefix}] {escape(text[:MAX_LINE])}{cut}\n")
            if dropped:
                out(f"[{prefix}] ({dropped} more bytes of output dropped: over {MAX_BYTES} bytes)\n")
        except (OSError, ValueError):
            pass  # the pipe closed under us: the child is gone
        finally:
            stream.close()

    thread = threading.Thread(target=run, name=f"output {prefix}", daemon=True)
    thread.start()
    return thread


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
