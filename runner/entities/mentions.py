"""Entities of a digest window: the tools, libraries, models, services, files and people a channel
talks about, found in its messages by rules that do not depend on one chat, canonicalized, and
counted once per message that mentions them.

Signals, strongest first (a strong one is enough; a weak one needs two messages):
- strong: a link's host (`blog.gitter.im` -> service `gitter`), inline code (`pip`, the command
  of `sudo apt-get install x`), a name of the known-software list in prose, a version glued to
  or following a known name (`python3.8`, `Ubuntu 10.10`), `@handle`, and `nick:`/`nick,`
  addressing of someone who wrote in the window;
- weak: CamelCase (`NetworkManager`), a capitalized word inside a sentence (`Komodo`) that the
  window does not also write in lower case as often, a
  dotted or hyphenated identifier with a digit or a file extension (`xorg.conf`, `gpt-4`), an
  acronym (`NFS`; also needs two authors, so one person's shouting is no entity; common
  computing nouns such as `OS`, `RAM`, `URL` are none).
Dataset placeholders (`[<-LINK->]`, `<-CODE->`) and stopwords are never entities.

Canonical key: NFKC, case-folded, surrounding punctuation and a possessive `'s` stripped,
`-`, `_` and spaces removed (`docker-compose` = `docker compose` = `Docker_Compose`), a few
official alternate spellings folded (`postgres` -> `postgresql`, `nodejs` -> `node.js`, `k8s`
-> `kubernetes`), a version suffix split off when the rest is a known name (`python3.8` ->
`python`, version `3.8`; `ext4` stays), a Discord discriminator dropped (`ann#0420` -> `ann`).
People's keys start with `@`, so a person called `docker` is not the tool.

Everything is one pass over the messages plus dictionary work: linear in the window.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import lru_cache
from typing import Protocol

from runner.grounding.addressing import LEADING_ADDRESS
from runner.grounding.claim_support import STOPWORDS


class EntityKind(str, Enum):
    PERSON = "person"
    SOFTWARE = "software"  # tools, libraries, languages, systems
    MODEL = "model"  # machine-learning models
    SERVICE = "service"  # web services, named by their domain
    FILE = "file"
    NAME = "name"  # a proper name seen repeatedly, of no known kind


# When several signals name one key, the kind of the most specific wins.
_KIND_RANK = {
    EntityKind.PERSON: 5,
    EntityKind.MODEL: 4,
    EntityKind.SOFTWARE: 3,
    EntityKind.SERVICE: 2,
    EntityKind.FILE: 1,
    EntityKind.NAME: 0,
}

# Widely used software, by the name people type: what a command line or a sentence about
# computers names. Not chat-specific (no product of one community).
KNOWN_SOFTWARE = frozenset(
    """python node.js npm yarn pnpm deno bun docker docker-compose podman postgresql mysql mariadb
    sqlite redis mongodb kafka rabbitmq elasticsearch ubuntu debian alpine centos fedora rhel
    arch windows macos ios android linux kernel golang java jdk openjdk kotlin scala rust rustc cargo
    ruby rails php perl dotnet gcc clang llvm cmake make kubernetes kubectl helm terraform ansible
    nginx apache traefik envoy django flask fastapi starlette pydantic sqlalchemy celery numpy
    pandas pytest react vue angular next.js webpack vite typescript javascript openssl firefox
    chrome chromium safari gnome kde xorg xfce grafana prometheus vault consul etcd cuda pytorch
    torch tensorflow bash zsh fish git gitlab jenkins airflow spark hadoop erlang elixir haskell
    swift xcode vim neovim emacs nano ssh sshd curl wget apt apt-get aptitude dpkg snap flatpak
    pip conda virtualenv venv systemd systemctl grub grub2 sudo cron rsync tmux screen samba nfs
    wine virtualbox vmware qemu kvm xen lvm mdadm ntfs-3g gparted fdisk ifconfig iptables ufw
    networkmanager wpa_supplicant pulseaudio alsa compiz nvidia wayland x11 mono java openoffice
    libreoffice thunderbird pidgin empathy skype vlc gimp inkscape blender steam lua julia matlab
    webassembly graphql grpc json yaml toml html css sass jquery bootstrap tailwind express
    nestjs laravel symfony spring maven gradle jupyter anaconda dockerfile swarm compose
    mercurial svn subversion tar gzip zip unzip openvpn wireguard bind9 dnsmasq postfix dovecot
    memcached haproxy caddy certbot letsencrypt mosquitto mqtt zookeeper cassandra clickhouse
    influxdb sqlserver oracle unity unreal godot electron qt gtk wxwidgets tkinter opencv
    scikit-learn scipy matplotlib keras transformers langchain ollama llama.cpp vllm""".split()
)
KNOWN_MODELS = frozenset(
    """gpt gpt-3 gpt-3.5 gpt-4 gpt-4o chatgpt claude llama llama2 llama3 mistral mixtral gemini
    gemma bert roberta t5 whisper stable-diffusion dall-e codex copilot qwen deepseek phi""".split()
)
# Known names that are also everyday words: they count in prose only when capitalized inside
# a sentence ("on Arch", "in Windows"), anywhere in code spans.
AMBIGUOUS = frozenset(
    """make screen compose spring swift windows arch unity oracle mono steam fish nano snap
    kernel rails express phi copilot empathy transformers vault consul envoy swarm spark bind9
    go tar zip alpine apache react vue angular""".split()
)
# Official alternate spellings of one piece of software (after case and separator folding).
ALIASES = {
    "postgres": "postgresql",
    "psql": "postgresql",
    "nodejs": "node.js",
    "k8s": "kubernetes",
    "js": "javascript",
    "grub2": "grub",
}

# Words that look like names in chat but are not: greetings, days, months, chat words.
NOT_NAMES = frozenset(
    """hi hello hey thanks thank ok okay yes yeah yep no nope please sorry lol haha hmm well so
    but and or then also maybe sure right anyone someone everyone nobody anybody somebody there
    here what why how when where which who whom whose edit update note ps btw fyi imo imho afaik
    iirc tldr eta asap todo monday tuesday wednesday thursday friday saturday sunday january
    february march april may june july august september october november december today tomorrow
    yesterday morning evening night week i'm i've i'd i'll it's don't can't won't didn't isn't
    doesn't that's let's there's what's you're we're they're good great nice cool fine sir guys
    man dude mr mrs ms dr english xd""".split()
)
# Common nouns of computing written as acronyms: things every tech chat has, not named ones.
GENERIC_ACRONYMS = frozenset(
    """os ram rom usb hdd ssd cpu gpu ip vm id api app url uri ui ux pc lan wan db cli gui faq
    pr io ok pm am tb gb mb kb fps""".split()
)
# Placeholders some published chat datasets put where links, code or issues were.
PLACEHOLDER = re.compile(r"\[?<-[A-Z]+->\]?")

_URL = re.compile(
    r"(?:https?|ftp)://([^\s/<>\"'`?#:]+)[^\s<>\"'`]*|\bwww\.([^\s/<>\"'`?#:]+)", re.I
)
_FENCE = re.compile(r"```(.*?)(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`([^`\n]{1,200})`")
_MENTION = re.compile(r"(?<![\w@])@([\w][\w.\-#]{1,39})")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.+#\-]*[\w+#]|[A-Za-z]")
_VERSION = re.compile(r"v?\d{1,4}(?:\.\d{1,4}){0,3}(?:-?(?:rc|beta|alpha)\d*)?", re.I)
_GLUED_VERSION = re.compile(r"^([a-z][a-z.+#\-]*?)[\-_]?v?(\d{1,4}(?:\.\d{1,4}){0,3})$")
_CAMEL = re.compile(r"^(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+[A-Z][A-Za-z0-9]*)$")
_CAPITALIZED = re.compile(r"^[A-Z][a-z]{2,}$")
_ACRONYM = re.compile(r"^[A-Z]{2,5}s?$")
_FILE_EXTENSIONS = frozenset(
    "conf cfg ini json yml yaml toml xml txt log sh py js ts rb go rs c h cpp java deb rpm iso "
    "tar gz zip list service desktop lock md csv sql".split()
)
_COMMAND_PREFIXES = frozenset({"sudo", "$", "#", ">", "./", "time", "env", "nohup"})
_DISCRIMINATOR = re.compile(r"#\d{4}$")
_EDGE_PUNCTUATION = "'\"()[]{}<>,;:!?.*~`"
_SECOND_LEVEL = frozenset({"co", "com", "org", "net", "ac", "gov", "edu"})
_SENTENCE_END = frozenset(".!?:")

MAX_ALIASES = 10
MAX_VERSIONS = 10


def fold(surface: str) -> str:
    """NFKC, case-folded, without surrounding punctuation or a possessive 's."""
    text = unicodedata.normalize("NFKC", surface).casefold().strip()
    text = text.strip(_EDGE_PUNCTUATION)
    if text.endswith("'s") or text.endswith("\u2019s"):
        text = text[:-2]
    return text.strip(_EDGE_PUNCTUATION)


