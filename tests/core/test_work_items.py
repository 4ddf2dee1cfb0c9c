"""A code task's work items: how a plan's list becomes items, and which run together."""

from __future__ import annotations

from freemad.core.work_items import WorkItem, path_parts, ready_batch, scopes_overlap


def test_a_plans_items_get_unique_ids_titles_and_clean_scopes() -> None:
    items = WorkItem.from_plan(
        [
            {"id": "a", "title": "First", "write_scope": ["/src/", "docs"]},
            {"id": "a", "description": "Second, by its description", "depends_on": ["a", "zz"]},
            {"id": "a"},
            {"title": "x" * 250},
            {},
        ]
    )
    assert items == [
        WorkItem("a", "First", (), ("src", "docs")),
        WorkItem("a+", "Second, by its description", ("a",), ()),
        WorkItem("a++", "a++", (), ()),
        WorkItem("w4", "x" * 200, (), ()),
        WorkItem("w5", "w5", (), ()),
    ]


def test_a_plan_without_items_is_one_item_over_the_whole_workspace() -> None:
    assert WorkItem.from_plan([]) == [WorkItem("all", "Carry out the plan")]


def test_an_item_as_the_views_show_it() -> None:
    item = WorkItem("b", "B", ("a",), ("src",))
    assert item.as_dict() == {"id": "b", "title": "B", "depends_on": ["a"], "write_scope": ["src"]}


def test_path_parts_drop_empty_and_current_directory_parts() -> None:
    assert path_parts("./src//pkg/./a.py/") == ("src", "pkg", "a.py")
    assert path_parts(".") == ()


def test_scopes_overlap_by_whole_path_components() -> None:
    assert scopes_overlap("src", "src/app.py") is True
    assert scopes_overlap("src/app.py", "src") is True
    assert scopes_overlap("src", "srcs") is False
    assert scopes_overlap(["docs", "src"], ["srcs", "tests"]) is False
    assert scopes_overlap(["docs", "src"], ["tests", "src/a"]) is True
    assert scopes_overlap([], ["src"]) is True
    assert scopes_overlap(".", "src") is True


def test_a_batch_skips_an_overlapping_item_and_goes_on_to_the_next() -> None:
    items = [
        WorkItem("a", "A", (), ("src",)),
        WorkItem("b", "B", (), ("src/x.py",)),
        WorkItem("c", "C", (), ("docs",)),
        WorkItem("d", "D", ("a",), ("tests",)),
        WorkItem("e", "E", (), ("tests",)),
    ]
    assert [i.item_id for i in ready_batch(items, [])] == ["a", "c", "e"]
    assert [i.item_id for i in ready_batch(items, ["a"])] == ["b", "c", "d"]
    assert ready_batch(items, ["a", "b", "c", "d", "e"]) == []


def test_a_scope_loses_only_its_slashes() -> None:
    assert WorkItem.from_plan([{"id": "a", "write_scope": ["/Xdocs/", "src/X"]}]) == [
        WorkItem("a", "a", (), ("Xdocs", "src/X"))
    ]
