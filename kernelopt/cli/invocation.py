"""How the user can run `kernelopt` from where they are, for the commands our hints print.

After the README's set-up the console script lives in `.venv/bin`, which is not on
PATH unless the venv is activated; a hint that says `kernelopt submit ...` would
then fail with "command not found". Hints print this instead.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

# A checkout's wrapper script (absent where the package is installed in site-packages).
CHECKOUT_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kernelopt"


def kernelopt_command() -> str:
    """`kernelopt` if it is on PATH, else this checkout's scripts/kernelopt, else `python -m kernelopt.cli.main`."""
    if shutil.which("kernelopt"):
        return "kernelopt"
    script = CHECKOUT_SCRIPT
    if script.is_file():
        cwd = Path.cwd().resolve()
        return f"./{script.relative_to(cwd)}" if script.is_relative_to(cwd) else str(script)
    return f"{sys.executable} -m kernelopt.cli.main"
