#!/usr/bin/env bash
# The untrusted boundary on a lent GPU machine (issue 36): the sandbox's layers as the GPU machine gives them,
# the sandbox and adversarial-candidate tests with CUDA, then real jobs through the gates.
#
#   benchmarks/device_carry.sh      # here, once
#   run(carry=[".gpu-in", ".whl"], command="source .gpu-in/setup.sh; benchmarks/gpu_boundary.sh 300 level2/01,level2/02")
#
# SECONDS bounds the bench part; the tests take about two minutes before it.
set -uo pipefail
seconds=$1; only=$2
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r; bwrap --version
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  python3 -m kernelopt.isolation.sandbox; } > "$OUT/layers.txt" 2>&1
python3 -m pytest -p no:cacheprovider -q -rs tests/test_sandbox.py tests/test_syscall_filter.py \
  tests/test_isolation.py tests/test_forged_verdicts.py > "$OUT/pytest.txt" 2>&1
tail -3 "$OUT/pytest.txt"
benchmarks/device_bench.sh boundary "$seconds" --only "$only" --time-limit 150 --precision strict
