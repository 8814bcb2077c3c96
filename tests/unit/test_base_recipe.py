"""OS base images without a registry (pure parts): which references debootstrap can make, and how."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repro.errors import BackendUnavailable, ImageError
from repro.image import base_recipe, rootfs
from tests.cluster.fixtures import skip_or_fail


def test_debian_recipe_is_unchanged_so_cached_tarballs_stay_valid(tmp_path):
    recipe = base_recipe.recipe_for("debian:12")
    assert recipe.tarball_name.startswith("debian-bookworm-minbase-") and recipe.keyring is None
    assert recipe.debootstrap_argv(tmp_path) == ["debootstrap", "--variant=minbase", f"--arch={recipe.arch}",
                                                 "bookworm", str(tmp_path), "http://deb.debian.org/debian"]


def test_ubuntu_releases_come_from_the_ubuntu_archive_with_its_keyring_checked(tmp_path):
    recipe = base_recipe.recipe_for("ubuntu:18.04")
    assert (recipe.distro, recipe.suite) == ("ubuntu", "bionic")
    assert recipe.tarball_name.startswith("ubuntu-bionic-minbase-")
    argv = recipe.debootstrap_argv(tmp_path)
    assert "--keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg" in argv
    assert "--components=main,restricted,universe,multiverse" in argv  # as the official image: gnupg2 is universe
    assert argv[-3:] == ["bionic", str(tmp_path), "http://archive.ubuntu.com/ubuntu"]
    assert recipe.sources_list() == "".join(f"deb http://archive.ubuntu.com/ubuntu bionic{p} main restricted "
                                            "universe multiverse\n" for p in ("", "-updates", "-security"))
    assert base_recipe.recipe_for("debian:12").sources_list() is None  # debootstrap's own, as before
    assert base_recipe.recipe_for("ubuntu:16.04", mirror="http://mirror.site/ubuntu").mirror == "http://mirror.site/ubuntu"


def test_what_debootstrap_cannot_make_is_refused_with_what_it_can():
    for ref in ("centos:7", "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04", "debian:repro-absent-tag", "ubuntu:14.04"):
        assert not base_recipe.buildable(ref)
        with pytest.raises(ImageError, match="repro cannot build it") as info:
            base_recipe.recipe_for(ref)
        assert "debian:12" in info.value.hint and "ubuntu:18.04" in info.value.hint
    assert base_recipe.buildable("ubuntu:22.04") and base_recipe.buildable("debian:11")


def test_a_missing_ubuntu_keyring_stops_before_debootstrap_says_where_to_get_it(tmp_path):
    recipe = dataclasses.replace(base_recipe.recipe_for("ubuntu:18.04"), keyring=str(tmp_path / "absent.gpg"))
    if any(rootfs.shutil.which(tool) is None for tool in ("debootstrap", "tar")):
        skip_or_fail("debootstrap is not installed")
    with pytest.raises(BackendUnavailable, match=r"absent\.gpg is missing") as info:
        rootfs._build_tarball(recipe, tmp_path / "out.tar")
    assert "bookworm-backports ubuntu-keyring" in info.value.hint
    assert not Path(tmp_path / "out.tar").exists()
