"""`freemad init` and `freemad example`: a starter config for this folder, and examples to try."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import click

from freemad.errors import FreemadError, UsageError

CONFIG_NAME = "freemad.yaml"
WORKFLOW = Path(".github") / "workflows" / "freemad.yml"
# The roles of the first, second and third agent: the reviewer is never the planner.
ROLES = ("[planner, researcher, implementer]", "[reviewer, verifier]", "[arbiter]")
LABELS = (
    ("freemad:debate", "FREE-MAD: agents debate this issue"),
    ("freemad:plan", "FREE-MAD: a planning task"),
    ("freemad:code", "FREE-MAD: a coding task"),
    ("freemad:evolve", "FREE-MAD: evolve this pull request"),
    ("freemad:review", "FREE-MAD: review this pull request by debate"),
)
# name -> (folder under examples/, what it shows)
EXAMPLES = {
    "evolve-toy": ("evolve_toy", "make slow_sum fast without making it wrong (scripted agents)"),
    "evolve-dependency-update": (
        "evolve_dependency_update",
        "upgrade a vendored library without changing behaviour (scripted agents)",
    ),
}
EXAMPLE_GOALS = {
    "evolve-toy": "make slow_sum as fast as possible",
    "evolve-dependency-update": "upgrade tabulate_lite to 2.x without changing the report",
}
_SKIP = shutil.ignore_patterns(".freemad", "__pycache__", ".pytest_cache", ".git", "*.pyc")


@click.command("init")
@click.option("--force", is_flag=True, help="Overwrite an existing freemad.yaml (and workflow).")
@click.option("--mock", is_flag=True, help="Use the mock agents even where agent CLIs are found.")
@click.option(
    "--github",
    "with_github",
    is_flag=True,
    help=f"Also write {WORKFLOW} and print the commands that create the labels.",
)
def init_command(force: bool, mock: bool, with_github: bool) -> None:
    """Write a starter freemad.yaml into the current folder.

    Its agents are the agent CLIs found on PATH (claude, codex, gemini, copilot,
    opencode, qwen; see `freemad agents`); else, where `llm` is installed, three
    agents on the model it would answer with (llm's default, or a plugin's local
    model when no OpenAI key is set); else the bundled mock agents. Every command
    run in this folder, or below it, then finds it without --config.
    """
    from freemad.config import parse_config

    target = Path(CONFIG_NAME)
    found = [] if mock else _agent_clis()
    llm = None if mock else _llm_found()
    model = llm.choice if llm is not None else None
    if found:
        text = _real_config(found)
    elif llm is not None and model is not None:
        found = [(f"llm-{n}", "llm") for n in "abc"]
        text = _real_config(found, [llm.entry_lines(model, n) for n in range(len(found))])
    else:
        text = _mock_config()
    parse_config(text, name=CONFIG_NAME)  # what we write must load
    workflow = _workflow() if with_github else None
    if target.exists() and not force:
        raise UsageError(f"{target} exists; keep it, or run 'freemad init --force' to replace it")
    if workflow is not None and WORKFLOW.exists() and not force:
        raise UsageError(f"{WORKFLOW} exists; keep it, or run 'freemad init --github --force'")
    _write(target, text)
    if llm is not None:
        click.echo(llm.said())
    agents = ", ".join(name for name, _ in found) if found else "the mock agents (no login)"
    on = f" on llm's model {model}" if found and found[0][1] == "llm" else ""
    click.echo(f"wrote {target}: {agents}{on}")
    for kind in dict.fromkeys(kind for _, kind in found):
        if kind != "llm" or not llm or not llm.models.ready(model, llm.keyed):
            click.echo(f"  log in first if you have not: {_login_hint(kind)}")
    if llm is not None and model is not None and not on:
        click.echo(
            f"  llm is installed too; to add it: - {{id: llm, type: llm, cli_args: {{-m: {model}}}}}"
        )
    if workflow is not None:
        _write(WORKFLOW, workflow)
        click.echo(f"wrote {WORKFLOW}: replace OWNER/freemad and SHA in it (see its header)")
        click.echo("create the labels (GitHub CLI):")
        for label, description in LABELS:
            click.echo(f'  gh label create {label} --color 5319e7 --description "{description}"')
    click.echo('next: freemad "Write a function that returns Fibonacci(n)."')


def _agent_clis() -> list[tuple[str, str]]:
    """The agent CLIs on PATH (or beside this Python), in the order they take task roles, as
    (program, preset type): those `freemad agents` lists that need no model named in the
    config (llm and aider do, so they are left for the user to add)."""
    from freemad.agents.catalog import config_entry, known_types
    from freemad.agents.invocation import CommandNotFound, resolve_program

    found = []
    for agent_type in known_types():
        entry = config_entry(agent_type)
        if "cli_args" in entry:
            continue
        try:
            resolve_program(entry["id"])
        except CommandNotFound:
            continue
        found.append((entry["id"], agent_type.value))
    return found


class _FoundLlm:
    """`llm` on PATH, the models it lists, and the one `init` writes."""

    def __init__(self, path: str) -> None:
        import os

        from freemad.agents.llm_models import has_openai_key, llm_models

        self.path = path
        self.models = llm_models(path)
        self.keyed = has_openai_key(os.environ, Path.home())
        self.choice = self.models.choice(self.keyed)

    def said(self) -> str:
        if self.models.problem:
            return f"found llm ({self.path}), but {self.models.problem}"
        # Plugins' models first: a local one is what a user without a key came for.
        ids = [m for label, m in self.models.models if not label.startswith("OpenAI")]
        ids += [m for m in self.models.ids if m not in ids]
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        default = f"; its default: {self.models.default}" if self.models.default else ""
        return f"found llm ({self.path}): `llm models` lists {shown}{default}"

    def entry_lines(self, model: str, index: int) -> list[str]:
        """The config lines of the `index`th agent on `model`: a seed of its own where the
        model takes one (agents on one model and seed answer alike); and, with a small window
        (a local model), replies read without the contract's markers, which such models
        seldom write."""
        from freemad.agents.presets import context_window
        from freemad.config.models import AgentConfig, AgentType

        lines = [f"cli_args: {{-m: {model}}}"]
        if "seed" in self.models.options.get(model, ()):
            lines.append(f"config: {{seed: {index + 1}}}   # its own, so the agents differ")
        window = context_window(AgentConfig(id="x", type=AgentType.LLM, cli_args={"-m": model}))
        if window is not None and window <= 4096:
            lines.append("free_form_replies: true   # a small local model seldom writes SOLUTION:")
        return lines


def _llm_found() -> _FoundLlm | None:
    from freemad.agents.invocation import CommandNotFound, resolve_program

    try:
        return _FoundLlm(resolve_program("llm"))
    except CommandNotFound:
        return None


def _login_hint(kind: str) -> str:
    from freemad.agents.presets import PRESETS
    from freemad.config.models import AgentType

    return PRESETS[AgentType(kind)].login_hint


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _mock_config() -> str:
    from importlib import resources

    builtin = resources.files("freemad.config").joinpath("mock_agents.yaml").read_text("utf-8")
    body = builtin.split("agents:", 1)[1]
    return (
        "# FREE-MAD's config for this folder (written by `freemad init`; docs/configuration.md).\n"
        "# No agent CLI ready to use was found on PATH, so these are the bundled mock agents: no login, no\n"
        "# network. Install and log in to an agent CLI (`freemad agents` lists them), then run\n"
        "# `freemad init --force` to use them instead.\n"
        "agents:" + body + _state_lines()
    )


def _real_config(found: list[tuple[str, str]], entries: list[list[str]] | None = None) -> str:
    """A config of the `found` (agent id, preset type), each with its `entries` lines too."""
    agents = list(found)
    if len(agents) == 1:  # a debate needs two voices, and the reviewer must not be the planner
        name, kind = agents[0]
        agents.append((f"{name}-reviewer", kind))
    lines = [
        "# FREE-MAD's config for this folder (written by `freemad init`; docs/configuration.md,",
        "# docs/agents.md). Each agent CLI logs itself in; FREE-MAD never reads an API key.",
        "agents:",
    ]
    for index, ((agent_id, kind), roles) in enumerate(zip(agents, ROLES, strict=False)):
        lines += [f"  - id: {agent_id}", f"    type: {kind}", f"    roles: {roles}"]
        lines += [f"    {line}" for line in (entries[index] if entries else ())]
    programs = sorted({agent_id.split("-")[0] for agent_id, _ in agents})
    lines += [
        "",
        "deadlines:",
        "  min_agents: 1                 # a round goes on once this many have answered",
        "",
        "security:",
        f"  cli_allowed_commands: [{', '.join(programs)}]",
    ]
    return "\n".join(lines) + "\n" + _state_lines()


def _state_lines() -> str:
    return (
        "\n# State lives next to this file: transcripts/, .freemad/tasks/ (docs/configuration.md).\n"
        "task:\n"
        "  store_path: .freemad/tasks/tasks.db\n"
        "  artifacts_dir: .freemad/tasks/artifacts\n"
    )


def _workflow() -> str:
    from freemad.bundled import bundled

    text = (bundled("action") / "comments.yml").read_text("utf-8")
    return text.replace(
        "# Copy this file to .github/workflows/freemad.yml in your repository. ",
        "# Written by `freemad init --github`. ",
    ).replace("      config: .github/freemad.yaml\n", f"      config: {CONFIG_NAME}\n")


@click.group("example")
def example_group() -> None:
    """Copy an example into a folder of its own, ready to run.

    \b
    Example:
      freemad example evolve-toy toy && cd toy && freemad evolve start "make slow_sum as fast as possible"
    """


def _example_command(name: str, folder: str, about: str) -> click.Command:
    @click.command(name, help=f"Copy the example into DIR, a git repository of its own: {about}.")
    @click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
    def command(directory: str) -> None:
        target = copy_example(folder, Path(directory))
        click.echo(f"{name} is in {target}, committed to a git repository of its own; next:")
        click.echo(f"  cd {directory}")
        click.echo("  freemad evolve validate")
        click.echo(f'  freemad evolve start "{EXAMPLE_GOALS[name]}"')

    return command


for _name, (_folder, _about) in EXAMPLES.items():
    example_group.add_command(_example_command(_name, _folder, _about))


def copy_example(folder: str, target: Path) -> Path:
    """Copy examples/FOLDER into `target` (absent or empty) with its evolve.yaml as freemad.yaml
    (found without --config there), and commit it to a new git repository there."""
    from freemad.bundled import bundled

    source = bundled("examples") / folder
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not an empty folder; name a new one")
    if shutil.which("git") is None:
        raise UsageError("git is not on PATH; evolve keeps its versions in a git repository")
    try:
        shutil.copytree(source, target, ignore=_SKIP, dirs_exist_ok=True)
        (target / "evolve.yaml").rename(target / CONFIG_NAME)
    except OSError as exc:
        raise UsageError(f"cannot copy the example into {target}: {exc.strerror or exc}") from None
    identity = ["-c", "user.name=FREE-MAD example", "-c", "user.email=freemad@example.invalid"]
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        [*identity, "-c", "commit.gpgsign=false", "commit", "-qm", f"The {folder} example"],
    ):
        done = subprocess.run(  # a fixed argv, no shell
            ["git", *args],  # noqa: S607 - git from PATH, as everywhere in FREE-MAD
            cwd=target,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            problem = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
            step = next(a for a in args if a in ("init", "add", "commit"))
            raise FreemadError(f"git {step} failed in {target}: {problem}")
    return target
