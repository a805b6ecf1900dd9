"""The console's pages: Jinja2 templates with autoescaping, one inline stylesheet, and a usage chart drawn
on the server as inline SVG.

The pages work without JavaScript. One inline script, allowed by its hash like the stylesheet, only
adds a "Copy key" button to the page that shows a new key; without it the key sits in a read-only
field, selectable as any text. The Content-Security-Policy is the sign-in pages' with that one hash.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from identity.api_keys.usage import DailyUsage
from service.web.html_headers import page_headers
from service.web.page_templates import templates_of

if TYPE_CHECKING:
    from jinja2 import Environment

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f4ef;color:#1d1b16}"
    "header{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:1rem;"
    "padding:.75rem 1.5rem;background:#1d1b16;color:#fff}header a{color:#fff}.brand{margin:0;font-weight:600}"
    "nav{display:flex;flex-wrap:wrap;gap:1rem;align-items:center}"
    "main{max-width:62rem;margin:2rem auto;padding:2rem;background:#fff;border-radius:.5rem;"
    "box-shadow:0 1px 3px rgba(0,0,0,.15)}"
    "h1{font-size:1.5rem;margin-top:0}h2{font-size:1.2rem;margin-top:2rem}"
    "label{display:block;margin-top:1rem;font-weight:600}"
    "input[type=text],input[type=password],textarea{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;"
    "border:1px solid #8a8578;border-radius:.25rem}"
    "input.key,textarea{font-family:ui-monospace,monospace;font-size:.95rem;background:#f6f4ef}"
    "button,a.button{display:inline-block;margin-top:1rem;margin-right:.5rem;padding:.6rem 1.2rem;font:inherit;"
    "border:0;border-radius:.25rem;background:#9a3412;color:#fff;cursor:pointer;text-decoration:none}"
    "button.secondary,a.button.secondary{background:#e7e2d6;color:#1d1b16}"
    "form.inline{display:inline}form.inline button{margin:0}"
    "table{border-collapse:collapse;width:100%;font-size:.95rem}th,td{text-align:left;padding:.4rem .5rem;"
    "border-bottom:1px solid #e7e2d6;vertical-align:top}td.number{text-align:right}"
    ".error{color:#b91c1c;font-weight:600}.hint{color:#5c574b;font-size:.9rem;margin:.25rem 0}"
    ".notice{background:#fef3c7;padding:.75rem;border-radius:.25rem;font-weight:600}"
    ".visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}"
    ".chart{max-width:100%;height:auto}figure{margin:0}figcaption{font-size:.9rem;color:#5c574b}"
    ".swatch.ok{color:#15803d}.swatch.client{color:#b45309}.swatch.server{color:#b91c1c}"
    "nav.sections{display:flex;flex-wrap:wrap;gap:1.5rem;max-width:62rem;margin:1rem auto 0;padding:0 2rem}"
    "nav.sections a{color:#9a3412}nav.sections a[aria-current=page]{font-weight:700;color:#1d1b16}"
    "select{font:inherit;padding:.4rem;border:1px solid #8a8578;border-radius:.25rem}"
    "fieldset{border:0;padding:0;margin-top:1rem}legend{font-weight:600}"
    "label.choice{display:inline-block;font-weight:400;margin:.25rem 1rem 0 0}dt{font-weight:600}dd{margin:0 0 .5rem}"
)
SCRIPT = (
    "document.querySelectorAll('[data-copy]').forEach(function(b){b.hidden=false;"
    "b.addEventListener('click',function(){var f=document.getElementById(b.dataset.copy);f.select();"
    "navigator.clipboard.writeText(f.value).then(function(){b.textContent='Copied';});});});"
)


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


# The sign-in pages' policy (service/identity_api/page_rendering.py), with this stylesheet and the copy script
# by their hashes.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_hash(STYLE)}'; script-src 'sha256-{_hash(SCRIPT)}'; "
    "img-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = page_headers(CONTENT_SECURITY_POLICY)


@cache
def _environment() -> Environment:
    """The templates' Jinja environment, made on the first page rendered (start-up does not load Jinja)."""
    return templates_of("service.console_api")


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(style=STYLE, script=SCRIPT, **context)


# The usage chart

COLOURS = {"ok": "#15803d", "client": "#b45309", "server": "#b91c1c"}


@dataclass(frozen=True, slots=True)
class Part:
    y: float
    height: float
    colour: str


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    label: str
    parts: list[Part]


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[Bar]
    peak: int
    description: str
    first_day: str
    last_day: str
    width: int = 640
    height: int = 200
    left: int = 48
    right: int = 632
    top: int = 12
    bottom: int = 176

    @property
    def bar_width(self) -> float:
        return round((self.right - self.left) / max(len(self.bars), 1) * 0.7, 2)


def chart(days: list[DailyUsage]) -> Chart:
    """Stacked bars, one a day: 2xx and 3xx, then 4xx, then 5xx; each bar's title says its figures."""
    probe = Chart([], 0, "", "", "")
    peak = max((day.total for day in days), default=0)
    scale = (probe.bottom - probe.top) / max(peak, 1)
    step = (probe.right - probe.left) / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        groups = [
            ("ok", day.by_class.get(2, 0) + day.by_class.get(3, 0)),
            ("client", day.by_class.get(4, 0)),
            ("server", day.by_class.get(5, 0)),
        ]
        y = float(probe.bottom)
        parts = []
        for name, count in groups:
            if count:
                height = round(count * scale, 2)
                y = round(y - height, 2)
                parts.append(Part(y, height, COLOURS[name]))
        label = (
            f"{day.day.isoformat()}: {day.total} requests ({groups[0][1]} successful, "
            f"{groups[1][1]} client errors, {groups[2][1]} server errors)"
        )
        bars.append(Bar(round(probe.left + index * step + step * 0.15, 2), label, parts))
    total = sum(day.total for day in days)
    busiest = max(days, key=lambda day: day.total, default=None)
    description = f"{total} requests in 30 days"
    if busiest is not None and busiest.total:
        description += f"; the busiest day was {busiest.day.isoformat()} with {busiest.total}"
    first = days[0].day.isoformat() if days else ""
    last = days[-1].day.isoformat() if days else ""
    return Chart(bars, peak, description + ".", first, last)
