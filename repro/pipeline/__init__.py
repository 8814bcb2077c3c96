"""The only modules that drive several stages, each a plain function with a typed result:

    up       manifest -> image (plan, build, verify, lock) -> hosts (ship)
    prepare  inventory -> hosts (ansible-runner) -> facts into the store -> readiness
    bench    manifest -> points -> launch (plan, run) -> results (collect, store)
    compare  results (select) -> compare

The CLI parses arguments, calls one of these and renders what it returns. Stage modules own their
values, pure logic and adapters; they never drive other stages.
"""

from repro.results import DEFAULT_REPEATS  # noqa: F401  (the CLI's default; compare's suggested commands use it too)

DEFAULT_MAX_PAIRS = 30  # --until-verdict's budget in A/B pairs when --max-pairs is not given
