#!/usr/bin/env bash
# The service end to end on a GPU machine: the embedded server (`kernelopt serve`:
# SQLite, in-process dispatcher, one slot per visible GPU) and one
# `kernelopt submit FILE --wait --download DIR` per problem, all at once.
#
#   benchmarks/serve_submit_check.sh [PROBLEM.py ...]
#
# Default problems: two of the suite that optimize on an H200. With two GPUs the
# two jobs run at once, one per GPU: compare their start and end times in the
# log. Logs, reports and the server log land in $OUT (default runs/serve-check).
# On a machine without the web packages (the GPU box), carry them as wheels and
# name their folder in WHEELS=.whl: they are installed into a private folder first.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/serve-check}
mkdir -p "$OUT"
problems=("$@")
[ ${#problems[@]} -gt 0 ] || problems=(benchmarks/problems/level1/07_layer_norm.py
                                       benchmarks/problems/level2/09_matmul_scale_residual_clamp_lse_mish.py)
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/kernelopt-site "$WHEELS"/*.whl \
    && export PYTHONPATH=/tmp/kernelopt-site${PYTHONPATH:+:$PYTHONPATH} || exit 1
fi
export PYTHONUNBUFFERED=1 KERNELOPT_DATA_DIR=$(mktemp -d)
port=${PORT:-8077}
scripts/kernelopt serve --port "$port" > "$OUT/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 1; done
export KERNELOPT_URL=http://127.0.0.1:$port
KERNELOPT_API_KEY=$(grep -o 'KERNELOPT_API_KEY=[^ ]*' "$OUT/serve.log" | head -1 | cut -d= -f2)
export KERNELOPT_API_KEY
pids=()
for i in "${!problems[@]}"; do
  (echo "start $(date +%T) ${problems[$i]}"
   scripts/kernelopt submit "${problems[$i]}" --wait --download "$OUT/job$i"
   echo "exit $? at $(date +%T)") > "$OUT/submit$i.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
for i in "${!problems[@]}"; do
  echo "== ${problems[$i]}"; grep -E "^start|succeeded|failed|downloaded|^exit" "$OUT/submit$i.log"
done
exit $status
