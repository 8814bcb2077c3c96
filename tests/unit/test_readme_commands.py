"""The README stays true: every `repro ...` command in its code blocks parses with repro's own parser (flags,
subcommands and choices as the README writes them), every stack file it names exists, and its claims about
the extras and --backends match pyproject.toml and the CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from repro.cli import build_parser
from repro.resources import tomllib  # the standard library's, or tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    """Every `repro ...` command of the README's shell code blocks, continuation lines joined, comments dropped."""
    out = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", README, re.S):
        if lang in ("yaml", "toml"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split("  #", 1)[0].strip()  # the README's comments follow two spaces or more
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("repro ") and "$(" not in part:
                    out.append(part)
    # and the commands quoted in the text that a reader can type as they are (no STACK-style placeholders)
    for span in re.findall(r"`(repro [^`]+)`", README):
        span = " ".join(span.split())
        whole = len(span.split()) >= 3 or span.startswith("repro -")  # `repro bench` alone names a command
        if whole and not re.search(r"[A-Z]{2,}|\[|\||\.\.\.", span):
            out.append(span)
    return list(dict.fromkeys(out))


COMMANDS = _commands()


def test_the_readme_has_commands_to_check():
    assert len(COMMANDS) >= 8 and any(c.startswith("repro bench") for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_parses(command, capsys):
    argv = shlex.split(command)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse's error: the README names a flag, subcommand or choice repro lacks
        if exc.code == 0 and ({"--help", "-V"} & set(argv)):
            return  # help and version end the parse, as they should
        pytest.fail(f"`{command}` does not parse (exit {exc.code}): {capsys.readouterr().err}")
    assert callable(args.handler)


def test_every_stack_file_the_readme_names_exists():
    named = set(re.findall(r"stacks/[\w.-]+\.yaml", README))
    assert named and all((ROOT / n).is_file() for n in named), sorted(n for n in named if not (ROOT / n).is_file())


def test_the_extras_table_matches_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    listed = set(re.findall(r"^\| `repro\[(\w+)\]` \|", README, re.M))
    assert listed == set(extras) - {"test"}
    assert extras["workloads"] == ["repro[tf,torch]"]
    assert not any(r.startswith("torch") for r in extras["tf"]) and not any(r.startswith("tensorflow")
                                                                                for r in extras["torch"])


def test_backends_are_documented_as_horovods_controllers_only():
    parser = build_parser()
    bench = next(a for a in parser._actions if a.dest == "command").choices["bench"].complete()
    help_text = next(a.help for a in bench._actions if "--backends" in a.option_strings)
    assert "Horovod" in help_text and "nccl" not in help_text
    assert "`--backends mpi,gloo` (Horovod's controllers" in README and "--backends mpi,gloo,nccl" not in README


def test_no_internal_jargon():
    assert not re.search(r"seeds? 0\d\d", README)
