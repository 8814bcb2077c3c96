"""The `host` runtime: the hosts' own TensorFlow, Horovod and MPI (bare metal, laptops), after checking that
they match the stack and refusing otherwise."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import ClassVar

from repro.errors import HostError, LaunchError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from repro.launch.launchers import LAUNCHERS, SshOptions
from repro.launch.placement import Placement
from repro.launch.plan import FORWARDED_HOST, LaunchPlan, PlanContext, env_command, env_input, run_env
from repro.launch.runtimes import RUNTIMES, JobStep, Outcome, Runtime, RuntimeReport, Via
from repro.launch.runtimes.nccl_read import gather_nccl
from repro.launch.runtimes.watch import Watch, supervise
from repro.launch.workloads import program
from repro.manifest.capture import comment
from repro.manifest.probe_output import MAX_PROBE_BYTES, ProbeOutputError, software_from_output
from repro.manifest.schema import Stack
from repro.manifest.software import Software, mismatches
from repro.results.record import Settings

PROBE_TIMEOUT_S = 180
HOST_PROBE = r"""
import json, os, platform, shutil, subprocess, sys
ONLY = globals().get("ONLY", ("tensorflow", "pytorch"))  # the frameworks to import (probe_host sets it)
CACHE = globals().get("CACHE")  # probe_host(cached=True): a digest of this script, naming its cache on the host
out = {"python": platform.python_version(), "executable": sys.executable}
try:
    with open("/etc/os-release") as fh:
        rel = dict(line.rstrip("\n").split("=", 1) for line in fh if "=" in line)
    out["os"] = (rel.get("ID", "").strip('"') + " " + rel.get("VERSION_ID", "").strip('"')).strip() or None
except Exception:
    pass
if shutil.which("nvidia-smi"):
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout
        out["driver"] = text.split()[0] if text.strip() else None
    except Exception as exc:
        out["driver_error"] = str(exc)[:200]
def stamps(paths):
    found = []
    for path in paths:
        try:
            st = os.stat(path)
            found.append([path, st.st_mtime_ns, st.st_size, st.st_ino])
        except OSError:
            found.append([path, None, None, None])
    return found
cache_file, cached = None, None
if CACHE:  # the frameworks' part, kept until a file it came from changes (a sys.path directory, a module, a library)
    import hashlib
    key = json.dumps([CACHE, sorted(ONLY), sys.executable, sys.path, os.environ.get("LD_LIBRARY_PATH")])
    cache_file = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "repro",
                              "host-probe", hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")
    try:
        with open(cache_file) as fh:
            cached = json.load(fh)
        if cached["stamps"] != stamps([p for p, *_ in cached["stamps"]]):
            cached = None
    except Exception:
        cached = None
base = dict(out)  # what every probe finds; the frameworks' part (cached or not) follows
if cached is not None:
    ONLY = ()  # nothing imported below: the cache says what they found
try:
    if "tensorflow" not in ONLY:
        raise ImportError("not probed: the stack pins another framework")
    import tensorflow as tf
    out["tensorflow"] = tf.__version__
except Exception as exc:
    out["tensorflow_error"] = str(exc)[:200]
try:
    if "pytorch" not in ONLY:
        raise ImportError("not probed: the stack pins another framework")
    import torch
    t = out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda}
    t["cudnn"] = torch.backends.cudnn.version()
    if torch.version.cuda:
        t["nccl"] = torch.cuda.nccl.version()  # (2, 27, 7); an int in older releases
    import torch.distributed as dist
    t["backends"] = {n: bool(getattr(dist, f"is_{n}_available")()) for n in ("gloo", "mpi", "nccl")} \
        if dist.is_available() else {}
except Exception as exc:
    out.setdefault("torch", {})["error"] = str(exc)[:200]
