"""`repro import` of logs end to end: several files, re-imports, --set, points that must stay apart, the
figure metrics and compare use, and no traceback whatever the input."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repro.compare.core import compare
from repro.results import metrics
from repro.results.importers import import_file, import_stack, parse_overrides
from repro.results.store import Store
from tests.unit.test_results_cli import run  # the same CLI runner

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "logs" / "real"
LOGS = ROOT / "tests" / "data" / "logs"
RTX3080 = "lambda-3960X-GeForce-RTX-3080-XLA-syn-replicated-"


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return str(tmp_path / "results")


TRAIN_2 = REAL / f"{RTX3080}fp16-2gpus-resnet50-48.log"
INFER_2 = REAL / f"{RTX3080}fp16-2gpus-inference-resnet50-48.log"


def imported(*names: str, sets: tuple[str, ...] = ()):
    stack = import_stack("s")
    return [r for n in names for r in import_file(str(REAL / n), stack, parse_overrides(list(sets)), {}).records]


def test_reimporting_the_same_content_is_skipped_with_a_message(capsys, store, tmp_path):
    code, out, _ = run(capsys, "import", str(TRAIN_2), "--stack", "a", "--store", store)
    assert code == 0 and "imported 1 run from 1 file" in out
    copy = tmp_path / "renamed.log"
    copy.write_bytes(TRAIN_2.read_bytes())  # same bytes under another name
    code, out, _ = run(capsys, "import", str(copy), str(TRAIN_2), "--stack", "a", "--store", store)
    assert code == 0 and out.count("skipped: already imported into stack a") == 2
    assert len(Store(store).records()) == 1
    # in one call, a file given twice counts once; another stack may import it again
    code, out, _ = run(capsys, "import", str(INFER_2), str(INFER_2), "--stack", "b", "--store", store)
    assert "imported 1 run" in out and "skipped" in out and len(Store(store).records()) == 2


def test_a_batch_imports_the_good_files_and_names_every_bad_one(capsys, store, tmp_path):
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(bytes(range(256)) * 8)
    cut = REAL / "github-horovod-issue124-parameter-server-2x2gpu-cut.log"
    code, out, err = run(capsys, "import", str(TRAIN_2), str(garbage), str(INFER_2), str(cut), "--stack", "a",
                         "--store", store)
    assert code == 2
    assert f"{garbage}:1: error: a binary file" in err and f"{cut}:26: error:" in err
    assert "2 of 4 files could not be imported" in err
    assert "imported 2 runs from 2 files" in out and len(Store(store).records()) == 2


def test_set_by_pattern_states_what_logs_do_not_show(capsys, store):
    fp32 = REAL / f"{RTX3080}fp32-1gpus-resnet50-56.log"
    fp16 = REAL / f"{RTX3080}fp16-1gpus-resnet50-48.log"
    code, _, err = run(capsys, "import", str(fp16), str(fp32), "--stack", "a", "--store", store,
                       "--set", "*-fp16-*:precision=fp16", "--set", "*-fp32-*:precision=fp32", "--hosts", "1")
    assert code == 0, err
    got = {r.settings.batch_per_worker: (r.settings.precision, r.settings.hosts) for r in Store(store).records()}
    assert got == {48: ("fp16", 1), 56: ("fp32", 1)}


def test_set_is_refused_when_it_contradicts_the_log_or_matches_nothing(capsys, store):
    rocm = REAL / "github-rocm-issue1803-rx6700s-resnet50.log"
    code, _, err = run(capsys, "import", str(rocm), "--stack", "a", "--store", store, "--set", "*rocm*:model=vgg16")
    assert code == 2 and f"{rocm}:2: error: model: the log shows 'resnet50', --set says 'vgg16'" in err
    code, _, err = run(capsys, "import", str(rocm), "--stack", "a", "--store", store, "--set", "nope*:hosts=2")
    assert code == 2 and "matches none of the files" in err
    code, _, err = run(capsys, "import", str(rocm), "--stack", "a", "--store", store, "--set", "precision=fp64")
    assert code == 2 and "expected one of fp32, fp16" in err
    assert Store(store).records() == []


def test_forward_only_and_training_runs_are_never_pooled():
    points = metrics.points(imported(TRAIN_2.name, INFER_2.name))
    assert sorted((p.settings.extra["mode"], round(p.images_per_sec, 2)) for p in points) == \
        [("inference", 6621.59), ("training", 1464.72)]


def test_configurations_that_differ_are_never_pooled():
    ps = "lambda-Gold-6230-Quadro-RTX-8000-NVLink-XLA-trt2-TF2-2-syn-parameter-server-fp16-2gpus-resnet50-512.log"
    rep = ps.replace("parameter-server", "replicated")
    syn = "lambda-7742-8xA100-SXM4-40GB-TF2-3-syn-replicated-fp16-8gpus-resnet50-448.log"
    real_data = syn.replace("-syn-", "-real-")
    for pair in ((ps, rep), (syn, real_data)):
        points = metrics.points(imported(*pair))
        assert len(points) == 2, pair


def test_the_record_figure_is_the_logs_and_the_samples_give_its_interval():
    (train,) = imported(TRAIN_2.name)
    assert metrics.throughput(train) == 1464.72
    (point,) = metrics.points([train])
    assert point.images_per_sec == pytest.approx(1464.72, abs=1e-9)
    assert point.estimate.low < 1464.72 < point.estimate.high  # the interval comes from the step samples
    # the samples alone (a running mean's reconstruction) would say otherwise: the figure wins
    raw = metrics.items_per_step(train) / (sum(metrics.global_step_times(train)) / 10)
    assert raw != pytest.approx(1464.72, abs=0.5)


def test_compare_of_imported_runs_uses_the_logs_figures_and_says_what_changed():
    tf1 = imported("lambda-Gold-6230-GeForce-RTX-2080-Ti-trt-TF1-15-syn-replicated-fp32-4gpus-inception3-64.log")
    tf2 = imported("lambda-Gold-6230-GeForce-RTX-2080-Ti-trt-TF2-2-syn-replicated-fp32-4gpus-inception3-64.log")
    c = compare(tf1, tf2)
    (row,) = c.throughput
    assert row.ratio.ratio == pytest.approx(697.64 / 693.42)
    assert "TensorFlow 1.15 → 2.2" in c.changes.headline()
    assert any(ch.path == "tensorflow" for ch in c.changes.software)


def test_compare_notes_what_is_unknown(capsys, store):
    fp16 = REAL / f"{RTX3080}fp16-1gpus-resnet50-48.log"
    run(capsys, "import", str(fp16), "--stack", "old", "--store", store)
    run(capsys, "import", str(fp16), "--stack", "new", "--store", store, "--set", "precision=fp16")
    code, out, _ = run(capsys, "compare", "old", "new", "--store", store)
    assert code == 0
    assert "precision unknown → fp16" in out
    assert "Note: precision is unknown on OLD" in out


def test_a_published_table_lines_up_with_the_logs_of_the_same_runs(capsys, store):
    table = ROOT / "docs" / "baselines" / "lambda-rtx3080-fp16.csv"
    assert run(capsys, "import", "--table", str(table), "--stack", "lambda-table", "--store", store)[0] == 0
    logs = [str(REAL / f"{RTX3080}fp16-{n}") for n in ("1gpus-resnet50-48.log", "2gpus-resnet50-48.log",
                                                      "1gpus-inception3-24.log")]
    assert run(capsys, "import", *logs, "--stack", "lambda-logs", "--store", store, "--set", "precision=fp16")[0] == 0
    code, out, _ = run(capsys, "compare", "lambda-table", "lambda-logs", "--store", store, "--format", "json")
    data = json.loads(out)
    ratios = {(r["point"]["model"], r["point"]["workers"]): r["ratio"] for r in data["throughput"]}
    assert ratios == pytest.approx({("resnet50", 1): 875.20 / 875, ("resnet50", 2): 1464.72 / 1465,
                                    ("inception3", 1): 412.09 / 412})
    # the table says it again: the same content is not imported twice
    code, out, _ = run(capsys, "import", "--table", str(table), "--stack", "lambda-table", "--store", store)
    assert code == 0 and "skipped: already imported" in out


_LINES = st.sampled_from([
    "Model:       resnet50", "Batch size:  64 global", "64 per device", "Devices:     ['/gpu:0']", "Step\tImg/sec",
    "10\timages/sec: 200.0 +/- 0.1 (jitter = 0.2)\t8.1", "1\timages/sec: 0 +/- 0", "total images/sec: 123.4",
    "Running warm up", "Done warm up", "Iter #0: 1e9 img/sec per GPU", "Total img/sec on 0 GPU(s): 1 +-1",
    "Number of GPUs: 999999999999", "Batch size: 0", "[1,3]<stdout>:Model: x", "Traceback (most recent call last)",
    "ValueError: boom", ":::MLLOG {\"key\": \"run_start\", \"time_ms\": \"x\"}", ":::MLLOG {not json", "....",
    "$ mpirun -np -H : python tf_cnn_benchmarks.py --batch_size=-1 --model", "name: ", "Found device 0 with",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(_LINES, st.text(max_size=40)), max_size=30), raw=st.binary(max_size=200))
def test_import_never_raises_whatever_the_input(lines, raw):
    with tempfile.TemporaryDirectory() as tmp:
        text_file, raw_file = Path(tmp) / "t.log", Path(tmp) / "r.log"
        text_file.write_text("\n".join(lines), encoding="utf-8")
        raw_file.write_bytes(raw)
        for path in (text_file, raw_file):
            result = import_file(str(path), import_stack("fuzz"), parse_overrides(["workers=2"]), {})
            assert result.status in ("imported", "failed")
            if result.status == "failed":
                assert str(path) in result.error.render()


def test_cli_on_mangled_real_logs_exits_0_or_2_without_a_traceback(capsys, store, tmp_path):
    rng = random.Random(7)
    sources = sorted(REAL.glob("*.log"))
    for i in range(40):
        lines = rng.choice(sources).read_text().splitlines()
        start = rng.randrange(len(lines))
        cut = lines[start:start + rng.randrange(1, 60)]
        if i % 3 == 0:
            rng.shuffle(cut)
        path = tmp_path / f"m{i}.log"
        path.write_text("\n".join(cut))
        code, _, err = run(capsys, "import", str(path), "--stack", "m", "--store", store)
        # a traceback of repro's starts a line; a log's own (two Lambda logs hold one) may be quoted as its failure
        assert code in (0, 2) and not any(line.startswith("Traceback") for line in err.splitlines()), err


def test_a_file_too_large_for_a_log_is_refused_before_it_is_read(monkeypatch, tmp_path):
    from repro.results.importers import batch

    monkeypatch.setattr(batch, "MAX_BYTES", 1000)
    big = tmp_path / "big.log"
    big.write_bytes(TRAIN_2.read_bytes())
    result = import_file(str(big), import_stack("s"), (), {})
    assert result.status == "failed" and "not a benchmark log" in result.error.render()


def test_name_value_lines_of_a_logs_tail_are_stored_redacted(capsys, store, tmp_path):
    log = tmp_path / "with-secrets.log"
    log.write_text(TRAIN_2.read_text() + "\nMYSQL_PWD=Mysql-Pw-8d1e\nexport TF_VAR_db_password='Tf Var 5c2a'\n"
                   "notify https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/Sl4ckS3cretPath0000\n")
    code, out, err = run(capsys, "import", str(log), "--stack", "m", "--store", store)
    assert code == 0, err
    code, shown, _ = run(capsys, "results", "--store", store, "--json")
    blob = b"".join(p.read_bytes() for p in Path(store).rglob("*") if p.is_file()).decode(errors="replace")
    for secret in ("Mysql-Pw-8d1e", "Tf Var 5c2a", "Sl4ckS3cretPath0000"):
        assert secret not in blob and secret not in out + err + shown, secret
    assert "MYSQL_PWD=<redacted:" in blob


@pytest.mark.parametrize("source", ["fifo", "/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("as_table", [False, True])
def test_a_pipe_or_a_device_is_refused_at_once_as_a_log_or_a_table(tmp_path, source, as_table):
    """A FIFO blocked `repro import` for ever; /dev/urandom read for ever; /dev/zero grew to a MemoryError."""
    import os
    import subprocess
    import sys

    path = str(tmp_path / "fifo") if source == "fifo" else source
    if source == "fifo":
        os.mkfifo(path)
    argv = [sys.executable, "-m", "repro", "import", *(["--table", path] if as_table else [path]), "--stack", "m",
            "--store", str(tmp_path / "store")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
