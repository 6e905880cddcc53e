"""The one place that starts child processes for stages that touch a GPU or run untrusted code."""
from isolation.child import ChildError, ChildSession, run_in_child

__all__ = ["ChildError", "ChildSession", "run_in_child"]
