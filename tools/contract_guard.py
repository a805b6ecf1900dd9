"""The breaking-change guard: the working OpenAPI documents against the last released ones.

Each release keeps its documents in ``openapi/released/<release>/`` (``release`` below copies them there). The
guard compares every document of the last release with the working one using openapi-diff (Atlassian's
OpenAPI diff tool, from npm, pinned in package-lock.json; it does not look at the rules of parameters, so
``parameter_breaks`` adds those), and fails on a breaking change (an operation, a
parameter value or a response field taken away, a new required input, a narrower rule...) unless the working
document's ``info.version`` went up a major version. ``tox -e lint`` runs it.

    python -m tools.contract_guard                  # check; exit 1 on an unannounced breaking change
    python -m tools.contract_guard release 0.2.0    # keep today's documents as the release 0.2.0
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKING = ROOT / "openapi"
RELEASED = WORKING / "released"
DOCUMENTS = ("menus.yaml", "identity.yaml", "operations.yaml", "console.yaml", "management.yaml")
DIFF = ROOT / "node_modules" / ".bin" / "openapi-diff"
_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


@dataclass(frozen=True)
class Verdict:
    document: str
    breaking: list[str]  # "code at location" for each breaking difference
    released_version: str
    working_version: str

    @property
    def allowed(self) -> bool:
        """A breaking change is allowed only with a new major version of the document."""
        return not self.breaking or _major(self.working_version) > _major(self.released_version)

    def describe(self) -> str:
        if not self.breaking:
            return f"{self.document}: no breaking change since {self.released_version}"
        changes = "\n".join(f"  - {change}" for change in self.breaking)
        if self.allowed:
            announced = f"{self.released_version} → {self.working_version}"
            return f"{self.document}: breaking changes, announced by {announced}:\n{changes}"
        return (
            f"{self.document}: breaking changes while info.version is {self.working_version} "
            f"(released {self.released_version}); raise the major version or keep the change compatible:\n{changes}"
        )


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def last_release(released: Path = RELEASED) -> Path:
    releases = [path for path in released.iterdir() if path.is_dir() and _RELEASE.fullmatch(path.name)]
    if not releases:
        raise SystemExit(f"no release under {released}: keep one with `python -m tools.contract_guard release X.Y.Z`")
    return max(releases, key=lambda path: tuple(int(part) for part in path.name.split(".")))


def compare(released: Path, working: Path, diff: Path = DIFF) -> Verdict:
    """openapi-diff's verdict on ``working`` against ``released``: its breaking differences, if any."""
    # To a file, not a pipe: node ends the process before a large report has gone through a pipe (64 KiB).
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        done = subprocess.run([str(diff), str(released), str(working)], stdout=out, stderr=subprocess.PIPE,
                              text=True, timeout=120)  # fmt: skip
        out.seek(0)
        stdout = out.read()
    breaking: list[str] = []
    if done.returncode != 0:
        start = stdout.find("{")
        if "Breaking changes found" not in stdout or start < 0:
            raise SystemExit(f"openapi-diff could not compare {released} and {working}:\n{stdout}{done.stderr}")
        report = json.loads(stdout[start:])
        for change in report["breakingDifferences"]:
            where = [
                d["location"]
                for d in change.get("sourceSpecEntityDetails", []) + change.get("destinationSpecEntityDetails", [])
            ]
            breaking.append(f"{change['code']} at {', '.join(dict.fromkeys(where)) or '?'}")
    old, new = _load(released), _load(working)
    breaking += parameter_breaks(old, new)
    return Verdict(working.name, breaking, str(old["info"]["version"]), str(new["info"]["version"]))


