#!/usr/bin/env bash
# repro on one NVIDIA GPU with the host's own PyTorch: install, capture the stack, benchmark, compare with a plain
# PyTorch loop, print one summary. For a machine with a GPU, PyTorch, Python 3.12, no network and no Docker.
#
#   scripts/device-check.sh --build-wheelhouse   # HERE, with network: repro and its pure-Python dependencies for
#                                                 # Python 3.12 into dist/device-wheelhouse (ignored; ~10 MiB)
#   scripts/device-check.sh [--cpu] [--dry-run] [--no-install] [--work DIR] [--python PY]   # THERE
#
# There it (1) installs repro from dist/device-wheelhouse with pip --no-index into DIR/site, (2) writes the stack
# of this host's software with `repro capture` (or, without that command, from torch's own report), (3) runs
# `repro bench --runtime host` with torch_cnn (ResNet-50, batch 64, fp32 and bf16, 3 repeats), (4) runs the plain
# PyTorch loop of bench/torch_peer.py with the same model, batch and precision (2 repeats each), then torch_allreduce
# (nccl with 1 rank: MLBench's sizes; gloo with 2 ranks on CPU tensors, up to 1e7 elements), and (5) prints one
# summary (images/sec per precision, the ratio to the plain loop, lm's tokens/sec, MFU and peak memory with llama3-1b
# shapes in bf16 and its ratio to bench/lm_peer.py's plain loop, the all-reduce figures, the GPU facts the records
# hold), also written to DIR/summary.json. Estimated 5-6 minutes on an H100 (lm not yet run on one).
# --cpu runs the same steps small (ResNet-20, the tiny lm, gloo only) on a machine without a GPU, to check the script;
# --dry-run prints the commands instead of running them; --no-install uses repro from this checkout instead of the
# wheelhouse (whose wheels are for Python 3.12).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WHEELHOUSE=${REPRO_WHEELHOUSE:-$ROOT/dist/device-wheelhouse}
WORK=${REPRO_DEVICE_WORK:-/tmp/repro-device-check}
PY=${REPRO_PYTHON:-python3}
MODE=gpu
DRY=0
BUILD=0
INSTALL=1
# repro's runtime dependencies (pyproject's `dependencies`) and theirs, at the versions of the environment that
# builds the wheelhouse; numpy is left out: the device machine has its own, which torch was built against.
DEPS=(pyyaml pydantic pydantic-core annotated-types typing-extensions typing-inspection tabulate packaging rich
      markdown-it-py mdurl pygments argcomplete hpccm archspec six)

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-wheelhouse) BUILD=1 ;;
    --cpu) MODE=cpu ;;
    --dry-run) DRY=1 ;;
    --no-install) INSTALL=0 ;;
    --work) WORK=$2; shift ;;
    --python) PY=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "device-check: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[device-check %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
run() {  # a command, shown; run unless --dry-run
  printf '+ %s\n' "$*" >&2
  [ "$DRY" = 1 ] || "$@"
}

