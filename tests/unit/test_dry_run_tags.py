"""`repro up --dry-run` and `repro bench --dry-run` name the same image tag, also with $PIP_CERT set (a CA bundle is
part of the build context, so both must use the same default site options)."""

from __future__ import annotations

import re

import pytest

from repro.cli import main

TAG = re.compile(r"repro/stack:[0-9a-f]{16}")


@pytest.mark.parametrize("cert", [False, True])
def test_up_and_bench_dry_runs_name_the_same_tag(capsys, tmp_path, monkeypatch, cert):
    if cert:
        bundle = tmp_path / "ca.pem"
        bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        monkeypatch.setenv("PIP_CERT", str(bundle))
    else:
        monkeypatch.delenv("PIP_CERT", raising=False)
    store = str(tmp_path / "results")  # empty: no lock, so bench names the tag `repro up` would build
    assert main(["up", "cpu-tf215", "--dry-run", "--store", store]) == 0
    up = set(TAG.findall(capsys.readouterr().out))
    assert main(["bench", "--stack", "cpu-tf215", "--runtime", "docker", "--dry-run", "--store", store]) == 0
    bench = set(TAG.findall(capsys.readouterr().out))
    assert len(up) == 1 and bench == up
