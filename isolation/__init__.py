"""The one place that starts child processes for stages that touch a GPU or run untrusted code."""
from isolation.child import ChildError, ChildSession, kill_tree, run_in_child

__all__ = ["ChildError", "ChildSession", "kill_tree", "run_in_child"]
