"""The organization's journey done by a script, with SDKs generated from the live management API's document
(``/management/v1/openapi.json``), as a user generates them: openapi-python-client's Python package and
openapi-generator's ``typescript-fetch`` (tests/support/openapi_generator.py; the TypeScript program is
``tests/system/sdk_ts/management.test.ts``, compiled as the README's set-up compiles).

The script holds a management token of the organization's own client (an owner granted it the scopes): it invites a
teammate (a retried POST makes one invitation), the teammate follows the mailed link and signs up into the
organization (the provider's pages, as a browser posts them), the script makes them an admin under ``If-Match`` (a
stale one is 412), registers an application (its secret in that answer only), the application signs the teammate in
(code + PKCE), the script rotates the secret (the old one works within the grace and fails after: the service's
clock moved, never slept), removes the teammate, whose tokens stop at once, and reads the audit trail. The
TypeScript program makes the same journey's calls of the management API, compiled once and run a phase at a time
against the same service; what a browser does between them (the sign-up, code + PKCE) and the clock's move are done
here, as for the Python script.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.common.outbound_uris import OutboundRule
from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.in_process import InProcess, in_process_service
from tests.support.live import ROOT
from tests.support.mailbox import mails
from tests.support.openapi_generator import Generated, generate_clients
from tests.support.passwords import FAST_HASHING
from tests.support.tool_processes import tool_env

API = "/management/v1"
MANAGE = "manage:members manage:clients manage:keys manage:audit"
REDIRECT_URI = "https://app.example.com/callback"
PROGRAM = ROOT / "tests" / "system" / "sdk_ts" / "management.test.ts"
BIN = ROOT / "node_modules" / ".bin"
TSC_FLAGS = ["--module", "nodenext", "--target", "es2022", "--types", "node", "--strict"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with in_process_service(tmp_path_factory.mktemp("management-sdks")) as service:
        yield service


@pytest.fixture(autouse=True)
def clock_put_back(service: InProcess) -> Iterator[None]:
    """Each journey moves the service's clock past a secret's grace; the next one (in either order) starts where the
    clock stood before it, as the console's sign-in of a new teammate needs (its ID token is checked in real time)."""
    began = service.clock.monotonic() - time.monotonic()
    yield
    service.clock.advance(began - (service.clock.monotonic() - time.monotonic()))


@pytest.fixture(scope="module")
def bot(service: InProcess) -> dict[str, str]:
    """Olive Grove, its owner, and its operations client, granted every management scope (as an owner does in the
    console)."""
    grove = OrganizationStore(service.engine).create("Olive Grove")
    UserStore(service.engine, hashing=FAST_HASHING).create("olga@example.com", "Olga", PASSWORD, [(grove.id, "owner")])
    client, secret = ClientStore(service.engine, outbound=OutboundRule(loopback=True)).create(
        name="Ops bot", org_id=grove.id, auth_method="client_secret_basic", grants=["client_credentials"],
        scopes=MANAGE.split(),
    )  # fmt: skip
    assert secret is not None
    return {"client_id": client.id, "client_secret": secret}


def management_token(service: InProcess, bot: dict[str, str]) -> str:
    answer = requests.post(
        f"{service.url}/oauth2/token",
        data={"grant_type": "client_credentials", "scope": MANAGE},
        auth=(bot["client_id"], bot["client_secret"]),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


@pytest.fixture(scope="module")
def python_sdk(service: InProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workdir = tmp_path_factory.mktemp("management-python-sdk")
    (workdir / "config.yaml").write_text("post_hooks: []\n", encoding="utf-8")
    found = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent)) or "openapi-python-client"
    command = [found, "generate", "--url", f"{service.url}{API}/openapi.json", "--output-path",
               str(workdir / "management_sdk"), "--meta", "none", "--config", str(workdir / "config.yaml"),
               "--fail-on-warning"]  # fmt: skip
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=180, env=tool_env())
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(workdir))
    try:
        import importlib

        importlib.invalidate_caches()
        yield importlib.import_module("management_sdk")
    finally:
        sys.path.remove(str(workdir))
        for name in [name for name in sys.modules if name.split(".")[0] == "management_sdk"]:
            del sys.modules[name]


def sdk(package: Any, module: str) -> Any:
    import importlib

    return importlib.import_module(f"management_sdk.{module}")


def join_through_the_link(service: InProcess, email: str) -> Browser:
    """The teammate follows the mailed link's "Create an account" and signs up into the organization."""
    link = [m for m in mails(service.engine, service.settings, "invitation") if m.recipient == email][-1].params["link"]
    token = parse_qs(urlsplit(link).query)["token"][0]
    browser = Browser(service.url)
    page = browser.go(f"{service.url}/console/sign-in?" + urlencode({"prompt": "create", "invitation": token}))
    assert isinstance(page, Page) and page.path == "/sign-up" and "Olive Grove" in page.response.text
    home = browser.submit(page, name="Tom Teammate", email=email, password=PASSWORD)
    assert isinstance(home, Page) and home.path == "/console/", home
    return browser


