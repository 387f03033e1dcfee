#!/usr/bin/env bash
# One device session: make gpu-check (throughput, MFU, memory) and the block / trainer benchmarks on CUDA.
# Run through the device tool on 2026-11-30 (one H200, torch 2.11.0+cu130). The three gpu-check models skipped
# past the budget were measured in a second call with gpu_check.measure (gpu_check_rest.txt).
set -o pipefail
export PYTHONPATH=$PWD/lib PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch,sys;print(sys.version.split()[0], torch.__version__, torch.version.cuda)"; } 2>&1 | tee $OUT/device.txt
timeout 330 make gpu-check PY=python3 STAMP= GPU_CHECK_FLAGS="--steps 150 --budget-s 200" 2>&1 | tee $OUT/gpu_check.txt
timeout 60 python3 -m attnlab.tools.trainer_bench --device cuda 2>&1 | tee $OUT/trainer_bench.txt
timeout 90 python3 - <<'PY' 2>&1 | tee $OUT/block_bench.txt
import time, pandas as pd
from attnlab.papers import xsa, sd_routing
pd.set_option("display.width", 200)
t = time.perf_counter()
f = xsa.configure(scale="gpu", device="cuda").block_costs()
p = f.pivot_table(index=["d_model", "seq_len"], columns="kind", values=["time_ms", "memory_mib"])
p[("ratio", "time")] = p[("time_ms", "xsa")] / p[("time_ms", "sa")]
p[("ratio", "memory")] = p[("memory_mib", "xsa")] / p[("memory_mib", "sa")]
print("XSA Fig. 2 block, bf16, batch 8:"); print(p.round(3).to_string()); print(f"{time.perf_counter()-t:.0f} s")
t = time.perf_counter()
b = sd_routing.configure(scale="gpu", device="cuda").benchmark()
print("S-D block cost, bf16:"); print(b.pivot_table(index=["size", "seq_len"], columns="kind", values=["time_ms", "time / SA", "memory / SA"]).round(3).to_string()); print(f"{time.perf_counter()-t:.0f} s")
PY
