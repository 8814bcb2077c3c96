"""Does the results store scale? Times of `repro results`, `results scaling` and `compare` at 1k/10k/100k records.

    python bench/store_scale.py [--sizes 1000,10000,100000] [--dir /tmp/repro-store-scale] [--repeats 3]
                                [--rebuild] [--whole-store-up-to 10000]

Builds (once; reused by later runs) a store per size out of realistic records: the shape `repro bench`
stores (an mpirun command, environment, software per host, facts per host, one rank per worker with its
addresses, device, warm-up and 100 step times, the workload's metrics and log tail, the stack's whole
manifest), as nightly builds of a stack would leave them: one stack per night, each swept over 1, 2, 4
and 8 workers, two models, three repeats, and one failed run (25 records per stack). Record files are
written directly (as many sweeps would have over months); the first command then builds the index,
which is timed on its own ("index build").

Then runs each command as a subprocess of the real CLI (`python -m repro ...`), --repeats times, and
prints the median wall and CPU (user + system) time and the peak RSS of the process (os.wait4), against
the targets of issue 19:
<= 1 s at 10,000 records and <= 3 s at 100,000 for `results`, `results scaling` and `compare` of two
stacks. `results scaling` over the whole store (no selector) parses every throughput record and
bootstraps every point, so it grows with the store; it runs up to --whole-store-up-to records.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GENERATOR = "store-scale/2"  # bump when the generated records change: stores are rebuilt
PER_STACK = 25
TARGETS = {10_000: 1.0, 100_000: 3.0}


def _template() -> dict:
    """A record as `repro bench --runtime host` stores it, to be varied per record."""
    from repro.manifest import load_stack
    from repro.results.record import SCHEMA_VERSION

    loaded = load_stack(REPO / "stacks" / "cpu-tf215.yaml")
    return {
        "schema_version": SCHEMA_VERSION, "origin": "bench", "runtime": "host", "failure": None, "published": None,
        "stack": {"name": "", "hash": "", "image_hash": loaded.image_hash, "file": "stacks/cpu-tf215.yaml",
                  "manifest": loaded.stack.model_dump(mode="json")},
        "env": {"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"},
        "software": {"horovod": "0.28.1", "numpy": "1.26.4", "python": "3.11.7", "tensorflow": "2.15.1"},
        "log_tail": "\n".join(f"cnn: step {10 * i}/101 loss 0.{i:04d} 29.{i} ms" for i in range(1, 11)),
    }


def _host_lock() -> dict:
    return {"os": "debian 12", "executable": "/opt/venv/bin/python", "horovod": "0.28.1", "mpi": "openmpi 4.1.4",
            "horovod_built": {"gloo": True, "mpi": True, "nccl": False}, "python": "3.11.7", "tensorflow": "2.15.1"}


def _facts(host: str, address: str) -> dict:
    return {"format": "repro.facts/1", "host": host, "address": address, "kernel": "6.1.0-13-amd64",
            "cpu": {"model": "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", "cores": 40, "sockets": 2},
            "memory_gb": 376, "interface": {"name": "eth0", "link_gbps": 25.0, "mtu": 9000,
                                            "addresses": [f"{address}/24"]}}


def _record(base: dict, rng: np.random.Generator, night: int, index: int, model: str, workers: int, repeat: int,
            failed: bool) -> dict:
    stack = f"cpu-tf215-nightly-{night:05d}"
    digest = hashlib.sha256(stack.encode()).hexdigest()[:12]
    batch = 32 if model == "resnet20" else 16
    hosts = [(f"node{h:03d}", f"10.1.{h // 250}.{h % 250 + 1}") for h in range(max(1, workers // 4))]
    step = (0.03 if model == "resnet20" else 0.21) * (1 + 0.05 * np.log2(workers))
    ranks = [] if failed else [{
        "rank": r, "local_rank": r % 4, "host": hosts[r // 4][0], "hostname": hosts[r // 4][0],
        "addresses": [hosts[r // 4][1]], "device": "CPU", "items_per_step": batch,
        "warmup_times": [float(8.4 + rng.random())],
        "step_times": (step * (1 + 0.03 * rng.standard_normal(100))).round(6).tolist()} for r in range(workers)]
    when = f"2026{1 + night % 12:02d}{1 + night % 28:02d}T{index % 24:02d}{index % 60:02d}00Z"
    data = dict(base)
    data.update({
        "id": f"{when}-{night:04x}{index:04x}", "created": f"{when[:4]}-{when[4:6]}-{when[6:8]}T{when[9:11]}:"
        f"{when[11:13]}:00+00:00", "status": "failed" if failed else "ok",
        "failure": "mpirun exited with status 1: rank 3 on node000 exited with status 137" if failed else None,
        "stack": {**base["stack"], "name": stack, "hash": digest},
        "host_software": {h: _host_lock() for h, _ in hosts},
        "sweep": {"id": f"sw-{digest}", "point": f"{model}-{workers}", "repeat": repeat},
        "settings": {"workload": "cnn", "model": model, "batch_per_worker": batch, "global_batch": batch * workers,
                     "precision": "fp32", "xla": False, "data_format": "NHWC", "data": "synthetic",
                     "workers": workers, "hosts": len(hosts), "scaling": "weak", "threads": None,
                     "warmup_steps": 1, "steps": 100, "backend": "mpi", "extra": {}},
        "hosts": [{"name": h, "address": a, "slots": min(4, workers), "gpus": 0} for h, a in hosts],
        "ranks": ranks, "facts": {h: _facts(h, a) for h, a in hosts},
        "command": ["mpirun", "--allow-run-as-root", "-np", str(workers), "-H",
                    ",".join(f"{h}:{min(4, workers)}" for h, _ in hosts), "--bind-to", "none", "--map-by", "slot",
                    "-x", "PATH", "-x", "PYTHONUNBUFFERED", "/opt/venv/bin/python", "-m", "repro.workloads.cnn",
                    "--model", model, "--batch-size", str(batch), "--warmup-steps", "1", "--steps", "100"],
        "world": {"controller": "mpi", "cpu_operations": "mpi", "gpu": False, "size": workers},
        "metrics": {} if failed else {"images_per_sec": batch * workers / step, "unit": "images/sec",
                                      "step_time_mean": step, "params": 271098, "warmup_time_total": 8.4},
        "duration_s": round(float(12 + 100 * step), 3),
    })
    return data


def build(root: Path, size: int) -> None:
    """Write `size` record files under root/runs (and a marker saying how they were made)."""
    from repro.results.record import parse_record

    base, rng = _template(), np.random.default_rng(size)
    plan = [(model, workers, repeat) for model in ("resnet20", "resnet50") for workers in (1, 2, 4, 8)
            for repeat in range(3)]
    start, written = time.monotonic(), 0
    for night in range(-(-size // PER_STACK)):
        for index in range(min(PER_STACK, size - written)):
            model, workers, repeat = plan[index] if index < len(plan) else ("resnet50", 8, 3)
            data = _record(base, rng, night, index, model, workers, repeat, failed=index >= len(plan))
            if written == 0:
                parse_record(data)  # the generator makes valid records
            path = root / "runs" / data["stack"]["hash"] / f"{data['id']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            written += 1
    (root / "store-scale.json").write_text(json.dumps({"generator": GENERATOR, "records": size}))
    size_mb = sum(p.stat().st_size for p in root.glob("runs/*/*.json")) / 2 ** 20
    print(f"built {size:,} records ({size_mb:,.0f} MiB) in {root} in {time.monotonic() - start:.0f} s", flush=True)


def ensure(root: Path, size: int, rebuild: bool) -> None:
    marker = root / "store-scale.json"
    if not rebuild and marker.exists() and json.loads(marker.read_text()) == {"generator": GENERATOR,
                                                                               "records": size}:
        return
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir(parents=True)
    build(root, size)


def run(argv: list[str]) -> tuple[float, float, float, int, str]:
    """Wall and CPU seconds, peak RSS (MiB), exit status of `python -m repro ARGV`, and its stderr's last line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "repro", *argv], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, proc.returncode, tail[-1] if tail else ""