def signed_in_by_the_application(browser: Browser, service: InProcess, client_id: str, secret: str) -> dict[str, Any]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI,
        "scope": "openid profile email offline_access", "state": "s1", "nonce": "n1",
        "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    consent = browser.go(f"{service.url}/oauth2/authorize?{query}")
    assert isinstance(consent, Page) and consent.path == "/consent", consent
    callback = browser.submit(consent, decision="allow")
    assert isinstance(callback, Callback) and callback.url.startswith(REDIRECT_URI), callback
    answer = requests.post(
        f"{service.url}/oauth2/token",
        data={"grant_type": "authorization_code", "code": callback.params["code"], "redirect_uri": REDIRECT_URI,
              "code_verifier": verifier},
        auth=(client_id, secret),
        timeout=10,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    return tokens


def refreshed(service: InProcess, client_id: str, secret: str, refresh_token: str) -> requests.Response:
    return requests.post(
        f"{service.url}/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token},
        auth=(client_id, secret),
        timeout=10,
    )


def test_the_python_sdk_runs_the_organization(python_sdk: Any, service: InProcess, bot: dict[str, str]) -> None:
    models = sdk(python_sdk, "models")
    with python_sdk.AuthenticatedClient(
        base_url=f"{service.url}{API}", token=management_token(service, bot), raise_on_unexpected_status=True
    ) as client:
        teammate, tom_id, app, tokens, rotated = before_the_clock_moves(python_sdk, models, client, service)
    try:
        after_the_clock_moves(python_sdk, service, bot, teammate, tom_id, app, tokens, rotated)
    finally:
        teammate.http.close()


def before_the_clock_moves(python_sdk: Any, models: Any, client: Any, service: InProcess) -> tuple[Any, ...]:
    invite = sdk(python_sdk, "api.invitations.management_create_invitation")
    body = models.InvitationRequest(email="tom@example.com", role=models.Role.MEMBER)
    first = invite.sync_detailed(client=client, body=body, idempotency_key="invite-tom")
    again = invite.sync_detailed(client=client, body=body, idempotency_key="invite-tom")
    assert first.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.parsed.id == first.parsed.id
    listed = sdk(python_sdk, "api.invitations.management_list_invitations").sync(client=client)
    assert listed.total == 1

    teammate = join_through_the_link(service, "tom@example.com")
    members = sdk(python_sdk, "api.members.management_list_members").sync(client=client)
    tom = next(member for member in members.data if member.email == "tom@example.com")
    get_member = sdk(python_sdk, "api.members.management_get_member")
    etag = get_member.sync_detailed(client=client, user_id=tom.user_id).headers["etag"]
    update = sdk(python_sdk, "api.members.management_update_member")
    change = models.MemberChange(role=models.Role.ADMIN)
    assert update.sync(client=client, user_id=tom.user_id, body=change, if_match=etag).role == models.Role.ADMIN
    stale = update.sync_detailed(client=client, user_id=tom.user_id, body=change, if_match=etag)
    assert stale.status_code == 412 and stale.parsed.code == models.ProblemCode.PRECONDITION_FAILED

    create_client = sdk(python_sdk, "api.clients.management_create_client")
    registration = models.ClientRequest(
        name="Grove Planner",
        token_endpoint_auth_method=models.AuthMethod.CLIENT_SECRET_BASIC,
        redirect_uris=[REDIRECT_URI],
        grant_types=[models.GrantType.AUTHORIZATION_CODE, models.GrantType.REFRESH_TOKEN],
        scopes=[models.Scope.OPENID, models.Scope.PROFILE, models.Scope.EMAIL, models.Scope.OFFLINE_ACCESS],
    )
    app = create_client.sync(client=client, body=registration, idempotency_key="grove-planner")
    assert app.client_secret.startswith("cs_")
    tokens = signed_in_by_the_application(teammate, service, app.client_id, app.client_secret)

    rotate = sdk(python_sdk, "api.clients.management_rotate_client_secret")
    rotated = rotate.sync(client=client, client_id=app.client_id)
    return teammate, tom.user_id, app, tokens, rotated


def old_secret_works_in_its_grace_only(
    service: InProcess, client_id: str, old: str, new: str, refresh_token: str
) -> dict[str, Any]:
    """The rotated-out secret refreshes within its grace and is refused after it (the clock moved past it); the new
    one works then. The tokens it last gave."""
    within = refreshed(service, client_id, old, refresh_token)
    assert within.status_code == 200, within.text
    service.clock.advance(service.settings.client_secret_grace + 60)
    after = refreshed(service, client_id, old, within.json()["refresh_token"])
    assert after.status_code == 401 and after.json()["error"] == "invalid_client"
    fresh = refreshed(service, client_id, new, within.json()["refresh_token"])
    assert fresh.status_code == 200, fresh.text
    tokens: dict[str, Any] = fresh.json()
    return tokens


def userinfo_status(service: InProcess, access_token: str) -> int:
    answer = requests.get(
        f"{service.url}/oauth2/userinfo", headers={"Authorization": f"Bearer {access_token}"}, timeout=10
    )
    return answer.status_code


def after_the_clock_moves(
    python_sdk: Any,
    service: InProcess,
    bot: dict[str, str],
    teammate: Browser,
    tom_id: str,
    app: Any,
    tokens: Any,
    rotated: Any,
) -> None:
    fresh = old_secret_works_in_its_grace_only(
        service, app.client_id, app.client_secret, rotated.client_secret, tokens["refresh_token"]
    )

    with python_sdk.AuthenticatedClient(  # a new token: the clock moved past the first one's lifetime
        base_url=f"{service.url}{API}", token=management_token(service, bot), raise_on_unexpected_status=True
    ) as client:
        remove = sdk(python_sdk, "api.members.management_remove_member")
        assert remove.sync_detailed(client=client, user_id=tom_id).status_code == 204
        trail = sdk(python_sdk, "api.audit.management_list_audit_events").sync(client=client)
    assert userinfo_status(service, fresh["access_token"]) == 401
    kinds = [entry.kind.value for entry in trail.data if entry.subject in (tom_id, app.client_id)]  # not the TS one's
    assert kinds[:4] == ["member_removed", "client_secret_rotated", "client_created", "member_role_changed"]


@pytest.fixture(scope="module")
def typescript_sources(service: InProcess, tmp_path_factory: pytest.TempPathFactory) -> Generated:
    return generate_clients({"management": f"{service.url}{API}/openapi.json"}, tmp_path_factory.mktemp("ts"))


class TypeScriptProgram:
    """management.test.ts compiled once (with the generated client beside it), then run a phase at a time."""

    def __init__(self, sources: Generated, folder: Path, service: InProcess, bot: dict[str, str]) -> None:
        self.folder, self.service, self.bot = folder, service, bot
        shutil.copytree(sources.typescript_sources("management"), folder / "management")
        shutil.copy(PROGRAM, folder / PROGRAM.name)
        (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
        (folder / "package.json").write_text('{"type": "module", "private": true}\n', encoding="utf-8")
        compiled = subprocess.run(
            [str(BIN / "tsc"), *TSC_FLAGS, PROGRAM.name], cwd=folder, capture_output=True, text=True
        )
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr

    def run(self, phase: str, tests: int, **state: str) -> dict[str, str]:
        """Run the phase's tests (all must pass, ``tests`` of them) with a fresh management token; what it found."""
        out = self.folder / f"{phase}.json"
        token = management_token(self.service, self.bot)
        env = {**os.environ, "SERVICE_URL": self.service.url, "MANAGEMENT_TOKEN": token, "PHASE": phase,
               "STATE": json.dumps(state), "OUT": str(out)}  # fmt: skip
        command = ["node", "--test", "--test-reporter=spec", "management.test.js"]
        done = subprocess.run(command, cwd=self.folder, capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ℹ fail 0" in done.stdout and f"ℹ pass {tests}" in done.stdout, done.stdout
        found: dict[str, str] = json.loads(out.read_text(encoding="utf-8"))
        return found


def test_the_typescript_sdk_runs_the_organization(
    typescript_sources: Generated, service: InProcess, bot: dict[str, str], tmp_path: Path
) -> None:
    """The journey of the Python script, each step of the management API made by the TypeScript client."""
    assert typescript_sources.warnings() == [], "\n".join(typescript_sources.warnings())
    program = TypeScriptProgram(typescript_sources, tmp_path, service, bot)
    email = "tina@example.com"
    program.run("invite", 2, email=email)
    teammate = join_through_the_link(service, email)
    try:
        made = program.run("admin", 2, email=email, redirectUri=REDIRECT_URI)
        tokens = signed_in_by_the_application(teammate, service, made["clientId"], made["clientSecret"])
        rotated = program.run("rotate", 1, clientId=made["clientId"], clientSecret=made["clientSecret"])
    finally:
        teammate.http.close()
    fresh = old_secret_works_in_its_grace_only(
        service, made["clientId"], made["clientSecret"], rotated["clientSecret"], tokens["refresh_token"]
    )
    assert userinfo_status(service, fresh["access_token"]) == 200
    # a new management token (each phase's): the clock moved past the first's lifetime
    program.run("remove", 1, userId=made["userId"], clientId=made["clientId"])
    assert userinfo_status(service, fresh["access_token"]) == 401
    assert refreshed(service, made["clientId"], rotated["clientSecret"], fresh["refresh_token"]).status_code == 400
