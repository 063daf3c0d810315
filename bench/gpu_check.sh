#!/usr/bin/env bash
# The device check of the GPU path, in one run on a CUDA machine (writes under $OUT, or ./gpu-out):
# the GPU tests, the fold stack against fold by fold (bench/fold_stack.py, with a probe of the
# largest K), and the default cnn3 job through the service (bench/gpu_job.py --defaults).
# Service dependencies missing there can come as wheels in .whl/ (installed to /tmp/site).
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD:$PWD/clients/python
else
  export PYTHONPATH=$PWD:$PWD/clients/python
fi
export PYTHONUNBUFFERED=1
nvidia-smi -L; python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"
step() { echo "== $1 $(date +%T)"; }
step tests
[ -n "${SKIP_TESTS:-}" ] || timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -o addopts="" \
  tests/metro/test_trainer.py tests/metro/test_models.py tests/metro/search/test_fold_stack.py \
  2>&1 | tail -5
step fold-stack
timeout 150 python3 bench/fold_stack.py --epochs ${EPOCHS:-10} --k-probe ${K_PROBE:-105,210,420,840} \
  --out "$OUT/fold-stack.json" 2>&1 | tail -12
step fold-stack-mlp
timeout 60 python3 bench/fold_stack.py --model mlp --n 50000 --epochs 20 \
  --out "$OUT/fold-stack-mlp.json" 2>&1 | tail -4
step default-job
timeout 285 python3 bench/gpu_job.py --defaults --timeout-s 275 --out "$OUT/gpu-job-defaults.json" \
  --server-log "$OUT/server-defaults.log" 2>&1 | tail -8
step end
