#!/usr/bin/env bash
# Regenerate the README's sample output of the quick start from the real command: runs the demo's job
# (scripts/demo.sh --no-setup, into a temporary store), times it, and writes the verdict it printed (with its
# evidence and the `repro compare` line) and the time it took between the README's `demo-output` markers. Run it on the machine the README names.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
store=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$store" "$out"' EXIT
load=$(cut -d' ' -f1 /proc/loadavg)  # a busy machine's figures are not an idle one's: the block says which
start=$(date +%s)
scripts/demo.sh --no-setup --store "$store" >"$out"
seconds=$(( $(date +%s) - start ))
python - "$out" "$seconds" "$load" "$(nproc)" "$store" <<'PY'
import re, sys
from pathlib import Path

printed = Path(sys.argv[1]).read_text(encoding="utf-8")
table = printed[printed.index("\nverdict: "):].strip()  # the verdict, its evidence and the compare line, as printed
table = table.replace(f" --store {sys.argv[5]}", "")  # the temporary store: the README's reader uses ./results
readme = Path("README.md")
text = readme.read_text(encoding="utf-8")
block = (f"<!-- demo-output: written by scripts/readme-sample.sh; the job took {sys.argv[2]} s, load average "
         f"{sys.argv[3]} on {sys.argv[4]} cores before it -->\n"
         f"```\n{table}\n```\n<!-- /demo-output -->")
new, n = re.subn(r"<!-- demo-output:.*?<!-- /demo-output -->", lambda _: block, text, flags=re.S)
if n != 1:
    sys.exit("README.md: no <!-- demo-output --> ... <!-- /demo-output --> block to replace")
readme.write_text(new, encoding="utf-8")
print(block)
PY
