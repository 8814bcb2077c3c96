"""Site settings: every key the README lists, from every place it lists (environment variable, ./repro.toml,
~/.config/repro/config.toml), and an unknown key named with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.cli import main
from repro.errors import InputError
from repro.resources import SITE_KEYS, data_dir
from repro.results.store import Store, default_root

DATA = {"playbooks": "playbooks", "stacks": "stacks", "inventories": "inventories",
        "docker_templates": "docker"}  # [site] key -> repro.resources.data_dir name


@pytest.fixture()
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and a home config directory with no setting in force."""
    work, config = tmp_path / "work", tmp_path / "config"
    work.mkdir()
    config.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    for env in SITE_KEYS.values():
        monkeypatch.delenv(env, raising=False)
    return tmp_path


def _resolved(key: str) -> Path:
    return default_root() if key == "store" else data_dir(DATA[key])


def _place(site: Path, place: str, key: str, value: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if place == "env":
        monkeypatch.setenv(SITE_KEYS[key], str(value))
        return
    path = site / "work" / "repro.toml" if place == "repro.toml" else site / "config" / "repro" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'# a site file\n[site]\n{key} = "{value}"\n', encoding="utf-8")


def test_the_readme_lists_every_site_key_and_its_variable():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for key, env in SITE_KEYS.items():
        assert env in readme and f"`{key}`" in readme, key
    assert set(SITE_KEYS) == {"store", "playbooks", "stacks", "inventories", "docker_templates"}


@pytest.mark.parametrize("place", ["env", "repro.toml", "user config"])
@pytest.mark.parametrize("key", sorted(SITE_KEYS))
def test_every_site_key_works_from_every_place(site, monkeypatch, key, place):
    target = site / "chosen" / key
    target.mkdir(parents=True)
    _place(site, place, key, target, monkeypatch)
    assert _resolved(key) == target


def test_repro_toml_wins_over_the_user_config_and_the_environment_over_both(site, monkeypatch):
    for name in ("env", "here", "home"):
        (site / name).mkdir()
    _place(site, "user config", "store", site / "home", monkeypatch)
    assert default_root() == site / "home"
    _place(site, "repro.toml", "store", site / "here", monkeypatch)
    assert default_root() == site / "here"
    _place(site, "env", "store", site / "env", monkeypatch)
    assert default_root() == site / "env"


def test_a_relative_directory_is_relative_to_the_file_that_names_it(site, monkeypatch):
    path = site / "config" / "repro" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[site]\nstore = "team-results"\n', encoding="utf-8")
    assert default_root() == site / "config" / "repro" / "team-results"


def test_the_readme_example_store_is_where_runs_land(site, capsys):
    """The README's example: `[site] store` in ./repro.toml; a command without --store uses it."""
    (site / "work" / "repro.toml").write_text(f'[site]\nstore = "{site / "team"}"\n', encoding="utf-8")
    assert Store().root == site / "team"
    code = main(["results"])
    assert code == 0 and str(site / "team") in capsys.readouterr().out


@pytest.mark.parametrize("text, line, word", [
    ('[site]\nstore = "/a"\nstroe = "/b"\n', 3, "did you mean 'store'"),
    ('# site settings\n\n[site]\nplaybooks = "/p"\n\n[sight]\nstore = "/a"\n', 6, "sight"),
    ('[site]\nstore = 3\n', 2, "non-empty text"),
])
def test_an_unknown_key_or_a_bad_value_names_file_and_line(site, capsys, text, line, word):
    (site / "work" / "repro.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=rf"repro\.toml:{line}: .*{word}"):
        default_root()
    code = main(["schema"])  # every command, also one that reads no setting
    err = capsys.readouterr().err
    assert code == 2 and f"repro.toml:{line}:" in err and "Traceback" not in err


def test_a_wrong_docker_templates_directory_is_an_input_error(site, monkeypatch, capsys):
    monkeypatch.setenv("REPRO_DOCKER_TEMPLATES", str(site / "nowhere"))
    with pytest.raises(InputError, match=r"\$REPRO_DOCKER_TEMPLATES: .*nowhere is not a directory"):
        data_dir("docker")
    from repro.image import cuda_base

    cuda_base.facts.cache_clear()  # read once per process: a fresh process reads the directory set here
    code = main(["render", "tf114-cuda10"])  # an end-of-life CUDA base: its recipe is a template
    err = capsys.readouterr().err
    assert code == 2 and "REPRO_DOCKER_TEMPLATES" in err and "internal error" not in err
    monkeypatch.delenv("REPRO_DOCKER_TEMPLATES")
    cuda_base.facts.cache_clear()  # nothing wrong left cached for the tests after this one
