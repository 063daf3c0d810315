#!/usr/bin/env bash
# The device check of the GPU path, on a CUDA machine, in stages (STAGES, default all of them);
# logs and JSON under $OUT (or ./gpu-out), a stage's time bounded by what is left of BUDGET_S:
#   kernel  the Triton grouped-convolution tests (against float64; determinism)
#   steps   bench/gpu.py --steps-only: the SGD step per stacking, each of the two timed twice,
#           and a kernel profile (a quick look before the long stages)
#   gpu     bench/gpu.py: the step variants, the profile, the 21-lambda 100-epoch search eager
#           and compiled, the plain loop at lambda* (3 seeds)
#   fresh   the same search as the first work of a fresh process (compiled), reusing the
#           caches the earlier stages filled: what a restarted worker pays
#   job     the default cnn3 job through the service (bench/gpu_job.py --defaults)
#   tests   the other GPU tests
# Service dependencies missing there can come as wheels in .whl/ (installed to /tmp/site).
set -uo pipefail
OUT=${OUT:-gpu-out}
STAGES=${STAGES:-kernel gpu fresh job tests}
BUDGET_S=${BUDGET_S:-570}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD:$PWD/clients/python
else
  export PYTHONPATH=$PWD:$PWD/clients/python
fi
export PYTHONUNBUFFERED=1
# One place for what torch.compile and Triton build, shared by every stage and process, as a
# worker's Settings.compile_cache_dir keeps it across restarts.
export TORCHINDUCTOR_CACHE_DIR=/tmp/metro-cache/inductor TRITON_CACHE_DIR=/tmp/metro-cache/triton
nvidia-smi -L; python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
left() { echo $((BUDGET_S - SECONDS)); }
# stage NAME MAX_S COMMAND...: run when asked and when at least 20 s are left, for at most
# MAX_S seconds or what is left.
stage() {
  local name=$1 max=$2; shift 2
  [[ " $STAGES " == *" $name "* ]] || return 0
  local t=$(( $(left) < max ? $(left) : max ))
  if (( t < 20 )); then echo "== $name skipped (budget)"; return 0; fi
  echo "== $name $(date +%T) (at most ${t}s)"
  timeout "$t" "$@" 2>&1 | tee "$OUT/$name.log" | tail -${TAIL:-6}
  echo "== $name rc=${PIPESTATUS[0]} after ${SECONDS}s"
}
PYTEST=(python3 -m pytest -q -p no:cacheprovider -m gpu -o addopts=)
stage kernel 130 "${PYTEST[@]}" tests/metro/test_grouped_conv.py
STEP_VARIANTS=grouped/split,grouped/split-again,triton,triton-again,triton-conv,triton/split
stage steps 80 python3 bench/gpu.py --steps-only --variants "$STEP_VARIANTS" --budget-s 60 \
  --out "$OUT/steps.json"
stage gpu 250 python3 bench/gpu.py --budget-s 230 \
  --variants "$STEP_VARIANTS,triton-compile,grouped/split-compile" \
  --out "$OUT/gpu.json"
stage fresh 70 python3 bench/gpu.py --fresh-search compiled --out "$OUT/fresh.json"
stage job 140 python3 bench/gpu_job.py --defaults --timeout-s 135 --out "$OUT/job.json" \
  --server-log "$OUT/server.log"
stage tests 80 "${PYTEST[@]}" tests/metro/test_trainer.py tests/metro/test_models.py \
  tests/metro/search/test_fold_stack.py tests/metro/search/test_class_stack.py
echo "== end after ${SECONDS}s"
