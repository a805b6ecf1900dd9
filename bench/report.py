"""The benchmark's outputs under ``bench/results/``: the raw JSON, a Markdown table, and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Issue 8's targets: a ratio to the reference (one worker) or a rate (two workers); p99 at 16 connections.
RATIO_TARGETS = {"s1": 1.0, "s2": 0.45, "s3": None}
LEAN_TARGETS = {"s1": 1.0, "s2": 0.45}  # issue 29: against the lean route (bench/reference.py --lean)
RATE_TARGETS = {"s4": 1000, "s5": 2000, "s6": 25}
P99_TARGET_MS = 10.0
REDIS_RATIO_TARGET = 0.8  # issue 17: the rate limit in Redis at 0.8x the req/s of the limit in process memory
TITLES = {
    "s1": "1. typical query, repeated",
    "s2": "2. unique mix: filters, searches, cursor pages",
    "s3": "3. /v1/menus/regions/{slug}",
    "s4": "4. client_credentials tokens",
    "s5": "5. introspection of a valid token",
    "s6": "6. complete sign-ins (Argon2id m=19 MiB, t=2, p=1)",
}


# issue 36's floors against node-oidc-provider, one process each (we record every token; it does not)
PEER_TARGETS = {"tokens": 0.8, "introspection": 1.0, "jwks": 0.9, "discovery": 0.9}


def write(results: dict[str, Any], out: Path) -> tuple[Path, Path, Path]:
    json_path = out / "latest.json"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    table_path = out / "latest.md"
    table_path.write_text(table(results), encoding="utf-8")
    chart_path = out / "latest.png"
    chart(results, chart_path)
    return json_path, table_path, chart_path


def _range(low: float, median: float, high: float, digits: int = 2) -> str:
    return f"{median:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def table(results: dict[str, Any]) -> str:
    settings, box = results["settings"], results["machine"]
    lines = [
        "| scenario | workers | service req/s | reference req/s | ratio median (min–max) | "
        "p99 ms, service (reference) | share of the ceiling, service (reference) | target | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for config, scenarios in results["menus"].items():
        workers = "1, pinned" if config.startswith("one") else "2"
        for key, summary in scenarios.items():
            service, reference, ratio = summary["service"], summary["reference"], summary["ratio"]
            wanted = RATIO_TARGETS[key] if workers.startswith("1") else None
            p99_ok = service["p99_ms_median"] < P99_TARGET_MS
            goals = ([f"≥ {wanted:.2f}×"] if wanted else []) + [f"p99 < {P99_TARGET_MS:.0f} ms"]
            verdicts = ([_met(ratio["median"] >= wanted)] if wanted else []) + [_met(p99_ok)]
            errors = service["errors"] + reference["errors"]
            note = f" ({errors} errors)" if errors else ""
            note += f" (list wrapped {service['wrapped']}×)" if service["wrapped"] and key == "s2" else ""
            served = _range(service["rps_min"], service["rps_median"], service["rps_max"], 0)
            shares = summary.get("of_ceiling")
            ceiling = (
                f"{shares['service']['median']:.2f} ({shares['reference']['median']:.2f}) "
                f"of {summary['ceiling']['rps_median']:.0f}/s"
                if shares
                else "–"
            )
            lines.append(
                f"| {TITLES[key]} | {workers} | {served}"
                f" | {_range(reference['rps_min'], reference['rps_median'], reference['rps_max'], 0)}"
                f" | {_range(ratio['min'], ratio['median'], ratio['max'])}{note}"
                f" | {service['p99_ms_median']:.1f} ({reference['p99_ms_median']:.1f})"
                f" | {ceiling} | {', '.join(goals)} | {', '.join(verdicts)} |"
            )
    for key, summary in results.get("identity", {}).items():
        target = RATE_TARGETS[key]
        extra = ""
        if key == "s6":
            cpu = statistics_of(summary["runs"], "driver_cpu_share")
            extra = f"; drivers used {cpu:.2f} cores"
            p99 = "–"
        else:
            p99 = f"{summary['service']['p99_ms_median']:.1f}"
            errors = summary["service"]["errors"]
            extra = f"; {errors} errors" if errors else ""
        lines.append(
            f"| {TITLES[key]} | 2 | {_range(summary['min'], summary['median'], summary['max'], 0)}{extra} | – | – "
            f"| {p99} | ≥ {target}/s | {_met(summary['median'] >= target)} |"
        )
    if results.get("redis"):
        lines += [
            "",
            "| scenario, one worker pinned | limit in Redis req/s | limit in memory req/s | ratio median (min–max) "
            "| p99 ms, Redis (memory) | target | verdict |",
            "|---|---|---|---|---|---|---|",
        ]
        for key, summary in results["redis"].items():
            shared, memory, ratio = summary["redis"], summary["memory"], summary["ratio"]
            errors = shared["errors"] + memory["errors"]
            note = f" ({errors} errors)" if errors else ""
            lines.append(
                f"| {TITLES[key]} | {_range(shared['rps_min'], shared['rps_median'], shared['rps_max'], 0)}"
                f" | {_range(memory['rps_min'], memory['rps_median'], memory['rps_max'], 0)}"
                f" | {_range(ratio['min'], ratio['median'], ratio['max'])}{note}"
                f" | {shared['p99_ms_median']:.1f} ({memory['p99_ms_median']:.1f})"
                f" | ≥ {REDIS_RATIO_TARGET:.2f}× | {_met(ratio['median'] >= REDIS_RATIO_TARGET)} |"
            )
    lean_rows = [
        (config, key, summary)
        for config, scenarios in results["menus"].items()
        for key, summary in scenarios.items()
        if key in ("s1", "s2") and "of_lean" in summary
    ]
    if lean_rows:
        lines += [
            "",
            "| scenario | workers | service ÷ lean route | lean route req/s | share of the ceiling: service, lean "
            "| target (÷ lean) | verdict |",
            "|---|---|---|---|---|---|---|",
        ]
        for config, key, summary in lean_rows:
            workers = "1, pinned" if config.startswith("one") else "2"
            of_lean, shares, lean = summary["of_lean"], summary["of_ceiling"], summary["lean"]
            wanted = LEAN_TARGETS[key] if workers.startswith("1") else None
            lines.append(
                f"| {TITLES[key]} | {workers} | {_range(of_lean['min'], of_lean['median'], of_lean['max'])}"
                f" | {_range(lean['rps_min'], lean['rps_median'], lean['rps_max'], 0)}"
                f" | {shares['service']['median']:.2f}, {shares['lean']['median']:.2f}"
                f" | {f'≥ {wanted:.2f}×' if wanted else '–'}"
                f" | {_met(of_lean['median'] >= wanted) if wanted else '–'} |"
            )
    if results.get("overload"):
        lines += [
            "",
            "| overload: scenario 1, one worker pinned, wrk --timeout 5s | req/s | p99 ms | max ms | shed (503) "
            "| answered past 2 s | unanswered in 5 s |",
            "|---|---|---|---|---|---|---|",
        ]
        for connections, figures in results["overload"].items():
            lines.append(
                f"| {int(connections):,} connections | {figures['rps_median']:.0f} | {figures['p99_ms_median']:.0f}"
                f" | {figures['max_ms']:.0f} | {figures['shed_503']:,} of {figures['requests']:,}"
                f" | {figures['past_2s']:,} | {figures['past_5s']:,} |"
            )
    peer = {k: v for k, v in results.get("identity_peer", {}).items() if isinstance(v, dict) and "ratio" in v}
    if peer:
        lines += [
            "",
            "| identity, one process each, pinned | ours req/s | node-oidc-provider req/s | ratio median (min–max) "
            "| p99 ms, ours (peer) | target | verdict |",
            "|---|---|---|---|---|---|---|",
        ]
        for key, summary in peer.items():
            ours, theirs, ratio = summary["service"], summary["reference"], summary["ratio"]
            errors = ours["errors"] + theirs["errors"]
            note = f" ({errors} errors)" if errors else ""
            target = PEER_TARGETS[key]
            lines.append(
                f"| {key} | {_range(ours['rps_min'], ours['rps_median'], ours['rps_max'], 0)}"
                f" | {_range(theirs['rps_min'], theirs['rps_median'], theirs['rps_max'], 0)}"
                f" | {_range(ratio['min'], ratio['median'], ratio['max'])}{note}"
                f" | {ours['p99_ms_median']:.1f} ({theirs['p99_ms_median']:.1f})"
                f" | ≥ {target:.2f}× | {_met(ratio['median'] >= target)} |"
            )
    lines += [
        "",
        "| process | workers | start-up to first 200 (s) | resident memory (MiB) | shared pages once (PSS, MiB) |",
        "|---|---|---|---|---|",
    ]
    for config, processes in results["processes"].items():
        for name, figures in processes.items():
            pss = f"{figures['pss_mib']:.0f}" if "pss_mib" in figures else "–"  # results from before it was measured
            lines.append(f"| {name} | {config} | {figures['startup_seconds']:.2f} | {figures['rss_mib']:.0f} | {pss} |")
    lines += [
        "",
        f"Machine: {box['cpu']}, {box['cores']} cores, {box['memory']} RAM, Linux {box['kernel']}, "
        f"Python {box['python']}, {box['wrk']}; load average at start {box['load_average_at_start'][0]:.2f}; "
        f"{box['date']}.",
        f"Runs of {settings['seconds']:g} s after a {settings['warmup']:g} s warm-up, {settings['repeats']} repeats "
        f"interleaving service and reference, {settings['connections']} connections, state in "
        f"{settings['database']}; whole run {results['elapsed_seconds']:g} s. Ratio = service req/s ÷ reference "
        "req/s in the same repeat; medians with min–max.",
        "",
    ]
    return "\n".join(lines)


def statistics_of(runs: list[dict[str, float]], name: str) -> float:
    values = sorted(run[name] for run in runs)
    return values[len(values) // 2]


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    labels, medians, lows, highs, colours = [], [], [], [], []
    for config, scenarios in results["menus"].items():
        for key, summary in scenarios.items():
            ratio = summary["ratio"]
            labels.append(f"{key}\n{'1w' if config.startswith('one') else '2w'}")
            medians.append(ratio["median"])
            lows.append(ratio["median"] - ratio["min"])
            highs.append(ratio["max"] - ratio["median"])
            colours.append("tab:blue" if config.startswith("one") else "tab:cyan")
    for key, summary in results.get("redis", {}).items():
        ratio = summary["ratio"]
        labels.append(f"{key}\nRedis")
        medians.append(ratio["median"])
        lows.append(ratio["median"] - ratio["min"])
        highs.append(ratio["max"] - ratio["median"])
        colours.append("tab:orange")
    left.bar(labels, medians, yerr=[lows, highs], color=colours, capsize=4)
    left.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    for key, wanted in RATIO_TARGETS.items():
        if wanted and f"{key}\n1w" in labels:
            x = labels.index(f"{key}\n1w")
            left.hlines(wanted, x - 0.4, x + 0.4, color="red", linewidth=2)
        if f"{key}\nRedis" in labels:
            x = labels.index(f"{key}\nRedis")
            left.hlines(REDIS_RATIO_TARGET, x - 0.4, x + 0.4, color="red", linewidth=2)
    left.set_ylabel("service ÷ reference (Redis: limit in Redis ÷ in memory), req/s")
    left.set_title("Menus API: ratio to the reference (red: target)")
    identity = results.get("identity", {})
    if identity:
        keys = list(identity)
        shares = [identity[k]["median"] / RATE_TARGETS[k] for k in keys]
        errors = [
            [(identity[k]["median"] - identity[k]["min"]) / RATE_TARGETS[k] for k in keys],
            [(identity[k]["max"] - identity[k]["median"]) / RATE_TARGETS[k] for k in keys],
        ]
        right.bar([f"{k}\n{identity[k]['median']:.0f}/s" for k in keys], shares, yerr=errors, color="tab:green")
        right.axhline(1.0, color="red", linewidth=2)
        right.set_ylabel("rate ÷ target")
        right.set_title("Identity, two workers (red: target)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
