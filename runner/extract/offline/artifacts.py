"""Verbatim material in a chunk part: fenced blocks, shell commands, config and log runs.

Each find is a `Snippet` whose span is exact in the message's normalized text; the chunk step
turns snippets into artifacts (everything) and verbatim knowledge items (reusable kinds only:
code, config and commands that are not walls of hex or log output).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from runner.core.contract import ArtifactKind
from runner.extract.offline.text import PartView, Span, squash, truncate_words
from runner.grounding.claim_support import STOPWORDS

# Pointers repeat their quote and the contract caps a quote at 20,000 characters.
MAX_POINTER_CHARS = 20_000
# A snippet longer than this is evidence, not reusable knowledge.
MAX_KNOWLEDGE_CHARS = 4_000

_COMMANDS = (
    "docker|docker-compose|podman|kubectl|helm|k9s|minikube|kind|git|gh|pip|pip3|pipx|poetry"
    "|uv|conda|npm|npx|yarn|pnpm|apt|apt-get|apt-cache|dpkg|snap|brew|yum|dnf|pacman|sudo"
    "|systemctl|journalctl|service|curl|wget|ssh|scp|rsync|chmod|chown|mkdir|tar|make|cmake"
    "|python|python3|pytest|ruff|mypy|go|cargo|rustup|psql|pg_dump|pg_restore|pg_upgrade|vacuumdb"
    "|createdb|dropdb|pg_ctl|pg_basebackup|pg_dumpall|pg_isready"
    "|mysql|redis-cli|terraform|ansible|ansible-playbook|aws|gcloud|az|export|openssl|ls|cat"
    "|grep|tail|kill|ps|df|du|lsblk|lspci|lsusb|fdisk|mount|umount|ifconfig|ip|ping|nc"
    "|iptables|ufw|crontab|envsubst|nginx|alembic|uvicorn|gunicorn|celery|node|deno|java|mvn"
    "|gradle|dotnet|digestd|komodo-cli|komodod|bitcoin-cli|ln|cp|mv|rm|find|sed|awk|xargs"
)
_COMMAND_START = re.compile(
    r"(?:\$\s+|#\s+)?(?:sudo\s+)?(?:\./[\w.\-/]+|(?:"
    + "|".join(sorted(_COMMANDS.split("|"), key=lambda c: (-len(c), c)))
    + r")(?=\s|$))"
)
# The second word of a command line is a flag, a path, a subcommand-looking word; prose has
# "git is", "docker doesn't", "make sure".
_PROSE_SECOND_WORD = re.compile(
    r"(?i)^(?:is|are|was|were|has|have|had|does|doesn't|did|didn't|can|can't|could|should|"
    r"would|will|won't|isn't|wasn't|the|a|an|and|or|but|to|for|of|in|on|at|it|its|it's|"
    r"that|this|sure|me|you|we|they|i|so|too|also|just|really|not|only|because|when|if|"
    r"works|seems|keeps|says|said|thing|stuff|way|sense)$"
)
_HEX_RUN = re.compile(r"[0-9a-fA-F]{24,}")
_LOG_LINE = re.compile(
    r"(?i)^\s*(?:\[?\d{4}[-/]\d\d[-/]\d\d|\[?\d\d:\d\d:\d\d|traceback|\s*at\s+[\w.$]+\(|"
    r"(?:error|warn|warning|info|debug|fatal|panic|critical)\b[:\]]?|\w+(?:error|exception)\b)"
)
_YAML_LINE = re.compile(r"^\s*(?:-\s+)?[\w.\-\"']+:(?:\s+\S.*|\s*)$")
_INI_LINE = re.compile(r"^\s*(?:\[[\w.\- \"]+\]|[\w.\-]+\s*=\s*\S.*)$")
_CODE_CUES = re.compile(
    r"(?m)^\s*(?:def |class |import |from \w+ import|async def |function |const |let |var |"
    r"func |package |fn |pub |#include|public |private |return\b|if\s*\(|for\s*\(|"
    r"SELECT |INSERT |UPDATE |CREATE |@\w+)|=>|;\s*$|\{\s*$"
)
_CONFIG_LANGUAGES = {
    "json",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "env",
    "dotenv",
    "properties",
    "xml",
    "hcl",
    "nginx",
    "dockerfile",
    "docker",
    "compose",
    "jsonc",
    "json5",
}
_COMMAND_LANGUAGES = {
    "bash",
    "sh",
    "shell",
    "console",
    "zsh",
    "fish",
    "powershell",
    "ps",
    "ps1",
    "cmd",
    "bat",
    "shell-session",
    "terminal",
}
_LOG_LANGUAGES = {"log", "logs", "text", "txt", "output", "plaintext", "stacktrace", "trace"}


@dataclass(frozen=True)
class Snippet:
    """A verbatim span worth pointing to."""

    span: Span
    kind: ArtifactKind
    language: str | None
    reusable: bool  # may also become a verbatim knowledge item


_TECHNICAL = re.compile(r"^-|[/=_$~<>|:]|\w\.\w|^\d+$")
_SENTENCE_INSIDE = re.compile(r"[a-z]{2}[.!?] [A-Z]")
_SUBCOMMANDS = frozenset(
    """
    run build compose ps exec pull push images logs inspect network volume system stop rm
    rmi start restart tag login swarm service stack container image up down clone commit
    checkout switch rebase merge log status diff add reset stash fetch branch cherry-pick
    bisect remote config submodule install uninstall freeze list show download remove update
    upgrade purge autoremove search test ci i publish get apply describe delete rollout
    port-forward create edit scale enable disable reload daemon-reload init plan destroy
    template repo services prune cp mv version info top kill attach
    """.split()
)


# Words that make "docker run in vbox" prose; "up", "down", "all" are common arguments.
_PROSE_WORDS = STOPWORDS - {"up", "down", "off", "out", "all", "over", "on", "no"}


def command_like(line: str) -> bool:
    """A line that reads as a shell command rather than prose starting with a tool name."""
    line = line.strip()
    match = _COMMAND_START.match(line)
    if not match:
        return False
    if line.startswith(("$ ", "./")):
        return True
    rest = line[match.end() :].split()
    if not rest or _PROSE_SECOND_WORD.match(rest[0]):
        return False
    if line.endswith((":", "?")) or _SENTENCE_INSIDE.search(line):
        return False
    words = [w.rstrip(".,;:!?") for w in line.split()]
    if rest[0] in _SUBCOMMANDS:
        arguments = [w.casefold() for w in rest[1:]]
        prose = sum(1 for w in arguments if w in _PROSE_WORDS)
        return not arguments or prose * 4 < len(arguments)
    # Prose after a command word reads like a sentence: many words, few flags or paths.
    technical = sum(1 for w in words if _TECHNICAL.search(w))
    return technical * 3 >= len(words)


def _hex_heavy(text: str) -> bool:
    hex_chars = sum(len(m.group(0)) for m in _HEX_RUN.finditer(text))
    return hex_chars > 0.4 * max(1, len(re.sub(r"\s", "", text)))


_LEADING_ID = re.compile(
    r"^\s*(?:0x)?(?:[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-)"
)
_ERROR_WORDS = re.compile(
    r"(?i)\b(?:error|errors|exception|traceback|failed|failure|fatal|denied|refused|mismatch"
    r"|invalid|couldn'?t|cannot|can't|unable)\b"
)


_SHELL_PROMPT = re.compile(r"^\s*(?:\S*[$#>]\s+)?")
_STRUCTURED = re.compile(r"\"\s*:|^\s*[\w.-]+\s*[:=]\s+\S", re.MULTILINE)


def is_dump(kind: ArtifactKind, text: str) -> bool:
    """A hex dump, hash or id listing rather than something a person would copy: mostly hex or
    opening with a hash/UUID. Kept even when hex-heavy: commands (a line of it is one, after
    any shell prompt), error messages, and structured output (JSON, `key: value`)."""
    if kind == ArtifactKind.COMMAND or _ERROR_WORDS.search(text) or _STRUCTURED.search(text):
        return False
    lines = text.split("\n")
    if any(command_like(_SHELL_PROMPT.sub("", line, count=1)) for line in lines[:20]):
        return False
    return _hex_heavy(text) or bool(_LEADING_ID.match(text))


def _guess_code_language(text: str) -> str | None:
    if re.search(r"(?m)^\s*(?:def |import |from \w+ import|async def )", text):
        return "python"
    if re.search(r"(?m)^\s*(?:const |let |function |export )|=>", text):
        return "javascript"
    if re.search(r"(?m)^\s*(?:func |package )", text):
        return "go"
    if re.search(r"(?mi)^\s*(?:SELECT|INSERT|UPDATE|CREATE|ALTER)\s", text):
        return "sql"
    return None


def classify_block(text: str, language: str | None) -> tuple[ArtifactKind, str | None]:
    """The kind and language of a fenced block's content (tag first, then content cues)."""
    if language:
        if language in _CONFIG_LANGUAGES:
            return ArtifactKind.CONFIG, language
        if language in _COMMAND_LANGUAGES:
            return ArtifactKind.COMMAND, language
        if language in _LOG_LANGUAGES:
            return ArtifactKind.LOG, None
        return ArtifactKind.CODE, language
    lines = [line for line in text.split("\n") if line.strip()]
    first = lines[0].strip() if lines else ""
    if command_like(first):
        return ArtifactKind.COMMAND, "shell"
    if _hex_heavy(text):
        return ArtifactKind.LOG, None
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            json.loads(stripped)
            return ArtifactKind.CONFIG, "json"
        except ValueError:
            pass
    if lines and sum(bool(_LOG_LINE.match(line)) for line in lines) >= max(1, len(lines) * 0.4):
        return ArtifactKind.LOG, None
    if _CODE_CUES.search(text):
        return ArtifactKind.CODE, _guess_code_language(text)
    if len(lines) >= 2 and sum(bool(_YAML_LINE.match(line)) for line in lines) >= 0.6 * len(lines):
        return ArtifactKind.CONFIG, "yaml"
    if len(lines) >= 2 and sum(bool(_INI_LINE.match(line)) for line in lines) >= 0.6 * len(lines):
        return ArtifactKind.CONFIG, "ini"
    return ArtifactKind.OTHER, None


