"""Debian's nginx in front of nodes, with the shipped ``deploy/nginx.conf`` as it is, run by the test itself.

The shipped file is the http-level part that Debian's ``/etc/nginx/nginx.conf`` includes from ``conf.d/``; it
includes ``regional-menus/nodes.conf`` (the nodes) and ``regional-menus/site.conf`` (address, name,
certificate), which an operator edits and which this module writes: the nodes' addresses, a free loopback port
and a self-signed certificate made here. The main file this module writes stands for Debian's: its temporary
folders and logs under the test's folder, so nginx needs no root (``nginx -p DIR -c DIR/nginx.conf -e …``), and
its workers run as the user that runs the test.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.live import ROOT, free_port

SHIPPED = ROOT / "deploy" / "nginx.conf"
NODE_OPTIONS = "max_fails=1 fail_timeout=5s"  # as deploy/regional-menus/nodes.conf has them


def nginx_binary() -> str:
    """Debian's nginx; a missing one is an error, never a skip (CI installs it: .ci/run, scripts/test)."""
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
    if found is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
    return found


def self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A certificate for ``host`` (an IP address and ``localhost``) and its key, made with ``cryptography``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "proxy.pem", folder / "proxy.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@dataclass
class Nginx:
    port: int
    folder: Path
    certificate: Path  # what a client trusts (self-signed)
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def error_log(self) -> str:
        return (self.folder / "error.log").read_text(encoding="utf-8", errors="replace")

    def access_log(self) -> str:
        return (self.folder / "access.log").read_text(encoding="utf-8", errors="replace")

    def tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.certificate))


def node_lines(nodes: Sequence[str]) -> str:
    """nodes.conf for ``nodes`` (``host:port``), as deploy/regional-menus/nodes.conf lays them out: each node, then
    each again as a backup that is never marked down."""
    return "".join(f"server {node} {NODE_OPTIONS};\n" for node in nodes) + "".join(
        f"server {node} backup max_fails=0;\n" for node in nodes
    )


def write_config(folder: Path, port: int, nodes: Sequence[str], certificate: tuple[Path, Path]) -> Path:
    """The operator's two files, the shipped one in conf.d/, and a main file standing for Debian's."""
    cert_path, key_path = certificate
    (folder / "regional-menus").mkdir(parents=True, exist_ok=True)
    (folder / "conf.d").mkdir(exist_ok=True)
    (folder / "temp").mkdir(exist_ok=True)
    (folder / "regional-menus" / "nodes.conf").write_text(node_lines(nodes), encoding="utf-8")
    (folder / "regional-menus" / "site.conf").write_text(
        f"listen 127.0.0.1:{port} ssl;\n"
        "server_name 127.0.0.1;\n"
        f"ssl_certificate {cert_path};\n"
        f"ssl_certificate_key {key_path};\n",
        encoding="utf-8",
    )
    shutil.copyfile(SHIPPED, folder / "conf.d" / "regional-menus.conf")
    temp = folder / "temp"
    main = folder / "nginx.conf"
    main.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")  # the workers run as the test's user (root in CI)
        + "worker_processes 2;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        f"    access_log {folder / 'access.log'};\n"
        f"    client_body_temp_path {temp / 'body'};\n"
        f"    proxy_temp_path {temp / 'proxy'};\n"
        f"    fastcgi_temp_path {temp / 'fastcgi'};\n"
        f"    uwsgi_temp_path {temp / 'uwsgi'};\n"
        f"    scgi_temp_path {temp / 'scgi'};\n"
        "    include conf.d/regional-menus.conf;\n"
        "}\n",
        encoding="utf-8",
    )
    return main


@contextmanager
def nginx_proxy(folder: Path, nodes: Sequence[str], *, port: int | None = None) -> Iterator[Nginx]:
    """nginx on ``127.0.0.1:port`` (a free one unless given) in front of ``nodes`` (``host:port``), until the
    context ends."""
    binary = nginx_binary()
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    certificate = self_signed(folder)
    main = write_config(folder, port, nodes, certificate)
    command = [binary, "-p", str(folder), "-c", str(main), "-e", str(folder / "error.log")]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    if checked.returncode != 0:
        raise RuntimeError(f"nginx -t refused the configuration: {checked.stderr}")
    process = subprocess.Popen(
        [*command, "-g", f"daemon off; pid {folder / 'nginx.pid'};"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proxy = Nginx(port, folder, certificate[0], process)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {proxy.error_log()}") from None
                time.sleep(0.05)
        yield proxy
    finally:
        process.send_signal(signal.SIGQUIT)  # graceful: finish what is in flight
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
