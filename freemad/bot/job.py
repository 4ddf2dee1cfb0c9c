"""A job: one delivery worked through the same router as the Action, once, however often it runs.

A job (`Job.handle`) claims its delivery, runs it through the router, and marks it `done` (or
`ignored`); a failure is retried with growing delays (`Backoff`), and parked with a comment on
the issue once attempts run out. A job killed mid-way is run again after the next worker's sweep;
its GitHub writes go through `journal.JournalForge`, so the rerun edits what the killed run
posted instead of posting it twice. `queue.register` puts it on huey; `worker` runs huey.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from freemad.bot.journal import Claim, JournalForge, LeaseLost, Renewal
from freemad.bot.ports import FINISHED, LEASE_SECONDS, Effect, Owner
from freemad.errors import FreemadError
from freemad.github.forge import Forge, ForgeError
from freemad.github.public_text import without_local_paths
from freemad.markdown import escape_markdown

if TYPE_CHECKING:
    from freemad.bot.ports import ClaimStore, Delivery, DeliveryStore
    from freemad.bot.settings import BotSettings
    from freemad.github.thread import Outcome

log = logging.getLogger("freemad.bot.worker")  # jobs log as the worker that runs them
T = TypeVar("T")

Run = Callable[["BotSettings", "Delivery", Forge, Claim], "Outcome"]
ForgeFactory = Callable[["BotSettings", "int | None"], Forge]
FINAL_STATUSES = {404, 410, 422}  # GitHub will not change its mind about these
THREAD_WAIT = 5.0  # seconds a delivery waits before it looks again at a busy issue


@dataclass(frozen=True)
class Backoff:
    """How often and how patiently a failing delivery is tried: 30 s, 1, 2, 4 min, then parked."""

    attempts: int = 5
    base: float = 30.0
    factor: float = 2.0
    cap: float = 15 * 60.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after the `attempt`-th try (from 1) failed."""
        return float(min(self.cap, self.base * self.factor ** (attempt - 1)))


def run_delivery(settings: BotSettings, delivery: Delivery, forge: Forge, claim: Claim) -> Outcome:
    """What a job does: the delivery through the router, on the runs of `settings.run_store`."""
    from freemad.bot.run_store import job_store
    from freemad.config import default_config, load_config
    from freemad.github.pages import PagesSite
    from freemad.github.pulls import web_url_of
    from freemad.github.router import Router
    from freemad.github.thread import Settings
    from freemad.wiring import ADAPTERS

    config = load_config(settings.config_path) if settings.config_path else default_config()
    # Run pages are linked where the site is: configured, else as GitHub's Pages API says.
    repo = delivery.repo
    site = PagesSite(config.github.pages_url, lambda: forge.pages_url(repo) if repo else None)
    routing = Settings(
        workspace=settings.state_dir,
        checkout=False,
        web_url=web_url_of(settings.github_api_url),
        run_url=site.run_url,
        pages_note=site.note,
    )
    with job_store(settings, config, delivery.repo, lambda: _token(settings, delivery, forge)) as (
        store,
        save,
    ):
        router = Router(config, JournalForge(forge, claim), store, routing, adapters=ADAPTERS)
        outcome = router.handle(delivery.event, delivery.body)
        save()
        return outcome


def _run_for(settings: BotSettings) -> Run:
    """What a job does with a delivery: work it here, or (the actions executor) dispatch it."""
    if settings.executor == "actions":
        from freemad.bot.dispatch import dispatch_delivery

        return dispatch_delivery
    return run_delivery


def _token(settings: BotSettings, delivery: Delivery, forge: Forge) -> str:
    """The token git pushes the state branch with: the job's own (the installation's)."""
    own = getattr(forge, "token", None)
    if callable(own):
        return str(own())
    from freemad.bot.auth import token_source_from

    return token_source_from(settings).token_for(delivery.installation_id)


def _forge(settings: BotSettings, installation_id: int | None) -> Forge:
    from freemad.bot.auth import forge_for

    return forge_for(settings, installation_id)


