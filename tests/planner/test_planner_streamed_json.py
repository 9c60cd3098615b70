"""A document written a part at a time is byte for byte what pydantic writes whole (planner.streamed_json)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter

from triton_mme.planner.streamed_json import Fields, Items, Rows, write_streamed


class Row(BaseModel):
    name: str
    value: float | None
    latency: dict[str, float] = {}


class Section(BaseModel):
    title: str = "section"
    rows: tuple[Row, ...] = ()
    notes: list[str] = []


class Document(BaseModel):
    version: int
    section: Section | None
    sections: list[Section]
    rows: list[Row]
    last: dict[str, float]


ROWS = [
    Row(name=f'model-{i} "quoted"\nline', value=float("inf") if i == 2 else i / 3, latency={"p99": i})
    for i in range(7)
]
ADAPTER = TypeAdapter(list[Row])


def chunks(rows: list[Row], size: int) -> Iterator[list[Row]]:
    return (rows[start : start + size] for start in range(0, len(rows), size))


@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_a_streamed_document_is_the_whole_dump_byte_for_byte(tmp_path: Path, size: int) -> None:
    whole = Document(
        version=1,
        section=Section(rows=tuple(ROWS), notes=["a", "b"]),
        sections=[Section(rows=tuple(ROWS[:4])), Section()],
        rows=ROWS,
        last={"x": 1e-5, "y": float("nan")},
    )
    head = whole.model_copy(update={"section": Section(notes=["a", "b"]), "rows": []})
    streamed = Fields(
        head,
        {
            "section": Fields(Section(notes=["a", "b"]), {"rows": Rows(ADAPTER, chunks(ROWS, size))}),
            "sections": Items(
                [Fields(Section(), {"rows": Rows(ADAPTER, chunks(ROWS[:4], size))}), Section()]
            ),
            "rows": Rows(ADAPTER, chunks(ROWS, size)),
        },
    )
    out = tmp_path / "doc.json"
    write_streamed(out, streamed)
    assert out.read_text(encoding="utf-8") == whole.model_dump_json(indent=2) + "\n"


def test_empty_parts_are_written_as_pydantic_writes_empty_lists(tmp_path: Path) -> None:
    whole = Document(version=1, section=None, sections=[], rows=[], last={})
    streamed = Fields(whole, {"sections": Items([]), "rows": Rows(ADAPTER, [[], []])})
    out = tmp_path / "doc.json"
    write_streamed(out, streamed)
    assert out.read_text(encoding="utf-8") == whole.model_dump_json(indent=2) + "\n"


def test_a_failure_part_way_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "doc.json"
    out.write_text("old\n", encoding="utf-8")

    def failing() -> Iterator[list[Row]]:
        yield ROWS[:2]
        raise RuntimeError("row 3 cannot be computed")

    head = Document(version=1, section=None, sections=[], rows=[], last={})
    with pytest.raises(RuntimeError, match="row 3"):
        write_streamed(out, Fields(head, {"rows": Rows(ADAPTER, failing())}))
    assert out.read_text(encoding="utf-8") == "old\n"
    assert [path.name for path in tmp_path.iterdir()] == ["doc.json"]


def test_a_part_for_a_field_the_model_lacks_is_refused(tmp_path: Path) -> None:
    head = Document(version=1, section=None, sections=[], rows=[], last={})
    with pytest.raises(ValueError, match=r"^Document has no field row$"):
        write_streamed(tmp_path / "doc.json", Fields(head, {"row": Rows(ADAPTER, [])}))
