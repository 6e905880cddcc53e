#!/usr/bin/env bash
# `kernelopt bench` on a lent GPU machine, packed for the trip back.
#
#   benchmarks/device_bench.sh NAME SECONDS [kernelopt bench options...]
#
# Runs the bench over benchmarks/problems (or $KERNELOPT_BENCH_PROBLEMS) into runs/NAME, stopping it after
# SECONDS (the report is rewritten after every problem, so a stopped bench keeps
# what it finished), then packs runs/NAME into $OUT/NAME.tgz (reports, kernels,
# events; no tensors) and copies bench.md and the log beside it: the device tool
# returns at most 8 files.
# Given `--expect BENCH_JSON` (an earlier run's times), the bench also gets `--stop-after SECONDS-20`: it
# starts no problem it does not expect to finish in time, so no device time goes to a problem killed half-way
# (bench.md lists what it left for --resume); without it, a problem is expected to take its whole time limit.
# Leave the device call 60 s more than SECONDS (set-up before, the kill and the
# packing after). Should it overrun anyway, what is under $OUT still comes back:
# the archive is re-packed after every finished problem (bench.json rewritten),
# written in runs/ and moved, so a call cut off mid-pack returns the previous one.
# Given `--resume`, runs/NAME/bench.json must be there: a device call whose carry missed it (the device tool
# says `not_carried`, after the call) would otherwise start the run afresh and spend its time on rows already
# measured (it did once: 140 s). To begin a run, leave --resume out.
set -uo pipefail
name=$1; seconds=$2; shift 2
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-runs/out}
mkdir -p "$OUT"
deadline=(); resume=""
for arg in "$@"; do
  [ "$arg" = --expect ] && deadline=(--stop-after "$((seconds > 40 ? seconds - 20 : seconds))")
  [ "$arg" = --resume ] && resume=1
done
if [ -n "$resume" ] && [ ! -s "runs/$name/bench.json" ]; then
  echo "device_bench: --resume, but runs/$name/bench.json is not here (was runs/$name carried?); nothing ran." \
    "Leave --resume out to begin a run." | tee "$OUT/$name.log" >&2
  exit 2
fi
mkdir -p "runs/$name"
pack() {
  # no tensors, and no sandbox HOME or compile caches (isolation.sandbox.SANDBOX_DIRS): a finished job
  # removes them, but the job in flight when the bench stops has them (58 MiB once, past the device
  # tool's 64 MiB carry when the run was carried back to resume it)
  tar czf "runs/.$name.tgz.part" --exclude='*.pt' --exclude='*.safetensors' --exclude='.home' --exclude='.cache' \
    -C runs "$name" &&
    mv -f "runs/.$name.tgz.part" "$OUT/$name.tgz"
  cp "runs/$name/bench.md" "$OUT/$name.md" 2>/dev/null || true
}
# The packer starts before the marker below is set (the kill by marker leaves it alone)
# and stops at the stop file, after the pack in hand.
stop="runs/.$name.stop"; rm -f "$stop"
( packed=""; while [ ! -e "$stop" ]; do
    sleep 2; now=$(stat -c %Y "runs/$name/bench.json" 2>/dev/null) || continue
    [ "$now" != "$packed" ] && pack && packed=$now
  done ) &
packer=$!
# Every process of this bench inherits the marker; a stopped bench's job children
# (orphaned, in process groups of their own) are found by it and nothing else is.
export KERNELOPT_BENCH_RUN="$name.$$"
# Into the log file, not through a pipe: the stopped bench's orphans keep their stdout open, and a
# pipeline (`| tee`) waits for every writer, so the kill below would come only when the job in flight
# had finished on its own (a device call overran its limit that way). The log is printed afterwards.
timeout -k 10 "$seconds" scripts/kernelopt bench "${KERNELOPT_BENCH_PROBLEMS:-benchmarks/problems}" \
  --out "runs/$name" "${deadline[@]}" "$@" > "$OUT/$name.log" 2>&1
for pid in $(grep -l -a -s "KERNELOPT_BENCH_RUN=$KERNELOPT_BENCH_RUN" /proc/[0-9]*/environ | cut -d/ -f3); do
  [ "$pid" != "$$" ] && kill -9 "$pid" 2>/dev/null
done
touch "$stop"; wait "$packer"; rm -f "$stop"
pack
cat "$OUT/$name.log"
