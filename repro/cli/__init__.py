"""The `repro` command line: parse arguments, call one plain function per command, map errors to exit codes.

Each command group lives in its own module here and registers its subcommands; command modules
import only argparse at module level, so `repro --help` never loads TensorFlow, docker or ansible. A command
whose arguments come from plug-in registries (choices, per-workload flags) adds them with
`CommandParser.defer`, so they are built only when that command runs or prints its help.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence

from repro import __version__

# Modules whose register(subparsers) adds subcommands, in the order of the data flow.
COMMAND_MODULES = (
    "repro.cli.init_cmds",
    "repro.cli.manifest_cmds",
    "repro.cli.capture_cmds",
    "repro.cli.image_cmds",
    "repro.cli.hosts_cmds",
    "repro.cli.bench_cmds",
    "repro.cli.results_cmds",
    "repro.cli.import_cmds",
    "repro.cli.compare_cmds",
    "repro.cli.fabric_cmds",
)

EXIT_OK = 0
EXIT_FAILURE = 1


USAGE_LINES = 4  # a longer usage is replaced by a pointer to --help in an error: the error is what matters


def close_matches(word: str, known: Sequence[str]) -> list[str]:
    """The known words closest to a mistyped one (`--warmup_steps` finds `--warmup-steps`)."""
    import difflib

    candidates = {k.replace("_", "-").lower(): k for k in known}
    found = difflib.get_close_matches(word.replace("_", "-").lower(), list(candidates), n=2, cutoff=0.6)
    return [candidates[f] for f in found]


def _unquoted(text: str) -> str:
    return text.strip().strip("'\"")


class ReproParser(argparse.ArgumentParser):
    """An argument parser whose errors are short: the error, a did-you-mean for a mistyped flag, subcommand or
    choice, and the usage only when it is short (else a pointer to --help); exit status 2 as argparse's."""

    def suggestion(self, message: str) -> str:
        """'did you mean ...?' for the word an argparse error message names, or ''."""
        import re

        choice = re.search(r"invalid choice: (.+?) \(choose from (.*)\)$", message)
        if choice:
            known = [_unquoted(c) for c in choice.group(2).split(",")]
            close = close_matches(_unquoted(choice.group(1)), known)
            return f"did you mean {' or '.join(close)}?" if close else ""
        unknown = re.match(r"unrecognized arguments: (.*)$", message)
        if unknown:
            flags = [f for f in self._option_string_actions if f.startswith("--")]
            said = []
            for word in unknown.group(1).split():
                if word.startswith("-"):
                    close = close_matches(word.split("=", 1)[0], flags)
                    if close:
                        said.append(f"{word.split('=', 1)[0]}: did you mean {' or '.join(close)}?")
            return "; ".join(said)
        return ""

    def error(self, message: str):  # type: ignore[override]
        """Print the error, a suggestion and a short usage on stderr; exit 2."""
        lines = [f"{self.prog}: error: {message}"]
        hint = self.suggestion(message)
        if hint:
            lines.append(f"  {hint}")
        usage = self.format_usage().rstrip()
        if usage.count("\n") < USAGE_LINES:
            lines.append(usage)
        else:
            lines.append(f"usage: {self.prog} ... (`{self.prog} --help` lists every option)")
        self.exit(2, "\n".join(lines) + "\n")


