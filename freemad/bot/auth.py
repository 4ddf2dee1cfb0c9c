"""Tokens for the bot: a plain token, or a GitHub App's installation tokens, and forges built on them.

`AppTokens` mints its own RS256 JWT (PyJWT) and exchanges it with `requests` rather than
PyGithub's `Auth.AppInstallationAuth`: that one reads `time.time()` and `datetime.now()` directly
(no clock to inject, so expiry cannot be tested without waiting), refreshes only 20 seconds
before expiry (a job started then would outlive its token), and raises PyGithub's exceptions
rather than one line naming the App. Tokens and JWTs are never logged; every installation token
is handed to `PyGithubForge`, whose log filter masks it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import requests

from freemad.errors import FreemadError, UsageError
from freemad.github.pygithub_forge import API_VERSION, PyGithubForge

if TYPE_CHECKING:
    from freemad.bot.settings import BotSettings

T = TypeVar("T")

JWT_BACKDATE = 60  # GitHub's advice: issue a minute in the past, against clock drift
JWT_LIFETIME = 9 * 60  # GitHub's limit is 10 minutes
REFRESH_MARGIN = 5 * 60  # a cached token is replaced this long before it expires


class TokenSource(Protocol):
    """Where the bot's GitHub token comes from; `installation_id` is the delivery's installation."""

    def token_for(self, installation_id: int | None) -> str: ...


@dataclass(frozen=True)
class PlainToken:
    """One token for every installation: a personal access token, or a test stand-in's."""

    token: str

    def token_for(self, installation_id: int | None) -> str:
        return self.token

    def __repr__(self) -> str:
        return "PlainToken(***)"


@dataclass(frozen=True)
class _Cached:
    token: str
    refresh_at: float


class AppTokens:
    """Installation tokens of one GitHub App, minted on demand and cached until near expiry."""

    def __init__(
        self,
        app_id: str,
        private_key_pem: str,
        *,
        base_url: str = "https://api.github.com",
        clock: Callable[[], float] = time.time,
        http: requests.Session | None = None,
        timeout: float = 30,
    ) -> None:
        self.app_id = str(app_id)
        self.base_url = base_url.rstrip("/")
        self._key = private_key_pem
        self._clock = clock
        self._http = http or requests.Session()
        self._timeout = timeout
        self._cache: dict[int, _Cached] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AppTokens(app_id={self.app_id!r}, base_url={self.base_url!r})"

    def jwt(self) -> str:
        """The App's own credential: RS256, issued a minute ago, valid for nine minutes."""
        import jwt

        now = int(self._clock())
        claims = {"iat": now - JWT_BACKDATE, "exp": now + JWT_LIFETIME, "iss": self.app_id}
        try:
            return jwt.encode(claims, self._key, algorithm="RS256")
        except (ValueError, TypeError, jwt.PyJWTError) as exc:
            raise UsageError(
                f"FREEMAD_APP_PRIVATE_KEY for app {self.app_id} is not a usable RSA private key "
                f"({type(exc).__name__}): paste the whole .pem the App's settings page generated"
            ) from None

    def token_for(self, installation_id: int | None) -> str:
        if installation_id is None:
            raise FreemadError(
                f"the delivery names no installation, so app {self.app_id} has no token for it "
                "(only events from repositories where the App is installed can be handled)"
            )
        with self._lock:  # one mint per installation, however many threads ask at once
            cached = self._cache.get(installation_id)
            if cached is not None and self._clock() < cached.refresh_at:
                return cached.token
            token, expires = self._mint(installation_id)
            self._cache[installation_id] = _Cached(token, expires - REFRESH_MARGIN)
            return token

    def _mint(self, installation_id: int) -> tuple[str, float]:
        url = f"{self.base_url}/app/installations/{installation_id}/access_tokens"
        headers = {
            "Authorization": f"Bearer {self.jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "freemad",
        }
        where = f"app {self.app_id}, installation {installation_id}"
        try:
            reply = self._http.post(url, headers=headers, timeout=self._timeout)
        except requests.RequestException as exc:
            raise FreemadError(
                f"could not reach {self.base_url} for an installation token ({where}): "
                f"{type(exc).__name__}; check FREEMAD_GITHUB_API_URL and the network"
            ) from None
        if reply.status_code != 201:
            raise FreemadError(_refusal(reply, where, self.app_id))
        data: Any = reply.json()
        try:
            token = str(data["token"])
            expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        except (KeyError, TypeError, ValueError):
            raise FreemadError(
                f"GitHub's installation token reply for {where} lacks token or expires_at"
            ) from None
        return token, expires.timestamp()


def _refusal(reply: requests.Response, where: str, app_id: str) -> str:
    try:
        said = str(reply.json().get("message") or "")
    except (ValueError, AttributeError):
        said = ""
    head = f"GitHub answered {reply.status_code} to the installation token request ({where})"
    head += f": {said}" if said else ""
    if reply.status_code == 401:
        return (
            f"{head}; check that FREEMAD_APP_ID is {app_id}'s App ID, that "
            "FREEMAD_APP_PRIVATE_KEY is a current private key of that App, and that this "
            "host's clock is right"
        )
    if reply.status_code == 404:
        return f"{head}; the App may have been uninstalled from that account"
    return head


def token_source_from(settings: BotSettings) -> TokenSource:
    """The settings' token source; App token sources are shared, so their cache is too."""
    if settings.github_token is not None:
        return PlainToken(settings.github_token.get_secret_value())
    if settings.app_id and settings.app_private_key is not None:
        pem = settings.app_private_key.get_secret_value()
        key = (settings.app_id, settings.github_api_url, hashlib.sha256(pem.encode()).hexdigest())
        with _SOURCES_LOCK:
            if key not in _SOURCES:
                _SOURCES[key] = AppTokens(settings.app_id, pem, base_url=settings.github_api_url)
            return _SOURCES[key]
    raise UsageError(
        "the bot has no GitHub credentials: set FREEMAD_GITHUB_TOKEN, or FREEMAD_APP_ID and "
        "FREEMAD_APP_PRIVATE_KEY"
    )


_SOURCES: dict[tuple[str, str, str], AppTokens] = {}
_SOURCES_LOCK = threading.Lock()


class InstallationForge(PyGithubForge):
    """A `PyGithubForge` that asks its token source before each operation, so a job that outlives
    an installation token (an hour) switches to the fresh one instead of failing with 401."""

    def __init__(
        self, tokens: TokenSource, installation_id: int | None, *, base_url: str, **options: Any
    ) -> None:
        self._tokens, self._installation, self._options = tokens, installation_id, options
        self._token = tokens.token_for(installation_id)
        super().__init__(self._token, base_url=base_url, **options)

    def token(self) -> str:
        """The installation's token now (a fresh one shortly before the last expires)."""
        return self._tokens.token_for(self._installation)

    def _call(
        self,
        method: str,
        path: str,
        action: Callable[[], T],
        *,
        idempotent: bool,
        recover: Callable[[], T | None] | None = None,
    ) -> T:
        token = self._tokens.token_for(self._installation)
        if token != self._token:
            self.close()
            PyGithubForge.__init__(self, token, base_url=self.base_url, **self._options)
            self._token = token
        return super()._call(method, path, action, idempotent=idempotent, recover=recover)


def forge_for(
    settings: BotSettings, installation_id: int | None, *, tokens: TokenSource | None = None
) -> PyGithubForge:
    """The forge one delivery's work talks to GitHub through, as that installation."""
    source = tokens if tokens is not None else token_source_from(settings)
    return InstallationForge(source, installation_id, base_url=settings.github_api_url)
