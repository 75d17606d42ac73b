"""The extraction pipeline on plain data: chunk → map → validate → reduce → validate.

It imports neither the database nor the network. The caller gives it a window of messages, an
extractor and hooks (chunk-result cache, progress, cancellation); it returns the validated digest
and everything the job should record. The worker, the CLI and the evaluator all use it.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from runner.core.cancel import Cancelled
from runner.core.chunks import Chunk, iter_chunks
from runner.core.contract import ChunkSummary, Digest
from runner.core.extractor import (
    ChunkFailed,
    ChunkTooLarge,
    Extractor,
    KnownItem,
    MappedChunk,
    PackingExtractor,
    PipelineWarning,
    WindowWordsExtractor,
)
from runner.core.fallback import REASON_CHARS, offline_warning
from runner.core.offload import run_light
from runner.core.progress import ChunkPlanProgress, JobPhase
from runner.core.window import Window, WindowMessage
from runner.grounding.validate import (
    Rejection,
    ValidationResult,
    validate_output,
    words_of_window,
)

# Re-cuts of one job at most, and the smallest chunk worth cutting to: a model whose context
# cannot hold more fails its chunks with the reason instead.
_MAX_RECUTS = 4
_MIN_RECUT_TOKENS = 64


@dataclass
class PipelineHooks:
    """How the pipeline talks to its host. Every hook is optional."""

    load_chunk: Callable[[str], Awaitable[ChunkSummary | None]] | None = None
    save_chunk: Callable[[str, ChunkSummary], Awaitable[None]] | None = None
    # (phase, chunks done, chunk total): the total is the whole plan's, known from the first report.
    on_progress: Callable[[JobPhase, int, int], Awaitable[None]] | None = None
    is_cancelled: Callable[[], bool] | None = None


@dataclass
class PipelineResult:
    validation: ValidationResult[Digest]
    chunk_count: int
    chunks_from_cache: int
    failed_chunks: list[dict[str, object]]
    map_rejections: list[Rejection]
    warnings: list[PipelineWarning]
    duration_seconds: float
    content_tokens: int
    tokens_estimated: bool = False
    phases: list[str] = field(default_factory=list)
    # Chunks the extractor gave up on that its fallback read instead (`extract_fallback`), each
    # {"chunk", "reason", "message_ids"} like a failed chunk: digested, but not by the extractor.
    fallback_chunks: list[dict[str, object]] = field(default_factory=list)

    @property
    def digest(self) -> Digest:
        return self.validation.output

    @property
    def failed_message_ids(self) -> set[str]:
        """External ids of the messages of failed chunks: nothing of them was digested."""
        ids: set[str] = set()
        for failure in self.failed_chunks:
            message_ids = failure.get("message_ids")
            if isinstance(message_ids, list):
                ids.update(str(message_id) for message_id in message_ids)
        return ids


def chunk_ranges(indexes: Sequence[int]) -> str:
    """`0-3, 5, 7-8`: chunk indexes, consecutive ones as ranges."""
    ranges: list[list[int]] = []
    for index in sorted(indexes):
        if ranges and index == ranges[-1][1] + 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def fallback_warning(fallback_chunks: Sequence[dict[str, object]]) -> PipelineWarning | None:
    """CHUNKS_EXTRACTED_OFFLINE naming every chunk the fallback read, then why, chunks with the
    same reason together (`3 chunks extracted by the offline rules (0-2); chunks 0-1: circuit
    open ...`); None when there are none. The wording and its limits are every job's
    (runner.core.fallback): the reasons are the extractor's (redacted, never the model's output);
    those that do not fit the warning are left out, never the chunks."""
    if not fallback_chunks:
        return None
    by_reason: dict[str, list[int]] = {}
    for failure in fallback_chunks:
        # Reasons that read the same in the warning name their chunks together.
        reason = str(failure["reason"])[:REASON_CHARS]
        by_reason.setdefault(reason, []).append(int(str(failure["chunk"])))
    count = len(fallback_chunks)
    every = chunk_ranges([int(str(failure["chunk"])) for failure in fallback_chunks])
    return offline_warning(
        "CHUNKS_EXTRACTED_OFFLINE",
        f"{count} {'chunk' if count == 1 else 'chunks'} extracted by the offline rules ({every})",
        [
            (f"{'chunk' if len(chunks) == 1 else 'chunks'} {chunk_ranges(chunks)}", reason)
            for reason, chunks in by_reason.items()
        ],
    )


def chunk_cache_key(extractor: Extractor, chunk: Chunk, known_items_hash: str | None = None) -> str:
    """The chunk-result cache key: the extractor's fingerprint, the chunk's content and the
    known items it was given (`_KnownItems.digest`), so a result is reused only for the same
    input. A chunk given no known items keeps the key it always had."""
    material = f"{extractor.fingerprint()}\n{chunk.content_hash}"
    if known_items_hash:
        material += f"\nknown:{known_items_hash}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class _KnownItems:
    """The knowledge items of the chunks finished so far, in chunk order: chunk `i` gets those
    of chunks `0 .. i - concurrency` (see run_pipeline), after the items the channel already
    tracks (`base`, given to every chunk). Kept as one list with a count and a running hash per
    chunk, so each chunk's share costs no re-scan of the earlier ones."""

    def __init__(self, base: Sequence[KnownItem] = ()) -> None:
        self.base = len(base)
        self.items: list[KnownItem] = list(base)
        self.counts: list[int] = []  # len(items) after chunk j
        self.hashes: list[str] = []  # hash of items[:counts[j]]
        # No base: the hashes (and so the cache keys) a chunk always had.
        self.base_hash = _hash_items("", base) if base else ""

    def add(self, summary: ChunkSummary | None) -> None:
        """Append the next chunk's items (none for a failed chunk)."""
        new = (
            [KnownItem(i.key, i.kind.value, i.title) for i in summary.knowledge_items]
            if (summary is not None)
            else []
        )
        self.items.extend(new)
        previous = self.hashes[-1] if self.hashes else self.base_hash
        if new:
            previous = _hash_items(previous, new)
        self.counts.append(len(self.items))
        self.hashes.append(previous)

    def upto(self, last: int) -> tuple[list[KnownItem], str | None]:
        """The items of chunks `0 .. last` (after the base) and their hash (None when none)."""
        if last < 0:
            return (self.items[: self.base], self.base_hash) if self.base else ([], None)
        if not self.counts[last]:
            return [], None
        return self.items[: self.counts[last]], self.hashes[last]

    def truncate(self, chunks: int) -> None:
        """Forget every chunk from `chunks` on (they are cut again)."""
        del self.counts[chunks:], self.hashes[chunks:]
        del self.items[self.counts[-1] if self.counts else self.base :]


