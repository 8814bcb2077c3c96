"""`repro fabric LOG...`: read each log (bounded), parse NCCL's lines, and say which path it took (a typed report)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.errors import InputError
from repro.files import FileProblem, read_file
from repro.formats import Column, Document, Heading, Table
from repro.results.fabric import Communicator, Fabric, describe, summary, warnings

__all__ = ["FabricFile", "FabricReport", "fabric", "read_log", "summary", "warnings"]  # summary, warnings: for the CLI
from repro.results.nccl import parse

# A training job's whole output can be large; NCCL's lines are a small part of it. Larger files: cut them first
# (`grep NCCL job.out > nccl.log`).
MAX_LOG_BYTES = 256 << 20

_COLUMNS = (Column("file"), Column("communicator"), Column("ranks", numeric=True), Column("nodes", numeric=True),
            Column("NCCL"), Column("network"), Column("inter-node"), Column("inter-node connections"),
            Column("intra-node"), Column("intra-node connections"), Column("NVLS"), Column("PXN"),
            Column("init s", numeric=True))


@dataclass(frozen=True)
class FabricFile:
    """One log's facts and what to say about them."""

    path: str
    fabric: Fabric
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class FabricReport:
    """Every log given, in order."""

    files: tuple[FabricFile, ...]

    def document(self) -> Document:
        """The report as a Document (one row per file and communicator, warnings under the table)."""
        cells, data, notes = [], [], []
        for f in self.files:
            for comm in f.fabric.communicators or [None]:
                row = _row(f, comm)
                data.append(row)
                cells.append(tuple("" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
                                   for v in row.values()))
            notes.extend(f"{f.path}: {w}" for w in f.warnings)
        table = Table(_COLUMNS, tuple(cells), tuple(data), title="The path NCCL took",
                      caption=("per log file and communicator; connections: distinct channel connections NCCL "
                               "printed (send and receive lines each count once)",),
                      notes=tuple(notes), name="communicators")
        return Document((Heading("fabric"), table), data={"files": [_file_data(f) for f in self.files]})


def _row(f: FabricFile, comm: Communicator | None) -> dict[str, Any]:
    fabric = f.fabric
    scope = comm or fabric
    inter = [link for link in comm.links if link.scope == "inter"] if comm else fabric.links("inter")
    intra = [link for link in comm.links if link.scope == "intra"] if comm else fabric.links("intra")
    return {"file": f.path, "communicator": comm.id if comm else "-",
            "ranks": comm.nranks if comm else None, "nodes": comm.nnodes if comm else None,
            "nccl": ", ".join(fabric.versions) or "?", "network": _network(fabric),
            "inter_node": scope.path("inter") or "-", "inter_connections": describe(inter) or "-",
            "intra_node": scope.path("intra") or "-", "intra_connections": describe(intra) or "-",
            "nvls": _yes(comm.nvls_channels if comm else None, comm.nvls if comm else fabric.nvls),
            "pxn": "yes" if scope.pxn else "no", "init_s": comm.init_s if comm else None}


def _network(fabric: Fabric) -> str:
    words = ", ".join(fabric.network) or "?"
    if fabric.net_plugin:
        words += f" (plugin {fabric.net_plugin})"
    if fabric.hcas:
        words += " · " + " ".join(f"{h.name}/{h.link}" for h in fabric.hcas)
    return words


def _yes(channels: int | None, used: bool) -> str:
    if channels is None and not used:
        return "?"
    return "yes" if used else "no"


def _file_data(f: FabricFile) -> dict[str, Any]:
    return {"file": f.path, "inter_node": f.fabric.path("inter"), "intra_node": f.fabric.path("intra"),
            "warnings": list(f.warnings), "facts": f.fabric.model_dump(mode="json")}


def read_log(path: str) -> str:
    """A log's text, read bounded (a FIFO, a device, a directory or a huge file: InputError naming it)."""
    try:
        return read_file(path, MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except FileProblem as exc:
        raise InputError(f"{path}: {exc}") from None


def fabric(paths: Sequence[str], *, framework_nccl: str | None = None) -> FabricReport:
    """Each log's NCCL facts and warnings (`framework_nccl`: the NCCL the framework reports, to compare with)."""
    files = []
    for path in paths:
        facts = parse(read_log(path))
        said = warnings(facts, framework_nccl=framework_nccl)
        if not facts.lines:
            said = ["no NCCL lines (run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV)"]
        files.append(FabricFile(path, facts, tuple(said)))
    return FabricReport(tuple(files))
