#!/usr/bin/env bash
# One device call for issues 36 and 38: the adversarial candidates on a CUDA capture, then the Helion suite.
#
#   benchmarks/device_carry.sh      # here, once (writes .gpu-in/ and .gpu-helion/)
#   run(carry=[".gpu-in", ".gpu-helion"], command="benchmarks/gpu_verdicts_helion.sh 560")
#
# SECONDS bounds the whole command. The forged-verdict tests take about 140 s on an H200 (FORGED_S=0 skips
# them). The Helion suite gets what is left. Each kernel takes its job's time to result (88-96 s on an H100 for
# softmax and add, under budgets of 200 s and 130 s: benchmarks/results/2026-12-07-h100-helion-mingpt; JOB_S,
# default 150 s, bounds it), Helion's autotune cap (AUTOTUNE_S, default 60 s, at AUTOTUNE_EFFORT=quick: a quick one
# did not finish in 45 s on softmax, a full one not in 60 s on add) and about 15 s of side-by-side timing: up to
# about 225 s a kernel, so the six take three calls:
#   ... command="HELION_ONLY=add benchmarks/gpu_verdicts_helion.sh 560"
#   ... command="FORGED_S=0 HELION_ONLY=softmax,layer_norm benchmarks/gpu_verdicts_helion.sh 560"
#   ... command="FORGED_S=0 HELION_ONLY=matmul,attention benchmarks/gpu_verdicts_helion.sh 560"
#   ... command="FORGED_S=0 HELION_ONLY=gemm_bias_relu benchmarks/gpu_verdicts_helion.sh 300"
# The suite writes its table after every kernel, so a cut run keeps what it finished.
# A full autotune (minutes a kernel) gets a call of its own; HELION_ARGS passes helion_suite.py's options:
#   ... command="FORGED_S=0 AUTOTUNE_EFFORT=full AUTOTUNE_S=520 HELION_ONLY=matmul HELION_ARGS=--skip-job \
#                benchmarks/gpu_verdicts_helion.sh 560"
# and a later call (its helion_suite.json committed under benchmarks/results/) times it next to the job's config:
#   ... HELION_ARGS="--reuse benchmarks/results/<run>/helion_suite.json" ...
# Or Helion's full-effort search given each kernel's job time to result as its own budget (it returns its best
# config so far when spent), the earlier call's jobs reused: about 110 s a kernel, three kernels a call:
#   ... command="FORGED_S=0 AUTOTUNE_EFFORT=full AUTOTUNE_S=240 HELION_ONLY=matmul,gemm_bias_relu,attention \
#                HELION_ARGS='--skip-job --autotune-budget-s job --reuse benchmarks/results/<run>/helion_suite.json' \
#                benchmarks/gpu_verdicts_helion.sh 560"
set -uo pipefail
seconds=${1:-560}
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/out}
mkdir -p "$OUT"
[ -f .gpu-in/setup.sh ] && source .gpu-in/setup.sh 2>/dev/null
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import importlib.metadata as m, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'helion', m.version('helion'))"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
[ "${FORGED_S:-170}" -gt 0 ] && timeout "${FORGED_S:-170}" python3 -m pytest -p no:cacheprovider --gpu -v -rs --durations=10 -k cuda \
  tests/test_forged_verdicts.py > "$OUT/forged_cuda.log" 2>&1
tail -2 "$OUT/forged_cuda.log" 2>/dev/null
left=$((seconds - 15 - SECONDS))
[ "$left" -gt 60 ] && timeout "$left" python3 benchmarks/helion_suite.py --out "$OUT/helion" --work /tmp/helion_suite \
  --job-s "${JOB_S:-150}" --autotune-s "${AUTOTUNE_S:-60}" --autotune-effort "${AUTOTUNE_EFFORT:-quick}" ${HELION_ONLY:+--only "$HELION_ONLY"} ${HELION_ARGS:-} > "$OUT/helion_suite.log" 2>&1
cat "$OUT/helion/helion_suite.md" 2>/dev/null
tar czf "$OUT/helion_jobs.tgz" -C /tmp/helion_suite --exclude='*.pt' --exclude='.cache' --exclude='.home' . 2>/dev/null
true
