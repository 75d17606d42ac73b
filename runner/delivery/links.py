"""Where a delivery's reader goes for the whole of it: the web console's page of the digest, of
the job (which leads to its digest or report) or of the person's catch-up, under the server's
public URL (DIGESTD_PUBLIC_URL). Without that URL there is no link: the server cannot know how
its readers reach it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from runner.core.global_ids import global_id
from runner.delivery.contract import DeliveryEvent
from runner.delivery.markup import READ_DIGEST

# What a link is called in a chat message or an e-mail, by what it points to.
LINK_TEXT: dict[DeliveryEvent, str] = {
    DeliveryEvent.DIGEST_READY: READ_DIGEST,
    DeliveryEvent.JOB_SUCCEEDED: "Open the job",
    DeliveryEvent.JOB_FAILED: "Open the job",
    DeliveryEvent.CATCH_UP: "Read the full catch-up",
}
DIGEST_TYPE = "Digest"
JOB_TYPE = "DigestJob"


@dataclass(frozen=True)
class ConsoleLinks:
    """Console URLs under `base_url` (the console is served at its root; hash routes)."""

    base_url: str

    def _page(self, route: str) -> str:
        return f"{self.base_url.rstrip('/')}/#/{route}"

    def digest(self, digest_id: int) -> str:
        return self._page(f"digest/{quote(global_id(DIGEST_TYPE, digest_id), safe='')}")

    def job(self, job_id: int) -> str:
        return self._page(f"job/{quote(global_id(JOB_TYPE, job_id), safe='')}")

    def catch_up(self, person: str, since: str | None) -> str:
        """The catch-up page of `person` from `since` (ISO 8601; None: their read markers)."""
        query = {"person": person} | ({"since": since} if since else {})
        return self._page(f"catchup?{urlencode(query, quote_via=quote)}")


def delivery_link(
    links: ConsoleLinks | None,
    event: DeliveryEvent,
    digest_id: int | None,
    job_id: int | None,
    payload: Mapping[str, object],
) -> str | None:
    """The page a delivery of `event` points to (None without a public URL, or nothing to show):
    a digest's page, a job's, or a catch-up's (person and start from its stored payload)."""
    if links is None:
        return None
    if event is DeliveryEvent.DIGEST_READY and digest_id is not None:
        return links.digest(digest_id)
    if event in (DeliveryEvent.JOB_SUCCEEDED, DeliveryEvent.JOB_FAILED) and job_id is not None:
        return links.job(job_id)
    catch_up = payload.get("catch_up")
    if event is DeliveryEvent.CATCH_UP and isinstance(catch_up, Mapping):
        person, since = catch_up.get("person"), catch_up.get("since")
        if isinstance(person, str):
            return links.catch_up(person, since if isinstance(since, str) else None)
    return None