class Job:
    """The body of `handle_delivery`; `run` and `forge_factory` are injectable for tests."""

    def __init__(
        self,
        settings: BotSettings,
        *,
        deliveries: DeliveryStore | None = None,
        claims: ClaimStore | None = None,
        run: Run | None = None,
        forge_factory: ForgeFactory | None = None,
        backoff: Backoff | None = None,
        lease: float = LEASE_SECONDS,
    ) -> None:
        from freemad.bot.stores import claims_store, delivery_log

        self.settings, self.lease = settings, lease
        # Neither opens anything until used: the web process registers the task but never runs it.
        # With the queue in Redis, both are in the same Redis: any host can run any delivery.
        self.deliveries = deliveries or delivery_log(settings)
        self.claims = claims or claims_store(settings)
        self.run: Run = run or _run_for(settings)
        self.forge_factory: ForgeFactory = forge_factory or _forge
        self.backoff = backoff or Backoff()

    def handle(self, delivery_id: str) -> str:
        """Work one delivery; what became of it. Raises huey's RetryTask to retry later."""
        delivery = self.deliveries.get(delivery_id)
        if delivery is None:
            log.warning("delivery %s is not in the delivery log; dropped", delivery_id)
            return "unknown"
        owner = Owner.here()
        where = _thread_of(delivery)
        if where is None:
            return self._handle(delivery, owner)
        # One job at a time per issue or pull request, on every worker of every host: two
        # commands at once would race on one run's state. The later one waits its turn (huey's
        # RetryTask does not count against the attempts) and then runs on what the first left.
        thread = f"thread:{where[0]}#{where[1]}"
        if self.claims.claim(thread, owner, self.lease) is None:
            log.info("delivery %s waits for the job on %s#%d", delivery_id, *where[:2])
            raise _retry(f"waits for the job on {where[0]}#{where[1]}", THREAD_WAIT)
        try:
            with Renewal(Claim(self.claims, thread, owner, 0), self.lease):
                return self._handle(delivery, owner)
        finally:
            self.claims.release(thread, owner)

    def _handle(self, delivery: Delivery, owner: Owner) -> str:
        delivery_id = delivery.delivery_id
        attempt = self.claims.claim(delivery_id, owner, self.lease)
        if attempt is None:
            return "claimed"  # a live job holds it; if it dies, the sweep brings this back
        claim = Claim(self.claims, delivery_id, owner, attempt)
        try:
            status = self.deliveries.status(delivery_id)
            if status in FINISHED:
                return str(status)
            if attempt > self.backoff.attempts:
                reason = "each attempt stopped before finishing (the worker was stopped or killed)"
                return self._park(delivery, claim, reason, attempt - 1)
            self.deliveries.mark(delivery_id, "running", f"attempt {attempt}", attempt=True)
            with Renewal(claim, self.lease):
                try:
                    outcome = self._with_forge(
                        delivery, lambda forge: self.run(self.settings, delivery, forge, claim)
                    )
                except LeaseLost:
                    return "lease lost"
                except Exception as exc:
                    return self._failed(delivery, claim, exc)
            if not claim.holds():
                return "lease lost"
            final = "ignored" if outcome.action == "ignored" else "done"
            what = " ".join(x for x in (outcome.action, outcome.run_id, outcome.reason) if x)
            self.deliveries.mark(delivery_id, final, what[:500])
            return final
        finally:
            self.claims.release(delivery_id, owner)

    def _with_forge(self, delivery: Delivery, use: Callable[[Forge], T]) -> T:
        forge = self.forge_factory(self.settings, delivery.installation_id)
        try:
            return use(forge)
        finally:
            close = getattr(forge, "close", None)
            if callable(close):
                close()

    def _failed(self, delivery: Delivery, claim: Claim, exc: Exception) -> str:
        reason = _reason(exc)
        log.warning(
            "delivery %s attempt %d failed: %s",
            delivery.delivery_id,
            claim.attempt,
            reason,
            exc_info=not isinstance(exc, FreemadError),
        )
        # Asking again would not help (a 404), or might do it twice (a dispatch GitHub may have
        # carried out though it answered 5xx): parked, with the cause on the issue.
        final = isinstance(exc, ForgeError) and (exc.status in FINAL_STATUSES or exc.maybe_done)
        if claim.attempt >= self.backoff.attempts or final or _malformed(exc):
            return self._park(delivery, claim, reason, claim.attempt)
        delay = self.backoff.delay(claim.attempt)
        detail = f"attempt {claim.attempt} of {self.backoff.attempts} failed: {reason}"
        self.deliveries.mark(delivery.delivery_id, "failed", f"{detail}; retry in {delay:g} s")
        raise _retry(reason, delay)

    def _park(self, delivery: Delivery, claim: Claim, reason: str, attempts: int) -> str:
        """Give up: say so on the issue (once, however often this runs), then mark `parked`."""
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        where = _thread_of(delivery)
        if where is not None and claim.effect("park", 1) is None and claim.holds():
            repo, number, how = where
            body = (
                f"FREE-MAD could not handle this and gave up after {tries}: "
                f"{escape_markdown(without_local_paths(reason), 500)}\n\nTo try again, {how}. (Delivery `{delivery.delivery_id}`; "
                "the bot's operator can find it in the worker's log.)"
            )
            try:
                posted = self._with_forge(delivery, lambda forge: forge.comment(repo, number, body))
                claim.record("park", 1, Effect(repo, number, posted.id, posted.html_url))
            except Exception as exc:
                log.error("could not comment on %s#%d: %s", repo, number, _reason(exc))
        detail = f"gave up after {tries}: {reason}"
        self.deliveries.mark(delivery.delivery_id, "parked", detail[:500])
        return "parked"


def _retry(reason: str, delay: float) -> Exception:
    """What makes huey run the task again after `delay` seconds (not counted against its
    retries), to raise."""
    from huey.exceptions import RetryTask  # type: ignore[import-untyped]

    return RetryTask(reason, delay=delay)  # type: ignore[no-any-return]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FreemadError):
        return exc.one_line()[:300]
    return f"an internal error ({type(exc).__name__})"  # its text may hold anything


def _malformed(exc: BaseException) -> bool:
    from freemad.github.events import PayloadError

    return isinstance(exc, PayloadError)


def _thread_of(delivery: Delivery) -> tuple[str, int, str] | None:
    """The repository, issue or pull request number, and how to retry, when there is a thread."""
    try:
        payload = json.loads(delivery.body)
        thread = payload.get("issue") or payload.get("pull_request") or {}
        number, label = thread.get("number"), (payload.get("label") or {}).get("name")
    except (ValueError, AttributeError):
        return None
    if not delivery.repo or not isinstance(number, int):
        return None
    if delivery.event in ("issue_comment", "pull_request_review_comment"):
        return delivery.repo, number, "post the command again in a new comment"
    if isinstance(label, str):
        return delivery.repo, number, f"remove the `{label}` label and add it again"
    return None
