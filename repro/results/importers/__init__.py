"""Importers of the logs and tables people already have: earlier runs become baselines (pure, but for reading files).

Formats, one reader module each, and what each takes as a run's figure:

* tf_cnn_benchmarks (``tf_cnn``): TF 1.x and 2.x; one GPU, replicated, parameter server, Horovod with
  interleaved or ``[1,R]<stdout>:``-tagged ranks; training and forward-only. Figure: ``total images/sec``.
* Horovod's synthetic benchmarks (``horovod``): TensorFlow, Keras and PyTorch, tagged or not. Figure:
  ``Total img/sec on N GPU(s)``.
* MLPerf training results (``mllog``): ``:::MLLOG`` events; time to accuracy. The v0.5 and v0.6 line formats
  (``mlperf_legacy``) are read as the events they stand for.
* Bluefog's benchmark (``bluefog``), nccl-tests tables (``nccl_tests``), PyTorch's DDP benchmark (``torch_ddp``),
  transformer training (``megatron``, ``torchtitan``, ``hf_trainer``, ``deepspeed``; the ``lm`` comparison kind),
  pytorch/examples' ImageNet training (``imagenet_example``: images/sec derived from the batch and the logged
  iteration time, as main.py defines them).
  NCCL INFO lines among a run's lines become the record's ``fabric`` (repro.results.nccl).
* Published tables (repro.results.published): CSV rows of figures copied from papers and READMEs.

The pieces: ``lines`` (numbering, rank tags, launcher prefixes), ``command`` (the command line a log
shows), ``split`` (a file's lines into runs), ``seen`` (device names, versions), ``settings`` (the log's
settings completed by ``--set``), ``records`` (runs to RunRecords), ``batch`` (many files, re-imports).

For ``repro bench``: ``parse_tf_cnn_output(stdout, source=...) -> ParsedRun`` reads one tf_cnn_benchmarks
run's output with the same parser as ``repro import``.
"""

from repro.results.importers.batch import FileResult, import_file, import_files, known_sources, source_key
from repro.results.importers.horovod import HOROVOD
from repro.results.importers.mllog import MLLOG
from repro.results.importers.records import FORMATS, import_stack, read_log, to_record
from repro.results.importers.runs import ParsedRun
from repro.results.importers.settings import Override, parse_overrides, unmatched
from repro.results.importers.tf_cnn import TF_CNN, parse_tf_cnn_output

__all__ = ["FORMATS", "HOROVOD", "MLLOG", "TF_CNN", "FileResult", "Override", "ParsedRun", "import_file",
           "import_files", "import_stack", "known_sources", "parse_overrides", "parse_tf_cnn_output", "read_log",
           "source_key", "to_record", "unmatched"]