def _separators_removed(text: str) -> str:
    return re.sub(r"[\s\-_]+", "", text)


_KNOWN_KEYS = {_separators_removed(name): name for name in KNOWN_SOFTWARE | KNOWN_MODELS}


@lru_cache(maxsize=65536)
def canonical_key(surface: str) -> str:
    """The key every spelling of one thing shares (see the module doc)."""
    text = _separators_removed(fold(surface))
    return _separators_removed(ALIASES.get(text, text))


def person_key(handle: str) -> str:
    """A person's key: `@` and the handle folded, without a Discord discriminator."""
    return "@" + fold(_DISCRIMINATOR.sub("", handle.strip().lstrip("@")))


def known_kind(key: str) -> EntityKind | None:
    name = _KNOWN_KEYS.get(key)
    if name is None:
        return None
    return EntityKind.MODEL if name in KNOWN_MODELS else EntityKind.SOFTWARE


def split_version(surface: str) -> tuple[str, str | None]:
    """`python3.8` -> (`python`, `3.8`) when the rest is a known name; else (surface, None).
    Only known names are split: `ext4`, `mp3` and `x11` are names of their own."""
    folded = fold(surface)
    match = _GLUED_VERSION.match(folded)
    if match is None:
        return surface, None
    base = canonical_key(match.group(1))
    if known_kind(base) is None:
        return surface, None
    return match.group(1), match.group(2)