try:
    if cached is not None:
        raise StopIteration
    import horovod
    out["horovod"] = horovod.__version__
    frameworks, errors, hvd = {}, [], None
    found = {"tensorflow": "tensorflow" in out, "pytorch": "version" in out.get("torch", {})}
    for name, module in (("tensorflow", "horovod.tensorflow"), ("pytorch", "horovod.torch")):
        if not found[name]:
            continue  # the framework itself is missing: Horovod's binding for it cannot import
        try:
            bound = __import__(module, fromlist=["mpi_built"])
            frameworks[name] = callable(getattr(bound, "mpi_built", None))  # unbuilt: imports, but empty
            hvd = hvd or (bound if frameworks[name] else None)
            if not frameworks[name]:
                errors.append(module + " is not built")
        except Exception as exc:
            frameworks[name] = False
            errors.append(str(exc)[:200])
    if hvd is None:
        raise ImportError("; ".join(errors) or "no framework for Horovod to bind to")
    out["horovod_built"] = {"mpi": bool(hvd.mpi_built()), "gloo": bool(hvd.gloo_built()),
                            "nccl": bool(hvd.nccl_built()), **frameworks}
except StopIteration:
    pass
except Exception as exc:
    out["horovod_error"] = str(exc)[:200]
if cached is not None:
    out = {**base, **cached["found"]}
elif cache_file:
    files = [p for p in sys.path if p and os.path.isdir(p)]
    for name in ("tensorflow", "torch", "horovod"):
        module = sys.modules.get(name)
        where = os.path.dirname(getattr(module, "__file__", None) or "") if module else ""
        if where and name == "horovod":  # its built libraries: a rebuild in place changes what it supports
            for folder, _, names in os.walk(where):  # the folders too: a library added changes their listing
                files += [folder] + [os.path.join(folder, f) for f in names if ".so" in f or f.endswith(".py")]
        elif where:
            files.append(os.path.join(where, "__init__.py"))
    found = {k: v for k, v in out.items() if k not in base}
    try:
        os.makedirs(os.path.dirname(cache_file), exist_ok=True)
        with open(cache_file + ".tmp", "w") as fh:
            json.dump({"stamps": stamps(files), "found": found}, fh)
        os.replace(cache_file + ".tmp", cache_file)
    except Exception:
        pass
try:
    text = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=30).stdout
    out["mpi"] = text.splitlines()[0] if text else ""
except Exception as exc:
    out["mpi_error"] = str(exc)[:200]
