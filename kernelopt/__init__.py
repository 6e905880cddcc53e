"""KernelOPT, installed as one namespace: `kernelopt.load`, `kernelopt.compiled`, … `kernelopt.migrations`.

The checkout keeps the pipeline's top-level folders (load/, compiled/, profiling/, search/,
verify/, pipeline/, …; see docs/architecture.md). There this package's search path also
holds the checkout's root, so `kernelopt.compiled` is compiled/; installed, every folder is a
real subpackage under site-packages/kernelopt/ and nothing else is put at the top level.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

# The checkout this runs from, or None when installed (the stages are then beside this file).
CHECKOUT: Path | None = None if (_HERE / "isolation").is_dir() else _HERE.parent
if CHECKOUT is not None:
    __path__.append(str(CHECKOUT))  # noqa: F821 (a package's __path__)

# The directory that must be on a child's PYTHONPATH for `import kernelopt` to work there.
IMPORT_ROOT: Path = _HERE.parent

# The embedded default problems of `kernelopt optimize` (package data, present when installed).
EXAMPLES: Path = _HERE / "examples"