@dataclass(frozen=True)
class Mention:
    key: str
    surface: str
    kind: EntityKind
    strong: bool
    version: str | None = None


@dataclass
class Entity:
    """One entity of the window: its mentions counted once per message."""

    key: str
    kind: EntityKind
    surfaces: Counter[str] = field(default_factory=Counter)
    versions: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    authors: set[str] = field(default_factory=set)
    strong: bool = False
    first_seen: datetime | None = None
    last_seen: datetime | None = None

    @property
    def name(self) -> str:
        """The spelling used most (the first of equals)."""
        return self.surfaces.most_common(1)[0][0] if self.surfaces else self.key

    @property
    def aliases(self) -> list[str]:
        return [surface for surface, _ in self.surfaces.most_common(MAX_ALIASES)]

    @property
    def mention_count(self) -> int:
        return len(self.message_ids)


def _host_name(host: str) -> str | None:
    """The service a host belongs to: the first label of its registered domain."""
    labels = [label for label in host.casefold().strip(".").split(".") if label]
    if len(labels) < 2 or all(label.isdigit() for label in labels) or labels[-1].isdigit():
        return None
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2:
        return labels[-3]
    return labels[-2]


def _code_mentions(code: str) -> Iterable[Mention]:
    """The command of a code span (`sudo apt-get install x` -> `apt-get`), or the span itself
    when it is one identifier (`asyncpg`, `os.path.join()`)."""
    words = code.strip().split()
    while words and words[0] in _COMMAND_PREFIXES:
        words = words[1:]
    if not words:
        return
    word = words[0].rstrip("();:,")
    if "/" in word or "=" in word or not re.fullmatch(r"[A-Za-z][\w.+#\-]{0,60}", word):
        return
    if len(words) > 1 and known_kind(canonical_key(word)) is None and not word.islower():
        return  # a sentence in backticks, not a command
    base, version = split_version(word)
    key = canonical_key(base)
    if len(key) < 2 or key in STOPWORDS or key in NOT_NAMES:
        return
    yield Mention(key, base, known_kind(key) or EntityKind.SOFTWARE, True, version)


def _fenced_commands(block: str) -> Iterable[Mention]:
    """Commands in a fenced block: only lines starting with a known command (blocks also hold
    logs and output, whose first words are anything)."""
    for line in block.splitlines():
        words = line.strip().split()
        while words and words[0] in _COMMAND_PREFIXES:
            words = words[1:]
        if words:
            key = canonical_key(words[0])
            if known_kind(key) is not None:
                yield Mention(key, words[0], known_kind(key) or EntityKind.SOFTWARE, True)