def _load(document: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(document.read_text(encoding="utf-8"))
    return loaded


# openapi-diff 0.24 compares paths, operations, request bodies and responses, but not the rules of parameters;
# these are the parameter changes that break a client that worked with the released document.
_NARROWER = {"minimum": max, "minLength": max, "maximum": min, "maxLength": min}


def parameter_breaks(released: dict[str, Any], working: dict[str, Any]) -> list[str]:
    """Breaking changes to the parameters of operations in both documents (a removed operation is openapi-diff's).

    A new required parameter; a query or path parameter taken away (the menus API's strict validation refuses an
    unknown one); an enum where any value went, or an enum value taken away; a bound made narrower; a parameter
    that became required.
    """
    found: list[str] = []
    for path, item in released.get("paths", {}).items():
        for method in _METHODS & set(item):
            now = working.get("paths", {}).get(path, {}).get(method)
            if now is None:
                continue
            where = f"paths.{path}.{method}.parameters"
            before = _parameters(released, item, item[method])
            after = _parameters(working, working["paths"][path], now)
            for key, parameter in after.items():
                if key not in before and parameter.get("required"):
                    found.append(f"request.parameter.required.add at {where}.{key[1]}")
            for key, parameter in before.items():
                if key not in after:
                    if key[0] in ("query", "path"):  # an unknown header or cookie is ignored
                        found.append(f"request.parameter.remove at {where}.{key[1]}")
                    continue
                if after[key].get("required") and not parameter.get("required"):
                    found.append(f"request.parameter.required.set at {where}.{key[1]}")
                old = _schema(released, parameter.get("schema", {}))
                new = _schema(working, after[key].get("schema", {}))
                if "enum" in new and ("enum" not in old or not set(old["enum"]) <= set(new["enum"])):
                    found.append(f"request.parameter.enum.remove at {where}.{key[1]}")
                for bound, tighter in _NARROWER.items():
                    if bound in new and (bound not in old or tighter(old[bound], new[bound]) != old[bound]):
                        found.append(f"request.parameter.{bound}.narrow at {where}.{key[1]}")
    return found


_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _parameters(
    document: dict[str, Any], item: dict[str, Any], operation: dict[str, Any]
) -> dict[tuple[str, str], Any]:
    """An operation's parameters (its path's first, the operation's over them), ``$ref`` resolved, by (in, name)."""
    parameters = {}
    for parameter in [*item.get("parameters", []), *operation.get("parameters", [])]:
        resolved = _resolve(document, parameter)
        parameters[(resolved["in"], resolved["name"])] = resolved
    return parameters


def _schema(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    resolved = _resolve(document, schema)
    return (
        resolved
        if "allOf" not in resolved
        else {k: v for part in resolved["allOf"] for k, v in _schema(document, part).items()}
    )


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def check(released: Path, working: Path = WORKING) -> list[Verdict]:
    """The verdict on each document the release kept; a document new since (management.yaml after 0.2.0) is
    guarded from the first release that keeps it."""
    return [compare(released / name, working / name) for name in DOCUMENTS if (released / name).exists()]


def release(version: str, replace: bool = False, working: Path = WORKING, released: Path = RELEASED) -> Path:
    """Keep today's documents as release ``version``."""
    if not _RELEASE.fullmatch(version):
        raise SystemExit(f"a release is X.Y.Z, not {version!r}")
    target = released / version
    if target.exists() and not replace:
        raise SystemExit(f"{target} exists; a published release never changes (--replace only before it ships)")
    target.mkdir(parents=True, exist_ok=True)
    for name in DOCUMENTS:
        shutil.copyfile(working / name, target / name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.contract_guard", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    keep = commands.add_parser("release", help="keep today's documents as a release")
    keep.add_argument("version")
    keep.add_argument("--replace", action="store_true", help="retake a release that has not shipped yet")
    arguments = parser.parse_args(argv)
    if arguments.command == "release":
        print(f"kept {release(arguments.version, arguments.replace)}")
        return 0
    base = last_release()
    verdicts = check(base)
    for verdict in verdicts:
        print(verdict.describe())
    return 0 if all(verdict.allowed for verdict in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
