"""The mutation test's targets (tools/mutation.py): each rule names the tests that guard it, and CI's run for a
changed rule (``--changed``) mutates that rule's file alone and runs those tests alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tools.mutation import GUARDS, ROOT, TARGETS, by_rule, narrowed, work_folder

PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
MUTMUT = tomllib.loads(PYPROJECT)["tool"]["mutmut"]


def test_every_target_has_guards_that_exist_and_that_the_whole_set_runs_too() -> None:
    selection = set(MUTMUT["pytest_add_cli_args_test_selection"])
    for target in TARGETS:
        assert target.tests, target.rule
        assert all((ROOT / test).is_file() for test in target.tests), target.tests
        assert set(target.tests) <= selection, set(target.tests) - selection
        assert target.file in MUTMUT["only_mutate"], target.file
    assert set(GUARDS) == {target.rule for target in TARGETS}  # no guard list left over from a removed target


def test_a_changed_rule_mutates_its_own_file_and_runs_its_own_guards_alone() -> None:
    pkce = [target for target in TARGETS if target.file.endswith("pkce.py")]
    config = tomllib.loads(narrowed(PYPROJECT, pkce))
    assert config["tool"]["mutmut"]["only_mutate"] == [pkce[0].file]
    assert config["tool"]["mutmut"]["pytest_add_cli_args_test_selection"] == sorted(pkce[0].tests)
    unchanged = {key: value for key, value in config["tool"].items() if key != "mutmut"}
    assert unchanged == {key: value for key, value in tomllib.loads(PYPROJECT)["tool"].items() if key != "mutmut"}
    assert config["tool"]["mutmut"]["also_copy"] == MUTMUT["also_copy"]


def test_two_changed_rules_share_one_run_of_both_their_guards() -> None:
    config = tomllib.loads(narrowed(PYPROJECT, list(TARGETS[:2])))["tool"]["mutmut"]
    assert config["only_mutate"] == sorted(target.file for target in TARGETS[:2])
    assert config["pytest_add_cli_args_test_selection"] == sorted({t for target in TARGETS[:2] for t in target.tests})


def test_the_work_folder_holds_the_checkout_and_the_narrowed_configuration(tmp_path: Path) -> None:
    folder = work_folder(tmp_path, [TARGETS[0]])
    assert (folder / "identity").resolve() == ROOT / "identity" and (folder / "tests").resolve() == ROOT / "tests"
    assert not (folder / "mutants").exists() and not (folder / "pyproject.toml").is_symlink()
    mutmut = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    assert mutmut["only_mutate"] == [TARGETS[0].file]


def test_the_whole_set_runs_once_per_rule_with_every_file_that_decides_it() -> None:
    groups = by_rule(list(TARGETS))
    assert [group[0].rule for group in groups] == list(dict.fromkeys(target.rule for target in TARGETS))
    assert all(len({target.rule for target in group}) == 1 for group in groups)
    sign_in = next(group for group in groups if group[0].rule == "CSRF of the sign-in pages")
    assert {target.file for target in sign_in} == {"identity/interaction/store.py", "identity/interaction/pending.py"}


def test_mutants_are_forked_from_a_server_that_ran_no_test() -> None:
    assert MUTMUT["process_isolation"] == "forkserver"  # forked from a process that ran the tests, mutants hung