if [ "$BUILD" = 1 ]; then
  BUILDER=${REPRO_BUILD_PYTHON:-$ROOT/.venv/bin/python}
  [ -x "$BUILDER" ] || BUILDER=python3
  pins=()
  for name in "${DEPS[@]}"; do
    version=$("$BUILDER" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")
    pins+=("$name==$version")
  done
  run mkdir -p "$WHEELHOUSE"
  run "$BUILDER" -m pip download --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
    --abi abi3 --abi none --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any --no-deps -d "$WHEELHOUSE" "${pins[@]}"
  run "$BUILDER" -m pip wheel --no-deps --no-build-isolation -w "$WHEELHOUSE" "$ROOT"
  [ "$DRY" = 1 ] || log "wheelhouse: $(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1)"
  exit 0
fi

began=$(date +%s)
SITE=$WORK/site
STORE=$WORK/store
STACK=$WORK/device-host.yaml
INVENTORY=$WORK/inventory
mkdir -p "$WORK"
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "device-check: $PY cannot import torch (set --python or REPRO_PYTHON)" >&2
  exit 2
fi
gpus=$("$PY" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)')
if [ "$MODE" = gpu ] && [ "$gpus" = 0 ] && [ "$DRY" = 0 ]; then
  echo "device-check: no CUDA GPU visible to $PY's torch; use --cpu to check the script without one" >&2
  exit 2
fi

# 1. repro and its dependencies, from the wheelhouse only (no network)
if [ "$INSTALL" = 1 ]; then
  log "installing repro from $WHEELHOUSE into $SITE"
  if [ "$DRY" = 0 ] && ! compgen -G "$WHEELHOUSE/repro-*.whl" >/dev/null; then
    echo "device-check: no repro wheel in $WHEELHOUSE; build it with scripts/device-check.sh --build-wheelhouse" >&2
    exit 2
  fi
  run rm -rf "$SITE"
  run "$PY" -m pip install --disable-pip-version-check -q --no-index --no-deps --target "$SITE" "$WHEELHOUSE"/*.whl
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
else
  log "using repro from $ROOT"
  export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
fi
REPRO=("$PY" -m repro)

# 2. the stack this host has
log "capturing this host's stack into $STACK"
if [ "$DRY" = 1 ] || "${REPRO[@]}" capture --help >/dev/null 2>&1; then
  run "${REPRO[@]}" capture --framework pytorch --name device-host --output "$STACK" --force
else  # a repro without `repro capture`: the stack from torch's own report
  log "this repro has no capture command: writing the stack from torch's report"
  "$PY" - "$STACK" <<'EOF'
import platform, sys, torch
cuda = torch.version.cuda
lines = [f"description: this host as found ({platform.node()})",
         "os: {distro: ubuntu, version: \"24.04\"}", f"python: \"{platform.python_version().rsplit('.', 1)[0]}\"",
         "pytorch:", f"  version: \"{torch.__version__.split('+')[0]}\"",
         f"  variant: {'cu' + cuda.replace('.', '') if cuda else 'cpu'}"]
if cuda:
    lines.insert(2, f"cuda: \"{cuda}\"")
open(sys.argv[1], "w").write("\n".join(lines) + "\nbenchmark: {workload: torch_cnn}\n")
EOF
fi

# this host as an inventory: two slots (gloo with 2 ranks), its GPUs, the loopback interface, this Python
run mkdir -p "$INVENTORY"
[ "$DRY" = 1 ] || cat > "$INVENTORY/hosts.yml" <<EOF
all:
  children:
    workers:
      hosts:
        localhost:
          ansible_connection: local
          repro_slots: 2
          repro_gpus: $gpus
          repro_interface: lo
          repro_python: $PY
EOF

if [ "$MODE" = gpu ]; then
  MODEL=resnet50; BATCH=64; WARMUP=10; STEPS=50; REPEATS=3; PEER_REPEATS=2
  LM_MODEL=llama3-1b; LM_BATCH=2; LM_SEQ=2048; LM_PRECISION=bf16; LM_STEPS=15; LM_REPEATS=2
  NCCL_SIZES=(--large-bytes 67108864 --large-iterations 20)
  GLOO_SIZES=(--max-exp 7 --num 29 --iterations 20 --large-bytes 4194304 --large-iterations 5)
else
  MODEL=resnet20; BATCH=16; WARMUP=2; STEPS=6; REPEATS=2; PEER_REPEATS=1
  LM_MODEL=tiny; LM_BATCH=2; LM_SEQ=64; LM_PRECISION=fp32; LM_STEPS=4; LM_REPEATS=1
  GLOO_SIZES=(--sizes "1,1000,100000" --iterations 5)
fi
BENCH=("${REPRO[@]}" bench --stack "$STACK" --hosts "$INVENTORY" --runtime host --launcher torchrun --store "$STORE")

# 3. torch_cnn, both precisions in one sweep (one software check of the host); 4. the plain loop, right after
log "torch_cnn $MODEL batch $BATCH fp32 and bf16: $REPEATS repeats each"
run "${BENCH[@]}" --workload torch_cnn --workers 1 --model "$MODEL" --batch-size "$BATCH" --precision fp32,bf16 \
  --warmup-steps "$WARMUP" --steps "$STEPS" --repeats "$REPEATS" || log "torch_cnn failed"
PEER=()
for precision in fp32 bf16; do
  log "plain PyTorch loop $MODEL batch $BATCH $precision: $PEER_REPEATS repeats"
  out=$WORK/peer-$precision.txt
  run "$PY" "$ROOT/bench/torch_peer.py" --side plain --workers 1 --model "$MODEL" --batch-size "$BATCH" \
    --precision "$precision" --warmup-steps "$WARMUP" --steps "$STEPS" --repeats "$PEER_REPEATS" | tee "$out" \
    || log "plain loop $precision failed"
  PEER+=("$precision=$out")
done

# lm: a Llama-style transformer (llama3-1b shapes, bf16, one GPU), then its plain loop (bench/lm_peer.py)
log "lm $LM_MODEL ${LM_BATCH}x$LM_SEQ tokens $LM_PRECISION: $LM_REPEATS repeats, then the plain loop"
run "${BENCH[@]}" --workload lm --workers 1 --model "$LM_MODEL" --batch-size "$LM_BATCH" --seq-len "$LM_SEQ" \
  --precision "$LM_PRECISION" --warmup-steps "$WARMUP" --steps "$LM_STEPS" --repeats "$LM_REPEATS" || log "lm failed"
LM_PEER=$WORK/peer-lm.txt
run "$PY" "$ROOT/bench/lm_peer.py" --side plain --workers 1 --model "$LM_MODEL" --batch-size "$LM_BATCH" \
  --seq-len "$LM_SEQ" --precision "$LM_PRECISION" --warmup-steps "$WARMUP" --steps "$LM_STEPS" --repeats 1 \
  | tee "$LM_PEER" || log "plain lm loop failed"

# all-reduce: nccl on the GPU with one rank, gloo on CPU tensors with two
if [ "$MODE" = gpu ]; then
  log "torch_allreduce nccl, 1 rank (MLBench task 0.a sizes)"
  # NCCL's own account of the path, one file per process (NCCL_DEBUG_FILE's %h.%p), read back by `repro fabric`
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV NCCL_DEBUG_FILE="$WORK/nccl.%h.%p.log" \
    run "${BENCH[@]}" --workload torch_allreduce --workers 1 --dist-backend nccl "${NCCL_SIZES[@]}" \
    || log "torch_allreduce nccl failed"
  if [ "$DRY" != 1 ]; then
    shopt -s nullglob
    nccl_logs=("$WORK"/nccl.*.log)
    if [ "${#nccl_logs[@]}" -gt 0 ]; then
      log "NCCL facts of the all-reduce run (repro fabric)"
      "$PY" -m repro fabric "${nccl_logs[@]}" || log "repro fabric failed"
    else
      log "no NCCL log files in $WORK (the runtime did not pass NCCL_DEBUG_FILE through)"
    fi
  fi
fi
log "torch_allreduce gloo, 2 ranks"
run "${BENCH[@]}" --workload torch_allreduce --workers 2 --dist-backend gloo --device cpu "${GLOO_SIZES[@]}" \
  || log "torch_allreduce gloo failed"

# 5. one summary
[ "$DRY" = 1 ] && exit 0
"$PY" - "$STORE" "$WORK/summary.json" "$(( $(date +%s) - began ))" "$LM_PEER" "${PEER[@]}" <<'EOF'
import json, os, statistics, sys
from repro.results.store import Store

store, out, elapsed, lm_peer, peers = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
records = [r for r in Store(store).records() if r.status == "ok"]
failed = [f"{r.settings.workload}: {r.failure}" for r in Store(store).records() if r.status != "ok"]
summary = {"elapsed_s": elapsed, "failed": failed, "torch_cnn": {}, "torch_allreduce": {}}
peer = {}
for item in peers:
    precision, path = item.split("=", 1)
    lines = [line for line in open(path) if line.startswith("PEER_RESULT ")]
    peer[precision] = json.loads(lines[-1][len("PEER_RESULT "):]) if lines else None
for precision in ("fp32", "bf16"):
    runs = [r.metrics.get("images_per_sec") for r in records if r.settings.workload == "torch_cnn"
            and r.settings.precision == precision and r.metrics.get("images_per_sec")]
    plain = (peer.get(precision) or {}).get("images_per_sec")
    median = statistics.median(runs) if runs else None
    summary["torch_cnn"][precision] = {"images_per_sec": runs, "median": median, "plain_loop": plain,
                                       "ratio_to_plain": median / plain if median and plain else None}
lm_runs = [r for r in records if r.settings.workload == "lm"]
lm_lines = [line for line in open(lm_peer) if line.startswith("PEER_RESULT ")] if os.path.exists(lm_peer) else []
lm_plain = json.loads(lm_lines[-1][len("PEER_RESULT "):])["tokens_per_sec"] if lm_lines else None
lm_tps = [r.metrics["tokens_per_sec"] for r in lm_runs if r.metrics.get("tokens_per_sec")]
lm_median = statistics.median(lm_tps) if lm_tps else None
summary["lm"] = {"model": lm_runs[0].settings.model if lm_runs else None, "tokens_per_sec": lm_tps,
                 "median": lm_median, "mfu": [r.metrics.get("mfu") for r in lm_runs],
                 "peak_memory_gib": [(r.metrics.get("peak_memory_bytes") or 0) / 2**30 for r in lm_runs],
                 "plain_loop": lm_plain, "ratio_to_plain": lm_median / lm_plain if lm_median and lm_plain else None}
for r in records:
    if r.settings.workload != "torch_allreduce":
        continue
    rows = r.metrics.get("results") or []
    big = max(rows, key=lambda row: row["bytes"]) if rows else {}
    small = min(rows, key=lambda row: row["bytes"]) if rows else {}
    summary["torch_allreduce"][f"{r.metrics.get('backend')} x{r.settings.workers}"] = {
        "sizes": len(rows), "largest_bytes": big.get("bytes"), "algbw_GBps": (big.get("algbw_median") or 0) / 1e9,
        "busbw_GBps": (big.get("busbw_median") or 0) / 1e9, "smallest_latency_us": (small.get("latency_median") or 0) * 1e6,
        "wrong": sum(row.get("wrong") or 0 for row in rows)}
first = next((r for r in records if r.settings.workload == "torch_cnn"), None)
if first is not None:
    summary["software"] = first.software
    summary["device"] = first.ranks[0].device if first.ranks else None
    summary["gpu_facts"] = first.world.get("gpu_facts")
json.dump(summary, open(out, "w"), indent=1, default=str)

print("=" * 78)
print(f"repro device check: {summary.get('device')}  ({elapsed} s)")
software = summary.get("software") or {}
print("  " + ", ".join(f"{k} {v}" for k, v in software.items()))
for host, facts in (summary.get("gpu_facts") or {}).items():
    for g in facts.get("gpus") or []:
        print(f"  {host}: {g.get('name')} {g.get('memory_mib')} MiB, driver {g.get('driver')}, SM "
              f"{g.get('sm_clock_mhz')}/{g.get('max_sm_clock_mhz')} MHz, power limit {g.get('power_limit_w')} W")
    kinds = (facts.get("topology_parsed") or {}).get("kinds")
    print(f"  topology: {kinds or 'one GPU'}")
for precision, row in summary["torch_cnn"].items():
    ratio = row["ratio_to_plain"]
    runs = ", ".join(f"{v:.1f}" for v in row["images_per_sec"])
    print(f"  torch_cnn {precision}: median {row['median'] or 0:.1f} images/sec ({runs}); plain loop "
          f"{row['plain_loop'] or 0:.1f}; ratio {ratio:.3f}" if ratio else f"  torch_cnn {precision}: incomplete {row}")
lm = summary["lm"]
mfu = ", ".join(f"{m:.1%}" for m in lm["mfu"] if m) or "none (no sourced peak for this device and precision)"
print(f"  lm {lm['model']}: median {lm['median'] or 0:.0f} tokens/sec ({', '.join(f'{v:.0f}' for v in lm['tokens_per_sec'])}); "
      f"MFU {mfu}; peak memory {', '.join(f'{g:.2f}' for g in lm['peak_memory_gib'])} GiB; plain loop "
      f"{lm['plain_loop'] or 0:.0f}; ratio {lm['ratio_to_plain'] or 0:.3f}")
for name, row in summary["torch_allreduce"].items():
    print(f"  all-reduce {name}: {row['sizes']} sizes, at {row['largest_bytes']} B algbw {row['algbw_GBps']:.2f} GB/s "
          f"busbw {row['busbw_GBps']:.2f} GB/s; smallest {row['smallest_latency_us']:.1f} us; #wrong {row['wrong']}")
for line in failed:
    print(f"  FAILED {line}")
print("=" * 78)
EOF
