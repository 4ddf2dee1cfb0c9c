"""bot/compose.yaml, read as Docker Compose reads it: valid against the Compose specification's
schema, the services the bot needs wired to each other and to the files we ship (nginx.conf,
gunicorn.conf.py, the Dockerfile), no secret written in it; and the web service's command, run
as Compose would run it (real gunicorn, a real Redis), answers a signed delivery."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.bot.test_end_to_end import redis_url  # noqa: F401  (a fixture)
from tests.bot.test_gunicorn import SECRET, TOKEN, free_port, start
from tests.schemastore import errors, load_yaml

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "bot"
COMPOSE = BOT / "compose.yaml"
ENV_EXAMPLE = BOT / "freemad.env.example"
# Names whose values are secrets: they belong in an env file, never in compose.yaml.
SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|PRIVATE_KEY|API_KEY")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def mounts(service: dict[str, Any]) -> dict[str, tuple[Path | str, str]]:
    """Container path -> (host path, or volume name; options) of a service's short-syntax mounts."""
    found = {}
    for entry in service.get("volumes", []):
        source, target, *options = entry.split(":")
        host = (BOT / source).resolve() if source.startswith(".") else source
        found[target] = (host, ",".join(options))
    return found


def env_files(service: dict[str, Any]) -> list[str]:
    return [entry["path"] if isinstance(entry, dict) else entry for entry in service["env_file"]]


# --- the schema ---------------------------------------------------------------------------------


def test_the_file_is_valid_against_the_compose_specification() -> None:
    assert errors(load_yaml(COMPOSE), "compose-spec") == []


def test_the_schema_check_rejects_a_broken_copy() -> None:
    broken = copy.deepcopy(load_yaml(COMPOSE))
    broken["services"]["web"]["enviroment"] = broken["services"]["web"].pop("environment")
    assert errors(broken, "compose-spec")


# --- the services -------------------------------------------------------------------------------


def test_it_runs_the_web_edge_the_worker_nginx_and_redis() -> None:
    assert set(services()) == {"web", "worker", "nginx", "redis"}


def test_the_bot_runs_the_image_built_from_the_repository_dockerfile() -> None:
    for name in ("web", "worker"):
        build = services()[name]["build"]
        context = (BOT / build["context"]).resolve()
        assert context == ROOT, name
        assert (context / build["dockerfile"]) == ROOT / "Dockerfile", name
    # The queue is on Redis: the image must carry the redis extra.
    assert '"$1[redis]"' in (ROOT / "Dockerfile").read_text(encoding="utf-8")


def test_the_web_edge_is_gunicorn_with_the_settings_file_we_ship() -> None:
    web = services()["web"]
    assert web["entrypoint"] == ["python", "-m", "gunicorn"]
    (config,) = [arg for arg in web["command"] if arg.endswith(".py")]
    assert web["command"] == ["--config", config]
    assert mounts(web)[config] == (BOT / "gunicorn.conf.py", "ro")
    assert services()["worker"]["command"] == ["bot", "worker"]


def test_nginx_mounts_our_nginx_conf_and_reaches_gunicorn_where_it_listens() -> None:
    nginx, web = services()["nginx"], services()["web"]
    assert mounts(nginx)["/etc/nginx/nginx.conf"] == (BOT / "nginx.conf", "ro")
    conf = (BOT / "nginx.conf").read_text(encoding="utf-8")
    (upstream,) = re.findall(r"^\s*server (127\.0\.0\.1:\d+);", conf, flags=re.MULTILINE)
    # nginx.conf proxies to loopback; sharing the web container's network makes that gunicorn.
    assert nginx["network_mode"] == "service:web"
    assert web["environment"]["FREEMAD_BIND"] == upstream
    assert web["environment"]["FREEMAD_HEALTH_URL"] == f"http://{upstream}/healthz"
    (listen,) = re.findall(r"^\s*listen (\d+);", conf, flags=re.MULTILINE)
    assert any(port.endswith(f":{listen}") for port in web["ports"])
    assert "ports" not in nginx
    # Where nginx.conf keeps request bodies, which the nginx image lacks.
    (temp,) = set(re.findall(r"_temp_path (/var/lib/nginx)/", conf))
    assert temp in nginx["tmpfs"]


def test_the_bot_finds_the_queue_on_the_redis_service() -> None:
    redis = services()["redis"]
    assert redis["image"].startswith("redis:")
    assert "--appendonly" in redis["command"]  # a delivery log that survives a restart
    for name in ("web", "worker"):
        service = services()[name]
        url = urlsplit(service["environment"]["FREEMAD_QUEUE_URL"])
        assert url.scheme == "redis", name
        assert url.hostname == "redis", name  # the service's name on the project's network
        assert url.port == 6379
        assert service["depends_on"]["redis"]["condition"] == "service_healthy", name


