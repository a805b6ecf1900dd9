"""The breaking-change guard: the working OpenAPI documents against the last released ones.

Each release keeps its documents in ``openapi/released/<release>/`` (``release`` below copies them there). The
guard compares every document of the last release with the working one using openapi-diff (Atlassian's
OpenAPI diff tool, from npm, pinned in package-lock.json), and fails on a breaking change (an operation, a
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

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKING = ROOT / "openapi"
RELEASED = WORKING / "released"
DOCUMENTS = ("menus.yaml", "identity.yaml", "operations.yaml")
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
    return Verdict(working.name, breaking, _version(released), _version(working))


def _version(document: Path) -> str:
    return str(yaml.safe_load(document.read_text(encoding="utf-8"))["info"]["version"])


def check(released: Path, working: Path = WORKING) -> list[Verdict]:
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