@lru_cache(maxsize=65536)  # a chat's vocabulary repeats: most tokens were decided before
def _token_mention(token: str, sentence_start: bool) -> Mention | None:
    surface = token.strip(_EDGE_PUNCTUATION)
    if len(surface) < 2:
        return None
    base, version = split_version(surface)
    key = canonical_key(base)
    lowered = fold(surface)
    if not key or lowered in STOPWORDS or lowered in NOT_NAMES or key in NOT_NAMES:
        return None
    kind = known_kind(key)
    if kind is not None and (
        key not in AMBIGUOUS
        or (surface[:1].isupper() and not surface.isupper() and not sentence_start)
    ):
        return Mention(key, base, kind, True, version)
    if kind is not None:
        return None
    if key.isdigit() or _VERSION.fullmatch(surface):
        return None
    if "." in surface:
        extension = surface.rsplit(".", 1)[1].casefold()
        if extension in _FILE_EXTENSIONS and re.fullmatch(r"[\w\-]+(\.[\w\-]+)+", surface):
            return Mention(key, surface, EntityKind.FILE, False)
        return None
    if "-" in surface:
        if any(ch.isdigit() for ch in surface) and surface[0].isalpha():
            return Mention(key, surface, EntityKind.NAME, False)
        return None
    if _CAMEL.match(surface):
        return Mention(key, surface, EntityKind.NAME, False)
    if _ACRONYM.match(surface):
        singular = surface[:-1] if surface.endswith("s") else surface  # VMs, APIs
        if fold(singular) in GENERIC_ACRONYMS:
            return None
        return Mention(canonical_key(singular), singular, EntityKind.NAME, False)
    if _CAPITALIZED.match(surface) and not sentence_start:
        return Mention(key, surface, EntityKind.NAME, False)
    return None


def _prose_mentions(prose: str) -> Iterable[Mention]:
    tokens = list(_TOKEN.finditer(prose))
    for index, match in enumerate(tokens):
        before = match.start() - 1
        while before >= 0 and prose[before] in " \t":
            before -= 1
        sentence_start = before < 0 or prose[before] in _SENTENCE_END or prose[before] == "\n"
        mention = _token_mention(match.group(0), sentence_start)
        if mention is not None and mention.version is None and index + 1 < len(tokens):
            following = tokens[index + 1]
            gap = prose[match.end() : following.start()]
            if (
                mention.strong
                and gap.strip() == ""
                and re.fullmatch(r"v?\d{1,4}(?:\.\d{1,4}){1,3}|\d{1,4}", following.group(0))
            ):  # `Ubuntu 10.10`, `python 3`
                mention = Mention(
                    mention.key,
                    mention.surface,
                    mention.kind,
                    True,
                    following.group(0).lstrip("vV"),
                )
        if mention is not None:
            yield mention


def message_mentions(text: str, people: dict[str, str]) -> list[Mention]:
    """Every entity mention of one message's text. `people`: person key -> handle of those who
    wrote in the window (addressing counts only for them)."""
    text = PLACEHOLDER.sub(" ", text)
    found: list[Mention] = []
    for match in _URL.finditer(text):
        host = match.group(1) or match.group(2) or ""
        name = _host_name(host)
        if name and len(name) >= 2:
            key = canonical_key(name)
            found.append(Mention(key, name, known_kind(key) or EntityKind.SERVICE, True))
    text = _URL.sub(" ", text)
    for match in _FENCE.finditer(text):
        found.extend(_fenced_commands(match.group(1)))
    text = _FENCE.sub(" ", text)
    for match in _INLINE_CODE.finditer(text):
        found.extend(_code_mentions(match.group(1)))
    text = _INLINE_CODE.sub(" ", text)
    for match in _MENTION.finditer(text):
        if text[match.end() : match.end() + 1] == "/":
            continue  # a scoped package (`@types/node`), not a handle
        handle = match.group(1).rstrip(".-")
        found.append(Mention(person_key(handle), handle, EntityKind.PERSON, True))
    text = _MENTION.sub(" ", text)
    address = LEADING_ADDRESS.match(text)
    if address:
        key = person_key(address.group(1))
        if key in people:
            found.append(Mention(key, people[key], EntityKind.PERSON, True))
            text = text[address.end() :]
    for mention in _prose_mentions(text):
        if "@" + mention.key in people and mention.kind is EntityKind.NAME:
            # A handle written in a sentence ("thanks Somelauw") is that person.
            key = "@" + mention.key
            found.append(Mention(key, people[key], EntityKind.PERSON, True))
        else:
            found.append(mention)
    return found


