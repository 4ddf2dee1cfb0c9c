"""Work items of a code task's plan: which may run now, together, without touching each other."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WorkItem:
    item_id: str
    title: str
    depends_on: tuple[str, ...] = ()
    write_scope: tuple[str, ...] = ()  # empty: the whole workspace

    @classmethod
    def from_plan(cls, raw: Iterable[Mapping[str, Any]]) -> list[WorkItem]:
        """The plan's items, with ids made unique and unknown dependencies dropped; a plan
        without items is one item over the whole workspace."""
        items: list[WorkItem] = []
        seen: set[str] = set()
        for index, entry in enumerate(raw, start=1):
            item_id = str(entry.get("id") or f"w{index}")
            while item_id in seen:
                item_id += "+"
            seen.add(item_id)
            items.append(
                cls(
                    item_id=item_id,
                    title=str(entry.get("title") or entry.get("description") or item_id)[:200],
                    depends_on=tuple(str(d) for d in entry.get("depends_on") or ()),
                    write_scope=tuple(str(p).strip("/") for p in entry.get("write_scope") or ()),
                )
            )
        if not items:
            return [cls("all", "Carry out the plan")]
        known = {i.item_id for i in items}
        return [
            WorkItem(
                i.item_id, i.title, tuple(d for d in i.depends_on if d in known), i.write_scope
            )
            for i in items
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "title": self.title,
            "depends_on": list(self.depends_on),
            "write_scope": list(self.write_scope),
        }


def path_parts(path: str) -> tuple[str, ...]:
    """A workspace-relative path as its components ("" and "." dropped)."""
    return tuple(part for part in path.split("/") if part not in ("", "."))


def within(parts: tuple[str, ...], roots: Iterable[tuple[str, ...]]) -> bool:
    """Whether a path lies under one of the roots (by whole components)."""
    return any(parts[: len(root)] == root for root in roots)


def scopes_overlap(a: Sequence[str] | str, b: Sequence[str] | str) -> bool:
    """Two write scopes overlap when one path is a prefix (by components) of the other, so "src"
    overlaps "src/app.py" but not "srcs"; an empty scope (or ".") is the whole workspace."""
    left = [path_parts(p) for p in ([a] if isinstance(a, str) else a)]
    right = [path_parts(p) for p in ([b] if isinstance(b, str) else b)]
    if not left or not right:
        return True
    return any(within(x, [y]) or within(y, [x]) for x in left for y in right)


def ready_batch(items: Sequence[WorkItem], done: Iterable[str]) -> list[WorkItem]:
    """Items whose dependencies are done, greedily chosen so that no two write scopes overlap.
    A dependency cycle leaves nothing ready: the caller reports it instead of looping."""
    finished = set(done)
    batch: list[WorkItem] = []
    for item in items:
        if item.item_id in finished or not set(item.depends_on) <= finished:
            continue
        if any(scopes_overlap(item.write_scope, other.write_scope) for other in batch):
            continue
        batch.append(item)
    return batch