def _capped(span: Span) -> Span:
    """`span`, cut at a line end so its quote fits the contract's 20,000 characters."""
    if span.end - span.start <= MAX_POINTER_CHARS:
        return span
    cut = span.text.rfind("\n", 0, MAX_POINTER_CHARS)
    if cut <= 0:
        cut = MAX_POINTER_CHARS
    return Span(span.start, span.start + cut, span.text[:cut])


def _reusable(kind: ArtifactKind, text: str) -> bool:
    return (
        kind in (ArtifactKind.CODE, ArtifactKind.CONFIG, ArtifactKind.COMMAND)
        and len(text) <= MAX_KNOWLEDGE_CHARS
        and not _hex_heavy(text)
    )


def _line_runs(view: PartView, predicate: re.Pattern[str], minimum: int) -> list[Span]:
    """Runs of at least `minimum` consecutive prose lines matching `predicate`."""
    full = view.message.normalized_text
    runs: list[Span] = []
    run: list[Span] = []

    def close() -> None:
        if len(run) >= minimum:
            runs.append(Span(run[0].start, run[-1].end, full[run[0].start : run[-1].end]))

    for line in view.prose_lines:
        if not predicate.match(line.text):
            close()
            run = []
            continue
        gap = full[run[-1].end : line.start] if run else "\n"
        if gap.count("\n") != 1 or gap.strip():
            close()
            run = []
        run.append(line)
    close()
    return runs