class CommandParser(ReproParser):
    """A command's parser that may add some of its arguments on first use: `p.defer(fill)` runs `fill(p)` before
    the parser parses or prints usage or help, in the order deferred (`complete()` runs them now)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fills: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, fill: Callable[[argparse.ArgumentParser], None]) -> None:
        self._fills.append(fill)

    def complete(self) -> CommandParser:
        while self._fills:
            self._fills.pop(0)(self)
        return self

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self.complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.complete()
        return super().format_usage()

    def format_help(self) -> str:
        self.complete()
        return super().format_help()


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """The full argument parser with every registered command (lazy: each command's deferred arguments are added
    when that command is parsed or its help printed, so one command never pays for another's plug-ins)."""
    import importlib

    parser = ReproParser(
        prog="repro",
        description="Reproducible distributed deep-learning benchmarks: "
        "validate a stack, build its image, prepare hosts, benchmark, compare.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"repro {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    parser.add_argument("-q", "--quiet", action="store_true", help="print results and errors only")
    parser.add_argument("-v", "--verbose", action="store_true", help="print more of what happens")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for command in sub.choices.values():
        command.defer(_common_options_nested)
        if not lazy:
            command.complete()
    return parser


def _common_options_nested(command: argparse.ArgumentParser) -> None:
    _common_options(command)
    for nested in (a for a in command._actions if isinstance(a, argparse._SubParsersAction)):
        for subcommand in dict.fromkeys(nested.choices.values()):  # an alias names the same parser
            _common_options(subcommand)  # `repro results show ID -q` as well


def _common_options(command: argparse.ArgumentParser) -> None:
    """-q/-v on every command, before or after its name (`repro -q bench ...` = `repro bench -q ...`)."""
    have = {a.dest: a for a in command._actions}
    for flags, dest, what in ((("-q", "--quiet"), "quiet", "print results and errors only"),
                              (("-v", "--verbose"), "verbose", "print more of what happens")):
        if dest in have:
            have[dest].default = argparse.SUPPRESS  # the top-level value stands unless given here
        else:
            command.add_argument(*flags, dest=dest, action="store_true", default=argparse.SUPPRESS, help=what)


_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EACCES, errno.EPERM, errno.ELOOP, errno.ENOTDIR, errno.EISDIR,
                          errno.ENOENT, errno.EROFS, errno.ENOSPC, errno.EEXIST})


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` were parsed for: `repro results show` gives show's."""
    current = parser
    for dest in ("command", "results_command"):
        actions = [a for a in current._actions if isinstance(a, argparse._SubParsersAction) and a.dest == dest]
        name = getattr(args, dest, None)
        if not actions or name not in actions[0].choices:
            break
        current = actions[0].choices[name]
    return current


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit status."""
    import signal

    args = _parse(argv)
    # A closed terminal or a service manager stopping repro must clean up like Ctrl-C does: workers run
    # in their own sessions (so a stray signal cannot half-kill a point) and are stopped by repro.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    return _run(args.handler, args)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, parsed (argparse exits 2 on bad ones); shell completion answered where it asks."""
    completing = "_ARGCOMPLETE" in os.environ
    parser = build_parser(lazy=not completing)  # completion walks every command's arguments
    if completing:
        try:  # shell completion (`eval "$(register-python-argcomplete repro)"`)
            import argcomplete

            argcomplete.autocomplete(parser)
        except ImportError:
            pass
    args, extra = parser.parse_known_args(argv)
    if extra:  # the subcommand's own usage, not the top level's, says what it takes
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _run(handler: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a command's handler; its errors become exit statuses and one-line messages."""
    from repro.errors import ReproError

    try:
        from repro.resources import check_config

        check_config()  # a misspelt key in repro.toml is an error, whatever the command reads
        return int(handler(args) or EXIT_OK)
    except ReproError as exc:
        _stderr(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        _stderr("interrupted")
        return 130
    except BrokenPipeError:
        # output piped into `head` and closed: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        return _os_error(exc)
    except Exception as exc:  # a defect of repro's: one line for the user, the traceback on request
        return _internal(exc)


def _os_error(exc: OSError) -> int:
    """A path the user gave that the system refuses (a name too long, no permission): a one-line input error."""
    if exc.filename is None or exc.errno not in _PATH_ERRNOS:
        return _internal(exc)
    _stderr(f"error: {ascii(os.fsdecode(exc.filename))[1:-1][:200]}: {exc.strerror or exc}")
    return 2


def _internal(exc: Exception) -> int:
    if os.environ.get("REPRO_DEBUG", "") not in ("", "0"):
        raise exc
    _stderr(f"internal error: {type(exc).__name__}: {str(exc)[:500]}\n"
            "  this is a defect of repro, not of your input: please report it with the command line; "
            "REPRO_DEBUG=1 shows the traceback")
    return EXIT_FAILURE
