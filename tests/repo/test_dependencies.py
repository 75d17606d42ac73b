"""Installs are reproducible: every direct dependency is declared with a tested range, the lock
(constraints.txt) pins each of them inside that range, and the environment running the tests is
the one the lock describes (what CI and the README's commands install)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.paths import REPO_ROOT


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    return [Requirement(line) for line in lines]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert match, f"constraints.txt: not an exact pin: {line!r}"
        pins[canonicalize_name(match.group(1))] = Version(match.group(2))
    return pins


def test_every_direct_dependency_has_an_upper_bound() -> None:
    for requirement in _declared():
        operators = {spec.operator for spec in requirement.specifier}
        assert ">=" in operators and "<" in operators, f"{requirement}: needs a tested range"


def test_imported_but_undeclared_core_libraries_are_declared() -> None:
    # graphql-core broke the API once (3.3 parses an empty selection set) while only coming in
    # through Strawberry; the libraries the code imports directly are declared themselves.
    names = {canonicalize_name(r.name) for r in _declared()}
    assert {"graphql-core", "strawberry-graphql", "starlette", "asyncpg", "openai"} <= names


def test_the_lock_pins_every_direct_dependency_inside_its_range() -> None:
    pins = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"constraints.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} vs {requirement}"


def test_the_running_environment_is_the_locked_one() -> None:
    pins = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        installed = Version(metadata.version(requirement.name))
        assert installed == pins[name], (
            f"{name} {installed} is installed but constraints.txt pins {pins[name]}: "
            "install with `pip install -c constraints.txt -e '.[test]'`"
        )