class WindowText(Protocol):
    """What entity finding needs of a message (runner.core.window.WindowMessage has it)."""

    @property
    def message_id(self) -> str: ...
    @property
    def author(self) -> str: ...
    @property
    def ts(self) -> datetime: ...
    @property
    def normalized_text(self) -> str: ...


def window_entities(messages: Sequence[WindowText]) -> dict[str, Entity]:
    """The window's entities by key, with their mentions: strong ones from one message on,
    weak ones from two messages (acronyms: two authors)."""
    people = {person_key(m.author): _DISCRIMINATOR.sub("", m.author) for m in messages}
    entities: dict[str, Entity] = {}
    for message in messages:
        seen: set[str] = set()
        for mention in message_mentions(message.normalized_text, people):
            entity = entities.get(mention.key)
            if entity is None:
                entity = entities[mention.key] = Entity(mention.key, mention.kind)
            if _KIND_RANK[mention.kind] > _KIND_RANK[entity.kind]:
                entity.kind = mention.kind
            entity.strong = entity.strong or mention.strong
            entity.surfaces[mention.surface] += 1
            if (
                mention.version
                and mention.version not in entity.versions
                and len(entity.versions) < MAX_VERSIONS
            ):
                entity.versions.append(mention.version)
            if mention.key in seen:
                continue
            seen.add(mention.key)
            entity.message_ids.append(message.message_id)
            entity.authors.add(message.author)
            if entity.first_seen is None or message.ts < entity.first_seen:
                entity.first_seen = message.ts
            if entity.last_seen is None or message.ts > entity.last_seen:
                entity.last_seen = message.ts
    lowercase = _lowercase_words(messages, entities)
    return {key: e for key, e in entities.items() if _kept(e, lowercase.get(key, 0))}


def _lowercase_words(messages: Sequence[WindowText], entities: dict[str, Entity]) -> Counter[str]:
    """How often the window writes each weak capitalized name in lower case, as a word."""
    names = {
        key
        for key, entity in entities.items()
        if not entity.strong and all(_CAPITALIZED.match(s) for s in entity.surfaces)
    }
    counts: Counter[str] = Counter()
    if names:
        for message in messages:
            for match in _TOKEN.finditer(message.normalized_text):
                word = match.group(0)
                if word.islower() and word in names:
                    counts[word] += 1
    return counts


def _kept(entity: Entity, lowercase: int) -> bool:
    if entity.strong:
        return True
    if entity.mention_count < 2:
        return False
    if all(_ACRONYM.match(surface) for surface in entity.surfaces):
        return len(entity.authors) >= 2
    # A capitalized word also written in lower case is a common word capitalized for emphasis
    # or as a label ("the Home button", "click Next"), unless the capitals clearly dominate.
    return lowercase * 2 < sum(entity.surfaces.values())


def text_entity_keys(text: str, known: dict[str, Entity]) -> list[str]:
    """The keys of `known` entities a digest item's text names (any case or spelling that folds
    to the key, with or without a version), in order of first mention."""
    text = PLACEHOLDER.sub(" ", text)
    found: dict[str, None] = {}
    tokens = [match.group(0) for match in _TOKEN.finditer(text)]
    for index, token in enumerate(tokens):
        base, _ = split_version(token)
        candidates = [canonical_key(base), "@" + canonical_key(token.lstrip("@"))]
        if index + 1 < len(tokens):  # `docker compose`
            candidates.append(canonical_key(f"{token} {tokens[index + 1]}"))
        for key in candidates:
            if key in known and (not key.startswith("@") or len(key) > 3):
                found.setdefault(key, None)
    for match in _URL.finditer(text):
        name = _host_name(match.group(1) or match.group(2) or "")
        if name and canonical_key(name) in known:
            found.setdefault(canonical_key(name), None)
    return list(found)
