"""The mutation test of the security rules: mutmut mutates the functions of a bounded set one change at a time
and runs the tests that reach each function; a mutant that no test fails is a rule the suite does not guard.

    python -m tools.mutation                       # the whole set (tox -e mutation); prints the score
    python -m tools.mutation --changed origin/main # only the targets whose functions changed since that revision
    python -m tools.mutation --rule CSRF           # only the rules whose name holds that text
    python -m tools.mutation --list                # the targets and their files

Every surviving mutant must be killed by a test or listed in docs/testing.md's table of equivalent mutants with
the reason no test can tell it apart; a survivor that is neither fails the run (exit 1). mutmut's configuration
(the files it copies and mutates, the tests it may run) is ``[tool.mutmut]`` in pyproject.toml. The run goes rule
by rule: for each, mutmut runs in a folder of its own (a temporary one) whose ``[tool.mutmut]`` is narrowed to
that rule's files and to the tests that guard it (``GUARDS``), so a rule's mutants are killed by its own guards or
not at all, and one rule costs a minute or two, not two runs of every rule's tests. ``--changed`` (CI) runs the
changed rules alone, the same way. docs/testing.md says what it costs and when CI runs it.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import re
import resource
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "testing.md"
LOG = ROOT / "reports" / "mutation.log"  # mutmut's own output of the last run


@dataclass(frozen=True)
class Target:
    rule: str
    file: str  # the module's file, for --changed
    names: tuple[str, ...]  # mutmut's mutant names of its functions (fnmatch patterns)

    @property
    def tests(self) -> tuple[str, ...]:
        """The test modules that guard the rule (``GUARDS``): the only ones mutmut runs for it with ``--changed``."""
        return GUARDS[self.rule]


# The functions where each rule is decided (a whole module would spend most of the run on its plumbing: the
# stores' constructors, the records' as_dict). mutmut names a function's mutants module.x_function__mutmut_N
# and a method's module.xǁClassǁmethod__mutmut_N.
TARGETS = (
    Target("PKCE (RFC 7636)", "identity/tokens/pkce.py", ("identity.tokens.pkce.*",)),
    Target(
        "client authentication: Basic and the secret (RFC 6749 §2.3.1)",
        "identity/clients/client_auth.py",
        (
            "identity.clients.client_auth.x_decode_basic__*",
            "identity.clients.client_auth.xǁClientAuthenticatorǁ_by_secret__*",
        ),
    ),
    Target(
        "redirect-URI registration and exact matching",
        "identity/clients/metadata.py",
        ("identity.clients.metadata.x_check_redirect_uri__*", "identity.clients.metadata.x_redirect_uri_matches__*"),
    ),
    Target(
        "the authorization request's redirect URI",
        "identity/interaction/authorization_request.py",
        ("identity.interaction.authorization_request.x_check_redirect_uri__*",),
    ),
    Target(
        "code exchange: a code is spent once, a replay reported (RFC 6749 §4.1.2)",
        "identity/tokens/codes.py",
        ("identity.tokens.codes.xǁCodeStoreǁconsume__*",),
    ),
    Target(
        "refresh rotation: rotate once (RFC 9700 §4.14.2)",
        "identity/tokens/refresh_tokens.py",
        (
            "identity.tokens.refresh_tokens.xǁRefreshTokenStoreǁrotate__*",
            "identity.tokens.refresh_tokens.xǁRefreshTokenStoreǁfind__*",
        ),
    ),
    Target("the cursor codec", "cursors/codec.py", ("cursors.codec.*",)),
    Target(
        "CSRF of the sign-in pages",
        "identity/interaction/store.py",
        ("identity.interaction.store.xǁInteractionǁcsrf_matches__*",),
    ),
    Target(
        "CSRF of the sign-in pages",
        "identity/interaction/pending.py",
        ("identity.interaction.pending.xǁPendingǁposted__*",),
    ),
    Target(
        "CSRF of the console",
        "service/console_api/cookies.py",
        ("service.console_api.cookies.xǁConsoleSessionǁcsrf_matches__*",),
    ),
    Target(
        "API-key verification", "identity/api_keys/keys.py", ("identity.api_keys.keys.xǁApiKeyStoreǁauthenticate__*",)
    ),
    Target(
        "the rate limiter's sliding window",
        "service/menus_api/rate_limiter.py",
        (
            "service.menus_api.rate_limiter.xǁRateLimiterǁ_weighted__*",
            "service.menus_api.rate_limiter.xǁRateLimiterǁ_until_below__*",
            "service.menus_api.rate_limiter.x__whole__*",
        ),
    ),
    Target(
        "the logout-token minter",
        "identity/tokens/logout_tokens.py",
        ("identity.tokens.logout_tokens.xǁLogoutTokensǁprepare__*",),
    ),
    Target(
        "the console's relying party: the ID token's checks",
        "service/console_api/relying_party.py",
        ("service.console_api.relying_party.xǁConsoleClientǁverify_id_token__*",),
    ),
)

# The test modules that guard each rule: the tests written for it, which kill its mutants. With --changed only these
# run (mapped to the functions, run clean, then for each mutant those of them that reach its function), so a change
# to one rule costs minutes, not the whole selection of [tool.mutmut] twice. Each is in that selection too (the whole
# set, tox -e mutation, runs them all); tests/unit/test_mutation_targets.py checks both.
GUARDS: dict[str, tuple[str, ...]] = {
    "PKCE (RFC 7636)": ("tests/unit/test_identity_rules.py", "tests/api/identity/test_authorization_code_exchange.py"),
    "client authentication: Basic and the secret (RFC 6749 §2.3.1)": (
        "tests/unit/test_identity_rules.py",
        "tests/api/identity/test_token_client_authentication.py",
        "tests/api/test_client_authentication.py",
    ),
    "redirect-URI registration and exact matching": (
        "tests/unit/test_identity_rules.py",
        "tests/unit/test_identity_core.py",
    ),
    "the authorization request's redirect URI": (
        "tests/unit/test_identity_rules.py",
        "tests/unit/test_identity_core.py",
    ),
    "code exchange: a code is spent once, a replay reported (RFC 6749 §4.1.2)": (
        "tests/unit/test_identity_rules.py",
        "tests/api/identity/test_authorization_code_exchange.py",
    ),
    "refresh rotation: rotate once (RFC 9700 §4.14.2)": (
        "tests/unit/test_identity_rules.py",
        "tests/unit/test_identity_core.py",
        "tests/api/test_refresh_token_rotation.py",
    ),
    "the cursor codec": ("tests/unit/test_cursor_codec.py", "tests/unit/test_catalog.py"),
    "CSRF of the sign-in pages": ("tests/unit/test_identity_rules.py", "tests/unit/test_sign_in_csrf.py"),
    "CSRF of the console": ("tests/unit/test_console_csrf.py",),
    "API-key verification": ("tests/unit/test_api_keys.py", "tests/unit/test_key_cache.py"),
    "the rate limiter's sliding window": ("tests/unit/test_rate_limit_headers.py", "tests/api/test_ratelimit.py"),
    "the logout-token minter": ("tests/api/test_backchannel_logout.py", "tests/api/test_logout_token_claims.py"),
    "the console's relying party: the ID token's checks": (
        "tests/unit/test_console_relying_party.py",
        "tests/api/test_console_sign_in_callback.py",
    ),
}

EQUIVALENT_ROW = re.compile(r"^\|\s*`(?P<name>[^`]+)`\s*\|\s*(?P<reason>[^|]+?)\s*\|\s*$")
RESULT_LINE = re.compile(r"^\s+(?P<name>\S+): (?P<status>.+)$")
CAUGHT = ("killed", "timeout", "caught by type check")


def equivalents(text: str) -> dict[str, str]:
    """docs/testing.md's table of equivalent mutants: name -> reason (rows whose first cell is a mutant name)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = EQUIVALENT_ROW.match(line)
        if match and "__mutmut_" in match["name"]:
            found[match["name"]] = match["reason"]
    return found


