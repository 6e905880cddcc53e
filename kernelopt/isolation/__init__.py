"""The one place that starts child processes: each in the sandbox (isolation.sandbox)."""
from kernelopt.isolation.child import (
           ChildError,
           ChildErrorKind,
           ChildSession,
           in_job_threads,
           job_sandbox,
           kill_tree,
           run_in_child,
           sandbox_layers,
)
from kernelopt.isolation.sandbox import Layer, Layers

__all__ = ["ChildError", "ChildErrorKind", "ChildSession", "Layer", "in_job_threads", "Layers", "job_sandbox", "kill_tree",
           "run_in_child", "sandbox_layers"]