def _hash_items(previous: str, items: Sequence[KnownItem]) -> str:
    lines = "".join(f"{i.key}\t{i.kind}\t{i.title}\n" for i in items)
    return hashlib.sha256(f"{previous}\n{lines}".encode()).hexdigest()


def _drop(task: asyncio.Task[set[str]] | None) -> None:
    """Stop waiting for `task` (its thread finishes on its own)."""
    if task is not None and not task.done():
        task.cancel()


def _next_chunks(pieces: Iterator[Chunk], count: int) -> list[Chunk]:
    """The next `count` chunks of a cut (fewer at its end; none once it is done)."""
    return list(itertools.islice(pieces, count))


def _smaller(current: int, fit: int) -> bool:
    """Whether cutting again can help: the next size is below the current one and not tiny."""
    following = fit if fit < current else current * 3 // 4
    return _MIN_RECUT_TOKENS <= following < current


def top_messages(
    window: Window, summaries: list[ChunkSummary], limit: int = 20
) -> list[WindowMessage]:
    """The messages the map step called notable, in window order, at most `limit`."""
    notable = {message_id for s in summaries for message_id in s.notable_message_ids}
    return [m for m in window.messages if m.message_id in notable][:limit]


async def run_pipeline(
    window: Window,
    extractor: Extractor,
    *,
    chunk_tokens: int,
    min_overlap: float = 0.5,
    concurrency: int = 1,
    hooks: PipelineHooks | None = None,
    tracked_items: Sequence[KnownItem] = (),
) -> PipelineResult:
    """Digest `window` with `extractor`; a chunk whose result is cached is not extracted
    again; a chunk the extractor gives up on is read by its fallback (`extract_fallback`: the
    LLM extractor's offline rules), validated like the others but not cached, and named in a
    CHUNKS_EXTRACTED_OFFLINE warning; with no fallback (or a failing one) it is recorded as
    failed. Neither is fatal.

    An extractor that packs (PackingExtractor, `chunks_per_request` > 1) maps consecutive
    chunks together, up to that many and `pack_tokens` in one request; everything else stays per
    chunk (cache, validation, fallback, progress). Up to `concurrency` requests are made at
    once, and the result does not depend on which finishes first: request `r` starts once the
    chunks of requests `0 .. r - concurrency` have finished and is given exactly their known
    items (one chunk a request, at concurrency 1: those of every earlier chunk).

    A chunk the model's context turns out too small for (ChunkTooLarge: an endpoint's 400, or
    limits learned from it) is cut again: chunks already started finish, then mapping resumes
    at the first chunk that did not fit (from the start of its message), cut to the size that
    fits now.

    `tracked_items`: the channel's open items from earlier digests, shown to every chunk
    before its known items (and hashed into its cache key), so the map step links to them."""
    hooks = hooks or PipelineHooks()
    started = time.perf_counter()
    concurrency = max(1, concurrency)

    def check_cancelled() -> None:
        if hooks.is_cancelled and hooks.is_cancelled():
            raise Cancelled()

    async def progress(phase: JobPhase) -> None:
        if hooks.on_progress and plan is not None:
            await hooks.on_progress(phase, plan.done, plan.total)

    plan: ChunkPlanProgress | None = None
    texts = {m.message_id: m.normalized_text for m in window.messages}
    # An extractor may learn its limits from the endpoint first (runner.llm.limits).
    await extractor.prepare()
    if (max_chunk_tokens := extractor.max_chunk_tokens()) is not None:
        chunk_tokens = min(chunk_tokens, max_chunk_tokens)
    # Filled as chunks are cut; map tasks start on each chunk at once (see below).
    chunks: list[Chunk] = []
    summaries: list[ChunkSummary | None] = []
    failed: list[dict[str, object]] = []
    fell_back: list[dict[str, object]] = []
    map_rejections: dict[int, list[Rejection]] = {}
    cached: set[int] = set()
    known = _KnownItems(tracked_items)
    ended: list[bool] = []
    prefix_done: list[asyncio.Event] = []  # [j] set once chunks 0 .. j have all finished
    too_large: dict[int, ChunkTooLarge] = {}
    stop_at: int | None = None  # requests from here on wait for a re-cut
    recuts = 0
    # An extractor that ignores known items (the offline one) need not wait for earlier chunks.
    uses_known_items = extractor.uses_known_items
    semaphore = asyncio.Semaphore(concurrency)
    packing = extractor if isinstance(extractor, PackingExtractor) else None
    per_request = packing.chunks_per_request() if packing is not None else 1
    pack_tokens = packing.pack_tokens() if packing is not None and per_request > 1 else 0
    groups: list[list[Chunk]] = []  # the chunks of each map request, consecutive
    tasks: list[asyncio.Task[None]] = []
    cutting = False  # the current cut is not finished: its total is not known yet
    mapped_while_cutting: list[int] = []  # chunks done before then, counted once it is
    words: asyncio.Task[set[str]] | None = None  # the window's words (words_of_window)

    def start_request(group: list[Chunk]) -> None:
        groups.append(group)
        tasks.append(asyncio.create_task(map_one(len(groups) - 1)))

    def finish(index: int) -> None:
        ended[index] = True
        while len(known.counts) < len(ended) and ended[len(known.counts)]:
            position = len(known.counts)
            known.add(summaries[position])
            prefix_done[position].set()

    def after(position: int) -> int:
        """The last chunk request `position` waits for (-1: none)."""
        earlier = position - concurrency
        return groups[earlier][-1].index if earlier >= 0 else -1

    async def map_one(position: int) -> None:
        group = groups[position]
        try:
            if uses_known_items and after(position) >= 0:
                await prefix_done[after(position)].wait()
            async with semaphore:
                await map_group(position)
        finally:
            for chunk in group:
                finish(chunk.index)

    async def fall_back(chunk: Chunk, reason: str) -> ChunkSummary | None:
        """The chunk read by the extractor's fallback, recorded as such; None (the chunk
        recorded as failed) when there is no fallback or it fails too."""
        entry: dict[str, object] = {
            "chunk": chunk.index,
            "reason": reason[:500],
            "message_ids": chunk.message_ids,
        }
        try:
            summary = await extractor.extract_fallback(chunk)
        except ChunkFailed as second:
            entry["reason"] = f"{reason[:300]}; fallback: {second.reason[:190]}"
            summary = None
        if summary is None:
            # Read but not digested: they stay uncovered (runner/digests/store.py).
            failed.append(entry)
        else:
            fell_back.append(entry)
        return summary

    async def map_group(position: int) -> None:
        group = groups[position]
        if stop_at is not None and position >= stop_at:
            return  # cut again below
        # Yield to the event loop between requests: CPU-bound extraction must not starve the
        # job's heartbeat, or its lease would expire and another worker would take it.
        await asyncio.sleep(0)
        check_cancelled()
        given, given_hash = known.upto(after(position)) if uses_known_items else ([], None)
        keys = [chunk_cache_key(extractor, chunk, given_hash) for chunk in group]
        loaded: list[ChunkSummary | None] = []
        for key in keys:
            loaded.append(await hooks.load_chunk(key) if hooks.load_chunk else None)
        todo = [chunk for chunk, summary in zip(group, loaded, strict=True) if summary is None]
        outcomes: dict[int, ChunkSummary | ChunkFailed] = {}
        if packing is not None and len(todo) > 1:
            results = await packing.extract_chunks(todo, given)
            outcomes = {chunk.index: result for chunk, result in zip(todo, results, strict=True)}
        else:
            for chunk in todo:
                try:
                    outcomes[chunk.index] = await extractor.extract_chunk(chunk, given)
                except ChunkFailed as failure:
                    outcomes[chunk.index] = failure
        for chunk, key, summary in zip(group, keys, loaded, strict=True):
            await settle(position, chunk, key, summary, outcomes.get(chunk.index))

    async def settle(
        position: int,
        chunk: Chunk,
        key: str,
        summary: ChunkSummary | None,
        outcome: ChunkSummary | ChunkFailed | None,
    ) -> None:
        """One chunk of request `position` done: from the cache (`summary`) or the extractor's
        `outcome`, validated, cached, counted."""
        nonlocal stop_at
        if summary is not None:
            cached.add(chunk.index)
        else:
            assert outcome is not None  # every chunk not from the cache was extracted
            fallback = False
            raw: ChunkSummary | None
            if isinstance(outcome, ChunkFailed):
                if (
                    isinstance(outcome, ChunkTooLarge)
                    and recuts < _MAX_RECUTS
                    and _smaller(chunk_tokens, outcome.fit_tokens)
                ):
                    too_large[chunk.index] = outcome
                    # Requests already started finish; those waiting for this one do not start
                    # (some may not be made yet: the cut goes on meanwhile).
                    later = position + concurrency
                    stop_at = later if stop_at is None else min(stop_at, later)
                    return
                raw = await fall_back(chunk, outcome.reason)
                fallback = raw is not None
            else:
                raw = outcome
            if raw is not None:
                chunk_texts = {mid: texts[mid] for mid in chunk.message_ids}
                checked = await run_light(
                    validate_output, raw, chunk_texts, min_overlap=min_overlap
                )
                map_rejections[chunk.index] = checked.rejections
                summary = checked.output
                # The key names the extractor's result: the fallback's must not stand for it.
                if hooks.save_chunk and not fallback:
                    await hooks.save_chunk(key, summary)
        summaries[chunk.index] = summary
        if cutting:
            mapped_while_cutting.append(chunk.index)
            return
        assert plan is not None  # made when the first cut ended
        plan.mapped(chunk.index)
        await progress(JobPhase.MAP)

    # Requests start on the first chunks while the rest are still being cut (cutting counts
    # every message's tokens: seconds for 100,000 messages, in a thread, off the event loop).
    # The progress reports wait for the whole cut, so the first carries the plan's total, which
    # never grows.
    resume_at = 0  # the first message to cut
    try:
        while True:
            check_cancelled()
            if packing is not None and per_request > 1:  # a refusal may have taught less room
                pack_tokens = packing.pack_tokens()
            kept = len(chunks)
            cutting = True
            pieces = iter_chunks(window.messages[resume_at:], chunk_tokens)
            pack: list[Chunk] = []
            pack_size = 0
            while batch := await run_light(_next_chunks, pieces, per_request):
                check_cancelled()
                for piece in batch:
                    chunk = replace(piece, index=len(chunks))
                    chunks.append(chunk)
                    summaries.append(None)
                    ended.append(False)
                    prefix_done.append(asyncio.Event())
                    # Consecutive chunks, up to `per_request` and `pack_tokens` a request; a
                    # request starts as soon as no further chunk can join it.
                    if pack and pack_size + chunk.token_count > pack_tokens:
                        start_request(pack)
                        pack, pack_size = [], 0
                    pack.append(chunk)
                    pack_size += chunk.token_count
                    if len(pack) >= per_request:
                        start_request(pack)
                        pack, pack_size = [], 0
            if pack:
                start_request(pack)
            cutting = False
            if plan is None:
                plan = ChunkPlanProgress(len(chunks) - kept)
            else:
                plan.recut(kept, len(chunks) - kept)
            for index in mapped_while_cutting:
                plan.mapped(index)
            mapped_while_cutting.clear()
            await progress(JobPhase.MAP)
            if words is None:
                # The digest's title and keywords are checked against every message's words:
                # found while the map waits on the model, not after the reduce.
                words = asyncio.create_task(
                    run_light(words_of_window, texts.values(), window.channel_name)
                )
                if isinstance(extractor, WindowWordsExtractor):
                    extractor.use_window_words(window, words)
            await asyncio.gather(*tasks)
            if not too_large:
                break
            # Re-cut from the first chunk that did not fit, from the start of its first
            # message (a message split over chunks is cut again whole).
            first = min(too_large)
            fit = min(failure.fit_tokens for failure in too_large.values())
            chunk_tokens = fit if fit < chunk_tokens else chunk_tokens * 3 // 4
            first_message = chunks[first].parts[0].message
            while first > 0 and chunks[first - 1].parts[-1].message is first_message:
                first -= 1
                first_message = chunks[first].parts[0].message
            resume_at = window.messages.index(first_message)
            del chunks[first:], summaries[first:], ended[first:], prefix_done[first:]
            tasks.clear()  # all finished
            while groups and groups[-1][0].index >= first:
                groups.pop()
            if groups:
                groups[-1] = [chunk for chunk in groups[-1] if chunk.index < first]
            known.truncate(first)
            failed[:] = [f for f in failed if int(str(f["chunk"])) < first]
            fell_back[:] = [f for f in fell_back if int(str(f["chunk"])) < first]
            for index in [i for i in map_rejections if i >= first]:
                del map_rejections[index]
            cached.difference_update([i for i in cached if i >= first])
            too_large.clear()
            stop_at = None
            recuts += 1
    except Cancelled:
        # A checkpoint (cancelled, or the worker shutting down): chunks in flight finish and are
        # cached; the others stop at their own check. The caller bounds the wait.
        await asyncio.gather(*tasks, return_exceptions=True)
        _drop(words)
        raise
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _drop(words)
        raise
    try:
        check_cancelled()
        # The reduce step learns what each chunk covered from the chunk itself (cached ones too).
        mapped = [
            MappedChunk(summary, tuple(chunk.message_ids))
            for chunk, summary in zip(chunks, summaries, strict=True)
            if summary is not None
        ]
        await progress(JobPhase.REDUCE)
        top = top_messages(window, [m.summary for m in mapped])
        digest = await extractor.synthesize_digest(mapped, window, top)
        check_cancelled()
        await progress(JobPhase.VALIDATE)
        validation = await run_light(
            validate_output,
            digest,
            texts,
            min_overlap=min_overlap,
            channel_name=window.channel_name,
            window_words=await words if words is not None else None,
        )
    finally:
        _drop(words)
    fell_back.sort(key=lambda f: int(str(f["chunk"])))
    warning = fallback_warning(fell_back)
    return PipelineResult(
        validation=validation,
        chunk_count=len(chunks),
        chunks_from_cache=len(cached),
        failed_chunks=sorted(failed, key=lambda f: int(str(f["chunk"]))),
        fallback_chunks=fell_back,
        map_rejections=[r for i in sorted(map_rejections) for r in map_rejections[i]],
        warnings=[*extractor.warnings, *([warning] if warning else [])],
        duration_seconds=time.perf_counter() - started,
        content_tokens=sum(chunk.token_count for chunk in chunks),
        tokens_estimated=any(chunk.tokens_estimated for chunk in chunks),
    )
