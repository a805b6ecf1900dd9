"""How long each part of the drill lasts and how much load it carries (bench/drill.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """How long each part lasts, in seconds, and how much load."""

    rate: float  # requests a second the load threads aim at, in all
    threads: int
    rate_limit: int  # MENUS_RATE_LIMIT: requests a minute per key
    load_keys: int  # API keys the dishes queries take in turn (each well under the limit)
    baseline: float  # load before the first fault
    quiet: float  # load after each fault ends, before the next starts
    node_down: float  # a killed node stays down this long before its restart
    postgres_down: float  # between PostgreSQL's stop and its start (0: a restart)
    redis_down: float
    smtp_down: float
    clock_for: float  # how long the node with its clock ahead runs
    clock_ahead: int  # seconds
    reset_every: float  # seconds between two password-reset requests
    mail_wait: float  # after the last phase, seconds to wait for the mail still pending

    @property
    def probe_rate(self) -> float:
        return 1.5 * self.rate_limit / 60

    @property
    def reset_accounts(self) -> int:
        """Accounts enough that none passes the per-account bound of 5 reset mails in 15 minutes: every reset
        request of the drill queues a mail."""
        faults = self.node_down + self.postgres_down + self.redis_down + self.smtp_down + self.clock_for + 20
        seconds = self.baseline + len(FAULTS) * self.quiet + faults
        return int(seconds / self.reset_every / 5) + 2


FULL = Plan(
    rate=300, threads=16, rate_limit=1200, load_keys=24, baseline=30, quiet=60, node_down=10, postgres_down=0,
    redis_down=30, smtp_down=60, clock_for=30, clock_ahead=30, reset_every=2.0, mail_wait=180,
)  # fmt: skip
SHORT = Plan(
    rate=100, threads=8, rate_limit=600, load_keys=6, baseline=2, quiet=2.5, node_down=1, postgres_down=1,
    redis_down=2, smtp_down=2, clock_for=2, clock_ahead=30, reset_every=0.5, mail_wait=0,
)  # fmt: skip
FAULTS = ("node_kill", "postgres_restart", "redis_stop", "smtp_stop", "clock_ahead")
