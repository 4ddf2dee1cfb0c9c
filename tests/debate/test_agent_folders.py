"""Each agent's folder for a run: empty at the start, gone at the end with what the agent left in
it, however many agents (a large team's are removed side by side)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from freemad.debate.folders import agent_folders


@pytest.mark.parametrize("agents", [1, 3, 40])
def test_each_agent_has_an_empty_folder_removed_at_the_end(agents: int) -> None:
    ids = [f"agent-{i}" for i in range(agents)]
    with agent_folders(ids) as folders:
        assert list(folders) == ids
        assert len({os.path.dirname(f) for f in folders.values()}) == 1
        for folder in folders.values():
            assert os.listdir(folder) == []
        left = Path(folders[ids[-1]]) / "deep" / "er"
        left.mkdir(parents=True)
        (left / "file.txt").write_text("left behind", encoding="utf-8")
        root = Path(folders[ids[0]]).parent
    assert not root.exists()


def test_folders_are_removed_when_the_run_fails() -> None:
    with pytest.raises(RuntimeError), agent_folders(["a", "b", "c", "d", "e"]) as folders:
        root = Path(folders["a"]).parent
        raise RuntimeError("the run failed")
    assert not root.exists()
