"""The NCCL log parser on real public excerpts (tests/data/logs/nccl/SOURCES.md names each file's source)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from repro.results.fabric import describe, difference, unmet, warnings
from repro.results.nccl import parse

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs" / "nccl"


def fabric_of(name: str):
    return parse((LOGS / name).read_text())


# file, its source, inter-node path, intra-node path, inter-node connections, intra-node connections
PATHS = [
    ("nccl-707-ib-gdrdma-busid.log", "NVIDIA/nccl#707", "rdma-gdr", None, 12, 0),
    ("aks-rdma-36-pod-gdrdma.log", "Azure/aks-rdma-infiniband#36", "rdma-gdr", None, 7, 0),
    ("nccl-1538-pod-p2p-cumem.log", "NVIDIA/nccl#1538", None, "p2p", 0, 11),
    ("nccl-892-p2p-direct-nvls0.log", "NVIDIA/nccl#892", None, "p2p", 0, 2),
    ("nccl-1189-mpirun-h20-ib-cumem.log", "NVIDIA/nccl#1189", "rdma-gdr", "p2p", 9, 5),
    ("torchtitan-1570-rank-prefix-libfabric.log", "pytorch/torchtitan#1570", "rdma-gdr", "p2p", 4, 6),
    ("nccl-1597-aws-libfabric-space.log", "NVIDIA/nccl#1597", "rdma-gdr", None, 11, 0),
    ("nccl-229-aws-ring-pre2.7.log", "NVIDIA/nccl#229", "plugin", "p2p", 2, 2),
    ("pytorch-81628-roce-no-gdrdma.log", "pytorch/pytorch#81628", "rdma", None, 3, 0),
    ("ray-16979-direct-shared-memory.log", "ray-project/ray#16979", None, "p2p+shm", 0, 7),
    ("k8s-deepspeed-ofi-fallback-socket.log", "find_string id 24563078160", "socket", None, 4, 0),
    ("shm-direct-direct-mixed.log", "find_string id 71524888407", None, "p2p+shm", 0, 5),
    ("pxn-ib-gdrdma.log", "find_string id 53411971708", "rdma-gdr", "p2p", 6, 6),
    ("socket-2.4.8-ring-warn.log", "find_string id 44646908813", "socket", None, 2, 0),
    ("socket-busid-ipc-direct-shm.log", "find_string id 31276347573", "socket", "p2p+shm", 4, 6),
    ("vllm-ray-nested-comm-suffix.log", "find_string id 56950484488", "socket", None, 4, 0),
    ("deepep-106-ibext-one-line.log", "deepseek-ai/DeepEP#106", "rdma-gdr", None, 4, 0),
]


@pytest.mark.parametrize(("name", "source", "inter", "intra", "n_inter", "n_intra"), PATHS,
                         ids=[p[0] for p in PATHS])
def test_paths_and_connection_counts_of_real_logs(name, source, inter, intra, n_inter, n_intra):
    fabric = fabric_of(name)
    assert fabric.path("inter") == inter, source
    assert fabric.path("intra") == intra, source
    assert sum(link.count for link in fabric.links("inter")) == n_inter, source
    assert sum(link.count for link in fabric.links("intra")) == n_intra, source


def test_every_log_in_the_directory_is_listed_in_sources_and_tested():
    listed = (LOGS / "SOURCES.md").read_text()
    tested = {p[0] for p in PATHS} | {"nv_peer_memory-56-ib-2.5.6.log", "nccl-tests-228-ib-hca.log",
                                      "nccl-1584-stripped-sharp-nvls.log", "horovod-3751-mpirun-roce.log",
                                      "nccl-1212-ray-version.log"}
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == tested
    assert all(f"`{name}`" in listed for name in files)


def test_version_behind_launcher_prefixes_and_bare():
    # horovod/horovod#3751 (mpirun's [1,0]<stdout>:), NVIDIA/nccl#1212 (Ray), Mellanox/nv_peer_memory#56 (bare line),
    # find_string id 24563078160 (after the INFO prefix, 2.27)
    assert fabric_of("horovod-3751-mpirun-roce.log").versions == ["2.8.4+cuda11.2"]
    assert fabric_of("nccl-1212-ray-version.log").version == "2.14.3+cuda11.8"
    assert fabric_of("nv_peer_memory-56-ib-2.5.6.log").version == "2.5.6+cuda10.0"
    assert fabric_of("k8s-deepspeed-ofi-fallback-socket.log").version == "2.27.3+cuda12.9"


def test_loaded_nccl_differing_from_the_framework_is_warned():
    # NVIDIA/nccl#1212: torch.cuda.nccl.version() said 2.19.3, the log says 2.14.3 was loaded
    said = warnings(fabric_of("nccl-1212-ray-version.log"), framework_nccl="2.19.3")
    assert any("NCCL loaded is 2.14.3+cuda11.8, the framework reports 2.19.3" in w for w in said)
    assert not any("framework" in w for w in warnings(fabric_of("nccl-1212-ray-version.log"),
                                                      framework_nccl="2.14.3"))


def test_framework_version_from_torch_error_text_is_not_taken_for_the_loaded_one():
    # the suffix ProcessGroupNCCL adds to its errors (pytorch/pytorch#122571 quotes it) names torch's NCCL
    text = ("NCCL error in: ProcessGroupNCCL.cpp:1691, internal error - please report this issue to the NCCL "
            "developers, NCCL version 2.19.3\n" + (LOGS / "nccl-1212-ray-version.log").read_text())
    fabric = parse(text)
    assert fabric.framework_nccl == "2.19.3" and fabric.versions == ["2.14.3+cuda11.8"]
    assert any("the framework reports 2.19.3" in w for w in warnings(fabric))


def test_hcas_roce_and_the_environment_nccl_read():
    # pytorch/pytorch#81628 (RoCE), NVIDIA/nccl-tests#228 (old `set to` form)
    roce = fabric_of("pytorch-81628-roce-no-gdrdma.log")
    assert [(h.name, h.link) for h in roce.hcas] == [("mlx5_0", "RoCE"), ("mlx5_1", "RoCE"), ("i40iw0", "RoCE")]
    assert roce.network == ["IB"] and roce.env == {"NCCL_IB_DISABLE": "0"}
    assert any("no GPUDirect RDMA on 3 RDMA connections" in w for w in warnings(roce))
    ib = fabric_of("nccl-tests-228-ib-hca.log")
    assert [h.name for h in ib.hcas] == ["mlx5_0", "mlx5_2"]
    assert ib.env["NCCL_IB_HCA"] == "mlx5_2:1,mlx5_0:1"


def test_plugins_sharp_and_nvls_from_a_log_without_prefixes():
    # NVIDIA/nccl#1584: the poster stripped the prefixes
    fabric = fabric_of("nccl-1584-stripped-sharp-nvls.log")
    assert fabric.version == "2.24.3+cuda12.2"
    assert fabric.net_plugin == "NCCL RDMA Plugin v8" and fabric.collnet_plugin == "SHARP"
    assert fabric.network == ["IBext_v8"] and fabric.nvls_support is True
    assert len(fabric.hcas) == 8 and all(h.sharp for h in fabric.hcas)
    (comm,) = fabric.communicators
    assert (comm.id, comm.nranks) == ("0xd134602cf80e4ea2", 8)


def test_socket_fallback_after_a_failed_plugin_per_communicator():
    # find_string id 24563078160: aws-ofi-nccl failed, NCCL fell back to sockets; a split communicator
    fabric = fabric_of("k8s-deepspeed-ofi-fallback-socket.log")
    assert fabric.net_plugin == "Libfabric" and fabric.network == ["Socket"] and fabric.nccl_warnings == 2
    world, split = fabric.communicators
    assert (world.id, world.nranks, world.nnodes, world.init_s, world.nvls_channels) == \
        ("0xbc42413ad5ab3a45", 4, 4, 59.98, 0)
    assert (split.id, split.init_s, split.path("inter")) == ("0x562b2ca93860", 0.1, "socket")
    assert [h.name for h in fabric.sockets] == ["eth0"]
    assert any("fell back to TCP sockets" in w for w in warnings(fabric))


def test_pxn_and_shm_warnings():
    # find_string id 53411971708 (PXN), ray-project/ray#16979 (direct shared memory)
    pxn = fabric_of("pxn-ib-gdrdma.log")
    assert pxn.pxn and describe(pxn.links("inter")) == "NET/IB(PXN)/GDRDMA on 3 of 6; NET/IB/GDRDMA on 3 of 6"
    ray = fabric_of("ray-16979-direct-shared-memory.log")
    assert any("host shared memory (SHM on 2 connections)" in w for w in warnings(ray))
    (comm,) = ray.communicators  # Init COMPLETE after the channel lines (before 2.19): one communicator
    assert comm.id == "0x7eff7c000e10" and comm.nranks == 4


def test_sockets_while_hcas_were_listed_are_warned():
    # pytorch/pytorch#81628's HCAs with find_string id 31276347573's socket connections: the classic silent fallback
    text = (LOGS / "pytorch-81628-roce-no-gdrdma.log").read_text().splitlines()[:5]
    text += (LOGS / "socket-busid-ipc-direct-shm.log").read_text().splitlines()
    said = warnings(parse("\n".join(text)))
    assert any("over TCP sockets" in w and "mlx5_0" in w for w in said)


def test_srun_label_prefix_and_digest():
    # `srun -l` puts "0: " in front of each line (no public log found: the prefix is added to NVIDIA/nccl#707's lines)
    raw = (LOGS / "nccl-707-ib-gdrdma-busid.log").read_text().splitlines()
    labelled = "\n".join(f"{i % 4}: {line}" for i, line in enumerate(raw))
    fabric = parse(labelled)
    assert fabric.path("inter") == "rdma-gdr" and fabric.lines == len(raw)
    assert fabric.digest == hashlib.sha256(labelled.encode()).hexdigest()


def test_secret_looking_values_nccl_read_are_redacted():
    text = ("h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0.\n"
            "h:1:2 [0] NCCL INFO NCCL_SOME_TOKEN set by environment to hunter2hunter2.")
    env = parse(text).env
    assert env["NCCL_IB_HCA"] == "mlx5_0" and "hunter2" not in env["NCCL_SOME_TOKEN"]


def test_no_nccl_lines_give_empty_facts():
    fabric = parse("Epoch 1 loss 2.3\nimages/sec: 120.5\n")
    assert fabric.lines == 0 and fabric.communicators == [] and fabric.path("inter") is None


def test_difference_names_both_paths_with_counts():
    old = fabric_of("nccl-707-ib-gdrdma-busid.log")
    new = fabric_of("socket-2.4.8-ring-warn.log")
    assert difference(old, new) == ["OLD NET/IB/GDRDMA on 12 of 12 inter-node connections; NEW NET/Socket on 2 of 2"]
    assert difference(old, old) == []


def test_unmet_expectation_names_the_path_taken():
    socket = fabric_of("k8s-deepspeed-ofi-fallback-socket.log")
    why = unmet({"inter_node": "rdma-gdr"}, socket)
    assert why is not None and why.startswith("inter-node path socket (NET/Socket on 4 of 4), expected rdma-gdr")
    ib = fabric_of("nccl-1189-mpirun-h20-ib-cumem.log")
    assert unmet({"inter_node": "rdma-gdr", "intra_node": "p2p"}, ib) is None
    assert "intra-node path p2p+shm" in unmet({"intra_node": "p2p"}, fabric_of("shm-direct-direct-mixed.log"))
    assert "not captured" in unmet({"inter_node": "rdma"}, None)