print(json.dumps(out))
"""


def probe_script(frameworks: tuple[str, ...] | None = None, *, cached: bool = False) -> str:
    """HOST_PROBE for these frameworks (None: every registered one), with its cache on the host where `cached`."""
    from repro.manifest.frameworks import FRAMEWORKS

    names = [n for n, _ in FRAMEWORKS.items()] if frameworks is None else list(frameworks)
    script = f"ONLY = {sorted(n for n in names if n.isidentifier())!r}\n" + HOST_PROBE  # registry names only
    if cached:
        script = f"CACHE = {hashlib.sha256(HOST_PROBE.encode()).hexdigest()[:16]!r}\n" + script
    return script


def probe_host(host: Host, via: Via | None = None, *, frameworks: tuple[str, ...] | None = None,
               cached: bool = False) -> Software:
    """The software installed on `host` (its repro_python), as found by HOST_PROBE (over SSH, or `via`);
    `frameworks`: import only these (a sweep needs only its stack's: importing TensorFlow and torch both took
    most of a 1-point sweep's 7.5-9.5 s start-up on the loaded 2-core machine); None: every registered one.
    `cached`: the frameworks' part from the host's cache (~/.cache/repro/host-probe) while none of the files it came
    from changed (sys.path's directories, the frameworks' modules, Horovod's libraries): importing TensorFlow
    is most of a sweep's start-up; Python, the OS, the driver and MPI are probed every time."""
    script = probe_script(frameworks, cached=cached)
    try:
        with (via or Remote)(host) as remote:
            res = remote.run([host.python, "-c", script], timeout=PROBE_TIMEOUT_S, max_bytes=MAX_PROBE_BYTES)
    except HostError as exc:
        if not exc.message.endswith(f"printed more than {MAX_PROBE_BYTES} bytes"):
            raise
        raise LaunchError(f"{host.name}: {host.python} (repro_python) cannot be checked: its software probe printed "
                          f"more than {MAX_PROBE_BYTES} bytes (stopped)", hint=f"run `{host.python} -c 'print(1)'` "
                          f"on {host.name}: something makes its python print without end") from None
    try:  # whatever the host's python printed: null, bytes, JSON a thousand deep (issue 38)
        return software_from_output(res.stdout.encode("utf-8", "surrogateescape"))
    except ProbeOutputError as exc:
        raise LaunchError(f"{host.name}: {host.python} (repro_python) cannot be checked: its software probe {exc} "
                          f"(exit {res.returncode})" + "".join(f"\n  {comment(line)}" for line in
                                                             res.stderr.strip().splitlines()[-12:])) from None


def check_hosts(stack: Stack, hosts: list[Host], *, backend: str, via: Via | None = None) -> dict[str, Software]:
    """Probe each host's software; LaunchError listing every mismatch if any host differs from the stack."""
    pinned = (stack.framework,)  # the other frameworks' imports would only cost start-up time
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:  # each probe imports TF: in parallel
        found = dict(zip([h.name for h in hosts], pool.map(lambda h: probe_host(h, via, frameworks=pinned, cached=True),
                                                           hosts), strict=True))
    problems = [f"{name}: {p}" for name, sw in found.items() for p in mismatches(stack, sw, where="host",
                                                                                   backend=backend)]
    if problems:
        raise LaunchError("refusing the host runtime: the hosts' software does not match the stack\n  "
                          + "\n  ".join(problems),
                          hint="install the stack's versions (scripts/setup.sh does for the CPU stacks), or use "
                          "--runtime docker with the stack's image")
    return found


@RUNTIMES.register("host")
class HostRuntime(Runtime):
    """Run on the hosts' own installed software."""

    name: ClassVar[str] = "host"

    @classmethod
    def plan(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> LaunchPlan:
        first = placement[0].host
        env = run_env(ctx.stack_env, interface=first.interface, gpu=ctx.gpu, nccl_dir=ctx.nccl_dir)
        data = (first.dataset_dir or "") if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or first.python, data=data)
        ssh = None
        if not all(p.host.local for p in placement):
            ssh = SshOptions(placement[1].host.port if len(placement) > 1 else first.port, first.launch_key,
                             first.launch_known_hosts)
        argv = LAUNCHERS.get(ctx.launcher).argv(placement, command, list(env), interface=first.interface, ssh=ssh,
                                               forwarded=FORWARDED_HOST)
        exec_argv = env_command(env, argv)
        return LaunchPlan(point, placement, cls.name, ctx.launcher, env, argv, exec_argv, nccl_dir=ctx.nccl_dir)

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        """Each rank runs the workload with the hosts' own python (the inventory's repro_python)."""
        first = placement[0].host
        data = (first.dataset_dir or "") if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or first.python, data=data)
        return JobStep(command, run_env(ctx.stack_env, interface=first.interface, gpu=ctx.gpu, nccl_dir=ctx.nccl_dir))

    def node_command(self, argv: list[str], host: Host) -> list[str]:
        """argv as the hosts' own software runs it (a check under a batch scheduler)."""
        return list(argv)

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Callable[[str], None] | None = None) -> RuntimeReport:
        """checking the hosts' Python, {software} against the stack (imports {framework} on each host: up to a
        minute on a busy machine)"""
        return RuntimeReport(host_software=check_hosts(self.stack, hosts, backend=backend, via=via))

    def run(self, plan: LaunchPlan, timeout: float, progress: Callable[[str], None] | None = None) -> Outcome:
        started = time.monotonic()
        hosts = list({p.host.name: p.host for p in plan.placement}.values())
        if plan.nccl_dir is None:
            return self._run(plan, timeout, started, progress)
        try:  # NCCL opens its file but makes no directory (and writes to the output where it cannot open it)
            for host in hosts:
                with Remote(host) as remote:
                    remote.run(["mkdir", "-p", plan.nccl_dir], timeout=60, check=True)
        except HostError as exc:
            return Outcome("", "", None, time.monotonic() - started,
                           f"making the directory of NCCL's files failed: {exc.message}")
        outcome = self._run(plan, timeout, started, progress)
        return replace(outcome, nccl_log=gather_nccl(hosts, plan.nccl_dir))

    def _run(self, plan: LaunchPlan, timeout: float, started: float,
             progress: Callable[[str], None] | None) -> Outcome:
        with Remote(plan.launcher) as remote:
            proc = remote.start(plan.exec_argv, input=env_input(plan.env))
            try:
                with Watch([p.host for p in plan.placement]) as watch:
                    code, failure = supervise(proc, watch, timeout, started, progress)
            except BaseException:
                proc.stop()
                raise
            if failure:
                proc.stop()
                proc.wait(10)
            out, err = proc.output()
            return Outcome(out, err, code, time.monotonic() - started, failure)
