#!/usr/bin/env bash
# What a lent GPU machine lacks, packed to be carried there (run here, once per checkout):
#
#   benchmarks/device_carry.sh          # then: run(carry=[".whl", ".gpu-in"], command="source .gpu-in/setup.sh; ...")
#
# - .gpu-in/*.deb: bubblewrap and libcap2 (the sandbox; the GPU image has no bwrap);
# - .whl/: the `llm` generator's client (openai and its dependencies) as cp312 manylinux wheels, at the
#   versions this checkout's .venv runs (the GPU image's python is 3.12 and has no registry), and cuDNN's
#   frontend (benchmarks/conv_cudnn_fusion.py);
# - .gpu-helion/: helion and what it imports (cp312 wheels, 50 MB), installed into the machine's python where
#   carried: carry it instead of .whl for Helion runs (the tree, .whl and it pass the 64 MiB a call carries);
# - .gpu-in/setup.sh, sourced first on the machine: unpacks them and puts the llm wheels on PYTHONPATH.
# Both folders are ignored by git (.gitignore, .git/info/exclude).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/bootstrap
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p .gpu-in .whl "$(dirname "$exclude")"
grep -qx '/.gpu-in/' "$exclude" 2>/dev/null || echo '/.gpu-in/' >> "$exclude"
grep -qx '/.gpu-helion/' "$exclude" 2>/dev/null || echo '/.gpu-helion/' >> "$exclude"
(cd .gpu-in && apt-get download -q bubblewrap libcap2 2>/dev/null)
pins=$(.venv/bin/python -m pip freeze 2>/dev/null | grep -iE '^(openai|pydantic|pydantic[-_]core|annotated[-_]types|typing[-_]inspection|typing[-_]extensions|distro|jiter|sniffio|httpx2?|httpcore2?|truststore|idna|h11|anyio|certifi)==')
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl $pins 2>&1 | grep -v '^WARNING' || true
# cuDNN's frontend (benchmarks/conv_cudnn_fusion.py, kernels/cudnn_fused.py): its pybind build, which finds the
# libcudnn torch has loaded. Pinned: 1.23 ran fused convolution graphs on the H200 (issue 35); later ones import
# cutlass-dsl and cuda-python at graph build.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  -d .whl "nvidia-cudnn-frontend==${CUDNN_FRONTEND_FOR_GPU:-1.23.0}" 2>&1 | grep -v '^WARNING' || true
# Helion (issue 38) and what it imports, for Helion kernel files: installed into the GPU machine's own python (not
# PYTHONPATH), so the jobs' sandboxed children, whose PYTHONPATH is the checkout, import it too. numpy and torch are
# the GPU image's.
# Pinned: the GPU image runs torch 2.11, and helion 1.5.1's autotuner imports a name torch 2.11 lacks
# (torch._inductor.runtime.triton_compat.IntelGPUError: every Helion job there failed to import, 2026-12-06).
HELION_FOR_GPU=${HELION_FOR_GPU:-1.5.0}
rm -rf .gpu-helion && mkdir -p .gpu-helion
python3 -m pip download -q --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu-helion --no-deps "helion==$HELION_FOR_GPU" filecheck rich markdown-it-py mdurl pygments psutil scikit-learn scipy joblib \
  threadpoolctl 2>&1 | grep -v '^WARNING' || true
cat > .gpu-in/setup.sh <<'SETUP'
# Sourced first in every device call (benchmarks/device_carry.sh made it).
mkdir -p /tmp/debs
for f in .gpu-in/*.deb; do dpkg -x "$f" /tmp/debs; done
cp /tmp/debs/usr/bin/bwrap /usr/local/bin/ 2>/dev/null
cp -a /tmp/debs/lib/x86_64-linux-gnu/libcap* /usr/lib/x86_64-linux-gnu/ 2>/dev/null
ls .whl/*.whl >/dev/null 2>&1 && pip install -q --no-deps --target /tmp/site .whl/*.whl 2>&1 | grep -v -e WARNING -e 'already exists' | tail -2
[ -d .gpu-helion ] && python3 -m pip install -q --no-index --no-deps .gpu-helion/*.whl 2>&1 | grep -v -e WARNING | tail -2
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
SETUP
echo "carry: .gpu-in ($(ls .gpu-in | wc -l) files), .gpu-helion ($(du -sh .gpu-helion | cut -f1)), .whl ($(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1))"
