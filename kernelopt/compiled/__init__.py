"""The compiled model: capture Inductor's output module, decompose it, re-stitch it."""
