"""`make image-test`: build the image on a given base, then run it and look inside it.

Run by scripts/image-test.sh, which makes the base (scripts/image-base.sh) and decides whether
containers can run here at all. This script needs buildah, and runs the image's processes with
`buildah run --isolation chroot`: no cgroups or user namespaces, so it works where podman and
docker cannot start a container. Only the standard library, so any python3 runs it.

Checks, each printed as it passes or fails: the build (with a canary in the certificate bundle
passed as a build secret), the user (numeric, not root), `freemad --version`, a mock debate,
`freemad github simulate` on a payload of ours and on GitHub's example where ../shared/fixtures
has it, `freemad bot serve` and `freemad bot worker` with /healthz answering through the image's
own HEALTHCHECK command (image_test_bot.py), what the file system must not hold (compilers, pip,
caches, apt lists, the secret), and the size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from image_test_bot import check_bot

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT.parent / "shared" / "fixtures" / "github" / "webhooks" / "examples"
QUESTION = "Write a function that returns Fibonacci(n)."
# What a runtime image needs none of: compilers and build tools, pip, caches, package lists.
ABSENT = (
    "usr/bin/gcc",
    "usr/bin/cc",
    "usr/bin/c++",
    "usr/bin/make",
    "usr/bin/ld",
    "opt/freemad/bin/pip",
    "opt/freemad/bin/pip3",
    "root/.cache/pip",
    "home/freemad/.cache",
    "wheels",
    "src",
    "opt/build",
    "run/secrets/ca",
)


class Checks:
    """Runs each check, prints PASS or FAIL with its detail, and remembers the failures."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def expect(self, name: str, ok: bool, detail: str = "") -> bool:
        print(f"{'PASS' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)
        if not ok:
            self.failed.append(name)
        return ok


def run(args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("timeout", 600)
    return subprocess.run(list(args), capture_output=True, text=True, check=False, **kwargs)


class Container:
    """A buildah working container of the image; `run` executes in it as the image's USER."""

    def __init__(self, image: str) -> None:
        self.id = run(["buildah", "from", "--quiet", image]).stdout.strip()
        if not self.id:
            raise SystemExit(f"image-test: buildah from {image} failed")

    def command(
        self, args: Sequence[str], env: dict[str, str] | None = None, mounts: Sequence[str] = ()
    ) -> list[str]:
        line = ["buildah", "run", "--isolation", "chroot"]
        for key, value in (env or {}).items():
            line += ["--env", f"{key}={value}"]
        for mount in mounts:
            line += ["--volume", mount]
        return [*line, self.id, "--", *args]

    def run(
        self, args: Sequence[str], env: dict[str, str] | None = None, mounts: Sequence[str] = ()
    ) -> subprocess.CompletedProcess[str]:
        return run(self.command(args, env, mounts))

    @contextlib.contextmanager
    def mounted(self) -> Iterator[Path]:
        path = run(["buildah", "mount", self.id]).stdout.strip()
        try:
            yield Path(path)
        finally:
            run(["buildah", "umount", self.id])

    def remove(self) -> None:
        run(["buildah", "rm", self.id])


def build(image: str, base: str, bundle: Path, checks: Checks) -> float:
    started = time.monotonic()
    env = {**os.environ, "IMAGE": image, "BASE_IMAGE": base, "ENGINE": "buildah"}
    env["PIP_CERT"] = str(bundle)
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run([bash, str(ROOT / "scripts" / "image.sh")], env=env, check=False)
    took = time.monotonic() - started
    if not checks.expect("build", done.returncode == 0, f"{took:.0f} s on {base}"):
        raise SystemExit(1)
    return took


def canary_bundle(directory: Path) -> tuple[Path, str]:
    """The machine's certificate bundle with a unique comment line, to look for in the image."""
    canary = f"freemad-image-test-canary-{secrets.token_hex(8)}"
    source = next(
        (
            Path(p)
            for p in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"))
            if p and Path(p).is_file()
        ),
        Path("/etc/ssl/certs/ca-certificates.crt"),
    )
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    bundle = directory / "ca.pem"
    bundle.write_text(f"{text}\n# {canary}\n", encoding="utf-8")
    return bundle, canary


def inspect(image: str) -> dict[str, Any]:
    done = run(["buildah", "inspect", "--type", "image", image])
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def check_config(config: dict[str, Any], canary: str, checks: Checks) -> list[str]:
    docker = config.get("Docker", {}).get("config", {})
    user = docker.get("User", "")
    checks.expect(
        "USER is numeric and not root (hadolint DL3066)",
        re.fullmatch(r"[1-9][0-9]*(:[0-9]+)?", user) is not None,
        repr(user),
    )
    test = (docker.get("Healthcheck") or {}).get("Test") or []
    checks.expect("HEALTHCHECK is kept (docker format)", test[:1] == ["CMD"], repr(test[:2]))
    checks.expect(
        "the build secret is in no layer's history or config",
        canary not in json.dumps(config),
    )
    return list(test[1:])


def check_files(container: Container, canary: str, checks: Checks) -> None:
    with container.mounted() as root:
        present = [p for p in ABSENT if (root / p).exists() or (root / p).is_symlink()]
        checks.expect("no build tools, pip or caches", not present, ", ".join(present))
        site = list((root / "opt/freemad/lib").glob("python3*/site-packages"))
        stray = [p.name for s in site for p in s.iterdir() if p.name.split("-")[0] == "pip"]
        checks.expect(
            "no pip in the application's venv", bool(site) and not stray, ", ".join(stray)
        )
        lists = [p.name for p in (root / "var/lib/apt/lists").glob("*") if p.name != "partial"]
        debs = [p.name for p in (root / "var/cache/apt/archives").glob("*.deb")]
        checks.expect(
            "no apt lists or downloaded packages", not lists and not debs, f"{lists + debs}"
        )
        found = _files_holding(root, canary.encode())
        checks.expect("the build secret is in no file of the image", not found, ", ".join(found))


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            if path.is_symlink() or not path.is_file():
                continue
            with contextlib.suppress(OSError):
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(root)))
    return found


