"""The bot's GitHub credentials: App installation tokens minted, cached and refreshed; plain tokens."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from freemad.bot.auth import AppTokens, InstallationForge, PlainToken, forge_for
from freemad.bot.settings import BotSettings
from freemad.errors import FreemadError
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn, StandInCall
from freemad.github.standin_server import LoopbackServer
from tests.github import openapi_contract as contract

APP_ID = "12345"
START = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture(scope="module")
def app_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class TokenEndpoint:
    """GitHub's `POST /app/installations/{id}/access_tokens`, checking the JWT as GitHub does."""

    def __init__(self, public_key: Any, clock: Clock) -> None:
        self.public_key, self.clock = public_key, clock
        self.minted: list[tuple[int, dict[str, Any]]] = []
        self.refuse_with: int | None = None
        self.api: StandIn | None = None  # where every other request goes
        self.calls: list[StandInCall] = []  # the token requests, for GitHub's description
        self.server = LoopbackServer(self)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, authorization: str) -> tuple[int, dict[str, Any]]:
        found = re.fullmatch(r"/app/installations/(\d+)/access_tokens", path)
        if found is None:
            return 404, {"message": "Not Found"}
        if self.refuse_with is not None:
            return self.refuse_with, {"message": "Bad credentials"}
        token = authorization.removeprefix("Bearer ")
        try:
            header = jwt.get_unverified_header(token)
            # The fake clock is not the wall clock: check the times ourselves, the signature here.
            claims = jwt.decode(
                token,
                self.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "require": ["iat", "exp"]},
            )
        except jwt.PyJWTError:
            return 401, {"message": "A JSON web token could not be decoded"}
        if header.get("alg") != "RS256" or claims.get("iss") != APP_ID:
            return 401, {"message": "'Issuer' claim ('iss') must be an Integer"}
        if (
            not claims["iat"] <= self.clock() <= claims["exp"]
            or claims["exp"] - claims["iat"] > 600
        ):
            return 401, {"message": "'Expiration time' claim ('exp') is too far in the future"}
        self.minted.append((int(found.group(1)), claims))
        expires = datetime.fromtimestamp(self.clock() + 3600, timezone.utc)
        token_value = f"ghs_minted{len(self.minted)}"
        return 201, {"token": token_value, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}

    def serve(
        self, method: str, target: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """The token requests answered here, every other one by the stand-in (`api`)."""
        if self.api is not None and not target.startswith("/app/"):
            return self.api.serve(method, target, headers, raw)
        status, body = self.answer(target, headers.get("Authorization", ""))
        data = json.dumps(body).encode()
        sent = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        self.calls.append(StandInCall(method, target, {}, None, dict(headers), status, body, sent))
        return status, sent, data


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def endpoint(app_key: rsa.RSAPrivateKey, clock: Clock) -> Iterator[TokenEndpoint]:
    server = TokenEndpoint(app_key.public_key(), clock)
    yield server
    server.server.shutdown()
    if contract.description_path().is_file():  # the token requests hold to GitHub's description
        assert [text for call in server.calls for text in contract.problems(call)] == []
    server.server.server_close()


def test_an_installation_token_is_minted_once_and_cached_until_five_minutes_before_expiry(
    app_key: rsa.RSAPrivateKey, endpoint: TokenEndpoint, clock: Clock
) -> None:
    tokens = AppTokens(APP_ID, pem(app_key), base_url=endpoint.base_url, clock=clock)

    first = tokens.token_for(42)
    assert first == "ghs_minted1"
    ((installation, claims),) = endpoint.minted
    assert installation == 42
    assert claims["iss"] == APP_ID
    assert claims["iat"] == START - 60 and claims["exp"] - claims["iat"] <= 600

    clock.now += 3600 - 300 - 1  # still more than five minutes left
    assert tokens.token_for(42) == first
    assert len(endpoint.minted) == 1

    clock.now += 2  # now within five minutes of expiry
    assert tokens.token_for(42) == "ghs_minted2"
    assert len(endpoint.minted) == 2
    assert tokens.token_for(42) == "ghs_minted2"
    assert len(endpoint.minted) == 2


def test_each_installation_has_its_own_token(
    app_key: rsa.RSAPrivateKey, endpoint: TokenEndpoint, clock: Clock
) -> None:
    tokens = AppTokens(APP_ID, pem(app_key), base_url=endpoint.base_url, clock=clock)
    assert tokens.token_for(1) != tokens.token_for(2)
    assert [i for i, _ in endpoint.minted] == [1, 2]
    tokens.token_for(1)
    assert len(endpoint.minted) == 2


def test_a_refused_jwt_is_one_line_naming_the_app_and_what_to_check(
    endpoint: TokenEndpoint, clock: Clock
) -> None:
    wrong = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tokens = AppTokens(APP_ID, pem(wrong), base_url=endpoint.base_url, clock=clock)

    with pytest.raises(FreemadError) as caught:
        tokens.token_for(42)

    message = caught.value.one_line()
    assert "\n" not in message
    assert "401" in message and APP_ID in message
    assert "FREEMAD_APP_ID" in message and "FREEMAD_APP_PRIVATE_KEY" in message
    assert "clock" in message
    assert endpoint.minted == []


def test_an_uninstalled_app_says_so(
    app_key: rsa.RSAPrivateKey, endpoint: TokenEndpoint, clock: Clock
) -> None:
    endpoint.refuse_with = 404
    tokens = AppTokens(APP_ID, pem(app_key), base_url=endpoint.base_url, clock=clock)
    with pytest.raises(FreemadError, match="uninstalled"):
        tokens.token_for(42)


def test_a_delivery_without_an_installation_has_no_app_token(
    app_key: rsa.RSAPrivateKey, endpoint: TokenEndpoint
) -> None:
    tokens = AppTokens(APP_ID, pem(app_key), base_url=endpoint.base_url)
    with pytest.raises(FreemadError, match="no installation"):
        tokens.token_for(None)


def test_a_key_that_is_not_a_key_is_a_usage_error() -> None:
    tokens = AppTokens(APP_ID, "-----BEGIN PRIVATE KEY-----\nnope\n", base_url="http://127.0.0.1:9")
    with pytest.raises(FreemadError, match="not a usable RSA private key"):
        tokens.token_for(1)


def test_tokens_never_reach_the_log(
    app_key: rsa.RSAPrivateKey,
    endpoint: TokenEndpoint,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = AppTokens(APP_ID, pem(app_key), base_url=endpoint.base_url, clock=clock)
    token = tokens.token_for(42)
    assert token not in repr(tokens)
    assert token not in caplog.text and "Bearer" not in caplog.text
    assert "secret" not in repr(PlainToken("secret"))


class Rotating:
    """A token source whose token changes when told to, as an App's does each hour."""

    def __init__(self) -> None:
        self.token = "ghs_old"
        self.asked: list[int | None] = []

    def token_for(self, installation_id: int | None) -> str:
        self.asked.append(installation_id)
        return self.token


def test_a_forge_switches_to_the_fresh_token_mid_job() -> None:
    source = Rotating()
    with StandIn(token="ghs_new", permissions={"alice": "write"}) as api:
        forge = InstallationForge(source, 42, base_url=api.base_url, throttle=False, retries=0)
        source.token = "ghs_new"  # the job outlived its first token
        assert forge.permission("octo-org/octo-repo", "alice") == "write"
        forge.close()
    assert source.asked and set(source.asked) == {42}


def settings(tmp_path: Path, api_url: str, **values: Any) -> BotSettings:
    return BotSettings(
        webhook_secret=cast(Any, "hook-secret"),
        github_api_url=api_url,
        state_dir=tmp_path,
        **values,
    )


def test_forge_for_a_plain_token_talks_to_the_configured_api(tmp_path: Path) -> None:
    with StandIn(token="pat-123") as api:
        api.add_issue("octo-org/octo-repo", 7, "an issue", "")
        forge = forge_for(settings(tmp_path, api.base_url, github_token="pat-123"), None)
        assert isinstance(forge, PyGithubForge)
        posted = forge.comment("octo-org/octo-repo", 7, "hello")
        forge.close()
        assert posted.id in api.comments


def test_forge_for_an_app_mints_a_token_and_uses_it(
    tmp_path: Path, app_key: rsa.RSAPrivateKey, endpoint: TokenEndpoint
) -> None:
    endpoint.clock.now = time.time()  # forge_for's token source reads the real clock
    with StandIn(token="ghs_minted1") as api:
        api.add_issue("octo-org/octo-repo", 7, "an issue", "")
        endpoint.api = api  # the rest of the REST API, behind the same base URL
        values = {"app_id": APP_ID, "app_private_key": pem(app_key)}
        forge = forge_for(settings(tmp_path, endpoint.base_url, **values), 42)
        posted = forge.comment("octo-org/octo-repo", 7, "as the app")
        forge.close()
    assert posted.id in api.comments
    assert [installation for installation, _ in endpoint.minted] == [42]
