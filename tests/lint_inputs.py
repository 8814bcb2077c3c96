"""What the lint stage (scripts/lint.sh) checks besides the repository's own files: every Dockerfile repro
renders (each shipped stack with each variant of the render options, and a rebuilt end-of-life CUDA base),
written into a directory for hadolint.

    python -m tests.lint_inputs DIR      # DIR/<stack>-<variant>.Dockerfile, DIR/tf114-cuda10.base.Dockerfile
"""

from __future__ import annotations

import sys
from pathlib import Path

from repro.image import cuda_base
from repro.image.render import RenderOptions, render_dockerfile
from repro.manifest import load_stack

ROOT = Path(__file__).resolve().parents[1]
STACKS = ["tf110-cuda91", "tf114-cuda10", "tf114-cuda10-xla", "tf215-cuda122", "cpu-tf215", "cpu-tf212"]
WHEEL = "horovod-0.28.1-cp311-cp311-linux_x86_64.whl"
VARIANTS = {
    "defaults": RenderOptions(),
    "site": RenderOptions(ca_bundle=True, pip_index="https://pypi.site/simple", extra_index="https://x.site/simple",
                          wheels=(WHEEL,)),
    "ofed-tarball": RenderOptions(ofed_tarball="mofed.tgz"),
    "ofed-mirror": RenderOptions(ofed_mirror="http://mirror.site/ofed"),
}


def rendered() -> dict[str, str]:
    """File name -> Dockerfile text, for every stack and variant and the rebuilt base."""
    out = {f"{name}-{variant}.Dockerfile": render_dockerfile(load_stack(ROOT / "stacks" / f"{name}.yaml").stack,
                                                             options)
           for name in STACKS for variant, options in VARIANTS.items()}
    recipe = cuda_base.recipe_for_stack(load_stack(ROOT / "stacks" / "tf114-cuda10.yaml").stack)
    out["tf114-cuda10.base.Dockerfile"] = recipe.render()
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.lint_inputs DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered().items():
        (out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