def check_cli(container: Container, payloads: Path, checks: Checks) -> None:
    done = container.run(["id", "-u"])
    uid = done.stdout.strip()
    checks.expect("processes run as a non-root numeric uid", uid.isdigit() and uid != "0", uid)

    done = container.run(["freemad", "--version"])
    version = done.stdout.strip()
    host = ROOT / ".venv" / "bin" / "freemad"
    expected = run([str(host), "--version"]).stdout.strip() if host.exists() else version
    checks.expect(
        "freemad --version",
        done.returncode == 0 and version == expected and version.startswith("freemad "),
        version or done.stderr.strip(),
    )

    done = container.run(["freemad", QUESTION, "--rounds", "1"])
    checks.expect(
        "a mock debate",
        done.returncode == 0 and "Transcript: transcripts/" in done.stdout,
        done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:],
    )

    mount = [f"{payloads}:/payloads:ro"]
    done = container.run(
        ["freemad", "github", "simulate", "--event", "issues", "--payload", "/payloads/ours.json"],
        mounts=mount,
    )
    checks.expect(
        "freemad github simulate (our payload: a labelled issue)",
        done.returncode == 0
        and "POST /repos/octo-org/octo-repo/issues/7/comments -> 201" in done.stdout
        and "**Winner:**" in done.stdout,
        done.stderr.strip()[-300:],
    )
    if not (payloads / "github.json").exists():
        print(f"SKIPPED  freemad github simulate (GitHub's example): no {EXAMPLES}", flush=True)
        return
    done = container.run(
        [
            "freemad",
            "github",
            "simulate",
            "--event",
            "issue_comment",
            "--payload",
            "/payloads/github.json",
        ],
        mounts=mount,
    )
    checks.expect(
        "freemad github simulate (GitHub's issue_comment.created example, /freemad help)",
        done.returncode == 0 and "/freemad answer" in done.stdout,
        done.stderr.strip()[-300:],
    )


def write_payloads(directory: Path) -> None:
    """Ours, with only the fields FREE-MAD reads; GitHub's, read in place and given a command."""
    directory.mkdir(mode=0o755)
    repo = {
        "id": 1,
        "name": "octo-repo",
        "full_name": "octo-org/octo-repo",
        "owner": {"login": "octo-org", "id": 2, "type": "Organization"},
        "default_branch": "main",
        "private": False,
        "html_url": "https://github.com/octo-org/octo-repo",
        "clone_url": "https://github.com/octo-org/octo-repo.git",
    }
    alice = {"login": "alice", "id": 3, "type": "User"}
    ours = {
        "action": "labeled",
        "issue": {
            "number": 7,
            "title": "Pick a cache eviction policy",
            "body": "LRU or LFU for the session cache?",
            "user": alice,
            "labels": [{"name": "freemad:debate"}],
            "state": "open",
            "html_url": "https://github.com/octo-org/octo-repo/issues/7",
        },
        "label": {"name": "freemad:debate"},
        "repository": repo,
        "sender": alice,
        "installation": {"id": 42},
    }
    (directory / "ours.json").write_text(json.dumps(ours), encoding="utf-8")
    example = EXAMPLES / "issue_comment.created.json"
    if example.is_file():
        payload = json.loads(example.read_text(encoding="utf-8"))
        payload["comment"]["body"] = "/freemad help"
        (directory / "github.json").write_text(json.dumps(payload), encoding="utf-8")
    for path in directory.iterdir():
        path.chmod(0o644)


def size_mb(image: str) -> float:
    """The image's size: podman reports bytes; buildah alone says "352 MB"."""
    done = run(["podman", "image", "inspect", "--format", "{{.Size}}", image])
    if done.returncode == 0 and done.stdout.strip().isdigit():
        return int(done.stdout.strip()) / 1e6
    done = run(["buildah", "images", "--format", "{{.Size}}", image])
    number, _, unit = done.stdout.strip().partition(" ")
    scale = {"kB": 1e-3, "MB": 1.0, "GB": 1e3}.get(unit.strip())
    with contextlib.suppress(ValueError):
        return float(number) * scale if scale else 0.0
    return 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the base image (scripts/image-base.sh)")
    parser.add_argument("--image", default="localhost/freemad:image-test")
    parser.add_argument(
        "--max-mb", type=float, default=float(os.environ.get("IMAGE_MAX_MB", "450"))
    )
    args = parser.parse_args(argv)
    checks = Checks()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        directory.chmod(0o755)
        bundle, canary = canary_bundle(directory)
        took = build(args.image, args.base, bundle, checks)
        healthcheck = check_config(inspect(args.image), canary, checks)
        payloads = directory / "payloads"
        write_payloads(payloads)
        container = Container(args.image)
        try:
            check_files(container, canary, checks)
            check_cli(container, payloads, checks)
            check_bot(container, healthcheck, checks)
        finally:
            container.remove()
    size = size_mb(args.image)
    checks.expect(f"size {size:.0f} MB (at most {args.max_mb:.0f})", 0 < size <= args.max_mb)
    total = time.monotonic() - started
    print(f"image-test: {args.image}, {size:.0f} MB; build {took:.0f} s, everything {total:.0f} s")
    if checks.failed:
        print(f"image-test: FAILED: {'; '.join(checks.failed)}", flush=True)
        return 1
    print("image-test: passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
