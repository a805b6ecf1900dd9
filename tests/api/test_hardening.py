"""The hardening found by an outside attack on the provider (issue 17, section 2), one rule a test.

Client assertions without a ``kid`` against a mixed JWKS, least privilege for application clients,
loopback redirect URIs (RFC 8252 §7.3), signing in again without ending other apps' offline access,
and the state folder's permissions. API tests drive the ASGI app; the token helpers are
``tests/support/token_flows.py``.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket
import stat
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.clients import redirect_uri_matches
from identity.clock import SYSTEM_CLOCK
from identity.organizations import Organization, OrganizationStore
from identity.sealing import Sealer, SealingError, new_key
from identity.tables import signing_keys
from identity.token_endpoint import TokenEndpoint
from identity.token_introspection import TokenInspector
from identity.users import User, UserStore
from service.app import create_app
from service.cli.commands import main
from service.database.db import client_threads, make_engine, service_secret, service_secrets
from service.database.secret_keys import load_sealer, reseal
from service.settings import Settings
from tests.support import token_flows
from tests.support.defaults import POOL
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import live_service
from tests.support.token_flows import Registered, assert_oauth_error, introspect, refresh, user_tokens


@pytest.fixture
def acme(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def ana(engine: Engine, acme: Organization) -> User:
    return UserStore(engine).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])


# private_key_jwt with a JWKS holding an RSA and an EC key (rsa_key, ec_key: tests/api/conftest.py), assertions
# without kid


@pytest.fixture
def signer(engine: Engine, acme: Organization, rsa_key: token_flows.KeyPair, ec_key: token_flows.KeyPair) -> Registered:
    return token_flows.register(
        engine,
        acme,
        "Key Holder",
        auth_method="private_key_jwt",
        grants=["client_credentials"],
        scopes=["members:read"],
        jwks={"keys": [rsa_key.public_jwk, ec_key.public_jwk]},
    )


def assertion_without_kid(client_id: str, key: Any, algorithm: str) -> str:
    at = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": token_flows.ISSUER, "iat": at, "exp": at + 300, "jti": str(at)}
    claims["jti"] += algorithm + str(id(key))
    return jwt.encode(claims, key, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
def test_assertion_without_kid_is_verified_with_the_key_of_its_algorithms_type(
    http: TestClient, signer: Registered, rsa_key: token_flows.KeyPair, ec_key: token_flows.KeyPair, algorithm: str
) -> None:
    key = ec_key.private if algorithm == "ES256" else rsa_key.private
    response = token_flows.assertion_token_request(http, assertion_without_kid(signer.id, key, algorithm))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_assertion_without_kid_signed_by_an_unknown_key_is_invalid_client_not_a_500(
    http: TestClient, signer: Registered, algorithm: str
) -> None:
    stranger = token_flows.ec_pair("x") if algorithm == "ES256" else token_flows.rsa_pair("x")
    response = token_flows.assertion_token_request(http, assertion_without_kid(signer.id, stranger.private, algorithm))
    assert_oauth_error(response, "invalid_client", 401)


# Least privilege: no application scope unless registered with it


def test_client_credentials_client_registered_without_scope_gets_no_application_scope(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    job = token_flows.register(engine, acme, "Nightly job", grants=["client_credentials"])
    assert job.client.scopes == ()
    assert_oauth_error(token_flows.application_token(http, job, scope="members:read"), "invalid_scope")
    assert_oauth_error(token_flows.application_token(http, job), "invalid_scope")


def test_client_credentials_client_registered_with_members_read_gets_it(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    response = token_flows.application_token(http, reporter)
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_clients_create_help_says_members_read_is_granted_only_when_asked() -> None:
    result = CliRunner().invoke(main, ["clients", "create", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "no application scope: members:read" in text and "only when given" in text


# Loopback redirect URIs: RFC 8252 §7.3


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback", True),
        ("http://127.0.0.1:8400/callback", "http://127.0.0.1:51234/callback", True),
        ("http://[::1]/callback", "http://[::1]:51234/callback", True),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback?x=1", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/other", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:99999/callback", False),
        ("http://127.0.0.1/callback", "http://[::1]:51234/callback", False),
        ("http://127.0.0.1/callback", "https://127.0.0.1:51234/callback", False),
        ("http://127.0.0.1/callback", "http://user@127.0.0.1:51234/callback", False),
        ("http://localhost/callback", "http://localhost:51234/callback", False),  # RFC 8252 §8.3: IP literals
        ("https://app.example/callback", "https://app.example:8443/callback", False),
    ],
)
def test_loopback_ip_redirect_uri_matches_any_port_and_every_other_uri_matches_exactly(
    registered: str, presented: str, matches: bool
) -> None:
    assert redirect_uri_matches(registered, presented) is matches


def test_native_app_registered_on_loopback_signs_in_on_an_ephemeral_port(
    http: TestClient, engine: Engine, acme: Organization, ana: User
) -> None:
    native = token_flows.register(engine, acme, "Desktop app", redirect_uris=["http://127.0.0.1/callback"])
    params = {
        "response_type": "code",
        "client_id": native.id,
        "scope": "openid",
        "state": "s",
        "code_challenge": token_flows.pkce_pair()[1],
        "code_challenge_method": "S256",
    }
    on_port = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/callback"})
    assert on_port.status_code == 302 and "/sign-in" in on_port.headers["location"], on_port.text
    other_path = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/elsewhere"})
    assert other_path.status_code == 400 and "location" not in other_path.headers


# Signing in again is not a sign-out


@pytest.fixture
def planner(engine: Engine, acme: Organization, ana: User) -> Registered:
    return token_flows.sign_in_client(engine, acme, "Menu Planner")


@pytest.fixture
def companion(engine: Engine, acme: Organization, ana: User) -> Registered:
    return token_flows.sign_in_client(engine, acme, "Shopping List")


@pytest.mark.parametrize("again", [{"prompt": "login"}, {"max_age": "0"}])
def test_signing_in_again_to_another_app_keeps_the_first_apps_offline_access(
    http: TestClient, planner: Registered, companion: Registered, again: dict[str, str]
) -> None:
    first = user_tokens(http, planner)
    time.sleep(1)  # max_age=0 and auth_time count whole seconds
    second = user_tokens(http, companion, **again)

    refreshed = refresh(http, planner, first["refresh_token"])

    assert refreshed.status_code == 200, refreshed.text
    assert introspect(http, planner, first["access_token"])["active"] is True
    first_sid = token_flows.verified(http, first["id_token"], planner.id)["sid"]
    assert token_flows.verified(http, second["id_token"], companion.id)["sid"] == first_sid


def test_signing_out_after_signing_in_again_ends_the_earlier_apps_offline_access_too(
    http: TestClient, planner: Registered, companion: Registered
) -> None:
    first = user_tokens(http, planner)
    second = user_tokens(http, companion, prompt="login")

    signed_out = token_flows.end_session(
        http, "GET", id_token_hint=second["id_token"], post_logout_redirect_uri=token_flows.LOGOUT_URI
    )

    assert signed_out.status_code == 302, signed_out.text
    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")


def test_signing_in_as_someone_else_ends_the_first_users_browser_session_grants(
    http: TestClient, engine: Engine, acme: Organization, planner: Registered, companion: Registered
) -> None:
    UserStore(engine).create("bo@example.com", "Bo", PASSWORD, [(acme.id, "member")])
    first = user_tokens(http, planner)
    code, verifier = token_flows.sign_in_for_code(http, companion.id, email="bo@example.com", prompt="login")
    assert code

    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")


# State files: ./var/ 0700, the SQLite database 0600


def test_state_folder_is_private_to_the_user_and_the_database_file_too(tmp_path: Path) -> None:
    database = tmp_path / "var" / "regional-menus.sqlite3"
    engine = make_engine(f"sqlite:///{database}", POOL)
    with engine.connect() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        connection.commit()
    engine.dispose()
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    for path in database.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


# Request bodies: capped while read, 413 in each endpoint's own form


BIG_FORM = b"grant_type=client_credentials&pad=" + b"a" * (64 * 1024)


def chunks_of(body: bytes, size: int = 8192) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/introspect", "/oauth2/revoke"])
def test_form_over_64_kib_at_a_client_endpoint_is_413_oauth_json(http: TestClient, path: str) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for response in (
        http.post(path, content=BIG_FORM, headers=form),  # Content-Length over the cap: refused at once
        http.post(path, content=chunks_of(BIG_FORM), headers=form),  # chunked: cut once the cap is crossed
    ):
        assert response.status_code == 413, response.text
        assert response.json()["error"] == "invalid_request"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["connection"] == "close"


@pytest.mark.parametrize("path", ["/sign-in", "/sign-up", "/consent", "/oauth2/authorize", "/oauth2/end-session"])
def test_form_over_64_kib_at_a_page_is_a_413_error_page(http: TestClient, path: str) -> None:
    response = http.post(path, content=BIG_FORM, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")
    assert "Request too large" in response.text
    assert response.headers["x-frame-options"] == "DENY"


def test_form_within_64_kib_sent_chunked_is_read_as_usual(http: TestClient, engine: Engine, acme: Organization) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    body = b"grant_type=client_credentials&pad=" + b"a" * 30000
    response = http.post(
        "/oauth2/token",
        content=chunks_of(body),
        headers={**reporter.basic, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("path", ["/v1/menus/regions", "/healthz"])
def test_a_body_sent_to_the_menus_or_operations_api_is_a_413_problem(http: TestClient, path: str) -> None:
    for content in (b"x" * 10, chunks_of(b"x" * 10)):
        response = http.request("GET", path, content=content)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "content_too_large"


FIFTY_MB = 50 * 1024 * 1024


def resident_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def send_fifty_mb(port: int, path: str, *, chunked: bool) -> bytes:
    """Send 50 MB of form fields (declared up front, or chunked), stopping once the server has answered; its
    answer."""
    framing = b"Transfer-Encoding: chunked" if chunked else f"Content-Length: {FIFTY_MB}".encode()
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n%s\r\n\r\n"
    piece = b"&p=" + b"a" * 16381  # many fields, each well under the form parser's 1 MiB limit
    frame = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head % (path.encode(), framing) + (b"4\r\npad=\r\n" if chunked else b"pad="))
        sent = 0
        while sent < FIFTY_MB and not select.select([connection], [], [], 0)[0]:
            try:
                connection.sendall(frame)
            except OSError:  # the server answered and closed: the rest is never read
                break
            sent += len(piece)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                answer += chunk
    return answer


def test_fifty_megabytes_of_form_are_refused_with_413_and_never_held_in_memory(tmp_path: Path) -> None:
    with live_service(tmp_path) as service:
        assert service.process is not None
        port = int(service.url.rsplit(":", 1)[1])
        before = resident_kib(service.process.pid)
        answers = {
            (path, chunked): send_fifty_mb(port, path, chunked=chunked)
            for path in ("/oauth2/token", "/sign-in", "/oauth2/revoke")
            for chunked in (False, True)
        }
        grown = resident_kib(service.process.pid) - before
    for (path, _), answer in answers.items():
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        expected = b"text/html" if path == "/sign-in" else b"application/json"
        assert expected in answer.split(b"\r\n\r\n", 1)[0]
    print(f"\nresident memory of the server: {before} KiB before, grown by {grown} KiB after six 50 MB bodies")
    assert grown < 8 * 1024, f"the server grew by {grown} KiB"


# Every parameter has a length bound in the contract, and it holds


def test_one_megabyte_state_at_end_session_is_refused_without_a_redirect(http: TestClient) -> None:
    posted = http.post("/oauth2/end-session", data={"state": "s" * 1024 * 1024})  # over the 64 KiB body cap
    got = http.get("/oauth2/end-session", params={"state": "s" * 60_000})  # httpx sends at most 64 KiB of URL
    assert (posted.status_code, got.status_code) == (413, 400)
    for response in (got, posted):
        assert "location" not in response.headers
        assert response.headers["content-type"].startswith("text/html")
        assert len(response.content) < 16 * 1024 and "sss" not in response.text


def test_state_over_2048_characters_at_end_session_is_a_400_page_that_does_not_echo_it(
    http: TestClient, planner: Registered
) -> None:
    for response in (
        http.get("/oauth2/end-session", params={"client_id": planner.id, "state": "s" * 2049}),
        http.post("/oauth2/end-session", data={"client_id": planner.id, "state": "s" * 2049}),
    ):
        assert response.status_code == 400, response.text
        assert "location" not in response.headers and "sss" not in response.text


def test_over_long_client_secret_is_invalid_request_and_never_echoed_or_logged(
    http: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "cs_" + "x" * 3000
    response = http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials", "client_id": "cli_x", "client_secret": secret},
    )
    assert_oauth_error(response, "invalid_request")
    assert response.json()["error_description"] == "client_secret must be at most 2048 characters long"
    assert "xxxxxxxx" not in caplog.text


def test_every_string_parameter_of_the_identity_contract_has_a_length_bound() -> None:
    import yaml

    document = yaml.safe_load((Path(__file__).parents[2] / "openapi" / "identity.yaml").read_text())

    def resolved(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = document
            for part in node["$ref"].split("/")[1:]:
                target = target[part]
            node = target
        return node

    unbounded = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            fields: list[tuple[str, Any]] = []
            for parameter in map(resolved, operation.get("parameters", [])):
                fields.append((parameter["name"], resolved(parameter["schema"])))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for name, schema in resolved(media["schema"])["properties"].items():
                    fields.append((name, resolved(schema)))
            for name, schema in fields:
                stated = re.search(r"[0-9,]+ characters", " ".join(schema.get("description", "").split()))
                bounded = "maxLength" in schema or "enum" in schema or stated is not None  # handler-checked
                if schema.get("type") == "string" and not bounded:
                    unbounded.append(f"{method.upper()} {path} {name}")
    assert unbounded == []


# Secrets at rest: signing keys and service secrets sealed with MENUS_SECRET_KEYS (else the key file)


def stored_bytes(database: Path) -> bytes:
    """Everything SQLite keeps on disk for the database: the file, its WAL and its shared memory."""
    return b"".join(path.read_bytes() for path in database.parent.glob(database.name + "*"))


def sealed_rows(database_url: str) -> tuple[list[str], list[bytes]]:
    engine = make_engine(database_url, POOL)
    with engine.connect() as connection:
        pems = list(connection.scalars(sa.select(signing_keys.c.private_pem)))
        secrets = [bytes(value) for value in connection.scalars(sa.select(service_secrets.c.value))]
    engine.dispose()
    return pems, secrets


def test_the_database_holds_no_pem_and_no_clear_service_secret(
    app: Any, http: TestClient, tmp_path: Path, database_url: str, engine: Engine
) -> None:
    cursor_key = service_secret(engine, load_sealer((), database_url), "directory-cursor-key")
    assert http.get("/jwks").json()["keys"]
    pems, secrets = sealed_rows(database_url)
    assert pems and all(pem.startswith("gAAAAA") and "BEGIN" not in pem for pem in pems)
    assert secrets and all(value.startswith(b"gAAAAA") for value in secrets)
    on_disk = stored_bytes(tmp_path / "state.sqlite3")
    assert b"PRIVATE KEY" not in on_disk and cursor_key not in on_disk


def test_without_secret_keys_a_key_file_is_made_once_beside_the_database_with_mode_0600(
    app: Any, tmp_path: Path, database_url: str
) -> None:
    key_file = tmp_path / "secret-keys"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().split()
    assert len(key) == 1 and load_sealer((), database_url).open(sealed_rows(database_url)[1][0])
    assert key_file.read_text().split() == key  # read again, not made again


def test_rows_stored_in_clear_before_sealing_are_sealed_at_start_and_keep_working(
    settings: Settings, engine: Engine, database_url: str
) -> None:
    clear_pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    jwk = RSAAlgorithm.to_jwk(serialization.load_pem_private_key(clear_pem, None).public_key(), as_dict=True)
    with engine.begin() as connection:
        connection.execute(
            signing_keys.insert().values(
                kid="old-clear-key",
                private_pem=clear_pem.decode(),
                public_jwk={**jwk, "kid": "old-clear-key", "use": "sig", "alg": "RS256"},
                created_at=SYSTEM_CLOCK.now(),
                signs_from=SYSTEM_CLOCK.now(),
            )
        )
        connection.execute(service_secrets.insert().values(name="directory-cursor-key", value=b"c" * 32))

    with TestClient(create_app(settings)) as http:
        assert [key["kid"] for key in http.get("/jwks").json()["keys"]] == ["old-clear-key"]

    pems, secrets = sealed_rows(database_url)
    assert all(pem.startswith("gAAAAA") for pem in pems) and all(v.startswith(b"gAAAAA") for v in secrets)
    sealer = load_sealer((), database_url)
    assert sealer.open(pems[0].encode()) == clear_pem
    assert service_secret(engine, sealer, "directory-cursor-key") == b"c" * 32  # the same secret, now sealed
    assert reseal(engine, sealer, rotate=False).as_dict() == {"signing_keys": 0, "service_secrets": 0}


def test_secrets_rotate_seals_everything_again_with_the_first_key(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    old, new = new_key(), new_key()
    runner = CliRunner()
    for args, keys in (
        (["db", "upgrade"], old),
        (["keys", "rotate", "--json"], old),
        (["secrets", "rotate", "--json"], f"{new},{old}"),
    ):
        result = runner.invoke(main, [*args, "--database-url", database_url], env={"MENUS_SECRET_KEYS": keys})
        assert result.exit_code == 0, result.output
    assert '"signing_keys": 1' in result.output
    pems, _ = sealed_rows(database_url)
    assert Sealer([new]).open(pems[0].encode()).startswith(b"-----BEGIN PRIVATE KEY-----")
    with pytest.raises(SealingError):
        Sealer([old]).open(pems[0].encode())
    assert not (tmp_path / "secret-keys").exists()  # keys were given: no key file


def test_a_wrong_secret_key_is_a_clear_error_naming_the_setting_and_never_the_key(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    runner = CliRunner()
    for args, keys in ((["db", "upgrade"], new_key()), (["keys", "rotate"], new_key()), (["secrets", "rotate"], "k")):
        result = runner.invoke(main, [*args, "--database-url", database_url], env={"MENUS_SECRET_KEYS": keys})
    assert result.exit_code == 2 and "MENUS_SECRET_KEYS: key 1 is not 32 bytes" in result.output
    wrong = new_key()
    result = runner.invoke(
        main, ["secrets", "rotate", "--database-url", database_url], env={"MENUS_SECRET_KEYS": wrong}
    )
    assert result.exit_code == 2 and "does not open with any key of MENUS_SECRET_KEYS" in result.output
    assert wrong not in result.output


# The client endpoints' SQL and RSA run off the event loop


@pytest.mark.parametrize(
    ("domain", "method", "path"),
    [
        (TokenEndpoint, "exchange", "/oauth2/token"),
        (TokenInspector, "introspect", "/oauth2/introspect"),
        (TokenInspector, "revoke", "/oauth2/revoke"),
    ],
)
def test_client_endpoint_work_runs_in_a_thread_while_the_loop_answers_others(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch, domain: Any, method: str, path: str
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    entered, release = threading.Event(), threading.Event()
    original = getattr(domain, method)

    def held(self: Any, *args: Any) -> Any:  # a commit that waits for a slow disk
        entered.set()
        release.wait(10)
        return original(self, *args)

    monkeypatch.setattr(domain, method, held)
    form = {"grant_type": "client_credentials", "token": "t"}
    with TestClient(app) as http, ThreadPoolExecutor(1) as pool:
        try:
            pending = pool.submit(http.post, path, data=form, headers=reporter.basic)
            assert entered.wait(10)
            started = time.monotonic()
            assert http.get("/jwks").status_code == 200  # answered while the other request's work waits
            waited = time.monotonic() - started
        finally:
            release.set()
        assert pending.result(10).status_code == 200
    assert waited < 5, f"/jwks waited {waited:.1f} s for the event loop"


def test_client_endpoint_threads_are_one_on_sqlite_and_the_pool_on_postgresql(engine: Engine) -> None:
    assert client_threads(engine, POOL) == 1  # one writer at a time: more threads would only queue on the file lock
    postgres = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", POOL)  # never connected
    try:
        assert client_threads(postgres, POOL) == POOL.capacity
    finally:
        postgres.dispose()
