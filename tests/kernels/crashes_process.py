"""Bad: takes its process down (as an illegal memory access or a CUDA abort would)."""
import os


def run(in_ptr0, out_ptr0, xnumel, stream=None):
    os._exit(134)
