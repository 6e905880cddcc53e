"""The test suite. `TESTS_DIR` is what a test hands a sandboxed child to read when the child runs a function
or a problem file of the suite: the sandbox shows a child only `kernelopt/` and what it is handed."""
from pathlib import Path

TESTS_DIR: tuple[str, ...] = (str(Path(__file__).resolve().parent),)
