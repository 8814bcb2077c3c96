"""The path NCCL took (pure): typed facts of one run's NCCL log, the paths they add up to, and what to say about them.

repro.results.nccl reads NCCL's INFO/WARN lines into a `Fabric`; this module owns the model and what is derived from
it: the inter-node path (`rdma-gdr`, `rdma`, `socket`, `plugin`), the intra-node path (`p2p`, `shm`, `p2p-indirect`),
plain warnings, the difference between two runs' fabrics (`repro compare`) and the check of a declared expectation
(`expect: {inter_node: rdma-gdr, intra_node: p2p}`). What each log line means: docs/fabric.md.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Link(_Frozen):
    """Connections of one kind in one communicator: the transport as NCCL named it and how many lines said so."""

    scope: Literal["intra", "inter", "collnet"]
    transport: str  # P2P/CUMEM, P2P/IPC, P2P/direct pointer, P2P/indirect, SHM, NET/IB, NET/Socket, NET/AWS Libfabric
    gdr: bool = False  # /GDRDMA: GPUDirect RDMA (network reads and writes GPU memory directly)
    pxn: bool = False  # NET/<net>/<dev>(<proxy>): sent through another GPU's NIC (PXN)
    count: int = 0  # distinct channel connections (send and receive lines counted once each)

    @property
    def path(self) -> str:
        """This link's path class: rdma-gdr, rdma, socket, plugin (inter-node); p2p, shm, p2p-indirect (intra)."""
        if self.scope != "intra":
            return _net_path(self.transport, self.gdr)
        if self.transport == "SHM":
            return "shm"
        return "p2p-indirect" if self.transport.startswith("P2P/indirect") else "p2p"

    @property
    def label(self) -> str:
        """The transport as NCCL prints it, with its GPUDirect and PXN suffixes."""
        return self.transport + ("(PXN)" if self.pxn else "") + ("/GDRDMA" if self.gdr else "")


def _net_path(transport: str, gdr: bool) -> str:
    net = transport.split("/", 1)[1] if "/" in transport else transport
    if net.lower().startswith("socket"):
        return "socket"
    if gdr:  # GPUDirect RDMA through IB verbs or a plugin (EFA through aws-ofi-nccl prints NET/AWS Libfabric/0/GDRDMA)
        return "rdma-gdr"
    return "rdma" if net.startswith("IB") else "plugin"  # IB, IBext, IBext_v8 (HPC-X's plugin over verbs)


class Communicator(_Frozen):
    """One NCCL communicator (one per process group of a framework), as far as the log shows it."""

    id: str  # commId (0x...) where NCCL printed one, else the comm pointer, else "-"
    nranks: int | None = None
    nnodes: int | None = None
    ranks: list[int] = Field(default_factory=list)  # the ranks whose lines were seen
    init_s: float | None = None  # the slowest rank's `Init timings ... total`
    coll_channels: int | None = None
    nvls_channels: int | None = None
    p2p_channels: int | None = None
    links: list[Link] = Field(default_factory=list)

    @property
    def nvls(self) -> bool:
        return bool(self.nvls_channels)

    @property
    def collnet(self) -> bool:
        return any(link.scope == "collnet" for link in self.links)

    @property
    def pxn(self) -> bool:
        return any(link.pxn for link in self.links)

    def count(self, scope: str) -> int:
        return sum(link.count for link in self.links if link.scope == scope)

    def path(self, scope: Literal["inter", "intra"]) -> str | None:
        """The path classes of one scope, most connections first, joined by '+' (None: no such connection)."""
        counts: Counter[str] = Counter()
        for link in self.links:
            if link.scope == scope:
                counts[link.path] += link.count
        return "+".join(name for name, _ in counts.most_common()) or None


class Hca(_Frozen):
    """A network device NCCL listed: an HCA (`NET/IB : Using [0]mlx5_0:1/RoCE`) or a socket interface."""

    name: str
    port: int | None = None
    link: str = ""  # IB, RoCE (HCAs); the address (socket interfaces)
    sharp: bool = False
    gdr: bool | None = None  # `GPU Direct RDMA Enabled|Disabled for HCA`; None: not said


