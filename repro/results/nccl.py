"""Reading NCCL's INFO/WARN output into a Fabric (pure).

NCCL prefixes its lines with `<host>:<pid>:<tid> [<cudaDev>] NCCL INFO`; launchers put their own prefix in front
(`srun -l`'s `0: `, Open MPI's `[1,0]<stdout>:`, torchrun's `[rank0]:`, Ray's `(RayTrainWorker pid=N) `, timestamps,
pod names), and logs pasted into issues sometimes hold several records on one line. So the parser searches for the
prefix anywhere in a line and cuts a line into one message per prefix. A file in which no line carries the prefix
(a log whose prefixes were stripped) is read as bare messages. The forms read are those of
docs/fabric.md (from NCCL 2.3 to 2.30: `Ring 00 : 7 -> 8`, PCI bus ids in brackets, `Channel 00/0 :`).

Channel lines do not name their communicator: each is given to the last communicator its process (host and pid)
announced, or to the one a `comm 0x...` suffix names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from repro.results.fabric import Communicator, Fabric, Hca, Link
from repro.secrets import is_secret_name, marker, redact_text

# host:pid:tid [dev], then (WARN lines) the source location or function that warned, then the level
_PREFIX = re.compile(r"(?:(?P<host>[\w.\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:[^\n]{0,300}? )?)?"
                     r"NCCL (?P<level>INFO|WARN) ")
_OLD_PREFIX = re.compile(r"(?P<host>[\w.\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?P<level>INFO|WARN) ")
_VERSION = re.compile(r"(?<![,\w])\s?NCCL version (?P<v>\d+\.\d+\.\d+(?:\+cuda[\d.]+)?)\s*$")
_FRAMEWORK = re.compile(r",\s*NCCL version (?P<v>\d+\.\d+\.\d+)\b")
_CHANNEL = re.compile(r"(?:Channel|Ring) (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)(?:\[[0-9a-fx]+\])? -> "
                      r"(?P<dst>\d+)(?:\[[0-9a-fx]+\])? (?:\[(?P<dir>send|receive)\] )?via (?P<via>.+?)"
                      r"(?: comm (?P<comm>0x[0-9a-f]+).*)?\s*$")
_COLLNET = re.compile(r"CollNet (?P<ch>\d+)(?:/\d+)? : (?P<src>\d+) \[(?P<dir>send|receive)\] via "
                      r"(?P<via>COLLNET/\S+)")
_NET = re.compile(r"^NET/(?P<net>.+?)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>(?:/[\w]+|\(PCI\))*)$")
_COMM = re.compile(r"\bcomm (?P<ptr>0x[0-9a-f]+) rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)"
                   r"(?: nNodes (?P<nnodes>\d+))?(?:.*?\bcommId (?P<id>0x[0-9a-f]+))?")
_TIMINGS = re.compile(r"Init timings\b.*?\brank (?P<rank>\d+) nranks \d+ total (?P<total>[\d.]+)")
_CHANNELS = re.compile(r"(?P<coll>\d+) coll channels, (?:\d+ collnet channels, )?(?:(?P<nvls>\d+) nvls channels, )?"
                       r"(?P<p2p>\d+) p2p channels")
# not NCCL >= 2.19's `NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.` (no network named)
_NETWORK = re.compile(r"Using (?:internal )?[Nn]etwork (?!plugin\b)(?P<net>.+?)\s*$")
_PLUGIN = re.compile(r"Loaded (?P<kind>net|collnet) plugin (?P<name>.+?)(?: \(v\d+\))?\s*$")
_PROVIDER = re.compile(r"NET/OFI Selected Provider is (?P<p>\S+)")
_IB_USING = re.compile(r"NET/IB ?: ?Using (?P<devs>.*?)(?: ?; OOB .*)?$")
_IB_DEV = re.compile(r"\[\d+\] ?(?P<name>[\w.\-]+):(?P<port>\d+)/(?P<link>IB|RoCE)(?P<sharp>/SHARP)?")
_SOCK_DEV = re.compile(r"\[\d+\](?P<name>[^:\s\[]+):(?P<addr>[^<\s]+)<\d+>")
_GDR = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA \d+ '(?P<hca>[^']+)'")
_NVLS = re.compile(r"NVLS multicast support is (?P<not>not )?available")
_ENV = re.compile(r"^(?P<name>NCCL_\w+) set (?:by environment )?to (?P<value>.*?)\.?\s*$")


@dataclass(frozen=True)
class Message:
    """One NCCL message: where it came from (host and pid, "" when bare) and its text after the prefix."""

    process: tuple[str, str]
    level: str
    text: str
    line: int  # its line's index in the input


def messages(lines: Iterable[str]) -> list[Message]:
    """Every NCCL message in the lines, found behind any launcher prefix; bare lines when no line has a prefix."""
    lines = [line.rstrip("\r\n") for line in lines]
    found: list[Message] = []
    for i, line in enumerate(lines):
        found.extend(_split(line, i))
    if any(msg.process != ("", "") for msg in found):
        return found
    # prefixes stripped (a log pasted without them): every line NCCL could have written, of one anonymous process
    return [Message(("", ""), "INFO", line.strip(), i) for i, line in enumerate(lines) if _known(line.strip())]


def _known(text: str) -> bool:
    return any(p.search(text) for p in (_VERSION, _FRAMEWORK, _CHANNEL, _COLLNET, _COMM, _TIMINGS, _CHANNELS, _NETWORK,
                                        _PLUGIN, _PROVIDER, _GDR, _NVLS, _ENV, _IB_USING))


def _split(line: str, index: int) -> list[Message]:
    hits = list(_PREFIX.finditer(line)) or list(_OLD_PREFIX.finditer(line))
    out = []
    for i, m in enumerate(hits):
        end = hits[i + 1].start() if i + 1 < len(hits) else len(line)
        process = (m["host"] or "", m["pid"] or "")
        out.append(Message(process, m["level"], line[m.end():end].strip(), index))
    if not hits:
        version = _VERSION.search(line)  # the version line has no INFO prefix before 2.20 (or behind a launcher's)
        if version or _FRAMEWORK.search(line):
            out.append(Message(("", ""), "INFO", line.strip(), index))
    return out


@dataclass
class _Comm:
    id: str
    nranks: int | None = None
    nnodes: int | None = None
    ranks: set[int] = field(default_factory=set)
    init_s: float | None = None
    coll: int | None = None
    nvls: int | None = None
    p2p: int | None = None
    seen: set[tuple] = field(default_factory=set)
    links: dict[tuple[str, str, bool, bool], int] = field(default_factory=dict)


class _Reader:
    def __init__(self) -> None:
        self.comms: dict[str, _Comm] = {}
        self.current: dict[tuple[str, str], str] = {}  # process -> communicator id
        self.pointers: dict[tuple[tuple[str, str], str], str] = {}  # (process, comm pointer) -> commId
        self.versions: list[str] = []
        self.framework: str | None = None
        self.network: list[str] = []
        self.plugins: dict[str, str] = {}
        self.provider: str | None = None
        self.hcas: dict[str, Hca] = {}
        self.sockets: dict[str, Hca] = {}
        self.gdr: dict[str, bool] = {}
        self.nvls: bool | None = None
        self.env: dict[str, str] = {}
        self.warns = 0

    def comm(self, process: tuple[str, str], ptr: str | None = None) -> _Comm:
        key = self.pointers.get((process, ptr), ptr) if ptr else self.current.get(process, "-")
        return self.comms.setdefault(key, _Comm(key))

    def read(self, msg: Message) -> None:
        text, process = msg.text, msg.process
        if msg.level == "WARN":
            self.warns += 1
        if m := _FRAMEWORK.search(text):
            self.framework = m["v"]
        elif (m := _VERSION.search(text)) and m["v"] not in self.versions:
            self.versions.append(m["v"])
        if m := _CHANNEL.search(text):
            self.channel(process, m)
        elif m := _COLLNET.search(text):
            self.link(self.comm(process), ("collnet", m["ch"], m["src"], m["dir"]), "collnet", m["via"])
        elif m := _COMM.search(text):
            self.announce(process, m)
        elif m := _TIMINGS.search(text):
            c = self.comm(process)
            c.init_s = max(c.init_s or 0.0, float(m["total"]))
            c.ranks.add(int(m["rank"]))
        elif m := _CHANNELS.search(text):
            c = self.comm(process)
            c.coll, c.p2p = int(m["coll"]), int(m["p2p"])
            c.nvls = int(m["nvls"]) if m["nvls"] is not None else c.nvls
        else:
            self.facts(text)

    def facts(self, text: str) -> None:
        if m := _NETWORK.search(text):
            if m["net"] not in self.network:
                self.network.append(m["net"])
        elif m := _PLUGIN.search(text):
            self.plugins.setdefault(m["kind"], m["name"])
        elif m := _PROVIDER.search(text):
            self.provider = m["p"]
        elif m := _GDR.search(text):
            self.gdr[m["hca"]] = m["state"] == "Enabled"
        elif m := _NVLS.search(text):
            self.nvls = bool(self.nvls) or not m["not"]
        elif m := _ENV.search(text):
            name, value = m["name"], m["value"]
            self.env[name] = marker(value) if is_secret_name(name) else redact_text(value)
        elif text.startswith(("NET/IB", "NET/Socket")) and (m := _IB_USING.search(text)):
            for d in _IB_DEV.finditer(m["devs"]):
                self.hcas.setdefault(d["name"], Hca(name=d["name"], port=int(d["port"]), link=d["link"],
                                                    sharp=bool(d["sharp"])))
        if text.startswith("NET/Socket") and "Using" in text:
            for d in _SOCK_DEV.finditer(text):
                self.sockets.setdefault(d["name"], Hca(name=d["name"], link=d["addr"]))

    def announce(self, process: tuple[str, str], m: re.Match[str]) -> None:
        key = m["id"] or self.pointers.get((process, m["ptr"])) or m["ptr"]
        self.pointers[(process, m["ptr"])] = key
        self.current[process] = key
        c = self.comms.setdefault(key, _Comm(key))
        c.nranks = int(m["nranks"])
        c.nnodes = int(m["nnodes"]) if m["nnodes"] else c.nnodes
        c.ranks.add(int(m["rank"]))

    def channel(self, process: tuple[str, str], m: re.Match[str]) -> None:
        via = m["via"].strip()
        scope = "inter" if via.startswith("NET/") else "intra"
        self.link(self.comm(process, m["comm"]), (m["ch"], m["conn"], m["src"], m["dst"], m["dir"]), scope, via)

    def link(self, c: _Comm, key: tuple, scope: str, via: str) -> None:
        if key in c.seen:  # the same connection printed twice (a rank's two proxies, a log read twice)
            return
        c.seen.add(key)
        transport, gdr, pxn = _transport(via)
        c.links[(scope, transport, gdr, pxn)] = c.links.get((scope, transport, gdr, pxn), 0) + 1

    def fabric(self, raw: list[str]) -> Fabric:
        named = [c for c in self.comms.values() if c.id != "-"]
        if "-" in self.comms and len(named) == 1:  # before 2.19 `Init COMPLETE` came after the channel lines
            anonymous, only = self.comms.pop("-"), named[0]
            only.links = {k: only.links.get(k, 0) + anonymous.links.get(k, 0) for k in {*only.links, *anonymous.links}}
            only.coll = only.coll if only.coll is not None else anonymous.coll
            only.nvls = only.nvls if only.nvls is not None else anonymous.nvls
            only.p2p = only.p2p if only.p2p is not None else anonymous.p2p
        comms = [Communicator(id=c.id, nranks=c.nranks, nnodes=c.nnodes, ranks=sorted(c.ranks), init_s=c.init_s,
                              coll_channels=c.coll, nvls_channels=c.nvls, p2p_channels=c.p2p,
                              links=[Link(scope=k[0], transport=k[1], gdr=k[2], pxn=k[3], count=n)  # type: ignore[arg-type]
                                     for k, n in sorted(c.links.items(), key=lambda kv: (kv[0][0], -kv[1]))])
                 for c in self.comms.values() if c.links or c.nranks or c.init_s is not None or c.coll is not None]
        hcas = [h.model_copy(update={"gdr": self.gdr.get(h.name)}) for h in self.hcas.values()]
        digest = hashlib.sha256("\n".join(raw).encode("utf-8", "surrogateescape")).hexdigest() if raw else ""
        return Fabric(versions=self.versions, framework_nccl=self.framework, network=self.network,
                      net_plugin=self.plugins.get("net"), collnet_plugin=self.plugins.get("collnet"),
                      ofi_provider=self.provider, hcas=hcas, sockets=list(self.sockets.values()),
                      nvls_support=self.nvls, env=dict(sorted(self.env.items())), communicators=comms,
                      nccl_warnings=self.warns, lines=len(raw), digest=digest)


def _transport(via: str) -> tuple[str, bool, bool]:
    """(transport, GPUDirect RDMA, PXN) of a `via` token: NET/IB/0(1)/GDRDMA -> (NET/IB, True, True)."""
    if m := _NET.match(via):
        rest = m["rest"] or ""
        return f"NET/{m['net']}", "GDRDMA" in rest, m["proxy"] is not None
    if via.startswith("COLLNET/"):
        parts = via.split("/")
        return f"COLLNET/{parts[1]}", "GDRDMA" in parts, False
    if via.startswith("SHM") or via == "direct shared memory":  # SHM/direct/direct, SHM/direct, SHM/CE/..., < 2.7
        return "SHM", False, False
    if via.startswith("P2P/"):
        parts = via.split("/")
        kind = parts[1].split("[")[0]
        return f"P2P/{kind}", False, False
    return via, False, False


def parse(text: str) -> Fabric:
    """The Fabric that NCCL's lines in `text` describe (empty facts when there are none)."""
    lines = text.splitlines()
    found = messages(lines)
    reader = _Reader()
    for msg in found:
        reader.read(msg)
    raw = [lines[i] for i in dict.fromkeys(msg.line for msg in found)]  # a line holding several records counts once
    return reader.fabric(raw)
