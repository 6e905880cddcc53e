"""Bad: never returns."""
import time


def run(in_ptr0, out_ptr0, xnumel, stream=None):
    while True:
        time.sleep(0.05)