class Fabric(_Frozen):
    """What one run's (or one log file's) NCCL said about the path it took."""

    versions: list[str] = Field(default_factory=list)  # NCCL loaded, as `NCCL version` said (one per distinct)
    framework_nccl: str | None = None  # the NCCL the framework reports, where the log shows it
    network: list[str] = Field(default_factory=list)  # `Using network X`: IB, Socket, IBext_v8, AWS Libfabric, ...
    net_plugin: str | None = None  # `Loaded net plugin X`; None: NCCL's internal IB/Socket
    collnet_plugin: str | None = None
    ofi_provider: str | None = None  # aws-ofi-nccl's provider (efa, ...)
    hcas: list[Hca] = Field(default_factory=list)
    sockets: list[Hca] = Field(default_factory=list)
    nvls_support: bool | None = None  # `NVLS multicast support is (not) available`
    env: dict[str, str] = Field(default_factory=dict)  # NCCL_* NCCL says it read (secret-looking values redacted)
    communicators: list[Communicator] = Field(default_factory=list)
    nccl_warnings: int = 0  # NCCL WARN lines
    lines: int = 0  # NCCL lines read
    digest: str = ""  # sha256 of those lines, in order

    @property
    def version(self) -> str | None:
        return self.versions[0] if self.versions else None

    def links(self, scope: str) -> list[Link]:
        """Every communicator's links of one scope, merged by transport."""
        merged: dict[tuple, int] = {}
        for comm in self.communicators:
            for link in comm.links:
                if link.scope == scope:
                    key = (link.scope, link.transport, link.gdr, link.pxn)
                    merged[key] = merged.get(key, 0) + link.count
        return [Link(scope=k[0], transport=k[1], gdr=k[2], pxn=k[3], count=n)
                for k, n in sorted(merged.items(), key=lambda kv: -kv[1])]

    def path(self, scope: Literal["inter", "intra"]) -> str | None:
        """The run's path of one scope over all communicators (see Communicator.path)."""
        counts: Counter[str] = Counter()
        for link in self.links(scope):
            counts[link.path] += link.count
        return "+".join(name for name, _ in counts.most_common()) or None

    @property
    def nvls(self) -> bool:
        return any(c.nvls for c in self.communicators)

    @property
    def pxn(self) -> bool:
        return any(c.pxn for c in self.communicators)

    @property
    def collnet(self) -> bool:
        return any(c.collnet for c in self.communicators)


def describe(links: list[Link]) -> str:
    """'NET/IB/GDRDMA on 16 of 16' for the links of one scope ('' for none)."""
    total = sum(link.count for link in links)
    return "; ".join(f"{link.label} on {link.count} of {total}" for link in links)


def summary(fabric: Fabric) -> str:
    """One line for `repro results show`: the NCCL loaded, the network, each scope's path and connections."""
    parts = [f"NCCL {', '.join(fabric.versions) or '?'}", f"network {', '.join(fabric.network) or '?'}"
             + (f" (plugin {fabric.net_plugin})" if fabric.net_plugin else "")]
    for scope, words in (("inter", "inter-node"), ("intra", "intra-node")):
        links = fabric.links(scope)
        parts.append(f"{words} {fabric.path(scope)} ({describe(links)})" if links else f"{words} -")
    if fabric.nvls:
        parts.append("NVLS")
    comms = fabric.communicators
    parts.append(f"{len(comms)} communicator{'s' if len(comms) != 1 else ''}, {fabric.lines} NCCL lines")
    return " · ".join(parts)