def measure(root: Path, size: int, repeats: int, whole_up_to: int) -> list[tuple[str, float, float, float]]:
    store = ["--store", str(root)]
    index = root / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    rows = []
    wall, cpu, rss, code, tail = run(["results", *store])
    rows.append(("index build (first `repro results`)", wall, cpu, rss))
    if code:
        raise SystemExit(f"repro results failed: {tail}")
    nights = -(-size // PER_STACK)
    one, two = f"cpu-tf215-nightly-{nights - 2:05d}", f"cpu-tf215-nightly-{nights - 1:05d}"
    commands = [("results", ["results", *store]), (f"results --stack {one}", ["results", "--stack", one, *store]),
                ("results scaling OLD NEW", ["results", "scaling", one, two, *store]),
                ("compare OLD NEW", ["compare", one, two, *store])]
    if size <= whole_up_to:
        commands.append(("results scaling (whole store)", ["results", "scaling", *store]))
    for label, argv in commands:
        walls, cpus, peaks = [], [], []
        for _ in range(repeats):
            wall, cpu, rss, code, tail = run(argv)
            if code:
                raise SystemExit(f"repro {' '.join(argv)} failed ({code}): {tail}")
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(rss)
        rows.append((label, statistics.median(walls), statistics.median(cpus), max(peaks)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "repro-store-scale"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true", help="write the stores again even if they exist")
    parser.add_argument("--whole-store-up-to", type=int, default=10_000, metavar="N",
                        help="time `results scaling` over the whole store up to N records (default 10000)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times grow with the load; "
          "CPU times less so)")
    print(f"{'records':>8}  {'command':40} {'wall s':>7} {'CPU s':>7} {'peak RSS MiB':>13}  target (wall)")
    for size in sizes:
        root = Path(args.dir) / str(size)
        ensure(root, size, args.rebuild)
        for label, wall, cpu, rss in measure(root, size, args.repeats, args.whole_store_up_to):
            target = TARGETS.get(size)
            judged = target is not None and label.startswith(("results", "compare")) and "whole" not in label
            verdict = (f"<= {target:g} s: {'met' if wall <= target else 'MISSED'}") if judged else ""
            print(f"{size:>8,}  {label:40} {wall:7.2f} {cpu:7.2f} {rss:13.0f}  {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
