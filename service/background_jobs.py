"""The worker's background jobs, in the order they start: the purge, the API key usage written, the JWKS read
again, the outbox's mail, the event loop's lag watched, the logout tokens posted and the password-reset links
mailed. ``service/app.py`` builds them with the app and hands them to its lifespan; ``service/ops/periodic.py``
runs them. Apart from the app's assembly because it knows every concern that has a job (the provider, mail, the
outbound posts, the admission), and the app's module keeps its size (STYLE.md: small modules).
"""

from __future__ import annotations

from identity.api_keys.usage import UsageCounter
from identity.provider import Provider
from service.mail.transports import Courier
from service.ops.periodic import Job, LoopingJob, PeriodicJob
from service.outbound.backchannel import LogoutCourier
from service.settings import Settings
from service.web.admission import LAG_EVERY, Admission


def background_jobs(
    settings: Settings,
    provider: Provider,
    usage: UsageCounter,
    mail: Courier | None,
    admission: Admission,
    logouts: LogoutCourier,
) -> list[Job]:
    """The worker's background jobs, in the order they start (service/ops/periodic.py)."""
    mail_interval = settings.mail_poll_interval
    return [
        *(
            [PeriodicJob("purging", settings.purge_interval, provider.purger.purge)]
            if settings.purge_interval > 0
            else []
        ),
        # the usage counted in memory, written every interval and once more at shutdown (what was counted since)
        PeriodicJob(
            "writing API key usage", settings.usage_flush_interval, usage.flush, first_at_start=False, last_round=True
        ),
        # a key rotated on another node reaches this node's JWKS within the interval (start-up read it)
        PeriodicJob(
            "reading the JWKS",
            settings.published_keys_interval(),
            provider.keys.refresh_published,
            first_at_start=False,
        ),
        *([PeriodicJob("sending mail from the outbox", mail_interval, mail)] if mail is not None else []),
        # the event loop's lag, which the admission's bound counts (service/web/admission.py)
        LoopingJob("watching the event loop's lag", LAG_EVERY, admission.watch_loop, interruptible=True),
        # posts at once when woken, and looks every mail interval (service/outbound/backchannel.py)
        LoopingJob("posting logout tokens", mail_interval, logouts.run),
        PeriodicJob("mailing password-reset links", mail_interval, provider.password_reset.deliver),
    ]
