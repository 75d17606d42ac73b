"""The README and docs stay true: the configuration table matches the settings' code, CI runs the
README's test command, and every GraphQL example in the README is valid against the schema."""

from __future__ import annotations

import re

from graphql import parse, validate

from schema import build_schema
from server.settings import configuration_table
from tests.support.paths import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_configuration_tables_match_the_settings() -> None:
    table = configuration_table()
    between = re.search(
        r"<!-- configuration-table -->\n(.*?)\n<!-- /configuration-table -->", README, re.DOTALL
    )
    assert between is not None and between.group(1) == table
    assert table in (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_ci_runs_the_readmes_test_command() -> None:
    ci_lines = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    readme_commands = [line for line in ci_lines if "pytest" in line and f"\n{line}\n" in README]
    assert readme_commands, "no line of .ci/run is the README's test command"
    # The README's command runs first; what follows (the bench smoke runs) only adds to it.
    assert ci_lines.index(readme_commands[0]) == min(
        i for i, line in enumerate(ci_lines) if "pytest" in line
    )


def test_every_graphql_example_is_valid() -> None:
    examples = re.findall(r"```graphql\n(.*?)```", README, re.DOTALL)
    assert len(examples) >= 5
    schema = build_schema()._schema
    for example in examples:
        errors = validate(schema, parse(example))
        assert not errors, f"{errors}\n{example}"