def changed_files(base: str) -> set[str] | None:
    """The files that differ between ``base``'s merge base with HEAD and the working tree; None when git cannot
    tell (no such revision: a shallow clone, a first commit)."""
    found = subprocess.run(["git", "merge-base", base, "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if found.returncode != 0:
        return None
    merge_base = found.stdout.strip()
    names = subprocess.run(
        ["git", "diff", "--name-only", merge_base], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return set(names.split())


def functions(source: str) -> dict[str, str]:
    """Each function and method of a module by mutmut's spelling of its name (``x_name``, ``xǁClassǁname``):
    its syntax tree, to compare two versions of the module."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[f"x_{node.name}"] = ast.dump(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"xǁ{node.name}ǁ{item.name}"] = ast.dump(item)
    return found


def touched(target: Target, base: str) -> bool:
    """Whether a function of ``target`` differs between ``base``'s merge base and the working tree (a new file,
    or one git cannot show, counts as changed)."""
    merge_base = subprocess.run(["git", "merge-base", base, "HEAD"], cwd=ROOT, capture_output=True, text=True)
    before = subprocess.run(
        ["git", "show", f"{merge_base.stdout.strip()}:{target.file}"], cwd=ROOT, capture_output=True, text=True
    )
    if merge_base.returncode != 0 or before.returncode != 0:
        return True
    old, new = functions(before.stdout), functions((ROOT / target.file).read_text(encoding="utf-8"))
    module = target.file.removesuffix(".py").replace("/", ".")
    for name in old.keys() | new.keys():
        if old.get(name) != new.get(name) and any(
            fnmatch.fnmatchcase(f"{module}.{name}__mutmut_1", p) for p in target.names
        ):
            return True
    return False


def chosen(base: str | None) -> list[Target] | None:
    """The whole set, or (``base`` given) the targets one of whose functions changed since ``base``."""
    if base is None:
        return list(TARGETS)
    changed = changed_files(base)
    if changed is None:
        return None
    return [target for target in TARGETS if target.file in changed and touched(target, base)]


def narrowed(pyproject: str, targets: list[Target]) -> str:
    """pyproject.toml with ``[tool.mutmut]`` narrowed to ``targets``: only their files mutated, only their guards
    run."""
    lists = {
        "only_mutate": sorted({target.file for target in targets}),
        "pytest_add_cli_args_test_selection": sorted({test for target in targets for test in target.tests}),
    }
    for key, values in lists.items():
        array = "[\n" + "".join(f'  "{value}",\n' for value in values) + "]"
        pyproject, count = re.subn(rf"^{key} = \[.*?^\]", f"{key} = {array}", pyproject, flags=re.M | re.S)
        assert count == 1, f"[tool.mutmut] {key} is not one array of its own lines in pyproject.toml"
    assert {key: tomllib.loads(pyproject)["tool"]["mutmut"][key] for key in lists} == lists
    return pyproject


def work_folder(folder: Path, targets: list[Target]) -> Path:
    """A folder where mutmut runs for ``targets`` alone: the checkout's files linked in, and a pyproject.toml of
    its own (``narrowed``); mutmut copies them to its ``mutants/`` there, as it does at the root."""
    for entry in ROOT.iterdir():
        if entry.name not in {"pyproject.toml", "mutants", ".git"}:
            (folder / entry.name).symlink_to(entry)
    (folder / "pyproject.toml").write_text(
        narrowed((ROOT / "pyproject.toml").read_text(encoding="utf-8"), targets), encoding="utf-8"
    )
    return folder


def statuses(where: Path = ROOT) -> dict[str, str]:
    """Every mutant mutmut has a result for (in its work folder ``where``): name -> status."""
    listed = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=where,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {m["name"]: m["status"] for m in map(RESULT_LINE.match, listed.splitlines()) if m}


def of(targets: list[Target], found: dict[str, str]) -> dict[str, str]:
    patterns = [pattern for target in targets for pattern in target.names]
    return {name: status for name, status in found.items() if any(fnmatch.fnmatchcase(name, p) for p in patterns)}


def by_rule(targets: list[Target]) -> list[list[Target]]:
    """``targets`` grouped by rule, in their order: a rule decided in two files is one run of its guards."""
    groups: dict[str, list[Target]] = {}
    for target in targets:
        groups.setdefault(target.rule, []).append(target)
    return list(groups.values())


def children_cpu() -> float:
    """CPU seconds (user and system) of the finished child processes and of the processes they waited for:
    mutmut, its forked test runs and its mutants."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def report(targets: list[Target], found: dict[str, str], known: dict[str, str], seconds: float, cpu: float) -> int:
    """Print the score and every survivor; 1 when a survivor is neither killed nor listed as equivalent."""
    counts = Counter(found.values())
    caught = sum(counts[status] for status in CAUGHT)
    survivors = sorted(name for name, status in found.items() if status not in CAUGHT)
    listed = [name for name in survivors if name in known]
    unexplained = [name for name in survivors if name not in known]
    stale = sorted(name for name in known if name in found and found[name] in CAUGHT)
    for target in targets:
        mine = of([target], found)
        killed = sum(1 for status in mine.values() if status in CAUGHT)
        print(f"  {target.file:42} {killed:4} of {len(mine):4} killed  ({target.rule})")
    scored = len(found) - len(listed)
    score = 100.0 * caught / scored if scored else 100.0
    print(
        f"mutation score: {score:.1f}% ({caught} of {scored} mutants killed; {len(listed)} equivalent, listed in "
        f"docs/testing.md; {len(unexplained)} unexplained) in {seconds:.0f} s of wall, {cpu:.0f} s of CPU"
    )
    for name in unexplained:
        print(f"  SURVIVED {name} ({found[name]}): kill it with a test or list it in docs/testing.md, with why")
    for name in stale:
        print(f"  note: {name} is listed as equivalent but was killed: take it off the list")
    return 1 if unexplained else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--changed", metavar="REVISION", help="only the targets whose functions changed since REVISION")
    parser.add_argument("--list", action="store_true", help="print the targets and exit")
    parser.add_argument("--rule", metavar="TEXT", help="only the rules whose name holds TEXT (case-insensitive)")
    parser.add_argument("--max-children", type=int, help="mutants tested at once (mutmut's default: every core)")
    args = parser.parse_args(argv)
    targets = chosen(args.changed)
    if targets is None:
        print(f"mutation: git cannot tell what changed since {args.changed}; nothing mutated (run tox -e mutation)")
        return 0
    if args.rule:
        targets = [target for target in targets if args.rule.casefold() in target.rule.casefold()]
    if args.list:
        for target in targets:
            print(f"{target.file:42} {target.rule}: {' '.join(target.names)}")
        return 0
    if not targets:
        print(f"mutation: no target function changed since {args.changed}; nothing to mutate")
        return 0
    started, cpu = time.monotonic(), children_cpu()
    LOG.parent.mkdir(exist_ok=True)
    LOG.write_text("", encoding="utf-8")
    found: dict[str, str] = {}
    for rule in by_rule(targets):
        print(f"mutation: {rule[0].rule}: {' '.join(t.file for t in rule)} against {' '.join(rule[0].tests)}")
        began, cpu_before = time.monotonic(), children_cpu()
        with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
            statuses_or_exit = mutate(rule, work_folder(Path(folder), rule), args.max_children)
        if isinstance(statuses_or_exit, int):
            return statuses_or_exit
        found |= statuses_or_exit
        wall, used = time.monotonic() - began, children_cpu() - cpu_before
        print(f"  {len(statuses_or_exit)} mutants in {wall:.0f} s of wall, {used:.0f} s of CPU", flush=True)
    known = equivalents(DOCS.read_text(encoding="utf-8"))
    return report(targets, found, known, time.monotonic() - started, children_cpu() - cpu)


def mutate(targets: list[Target], where: Path, max_children: int | None) -> dict[str, str] | int:
    """mutmut over ``targets``' functions in the work folder ``where``: their mutants' statuses, or mutmut's exit
    status when it failed (its output is appended to ``LOG``)."""
    command = [sys.executable, "-m", "mutmut", "run", *(p for target in targets for p in target.names)]
    if max_children:
        command += ["--max-children", str(max_children)]
    with LOG.open("a", encoding="utf-8") as log:
        run = subprocess.run(command, cwd=where, stdout=log, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        said = LOG.read_text(encoding="utf-8").replace("\r", "\n").splitlines()
        print("\n".join(line for line in said[-40:] if line.strip() and "⠋" not in line))
        print(f"mutation: mutmut run failed (exit {run.returncode}); its output is in {LOG.relative_to(ROOT)}")
        return run.returncode
    return of(targets, statuses(where))


if __name__ == "__main__":
    sys.exit(main())
