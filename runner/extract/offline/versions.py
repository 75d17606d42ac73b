"""Which version a message talks about ("Python 3.11", "v1.2.3", "postgres:16.2"), so version
sensitive knowledge carries its `context_version` instead of being flagged as possibly stale.

Only unambiguous shapes count: a `v`-prefixed or "version"-prefixed number, a known tool name
followed by a number, or an image tag `name:1.2`. Bare numbers (ports, amounts, IPs) do not.
"""

from __future__ import annotations

import re

_TOOLS = (
    "python|python3|node|nodejs|node\\.js|npm|yarn|pnpm|deno|bun|docker|docker-compose|compose"
    "|postgres|postgresql|pg|mysql|mariadb|sqlite|redis|mongodb|mongo|kafka|rabbitmq"
    "|elasticsearch|ubuntu|debian|alpine|centos|fedora|rhel|windows|macos|ios|android|linux"
    "|kernel|golang|java|jdk|openjdk|kotlin|scala|rust|rustc|cargo|ruby|rails|php|perl"
    "|dotnet|\\.net|gcc|clang|llvm|cmake|kubernetes|k8s|kubectl|helm|terraform|ansible"
    "|nginx|apache|traefik|envoy|istio|django|flask|fastapi|starlette|pydantic|sqlalchemy"
    "|celery|numpy|pandas|pytest|react|vue|angular|next\\.js|nextjs|webpack|vite|typescript"
    "|openssl|firefox|chrome|chromium|safari|gnome|kde|xorg|grafana|prometheus|vault|consul"
    "|etcd|cuda|pytorch|torch|tensorflow|gpt|claude|llama|gemini|mistral|komodo|bash|zsh"
    "|git|gitlab|jenkins|airflow|spark|hadoop|java|erlang|elixir|haskell|swift|xcode"
)
_NUMBER = r"\d{1,4}(?:\.\d{1,4}){0,3}(?:[-.]?(?:rc|beta|alpha|b|a)\d*)?"
_PATTERNS = (
    # v1.2.3, v2 (a lone `v2` is too ambiguous: needs a dot)
    re.compile(r"(?<![\w.])v\d{1,4}(?:\.\d{1,4}){1,3}(?:-[\w.]+)?(?![\w.]*\d)", re.IGNORECASE),
    # "version 2.1", "release 3.0"
    re.compile(r"\b(?:version|release|ver\.?)\s+v?" + _NUMBER + r"\b", re.IGNORECASE),
    # image tags: postgres:16.2, python:3.11-slim
    re.compile(r"\b(?:" + _TOOLS + r"):\d{1,4}(?:\.\d{1,4}){0,2}(?:-[a-z][\w.-]*)?", re.I),
    # Python 3.11, docker 1.12, node 18, pg16
    re.compile(r"(?<![\w.])(?:" + _TOOLS + r")[ -]?v?" + _NUMBER + r"(?![\w.]*\d)", re.I),
)
_IP_LIKE = re.compile(r"\d+\.\d+\.\d+\.\d+")
_DIGIT = re.compile(r"\d")


def find_versions(text: str, limit: int = 3) -> list[str]:
    """The distinct version mentions of `text`, in order of appearance, at most `limit`."""
    if not _DIGIT.search(text):
        return []  # every shape above holds a digit: spare the tool-name scans
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0).strip()
            if _IP_LIKE.search(value) or not _DIGIT.search(value):
                continue
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            found.append((match.start(), value))
    distinct: dict[str, str] = {}
    for _, value in sorted(found):
        distinct.setdefault(value.casefold(), value)
    return list(distinct.values())[:limit]


def context_version(*texts: str) -> str | None:
    """The version mentions of the first text that has any, joined; None when none has."""
    for text in texts:
        versions = find_versions(text)
        if versions:
            return ", ".join(versions)[:120]
    return None
