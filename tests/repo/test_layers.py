"""The import directions of the layers, read from the source (AST), not from running it:

- db/ is imported by runner/, schema/ and server/, never the other way round, so the SQL layer
  can be read (and reused) without the rest of the service;
- in runner/, a file's name says whether it touches the database or the network: the I/O shells
  are store.py and job.py (and a few listed modules, each with why); every other module takes
  plain data and returns plain data, and nothing it imports, directly or through the
  repository's own modules, reaches the database, the network or the API layers;
- the evaluator never imports the server; the API (schema/, server/) never reaches into the
  worker or the job runners, which only the process's composition root starts."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

UPPER_LAYERS = ("runner", "schema", "server")
PACKAGES = ("db", *UPPER_LAYERS)


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it (TYPE_CHECKING blocks and function bodies
    too); `from a import b` also names `a.b`, which is the module when b is a submodule."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


REPO_MODULES = {
    _module_name(path): path
    for package in PACKAGES
    for path in sorted((REPO_ROOT / package).rglob("*.py"))
}


def _with_packages(module: str) -> list[str]:
    """`a.b.c` and the packages Python runs first when importing it: `a`, `a.b`."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


@cache
def _reached(module: str) -> dict[str, str]:
    """Every module importing `module` loads, through the repository's own modules and their
    packages' __init__, each mapped to the repository module that imports it."""
    reached: dict[str, str] = {}
    pending = [module]
    while pending:
        importer = pending.pop()
        for imported in sorted(_imported_modules(REPO_MODULES[importer])):
            for name in _with_packages(imported):
                if name in reached or name == module:
                    continue
                reached[name] = importer
                if name in REPO_MODULES:
                    pending.append(name)
    return reached


def _matches(module: str, forbidden: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in forbidden)


def _chain(start: str, module: str, reached: dict[str, str]) -> str:
    links = [module]
    while links[-1] != start and links[-1] in reached:
        links.append(reached[links[-1]])
    return " <- ".join(links)


DB_MODULES = sorted((REPO_ROOT / "db").glob("*.py"))


def test_db_modules_are_found() -> None:
    names = {path.stem for path in DB_MODULES}
    assert {"jobs", "channels", "digests", "documents", "queries"} <= names


@pytest.mark.parametrize("path", DB_MODULES, ids=lambda path: path.name)
def test_db_imports_nothing_from_upper_layers(path: Path) -> None:
    uphill = sorted(
        module for module in _imported_modules(path) if module.split(".")[0] in UPPER_LAYERS
    )
    assert uphill == [], f"{path.name} imports {uphill}"


def test_upper_layers_run_no_named_query_themselves() -> None:
    """Every SQL call of runner/, schema/ and server/ goes through a db/ function."""
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for layer in UPPER_LAYERS
        for path in sorted((REPO_ROOT / layer).rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "QUERIES[" in line
    ]
    assert offenders == []


# The database, the network, and the layers that stand on them.
IMPURE = (
    "asyncpg",
    "httpx",
    "httpx2",
    "openai",
    "socket",
    "urllib.request",
    "requests",
    "aiohttp",
    "aiosmtplib",
    "db",
    "server",
    "schema",
)
# Within runner/, a module's name says whether it touches the database or the network: the I/O
# shells of the feature folders are named store.py or job.py. The few other modules that do I/O
# are listed here with why; every other module is pure (plain data in, plain data out).
IO_SHELL_NAMES = ("store.py", "job.py")
DOES_IO = {
    "runner/worker.py": "the worker loop: claims jobs, holds leases, records outcomes",
    "runner/supervision.py": "keeps the loop alive: its own LISTEN connection, backoff",
    "runner/triggers.py": "queues jobs for the API, the CLI and the schedule tick",
    "runner/metrics.py": "reads the LLM circuit breakers' state for /metrics",
    "runner/jobs/base.py": "finishing a job is a database write",
    "runner/jobs/outcomes.py": "names the job status each outcome records (an annotation only)",
    "runner/digests/split.py": "queues a backlog's coverage slices and ends the job that cut them",
    "runner/llm/": "the OpenAI-compatible client and the steps that call it",
    "runner/llm/fake.py": "the fake OpenAI-compatible endpoint: serves on a loopback port",
    "runner/extract/llm.py": "the LLM extractor (openai)",
    "runner/documents/fetch.py": "the hardened HTTP fetch of a document URL (httpx, socket)",
    "runner/documents/ingest.py": "ingest_url fetches through fetch.py",
    "runner/documents/llm_summary.py": "the document summarizer that calls the LLM (openai)",
    "runner/documents/llm_map_reduce.py": "a large document's map and reduce calls (openai)",
    "runner/reports/llm_writer.py": "the report writer that calls the LLM (openai)",
    "runner/reports/llm_decompose.py": "splits a report's question with the LLM (openai)",
    "runner/importers/ingest.py": "writes an export's messages to the database (COPY)",
    "runner/schedules/tick.py": "the workers' tick that fires due schedules",
    "runner/delivery/outbox.py": "the workers' delivery loop: claims outbox rows, sends them",
    "runner/delivery/chat_webhook.py": "the Slack and Discord senders' shared posting: address check, parts in order (httpx)",
    "runner/delivery/webhook.py": "POSTs a signed delivery to a webhook URL (httpx)",
    "runner/exports/markdown.py": "reads the stored digest it renders (asyncpg)",
    "runner/exports/digest_items.py": "reads a stored digest's items and the texts its pointers slice (asyncpg)",
    "runner/delivery/webhook_post.py": "one JSON POST to a chat webhook (httpx)",
    "runner/delivery/slack.py": "posts to a Slack incoming webhook (httpx)",
    "runner/delivery/discord.py": "posts to a Discord webhook (httpx)",
    "runner/delivery/email.py": "sends e-mail over SMTP (aiosmtplib)",
    "runner/evaluation/": "the evaluator drives the real pipeline, document fetches and a model",
}


