"""The engine fingerprint a bench row records (pipeline/provenance.py), and the report of a mixed run."""
import os
import subprocess
import sys
from pathlib import Path

from kernelopt.pipeline.bench import summarize
from kernelopt.pipeline.device import probe_device
from kernelopt.pipeline.provenance import engine_fingerprint

REPO = Path(__file__).resolve().parent.parent


def test_the_fingerprint_is_the_engine_source_wherever_it_is_computed(tmp_path):
    fp = engine_fingerprint()
    assert len(fp) == 12 and int(fp, 16) >= 0
    # another process, another working directory: the same source, the same fingerprint
    env = dict(os.environ, PYTHONPATH=str(REPO))
    other = subprocess.run([sys.executable, "-c", "from kernelopt.pipeline.provenance import engine_fingerprint as f;"
                            " print(f())"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == fp


def _row(problem: str, engine: str | None) -> dict:
    row = {"problem": problem, "level": "level1", "name": problem, "wall_s": 10.0,
           "result": {"outcome": "fallback", "cause": "near-optimal: x", "speedup": 1.0}}
    if engine:
        row["engine"] = engine
    return row


def test_a_run_whose_rows_come_from_two_engines_says_so():
    info = probe_device()
    one = summarize([_row("a.py", "aaaaaaaaaaaa"), _row("b.py", "aaaaaaaaaaaa")], 20.0, 1, info)
    assert "Engine source: aaaaaaaaaaaa (pipeline.provenance fingerprint)." in one["text"]
    mixed = summarize([_row("a.py", "aaaaaaaaaaaa"), _row("b.py", "bbbbbbbbbbbb"), _row("c.py", None)], 30.0, 1, info)
    assert mixed["engines"] == {"aaaaaaaaaaaa": 1, "bbbbbbbbbbbb": 1, "unrecorded": 1}
    assert "Engine source: MIXED — the rows come from 3 engines (aaaaaaaaaaaa: 1 row(s), bbbbbbbbbbbb: 1 row(s), " \
           "unrecorded: 1 row(s)); compare rows of one engine only." in mixed["text"]