def test_web_and_worker_share_the_state_and_settings() -> None:
    web, worker = services()["web"], services()["worker"]
    for name in ("FREEMAD_QUEUE_URL", "FREEMAD_STATE_DIR"):
        assert web["environment"][name] == worker["environment"][name]
    state = web["environment"]["FREEMAD_STATE_DIR"]
    home = next(target for target in mounts(web) if state.startswith(target + "/"))
    assert mounts(web)[home] == mounts(worker)[home]
    assert mounts(web)[home][0] in compose()["volumes"]
    assert "freemad.env" in env_files(web) and "freemad.env" in env_files(worker)


# --- secrets ------------------------------------------------------------------------------------


def test_no_secret_is_written_in_the_compose_file() -> None:
    for name, service in services().items():
        environment = service.get("environment", {})
        assert isinstance(environment, dict), name
        for key, value in environment.items():
            assert not SECRET_NAME.search(key), f"{name}: {key} belongs in an env file"
            url = urlsplit(str(value))
            assert url.password is None, f"{name}: {key} carries a password"
    # The agents' keys reach the worker alone, from a file of their own.
    assert "agents.env" in env_files(services()["worker"])
    assert "agents.env" not in env_files(services()["web"])


def test_the_env_example_names_only_known_settings_and_holds_no_secret() -> None:
    documented = set(re.findall(r"`(FREEMAD_[A-Z_]+)`", (ROOT / "docs" / "bot.md").read_text()))
    names = []
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"^#?\s*(FREEMAD_[A-Z_]+)=(.*)$", line)
        if found is None:
            continue
        name, value = found.groups()
        names.append(name)
        assert name in documented, name
        if SECRET_NAME.search(name) and name != "FREEMAD_APP_PRIVATE_KEY":
            assert value == "", f"{name} must be left empty in the example"
    assert {"FREEMAD_WEBHOOK_SECRET", "FREEMAD_APP_ID", "FREEMAD_APP_PRIVATE_KEY"} <= set(names)
    # compose.yaml sets these itself.
    assert "FREEMAD_QUEUE_URL" not in names and "FREEMAD_STATE_DIR" not in names
    # The key is a path inside the mounted folder, never the key itself.
    key = next(line for line in ENV_EXAMPLE.read_text().splitlines() if "PRIVATE_KEY=" in line)
    target = key.split("=", 1)[1]
    assert any(target.startswith(mount + "/") for mount in mounts(services()["worker"]))


def test_the_filled_in_files_are_kept_out_of_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    for path in ("bot/freemad.env", "bot/agents.env", "bot/secrets/"):
        assert path in ignored, path


# --- the web service, run -----------------------------------------------------------------------


def test_the_web_service_command_serves_the_bot_on_redis(
    tmp_path: Path,
    redis_url: str,  # noqa: F811  (the fixture imported above)
) -> None:
    web = services()["web"]
    port = free_port()
    # Compose's environment, with the addresses this machine has: the redis service is the test's
    # Redis, the container's 127.0.0.1:8080 a free port on loopback.
    environment = dict(web["environment"])
    queue = urlsplit(environment["FREEMAD_QUEUE_URL"])
    environment["FREEMAD_QUEUE_URL"] = redis_url.rsplit("/", 1)[0] + queue.path
    assert environment["FREEMAD_BIND"].startswith("127.0.0.1:")
    environment["FREEMAD_BIND"] = f"127.0.0.1:{port}"
    environment["FREEMAD_STATE_DIR"] = str(tmp_path / "state")
    env = {
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(tmp_path),
        # What freemad.env would hold.
        "FREEMAD_WEBHOOK_SECRET": SECRET,
        "FREEMAD_GITHUB_TOKEN": TOKEN,
        **{k: str(v) for k, v in environment.items()},
    }
    # The entrypoint and command, with the mounted settings file at its path on this machine.
    paths = {target: str(host) for target, (host, _) in mounts(web).items()}
    argv = [sys.executable if arg == "python" else arg for arg in web["entrypoint"]]
    argv += [paths.get(arg, arg) for arg in web["command"]]
    server = start(argv, env, tmp_path, port)
    try:
        status, health = server.request("/healthz")
        assert status == 200, health
        status, answer = server.deliver("compose-delivery-1")
        assert status == 202, answer
    finally:
        assert server.stop() == 0, server.stderr.read_text()[-3000:]
    # The queue and the delivery log were Redis's: no SQLite file of either in the state folder.
    assert not (tmp_path / "state" / "deliveries.sqlite3").exists()


@pytest.mark.parametrize("name", ["web", "worker", "nginx"])
def test_every_mounted_file_we_ship_exists(name: str) -> None:
    for host, _ in mounts(services()[name]).values():
        if isinstance(host, Path) and host.name != "secrets":
            assert host.exists(), host