def warnings(fabric: Fabric, *, framework_nccl: str | None = None) -> list[str]:
    """Plain warnings about a run's path: the silent misconfigurations nccl-facts.md lists."""
    out: list[str] = []
    inter = fabric.links("inter")
    socket_links = [link for link in inter if link.path == "socket"]
    if socket_links and fabric.hcas:
        hcas = ", ".join(h.name for h in fabric.hcas)
        out.append(f"inter-node traffic over TCP sockets ({describe(socket_links)} connections) although NCCL listed "
                   f"HCAs ({hcas}): IB unusable here (container devices, NCCL_IB_DISABLE, the HCA filter)")
    elif "Socket" in fabric.network and fabric.hcas:
        out.append("NCCL chose the Socket network although it listed HCAs")
    if fabric.net_plugin and fabric.network == ["Socket"]:
        out.append(f"the net plugin {fabric.net_plugin} was loaded but NCCL fell back to TCP sockets (the plugin "
                   "failed to initialise: see its NCCL WARN lines)")
    disabled = [h.name for h in fabric.hcas if h.gdr is False]
    staged = [link for link in inter if link.path == "rdma"]
    if disabled:
        out.append(f"GPUDirect RDMA disabled for {', '.join(disabled)}: network traffic is staged through host memory")
    elif staged:
        out.append(f"no GPUDirect RDMA on {sum(link.count for link in staged)} RDMA connections ({describe(staged)}): "
                   "staged through host memory (peer-memory module, NCCL_NET_GDR_LEVEL)")
    shm = [link for link in fabric.links("intra") if link.path == "shm"]
    if shm:
        out.append(f"GPUs of one node talk through host shared memory (SHM on {sum(link.count for link in shm)} "
                   "connections) instead of P2P: ACS/IOMMU, NCCL_P2P_DISABLE, or a container without the peer devices")
    if len(fabric.versions) > 1:
        out.append(f"processes loaded different NCCL versions: {', '.join(fabric.versions)}")
    reported = framework_nccl or fabric.framework_nccl
    if reported and fabric.version and _bare(reported) != _bare(fabric.version):
        out.append(f"NCCL loaded is {fabric.version}, the framework reports {reported}: another libnccl came first "
                   "(LD_LIBRARY_PATH, a system package, a second wheel)")
    return out


def _bare(version: str) -> str:
    """2.19.3+cuda12.3 -> 2.19.3."""
    return version.split("+", 1)[0].strip()


def difference(old: Fabric | None, new: Fabric | None) -> list[str]:
    """What differs in the path between two runs, one line per scope ('OLD NET/IB/GDRDMA on 16 of 16 inter-node
    connections; NEW NET/Socket on 16 of 16'), and the NCCL loaded; [] when the same or unknown on a side."""
    if old is None or new is None:
        return []
    out = []
    for scope, words in (("inter", "inter-node"), ("intra", "intra-node")):
        a, b = old.links(scope), new.links(scope)
        if _shape(a) != _shape(b):
            out.append(f"OLD {describe(a) or 'none'} {words} connections; NEW {describe(b) or 'none'}")
    if old.nvls != new.nvls:
        out.append(f"NVLS: OLD {'on' if old.nvls else 'off'}, NEW {'on' if new.nvls else 'off'}")
    if old.version and new.version and _bare(old.version) != _bare(new.version):
        out.append(f"NCCL loaded: OLD {old.version}, NEW {new.version}")
    return out


def _shape(links: list[Link]) -> set[tuple[str, bool, bool]]:
    # the same transports, whatever the connection counts (a different world size changes counts, not the path)
    return {(link.transport, link.gdr, link.pxn) for link in links}


def unmet(expect: dict[str, str], fabric: Fabric | None) -> str | None:
    """Why a run's fabric does not meet a declared expectation (None: met). No fabric facts: unmet, said so."""
    if not expect:
        return None
    if fabric is None or not fabric.lines:
        return "expected path " + _words(expect) + ", but NCCL's log was not captured (no NCCL INFO lines)"
    problems = []
    want = expect.get("inter_node")
    if want:
        took = fabric.path("inter")
        if took is not None and took != want:  # a single-node run has no inter-node path to judge
            problems.append(f"inter-node path {took} ({describe(fabric.links('inter'))}), expected {want}")
    want = expect.get("intra_node")
    if want:
        took = "nvls" if want == "nvls" and fabric.nvls else fabric.path("intra")
        if took is not None and took != want:
            problems.append(f"intra-node path {took} ({describe(fabric.links('intra'))}), expected {want}")
    return "; ".join(problems) or None


def _words(expect: dict[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(expect.items()))
