"""The breaking-change guard (tools/contract_guard.py, run by ``tox -e lint``) with openapi-diff."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from data.yaml_text import safe_load
from tests.support.ci_skips import needs_tool
from tools.contract_guard import (
    DIFF,
    DOCUMENTS,
    RELEASED,
    WORKING,
    compare,
    last_release,
    main,
    parameter_breaks,
    release,
)

pytestmark = needs_tool(DIFF.exists(), "openapi-diff", "run `npm ci` first")


def changed(tmp_path: Path, name: str, change: Any) -> Path:
    """A copy of the working document ``name`` with ``change`` applied to its parsed form."""
    document = safe_load((WORKING / name).read_text(encoding="utf-8"))
    change(document)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_a_removed_operation_is_a_breaking_change_the_guard_refuses(tmp_path: Path) -> None:
    working = changed(tmp_path, "menus.yaml", lambda d: d["paths"].pop("/menus/random"))
    verdict = compare(WORKING / "menus.yaml", working)
    assert not verdict.allowed
    assert any(change.startswith("path.remove at paths./menus/random") for change in verdict.breaking), verdict
    assert "raise the major version" in verdict.describe()


def test_a_field_taken_out_of_an_answer_is_refused_too(tmp_path: Path) -> None:
    def drop_summary(document: dict[str, Any]) -> None:
        region = document["components"]["schemas"]["Region"]
        region["properties"].pop("summary")
        region["required"].remove("summary")

    verdict = compare(WORKING / "menus.yaml", changed(tmp_path, "menus.yaml", drop_summary))
    assert not verdict.allowed
    assert any(change.startswith("response.body.scope.add at paths./menus/regions.get") for change in verdict.breaking)


def test_an_additive_change_passes(tmp_path: Path) -> None:
    def add(document: dict[str, Any]) -> None:
        document["paths"]["/menus/countries"] = {"get": {**document["paths"]["/menus/regions"]["get"],
                                                         "operationId": "menus.list_countries"}}  # fmt: skip
        document["paths"]["/menus/regions"]["get"]["parameters"].append(
            {"name": "kind", "in": "query", "schema": {"type": "string"}}
        )

    verdict = compare(WORKING / "menus.yaml", changed(tmp_path, "menus.yaml", add))
    assert verdict.breaking == [] and verdict.allowed


def test_a_breaking_change_passes_with_a_new_major_version(tmp_path: Path) -> None:
    def break_and_announce(document: dict[str, Any]) -> None:
        document["paths"].pop("/menus/random")
        document["info"]["version"] = "2.0.0"

    verdict = compare(WORKING / "menus.yaml", changed(tmp_path, "menus.yaml", break_and_announce))
    assert verdict.breaking and verdict.allowed
    minor = changed(
        tmp_path, "menus.yaml", lambda d: (d["paths"].pop("/menus/random"), d["info"].update(version="1.1.0"))
    )
    assert not compare(WORKING / "menus.yaml", minor).allowed


def test_release_keeps_every_document_and_never_overwrites_a_release(tmp_path: Path) -> None:
    kept = release("1.2.3", working=WORKING, released=tmp_path)
    assert sorted(path.name for path in kept.iterdir()) == sorted(DOCUMENTS)
    assert (kept / "menus.yaml").read_bytes() == (WORKING / "menus.yaml").read_bytes()
    with pytest.raises(SystemExit, match="exists"):
        release("1.2.3", working=WORKING, released=tmp_path)
    assert last_release(tmp_path) == kept
    (tmp_path / "1.10.0").mkdir()
    assert last_release(tmp_path).name == "1.10.0"  # release order, not text order
    shutil.rmtree(tmp_path / "1.10.0")


def test_the_working_documents_keep_every_promise_of_the_last_release(capsys: pytest.CaptureFixture[str]) -> None:
    """The guard's command (``tox -e lint``) compares each document the last release kept, and passes. One run of
    openapi-diff per document: each costs node about two seconds of CPU."""
    assert last_release().parent == RELEASED
    kept = {path.name for path in last_release().iterdir()}
    assert kept <= set(DOCUMENTS)
    assert main([]) == 0
    said = capsys.readouterr().out
    compared = [name for name in DOCUMENTS if any(line.startswith(f"{name}: ") for line in said.splitlines())]
    assert compared == [name for name in DOCUMENTS if name in kept], said


def working_menus() -> dict[str, Any]:
    document: dict[str, Any] = safe_load((WORKING / "menus.yaml").read_text(encoding="utf-8"))
    return document


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["paths"]["/menus/regions"]["get"]["parameters"].append(
            {"name": "kind", "in": "query", "required": True, "schema": {"type": "string"}}),
         "request.parameter.required.add at paths./menus/regions.get.parameters.kind"),
        (lambda d: d["components"]["schemas"]["Course"]["enum"].remove("rice"),
         "request.parameter.enum.remove at paths./menus/dishes.get.parameters.course"),
        (lambda d: d["components"]["parameters"]["maxSpice"]["schema"].update(maximum=4),
         "request.parameter.maximum.narrow at paths./menus/dishes.get.parameters.max_spice"),
        (lambda d: d["components"]["parameters"]["q"]["schema"].update(maxLength=50),
         "request.parameter.maxLength.narrow at paths./menus/random.get.parameters.q"),
        (lambda d: d["paths"]["/menus/regions"]["get"]["parameters"].pop(0),
         "request.parameter.remove at paths./menus/regions.get.parameters.country"),
    ],
)  # fmt: skip
def test_parameter_rules_made_stricter_are_breaking(change: Any, expected: str) -> None:
    """openapi-diff does not look at parameters; the guard's own parameter check does."""
    working = working_menus()
    change(working)
    assert expected in parameter_breaks(working_menus(), working)


def test_parameter_rules_made_looser_are_not_breaking() -> None:
    working = working_menus()
    working["components"]["schemas"]["Course"]["enum"].append("brunch")
    working["components"]["parameters"]["maxSpice"]["schema"].update(maximum=6)
    working["paths"]["/menus/regions"]["get"]["parameters"].append({"name": "kind", "in": "query"})
    working["paths"]["/menus/dishes"]["get"]["parameters"].pop()  # If-None-Match: an unknown header is ignored
    assert parameter_breaks(working_menus(), working) == []
