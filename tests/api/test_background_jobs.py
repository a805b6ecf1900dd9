"""The app's background jobs (service/background_jobs.py; service/ops/periodic.py runs them): one list,
each job at the interval its settings give, started and stopped with the app's lifespan."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from service.ops.periodic import LoopingJob, PeriodicJob
from service.settings import Settings
from service.web.admission import LAG_EVERY
from tests.support.apps import make_app


def test_the_jobs_run_at_the_intervals_of_the_settings_in_one_list(
    settings: Settings, engine: Engine, catalog: Catalog, tmp_path: Path
) -> None:
    tuned = settings.with_changes(
        purge_interval=120,
        usage_flush_interval=7,
        mail_poll_interval=3,
        published_keys_refresh=9,
        mail_dir=str(tmp_path),
    )
    jobs = make_app(tuned, catalog=catalog).background.jobs
    assert [(type(job), job.name, job.interval) for job in jobs] == [
        (PeriodicJob, "purging", 120),
        (PeriodicJob, "writing API key usage", 7),
        (PeriodicJob, "reading the JWKS", 9),
        (PeriodicJob, "sending mail from the outbox", 3),
        (LoopingJob, "watching the event loop's lag", LAG_EVERY),
        (LoopingJob, "posting logout tokens", 3),
        (PeriodicJob, "mailing password-reset links", 3),
    ]
    periodic = {job.name: job for job in jobs if isinstance(job, PeriodicJob)}
    # the usage is written one interval after start, and once more at shutdown; the JWKS was read at start
    assert [name for name, job in periodic.items() if not job.first_at_start] == [
        "writing API key usage",
        "reading the JWKS",
    ]
    assert [name for name, job in periodic.items() if job.last_round] == ["writing API key usage"]


def test_a_purge_interval_of_0_and_a_node_without_a_mail_transport_leave_their_jobs_out(
    settings: Settings, engine: Engine, catalog: Catalog
) -> None:
    names = [job.name for job in make_app(settings.with_changes(purge_interval=0), catalog=catalog).background.jobs]
    assert "purging" not in names and "sending mail from the outbox" not in names
    assert "mailing password-reset links" in names  # the reset requests' mails go to the outbox all the same


def test_the_lifespan_starts_every_job_and_its_shutdown_ends_them_all(
    settings: Settings, engine: Engine, catalog: Catalog
) -> None:
    app = make_app(settings, catalog=catalog)
    with TestClient(app):
        (running,) = app.background.running
        assert [task.get_name() for task in running.tasks] == [job.name for job in app.background.jobs]
        assert not any(task.done() for task in running.tasks)
    # every job ended without an error: the lag's watch, asleep between two looks, by its cancellation
    interruptible = {job.name for job in app.background.jobs if isinstance(job, LoopingJob) and job.interruptible}
    assert interruptible == {"watching the event loop's lag"}
    for task in running.tasks:
        assert task.done()
        assert task.cancelled() if task.get_name() in interruptible else task.exception() is None
    assert app.background.running == ()


def test_the_engine_the_app_made_is_disposed_when_its_last_lifespan_ends_not_before(
    settings: Settings, engine: Engine, catalog: Catalog
) -> None:
    """Two lifespans on one app (two browsers of a test): the first to end must not drop the pool under the other,
    whose jobs and requests may hold a connection (it was then closed by the garbage collector, unclosed)."""
    app = make_app(settings, catalog=catalog, engine=None)  # an engine of its own, as the service's
    assert app.owns_engine
    with TestClient(app) as first:
        with TestClient(app) as second:
            assert second.get("/v1/menus/regions").status_code == 401  # the app answers on its pool
            pool = app.engine.pool
        assert app.background.running != ()
        assert app.engine.pool is pool  # the first lifespan still runs: its pool is kept
        assert first.get("/v1/menus/regions").status_code == 401
    assert app.background.running == ()
    assert app.engine.pool is not pool  # the last one's end disposed it


def test_an_engine_handed_in_stays_open_when_the_apps_lifespan_ends(
    settings: Settings, engine: Engine, catalog: Catalog
) -> None:
    """An engine handed to ``create_app`` is its caller's: other apps may be using its pool (the tests' kept engines,
    tests/support/engines.py), and one app's end dropped it under another app's background round, whose connection
    went back to the dropped pool and was closed by the garbage collector, unclosed, in whichever test ran next (CI
    of 2026-11-28: tests/system/test_mail_nodes.py's two apps)."""
    app = make_app(settings, catalog=catalog, engine=engine)
    with TestClient(app) as client:
        assert client.get("/readyz").status_code == 200  # a connection from the pool, and back into it
        pool = engine.pool
    assert app.background.running == ()
    assert engine.pool is pool and pool.checkedin() >= 1  # neither replaced nor emptied