def _does_io(path: Path) -> bool:
    name = str(path.relative_to(REPO_ROOT))
    return path.name in IO_SHELL_NAMES or any(
        name == listed or (listed.endswith("/") and name.startswith(listed)) for listed in DOES_IO
    )


PURE_CORE = sorted(path for path in (REPO_ROOT / "runner").rglob("*.py") if not _does_io(path))


def test_pure_core_is_found() -> None:
    names = {str(path.relative_to(REPO_ROOT)) for path in PURE_CORE}
    assert {
        "runner/grounding/normalize.py",
        "runner/importers/slack.py",
        "runner/documents/canonical.py",
        "runner/extract/offline/digest.py",
        "runner/conversations/disentangle/model.py",
    } <= names
    assert len(PURE_CORE) > 80


@pytest.mark.parametrize("path", PURE_CORE, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_pure_core_imports_neither_database_nor_network(path: Path) -> None:
    module = _module_name(path)
    reached = _reached(module)
    impure = sorted(name for name in reached if _matches(name, IMPURE))
    assert impure == [], "\n".join(_chain(module, name, reached) for name in impure)


@pytest.mark.parametrize("name", sorted(name for name in DOES_IO if name.endswith(".py")))
def test_io_exceptions_really_do_io(name: str) -> None:
    """An exception that no longer reaches the database or the network belongs in the pure core."""
    assert any(_matches(module, IMPURE) for module in _reached(_module_name(REPO_ROOT / name)))


EVALUATION = sorted((REPO_ROOT / "runner" / "evaluation").rglob("*.py"))


@pytest.mark.parametrize("path", EVALUATION, ids=lambda path: path.name)
def test_evaluation_never_imports_the_server(path: Path) -> None:
    module = _module_name(path)
    reached = _reached(module)
    server = sorted(name for name in reached if _matches(name, ("server",)))
    assert server == [], "\n".join(_chain(module, name, reached) for name in server)


# The worker loop, what every job shares, and the job kinds (each beside its feature).
JOB_RUNNERS = (
    "runner.worker",
    "runner.jobs",
    "runner.digests.job",
    "runner.reports.job",
    "runner.documents.job",
)
# The process's composition root: it builds the workers and job runners from settings for
# `digestd worker`, the app's in-process workers and the tests. Nothing else in the API may.
STARTS_WORKERS = {"server/runtime.py"}
API_MODULES = sorted(
    path
    for layer in ("schema", "server")
    for path in (REPO_ROOT / layer).rglob("*.py")
    if str(path.relative_to(REPO_ROOT)) not in STARTS_WORKERS
)


@pytest.mark.parametrize("path", API_MODULES, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_api_never_imports_the_worker_or_job_runners(path: Path) -> None:
    imported = sorted(name for name in _imported_modules(path) if _matches(name, JOB_RUNNERS))
    assert imported == [], f"{path.relative_to(REPO_ROOT)} imports {imported}"


SCHEMA_MODULES = sorted(name for name in REPO_MODULES if _matches(name, ("schema",)))


@pytest.mark.parametrize("module", SCHEMA_MODULES)
def test_schema_never_reaches_the_worker_or_job_runners(module: str) -> None:
    """Through any chain of the repository's modules, not only directly."""
    reached = _reached(module)
    runners = sorted(name for name in reached if _matches(name, JOB_RUNNERS))
    assert runners == [], "\n".join(_chain(module, name, reached) for name in runners)


def test_composition_root_is_where_workers_start() -> None:
    """The one exception above still exists and still is the place that starts workers."""
    for name in STARTS_WORKERS:
        assert any(_matches(module, JOB_RUNNERS) for module in _imported_modules(REPO_ROOT / name))
