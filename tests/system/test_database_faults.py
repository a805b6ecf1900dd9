"""PostgreSQL stops under a running service, then comes back: 503s in each API's shape, then recovery.

The service runs as users run it (one uvicorn process, so that a crash could not hide behind a
restarted worker) on a PostgreSQL server of the test's own (``tests/support/pg_instance.py``). While
the server is down, every request that needs the database answers 503 in its API's error
shape with ``Retry-After``, ``/readyz`` answers 503 and ``/healthz`` 200; the process never
dies. When the server is back, the pool's pre-ping replaces the dead connections and the
service answers again, with no restart. The time from PostgreSQL accepting connections to
the first good answer is printed (``pytest tests/system/test_database_faults.py -s``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from tests.support.defaults import KEY_REVOCATION_BOUND
from tests.support.live import REDIRECT_URI, LiveService, live_service
from tests.support.pg_instance import PostgresServer, postgres_server

TIMEOUT = 30
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636 appendix B; the page only needs one
RECOVERY_DEADLINE = 30  # seconds the service may take to answer again once PostgreSQL is back
OUTAGE_REQUESTS = 10  # requests of each kind sent while the database is down


@dataclass
class Outage:
    server: PostgresServer
    service: LiveService
    key: str
    client: tuple[str, str]

    def menus(self) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        return requests.get(f"{self.service.url}/v1/menus/dishes?limit=3", headers=headers, timeout=TIMEOUT)

    def token(self) -> requests.Response:
        form = {"grant_type": "client_credentials", "scope": "members:read"}
        return requests.post(f"{self.service.url}/oauth2/token", data=form, auth=self.client, timeout=TIMEOUT)

    def sign_in_page(self) -> requests.Response:
        query = {"response_type": "code", "client_id": self.client[0], "redirect_uri": REDIRECT_URI,
                 "scope": "openid", "code_challenge": CHALLENGE, "code_challenge_method": "S256"}  # fmt: skip
        return requests.get(f"{self.service.url}/oauth2/authorize", params=query, timeout=TIMEOUT)

    def ready(self) -> requests.Response:
        return requests.get(f"{self.service.url}/readyz", timeout=TIMEOUT)

    def alive(self) -> requests.Response:
        return requests.get(f"{self.service.url}/healthz", timeout=TIMEOUT)


def purge_failures(outage: Outage) -> int:
    """How many rounds of the purge task have failed, by the server's log."""
    return (outage.service.workdir / "server.log").read_text().count("purging failed")


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    with postgres_server() as server:
        admin = sa.create_engine(server.url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sa.text("CREATE DATABASE menus"))
        admin.dispose()
        url = server.url.rsplit("/", 1)[0] + "/menus"
        workdir: Path = tmp_path_factory.mktemp("database-faults")
        with live_service(workdir, {"MENUS_DATABASE_URL": url, "MENUS_PURGE_INTERVAL": "1"}) as service:
            org = service.cli_json("orgs", "create", "--name", "Outage Kitchen")
            client = service.cli_json(
                "clients", "create", "--name", "Reporter", "--org", org["id"], "--auth-method", "client_secret_basic",
                "--redirect-uri", REDIRECT_URI, "--grant", "authorization_code", "--grant", "client_credentials",
                "--scope", "openid", "--scope", "members:read",
            )  # fmt: skip
            yield Outage(server, service, service.api_key("outage"), (client["client_id"], client["client_secret"]))


def test_with_the_database_down_each_api_answers_503_in_its_shape_and_the_service_recovers_by_itself(
    outage: Outage,
) -> None:
    assert outage.menus().status_code == 200 and outage.token().status_code == 200
    assert outage.ready().status_code == 200

    outage.server.stop()
    purges_failed = purge_failures(outage)
    # A key seen live is trusted from memory for KEY_REVOCATION_BOUND, then checked again: 503 within it.
    deadline = time.monotonic() + KEY_REVOCATION_BOUND + TIMEOUT
    while outage.menus().status_code != 503:
        assert time.monotonic() < deadline, "the menus API did not notice the database was down"
        time.sleep(0.05)
    for _ in range(OUTAGE_REQUESTS):
        menus = outage.menus()
        assert menus.status_code == 503 and menus.headers["content-type"] == "application/problem+json"
        assert menus.json()["code"] == "service_unavailable" and int(menus.headers["retry-after"]) >= 1

        token = outage.token()
        assert token.status_code == 503 and token.json()["error"] == "temporarily_unavailable"
        assert int(token.headers["retry-after"]) >= 1

        page = outage.sign_in_page()
        assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")

        ready = outage.ready()
        assert ready.status_code == 503 and ready.json()["code"] == "service_unavailable"
        assert outage.alive().status_code == 200  # alive, not ready: take it out of rotation, do not restart it
    deadline = time.monotonic() + TIMEOUT
    while purge_failures(outage) <= purges_failed:  # the purge task (every second here) fails meanwhile
        assert time.monotonic() < deadline, "the purge task did not run while the database was down"
        time.sleep(0.05)
    assert outage.alive().status_code == 200  # and did not take the process down

    outage.server.start()
    back = time.monotonic()
    while outage.menus().status_code != 200:
        assert time.monotonic() - back < RECOVERY_DEADLINE, "the service did not recover by itself"
        time.sleep(0.05)
    recovered = time.monotonic() - back
    assert outage.ready().status_code == 200
    assert outage.token().status_code == 200
    assert outage.sign_in_page().status_code == 200
    print(f"\nrecovered {recovered * 1000:.0f} ms after PostgreSQL accepted connections again")  # pytest -s
