"""``python -m bench``: the service against a hand-written reference, side by side, interleaved, on real sockets.

A benchmark, never a test: it reports figures and asserts nothing about them.
See ``bench/README.md`` for what each scenario measures and how.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import report
from bench.load import Run, wrk
from bench.servers import Server, Workspace, ceiling_command, free_port, reference_command, service_command
from bench.signins import SignInTarget, measure
from bench.workload import TYPICAL, region_paths, unique_mix, write_lines
from data.catalog import load_catalog
from identity.keys.sealing import new_key
from service.database.db import make_engine, service_secret
from service.database.sealing_keys import load_sealer
from service.settings import Settings, secret_keys_from

ROOT = Path(__file__).resolve().parent.parent
REDIRECT_URI = "http://127.0.0.1:9/callback"
PASSWORD = "bench-password-1234"
MENUS = {
    "s1": ("1. typical query, repeated", "typical"),
    "s2": ("2. unique mix of filters, searches, cursor pages", "mix"),
    "s3": ("3. /v1/menus/regions/{slug}", "regions"),
}
REDIS_SCENARIOS = ("s1", "s2")  # run again with the rate limit in Redis, against the limit in process memory
# API keys the load takes in turn, as many clients would. The sliding window counter costs the same whatever
# the traffic (two counters a key), so this no longer protects the figures; it keeps the load like real clients'
# and the key cache holding more than one key.
KEYS = 16


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["drill"]:  # a subcommand of its own: the production shape broken under load (bench/drill.py)
        from bench import drill

        drill.main(argv[1:])
        return
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__.splitlines()[0], epilog="python -m bench drill --help: the drill"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 s runs, 1 s warm-up, one repeat")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_SECONDS", 8)))
    parser.add_argument("--warmup", type=float, default=float(os.environ.get("BENCH_WARMUP", 3)))
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", 3)))
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--drivers", type=int, default=6, help="sign-in driver processes")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"), help="default: SQLite")
    parser.add_argument(
        "--only",
        choices=["menus", "identity", "identity-peer", "redis", "startup", "overload", "revocation", "races"],
        help="run one part only",
    )
    parser.add_argument("--attempts", type=int, help="--only races: attempts of each race (default: bench/races.py)")
    parser.add_argument(
        "--tree", type=Path, help="--only startup: the source tree to measure (default: this one), for a before/after"
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7"),
        help="the Redis database of the rate-limit scenarios (flushed before and after)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    if args.only == "races":  # two nodes, requests fired at once through a barrier; no load generator
        from bench import races

        args.out.mkdir(parents=True, exist_ok=True)
        races.main(args.out, args.attempts)
        return
    if args.only == "startup":  # no load generator: process start to first answer, --help, resident memory
        from bench import startup

        startup.main(args.tree, args.out)
        return
    if args.only != "revocation":  # two nodes on one database, no load generator (bench/revocation.py)
        for tool in ("wrk", "taskset"):
            if shutil.which(tool) is None:
                parser.exit(2, f"python -m bench: {tool} is not installed (Debian: apt-get install {tool})\n")
    if args.quick:
        args.seconds, args.warmup, args.repeats = 2.0, 1.0, 1
    args.out.mkdir(parents=True, exist_ok=True)
    # One key for this process, the servers and the commands: they all open the service secrets (the cursor key).
    os.environ.setdefault("MENUS_SECRET_KEYS", new_key())

    with tempfile.TemporaryDirectory(prefix="bench-") as folder:
        workspace = Workspace(Path(folder), args.database_url or f"sqlite:///{folder}/state.sqlite3")
        if args.only == "revocation":
            from bench import revocation

            revocation.main(workspace, args.out)
            return
        results = run(workspace, args)
    json_path, table_path, chart_path = report.write(results, args.out)
    print(table_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path}, {table_path}, {chart_path}")


def run(workspace: Workspace, args: argparse.Namespace) -> dict[str, Any]:
    started = time.time()
    workspace.cli("db", "upgrade")
    api_keys = [workspace.cli("api-keys", "create", "--name", f"bench-{n}")["key"] for n in range(KEYS)]
    keys_file = write_lines(workspace.folder / "keys.txt", api_keys)
    engine = make_engine(workspace.database_url, Settings().database_pool())
    sealer = load_sealer(secret_keys_from(os.environ), workspace.database_url)  # the keys the service will use
    catalog = load_catalog(cursor_key=service_secret(engine, sealer, "menus-cursor-key"))
    engine.dispose()
    folder = workspace.folder
    slice_size = max(5000, int(args.seconds * 6000))  # more than a run can send: every request of a run is unique
    mix = unique_mix(catalog, slice_size * (args.repeats + 1), seed=8)
    files = {
        "typical": [write_lines(folder / "typical.txt", [TYPICAL])] * (args.repeats + 1),
        "regions": [write_lines(folder / "regions.txt", region_paths(catalog))] * (args.repeats + 1),
        "mix": [
            write_lines(folder / f"mix-{n}.txt", mix[n * slice_size : (n + 1) * slice_size])
            for n in range(args.repeats + 1)
        ],
    }
    results: dict[str, Any] = {
        "machine": machine(),
        "settings": {
            "seconds": args.seconds,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "connections": args.connections,
            "database": workspace.database_url.split(":", 1)[0],
            "unique_requests_per_run": slice_size,
        },
        "menus": {},
        "identity": {},
        "processes": {},
    }
    if args.only in (None, "menus"):
        for config, workers, cpus in (("one worker, pinned", 1, ("0", "1")), ("two workers", 2, (None, None))):
            results["menus"][config] = menus_runs(workspace, args, files, api_keys[0], keys_file, workers, cpus)
            results["processes"][config] = results["menus"][config].pop("processes")
    if args.only in (None, "redis"):
        results["redis"] = redis_runs(workspace, args, files, api_keys[0], keys_file)
    if args.only in (None, "overload"):
        results["overload"] = overload_runs(workspace, args, files, api_keys[0], keys_file)
        results["processes"]["one worker, pinned, overload"] = results["overload"].pop("processes")
    if args.only in (None, "identity"):
        results["identity"] = identity_runs(workspace, args)
        results["processes"]["two workers, identity"] = results["identity"].pop("processes")
    if args.only in (None, "identity-peer"):
        results["identity_peer"] = identity_peer_runs(workspace, args)
        results["processes"]["one process, identity vs node-oidc-provider"] = results["identity_peer"].pop("processes")
    results["elapsed_seconds"] = round(time.time() - started, 1)
    return results


def menus_runs(
    workspace: Workspace,
    args: argparse.Namespace,
    files: dict[str, list[Path]],
    api_key: str,
    keys_file: Path,
    workers: int,
    cpus: tuple[str | None, str | None],
) -> dict[str, Any]:
    server_cpus, load_cpus = cpus
    threads = 1 if workers == 1 else 2
    headers = {"Authorization": f"Bearer {api_key}"}
    out: dict[str, Any] = {}
    with ExitStack() as stack:
        service_port, reference_port, ceiling_port, lean_port = free_port(), free_port(), free_port(), free_port()
        service = stack.enter_context(
            Server(
                "service",
                service_command(service_port, workers, server_cpus),
                service_port,
                workspace.env(service_port),
                workspace.folder,
                "/v1/menus/regions",
                headers,
            )
        )
        reference = stack.enter_context(
            Server(
                "reference",
                reference_command(reference_port, workspace.database_url, workers, server_cpus),
                reference_port,
                {**workspace.env(), "PYTHONPATH": str(ROOT)},
                workspace.folder,
                "/v1/menus/regions/kerala",
                headers,
            )
        )
        # The lean route: the reference with the key from memory and no limit (bench/reference.py --lean).
        lean = stack.enter_context(
            Server(
                "lean",
                reference_command(lean_port, workspace.database_url, workers, server_cpus, lean=True),
                lean_port,
                {**workspace.env(), "PYTHONPATH": str(ROOT)},
                workspace.folder,
                "/v1/menus/regions/kerala",
                headers,
            )
        )
        # The ceiling answers the service's own answer to scenario 1's query, as constant bytes.
        body_file = workspace.folder / "ceiling-body.json"
        body_file.write_bytes(_get(service.url + TYPICAL, headers))
        ceiling = stack.enter_context(
            Server(
                "ceiling",
                ceiling_command(ceiling_port, body_file, workers, server_cpus),
                ceiling_port,
                {**workspace.env(), "PYTHONPATH": str(ROOT)},
                workspace.folder,
                "/",
            )
        )
        for scenario, (_title, kind) in MENUS.items():

            def load(server: Server, slice_number: int, seconds: float, kind: str = kind) -> Run:
                path = files[kind][slice_number]
                return wrk(
                    server.url,
                    seconds=seconds,
                    connections=args.connections,
                    threads=threads,
                    headers={},
                    script="paths.lua",
                    script_args=[str(path), str(threads), str(keys_file)],
                    cpus=load_cpus,
                )

            for server in (service, reference, lean, ceiling):
                load(server, 0, args.warmup)
            runs: dict[str, list[dict[str, Any]]] = {"service": [], "reference": [], "lean": [], "ceiling": []}
            for repeat in range(1, args.repeats + 1):
                # Interleaved, and which goes first alternates, so drift in the machine's load hits all four.
                order = (service, reference, lean, ceiling) if repeat % 2 else (ceiling, lean, reference, service)
                for server in order:
                    runs[server.name].append(load(server, repeat, args.seconds).as_dict())
            out[scenario] = summarise(runs)
            out[scenario]["of_ceiling"] = {
                name: _ratios(runs[name], runs["ceiling"]) for name in ("service", "reference", "lean")
            }
            out[scenario]["of_lean"] = _ratios(runs["service"], runs["lean"])
            shares = out[scenario]["of_ceiling"]
            print(
                f"[{workers} worker(s)] {scenario}: {ratio_line(out[scenario])}; of the lean route "
                f"({out[scenario]['lean']['rps_median']:.0f}/s): {out[scenario]['of_lean']['median']:.2f}; "
                f"of the ceiling ({out[scenario]['ceiling']['rps_median']:.0f}/s): service "
                f"{shares['service']['median']:.2f}, reference {shares['reference']['median']:.2f}, "
                f"lean {shares['lean']['median']:.2f}",
                file=sys.stderr,
            )
        out["processes"] = {
            name: server.figures()
            for name, server in (("service", service), ("reference", reference), ("lean", lean), ("ceiling", ceiling))
        }
    return out


OVERLOAD_CONNECTIONS = (64, 256, 1024)
OVERLOAD_TIMEOUT = "5s"  # wrk's: a request unanswered this long is counted as timed out


def overload_runs(
    workspace: Workspace, args: argparse.Namespace, files: dict[str, list[Path]], api_key: str, keys_file: Path
) -> dict[str, Any]:
    """Scenario 1 on one worker pinned to CPU 0 (wrk on CPU 1, ``--timeout 5s``) under 64, 256 and 1,024
    connections: requests a second, p99, the 503s the worker sheds (docs/operations.md "Overload") and the
    requests unanswered within 5 s."""
    headers = {"Authorization": f"Bearer {api_key}"}
    out: dict[str, Any] = {}
    port = free_port()
    with Server(
        "service",
        service_command(port, 1, "0"),
        port,
        workspace.env(port),
        workspace.folder,
        "/v1/menus/regions",
        headers,
    ) as service:
        for connections in OVERLOAD_CONNECTIONS:

            def load(seconds: float, connections: int = connections) -> Run:
                return wrk(
                    service.url,
                    seconds=seconds,
                    connections=connections,
                    threads=1,
                    headers={},
                    script="paths.lua",
                    script_args=[str(files["typical"][0]), "1", str(keys_file)],
                    cpus="1",
                    timeout=OVERLOAD_TIMEOUT,
                )

            load(args.warmup)
            runs = [load(args.seconds).as_dict() for _ in range(args.repeats)]
            out[str(connections)] = {
                "runs": runs,
                "rps_median": statistics.median(r["requests_per_second"] for r in runs),
                "p99_ms_median": statistics.median(r["p99_ms"] for r in runs),
                "shed_503": sum(r["non_2xx"] for r in runs),
                "past_5s": sum(r["timeouts"] for r in runs),
                "past_2s": sum(r["past_2s"] for r in runs),
                "max_ms": max(r["max_ms"] for r in runs),
                "requests": sum(r["requests"] for r in runs),
            }
            figures = out[str(connections)]
            print(
                f"[overload] {connections} connections: {figures['rps_median']:.0f} req/s, "
                f"p99 {figures['p99_ms_median']:.0f} ms, max {figures['max_ms']:.0f} ms, {figures['shed_503']} shed "
                f"(503), {figures['past_2s']} answered past 2 s and {figures['past_5s']} unanswered in 5 s of "
                f"{figures['requests']} requests",
                file=sys.stderr,
            )
        out["processes"] = {"service": service.figures()}
    return out


def redis_runs(
    workspace: Workspace, args: argparse.Namespace, files: dict[str, list[Path]], api_key: str, keys_file: Path
) -> dict[str, Any]:
    """Scenarios 1 and 2, one worker pinned: the rate limit in Redis against the limit in process memory.

    Both are the service; they differ only in ``MENUS_RATE_LIMIT_STORAGE``. Redis (at ``--redis-url``) is
    not pinned: it shares the machine as it would a node. The ratio is Redis req/s ÷ memory req/s.
    """
    import redis

    flush = redis.Redis.from_url(args.redis_url, socket_timeout=5)
    flush.flushdb()
    headers = {"Authorization": f"Bearer {api_key}"}
    out: dict[str, Any] = {}
    try:
        with ExitStack() as stack:
            servers = {}
            for name, storage in (("redis", args.redis_url), ("memory", "memory://")):
                port = free_port()
                env = {**workspace.env(port), "MENUS_RATE_LIMIT_STORAGE": storage}
                servers[name] = stack.enter_context(
                    Server(
                        f"service-limit-in-{name}",
                        service_command(port, 1, "0"),
                        port,
                        env,
                        workspace.folder,
                        "/v1/menus/regions",
                        headers,
                    )
                )
            for scenario in REDIS_SCENARIOS:
                kind = MENUS[scenario][1]

                def load(server: Server, slice_number: int, seconds: float, kind: str = kind) -> Run:
                    return wrk(
                        server.url,
                        seconds=seconds,
                        connections=args.connections,
                        threads=1,
                        headers={},
                        script="paths.lua",
                        script_args=[str(files[kind][slice_number]), "1", str(keys_file)],
                        cpus="1",
                    )

                for server in servers.values():
                    load(server, 0, args.warmup)
                runs: dict[str, list[dict[str, Any]]] = {"redis": [], "memory": []}
                for repeat in range(1, args.repeats + 1):
                    order = ("redis", "memory") if repeat % 2 else ("memory", "redis")
                    for name in order:
                        before = servers[name].cpu_seconds()
                        run = load(servers[name], repeat, args.seconds).as_dict()
                        run["cpu_us_per_request"] = (servers[name].cpu_seconds() - before) / run["requests"] * 1e6
                        runs[name].append(run)
                out[scenario] = summarise(runs, numerator="redis", denominator="memory")
                # The worker's CPU time per request, memory's ÷ Redis's: the same ratio as the requests a second of a
                # worker alone on its core, and steadier on a machine that others share (Redis's own CPU excluded).
                cpu = [
                    m["cpu_us_per_request"] / r["cpu_us_per_request"]
                    for r, m in zip(runs["redis"], runs["memory"], strict=True)
                ]
                out[scenario]["cpu_ratio"] = {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu)}
                print(
                    f"[1 worker] {scenario}: {ratio_line(out[scenario], 'redis', 'memory')}; CPU a request, memory ÷ "
                    f"Redis: {statistics.median(cpu):.2f} ({min(cpu):.2f}–{max(cpu):.2f})",
                    file=sys.stderr,
                )
    finally:
        flush.flushdb()
        flush.close()
    return out


def identity_runs(workspace: Workspace, args: argparse.Namespace) -> dict[str, Any]:
    org = workspace.cli("orgs", "create", "--name", "Bench")
    machine_client = workspace.cli(
        "clients", "create", "--name", "Bench job", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    web_client = workspace.cli(
        "clients", "create", "--name", "Bench web", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--redirect-uri", REDIRECT_URI, "--grant", "authorization_code", "--scope", "openid", "--scope", "profile",
        "--scope", "email", "--first-party",
    )  # fmt: skip
    workspace.cli(
        "users", "create", "--email", "bench@example.com", "--name", "Bench", "--password-stdin", "--org", org["id"],
        stdin=PASSWORD + "\n",
    )  # fmt: skip
    basic = base64.b64encode(f"{machine_client['client_id']}:{machine_client['client_secret']}".encode()).decode()
    headers = {"Authorization": f"Basic {basic}"}
    port = free_port()
    out: dict[str, Any] = {}
    with Server(
        "service-identity", service_command(port, 2, None), port, workspace.env(port), workspace.folder, "/jwks"
    ) as service:

        def post(path: str, body: str, seconds: float) -> Run:
            return wrk(
                service.url + path,
                seconds=seconds,
                connections=args.connections,
                threads=2,
                headers=headers,
                script="post.lua",
                script_args=[body],
            )

        token_body = "grant_type=client_credentials&scope=members%3Aread"
        post("/oauth2/token", token_body, args.warmup)
        out["s4"] = summarise(
            {"service": [post("/oauth2/token", token_body, args.seconds).as_dict() for _ in range(args.repeats)]}
        )
        access_token = _client_credentials_token(service.url, headers)
        introspect_body = f"token={access_token}"
        post("/oauth2/introspect", introspect_body, args.warmup)
        out["s5"] = summarise(
            {
                "service": [
                    post("/oauth2/introspect", introspect_body, args.seconds).as_dict() for _ in range(args.repeats)
                ]
            }
        )
        target = SignInTarget(
            service.url,
            web_client["client_id"],
            web_client["client_secret"],
            REDIRECT_URI,
            "bench@example.com",
            PASSWORD,
        )
        measure(target, args.warmup, args.drivers)
        sign_ins = [measure(target, args.seconds, args.drivers) for _ in range(args.repeats)]
        rates = [s["sign_ins_per_second"] for s in sign_ins]
        out["s6"] = {"runs": sign_ins, "median": statistics.median(rates), "min": min(rates), "max": max(rates)}
        for scenario in ("s4", "s5", "s6"):
            print(f"[2 workers] {scenario}: {out[scenario]['median']:.0f}/s", file=sys.stderr)
        out["processes"] = {"service": service.figures()}
    return out


PEER_SCENARIOS = {
    "tokens": "client_credentials, client_secret_basic, RS256 JWT access token",
    "introspection": "introspection of a live access token",
    "jwks": "GET /jwks",
    "discovery": "GET /.well-known/openid-configuration",
}
PEER_SECRET = "bench-peer-secret-0123456789abcdef"  # the peer's one client; ours is registered with the CLI


def identity_peer_runs(workspace: Workspace, args: argparse.Namespace) -> dict[str, Any]:
    """The identity endpoints against node-oidc-provider (``bench/oidc_peer.mjs``): one process each, pinned to
    CPU 0 one after the other, wrk on CPU 1. Our service records every token (a row per token); the peer keeps
    its JWT access tokens nowhere, and introspects an opaque token it holds in memory (it cannot introspect JWTs)."""
    node, script = shutil.which("node"), ROOT / "bench" / "oidc_peer.mjs"
    if node is None or not (ROOT / "node_modules" / "oidc-provider").is_dir():
        print("identity-peer: needs node and `npm ci` (oidc-provider in node_modules); skipped", file=sys.stderr)
        return {"skipped": "node or oidc-provider missing", "processes": {}}
    org = workspace.cli("orgs", "create", "--name", "Bench peer")
    ours = workspace.cli(
        "clients", "create", "--name", "Bench peer job", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    sides = {
        "service": (ours["client_id"], ours["client_secret"], "members%3Aread"),
        "reference": ("bench-peer", PEER_SECRET, "members%3Aread"),
    }
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in PEER_SCENARIOS}
    processes: dict[str, Any] = {}
    for side, (client_id, secret, scope) in sides.items():
        port = free_port()
        if side == "service":
            command = service_command(port, 1, "0")
            env = workspace.env(port)
        else:
            command = ["taskset", "-c", "0", node, str(script), str(port), client_id, secret]
            env = {**os.environ, "NODE_ENV": "production"}
        basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
        headers = {"Authorization": f"Basic {basic}"}
        with Server(f"{side}-identity-peer", command, port, env, workspace.folder, "/jwks") as server:
            token_body = f"grant_type=client_credentials&scope={scope}"
            opaque = "&resource=urn%3Abench%3Aopaque" if side == "reference" else ""
            live = _client_credentials_token(server.url, headers, token_body + opaque)
            requests = {
                "tokens": ("/oauth2/token", headers, "post.lua", [token_body]),
                "introspection": ("/oauth2/introspect", headers, "post.lua", [f"token={live}"]),
                "jwks": ("/jwks", {}, "paths.lua", [str(write_lines(workspace.folder / "jwks.txt", ["/jwks"])), "2"]),
                "discovery": (
                    "/.well-known/openid-configuration",
                    {},
                    "paths.lua",
                    [str(write_lines(workspace.folder / "discovery.txt", ["/.well-known/openid-configuration"])), "2"],
                ),
            }
            for scenario, (path, sent, script_name, script_args) in requests.items():
                url = server.url + (path if script_name == "post.lua" else "")

                def load(seconds: float, url: str = url, sent: dict[str, str] = sent, name: str = script_name,
                         extra: list[str] = script_args) -> Run:  # fmt: skip
                    return wrk(url, seconds=seconds, connections=args.connections, threads=2, headers=sent,
                               script=name, script_args=extra, cpus="1")  # fmt: skip

                load(args.warmup)
                runs[scenario][side] = [load(args.seconds).as_dict() for _ in range(args.repeats)]
            processes[side] = server.figures()
    out: dict[str, Any] = {name: summarise(runs[name]) for name in PEER_SCENARIOS}
    for name, summary in out.items():
        print(
            f"[one process, pinned] {name}: ours {summary['service']['rps_median']:.0f}/s, node-oidc-provider "
            f"{summary['reference']['rps_median']:.0f}/s, ratio {summary['ratio']['median']:.2f}",
            file=sys.stderr,
        )
    out["processes"] = processes
    return out


def _client_credentials_token(
    url: str, headers: dict[str, str], body: str = "grant_type=client_credentials&scope=members%3Aread"
) -> str:
    import json
    import urllib.request

    request = urllib.request.Request(
        url + "/oauth2/token",
        data=body.encode(),
        headers={**headers, "Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.load(response)["access_token"])


def summarise(
    runs: dict[str, list[dict[str, Any]]], numerator: str = "service", denominator: str = "reference"
) -> dict[str, Any]:
    """Medians with min–max of each side, and of the per-repeat ratio ``numerator`` / ``denominator``."""
    summary: dict[str, Any] = {"runs": runs}
    for name, side in runs.items():
        rates = [r["requests_per_second"] for r in side]
        p99s = [r["p99_ms"] for r in side]
        summary[name] = {
            "rps_median": statistics.median(rates),
            "rps_min": min(rates),
            "rps_max": max(rates),
            "p99_ms_median": statistics.median(p99s),
            "p99_ms_max": max(p99s),
            "errors": sum(r["errors"] for r in side),
            "wrapped": sum(r["wrapped"] for r in side),
        }
    if denominator in runs:
        ratios = [
            s["requests_per_second"] / r["requests_per_second"]
            for s, r in zip(runs[numerator], runs[denominator], strict=True)
        ]
        summary["ratio"] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
    summary["median"] = summary[numerator]["rps_median"]
    summary["min"] = summary[numerator]["rps_min"]
    summary["max"] = summary[numerator]["rps_max"]
    return summary


def _ratios(numerator: list[dict[str, Any]], denominator: list[dict[str, Any]]) -> dict[str, float]:
    """Median and min–max of the per-repeat ratio of two sides' requests a second."""
    ratios = [n["requests_per_second"] / d["requests_per_second"] for n, d in zip(numerator, denominator, strict=True)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def _get(url: str, headers: dict[str, str]) -> bytes:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return bytes(response.read())


def ratio_line(summary: dict[str, Any], numerator: str = "service", denominator: str = "reference") -> str:
    ratio = summary["ratio"]
    return (
        f"ratio {ratio['median']:.2f} ({ratio['min']:.2f}–{ratio['max']:.2f}), {numerator} "
        f"{summary[numerator]['rps_median']:.0f}/s p99 {summary[numerator]['p99_ms_median']:.1f} ms, {denominator} "
        f"{summary[denominator]['rps_median']:.0f}/s"
    )


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        memory = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    except OSError:
        pass
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False).stdout.split("\n")[0]
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "wrk": wrk_version.strip(),
        "load_average_at_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


if __name__ == "__main__":
    main()