def _config_like(text: str) -> bool:
    """A run of `key: value` lines is config, not a status update, when values are terse."""
    values = [line.split(":", 1)[-1].split("=", 1)[-1].strip() for line in text.split("\n")]
    terse = sum(1 for value in values if len(value.split()) <= 2)
    indented = any(line.startswith((" ", "\t", "-")) for line in text.split("\n"))
    return terse >= 0.7 * len(values) or indented


def find_snippets(view: PartView) -> list[Snippet]:
    """Every verbatim snippet of one part, in text order, without overlaps."""
    found: list[Snippet] = []
    for block in view.blocks:
        kind, language = classify_block(block.content.text, block.language)
        span = _capped(block.content)
        found.append(Snippet(span, kind, language, _reusable(kind, span.text)))
    for code in view.inline_code:
        if command_like(code.text) and len(code.text.split()) >= 2:
            found.append(Snippet(code, ArtifactKind.COMMAND, "shell", True))
    commands: list[Span] = []
    full = view.message.normalized_text
    for line in view.prose_lines:
        start = line.start
        text = line.text
        address = re.match(r"^@?[^\s:,@]{2,40}[:,]\s+", text)
        if address and command_like(text[address.end() :]):
            start += address.end()
            text = text[address.end() :]
        if "`" in text or not command_like(text):
            continue
        previous = commands[-1] if commands else None
        if (
            previous is not None
            and full[previous.end : start].strip() == ""
            and (full[previous.end : start].count("\n") == 1)
        ):
            # Consecutive command lines are one procedure: one pointer for the whole run.
            commands[-1] = Span(previous.start, line.end, full[previous.start : line.end])
        else:
            commands.append(Span(start, line.end, text))
    for span in commands:
        found.append(Snippet(span, ArtifactKind.COMMAND, "shell", True))
    for run in _line_runs(view, _YAML_LINE, 3) + _line_runs(view, _INI_LINE, 3):
        if _config_like(run.text):
            found.append(Snippet(run, ArtifactKind.CONFIG, None, True))
    for run in _line_runs(view, _LOG_LINE, 3):
        found.append(Snippet(run, ArtifactKind.LOG, None, False))
    found.sort(key=lambda s: (s.span.start, -(s.span.end - s.span.start)))
    kept: list[Snippet] = []
    for snippet in found:
        if any(k.span.start < snippet.span.end and snippet.span.start < k.span.end for k in kept):
            continue
        kept.append(snippet)
    return [snippet for snippet in kept if not is_dump(snippet.kind, snippet.span.text)]


def snippet_title(snippet: Snippet, view: PartView, limit: int = 200) -> str:
    """A title for a snippet: the prose sentence that introduces it in its message, else the
    snippet's first line."""
    before = [s for s in view.sentences if s.end <= snippet.span.start]
    first_line = squash(snippet.span.text.strip().split("\n", 1)[0])
    single_line = "\n" not in snippet.span.text.strip()
    if snippet.kind == ArtifactKind.COMMAND and single_line and len(first_line) >= 6:
        return truncate_words(first_line, limit)
    if before:
        context = before[-1].text.rstrip(" :")
        if len(context.split()) < 6 and len(before) > 1:
            context = f"{before[-2].text} {context}"
        if len(context.split()) >= 3:
            return truncate_words(context, limit)
    label = snippet.language or snippet.kind.value
    return truncate_words(f"{label}: {first_line}" if first_line else label, limit)
