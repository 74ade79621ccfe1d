"""Redis connections as operators set them up (infra/store/connect.py, infra/store/access.py),
against real redis-servers the tests start on free ports: a percent-encoded password; a
wrong password, a missing ACL permission and a TLS failure fatal at start (exit code 7, a
clear message, never retried as an outage); `rediss://` checking the certificate's host name,
with a CA file and a client certificate; docs/SECURITY.md's minimal ACL running a whole job."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import redis
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.access import ACL_RULE
from postel.infra.store.connect import RedisRefused, RedisURLError, redis_client, refusal
from postel.infra.store.outage import RideOut
from postel.infra.store.redis_server import free_port
from postel.infra.store.wire import connect_arq
from postel.infra.web.server import WebServer
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from redis.exceptions import AuthenticationError

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "tests" / "pipeline" / "cassettes" / "invoice_total.json"
INVOICE = "ACME Tools — Invoice 2026-118\n2 x hammer $40.00\nTOTAL DUE: $165.50"
EXIT_REDIS_REFUSED = 7


def wait_for_port(port: int, process: subprocess.Popen[bytes], polls: int = 400) -> None:
    for _ in range(polls):
        assert process.poll() is None, "redis-server exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"redis-server not listening on {port} after {polls} polls")


@pytest.fixture
def start_redis(tmp_path: Path) -> Iterator[object]:
    """start(args, executable="redis-server", port=None) -> port, stopped after the test."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], executable: str = "redis-server", tls: bool = False) -> int:
        port = free_port()
        listen = ["--port", "0", "--tls-port", str(port)] if tls else ["--port", str(port)]
        common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"]
        process = subprocess.Popen(
            [executable, *listen, *common, str(tmp_path), *args], stdout=subprocess.DEVNULL
        )
        processes.append(process)
        wait_for_port(port, process)
        return port

    yield start
    for process in processes:
        process.kill()
        process.wait(10)


def worker_exit(url: str) -> subprocess.CompletedProcess[str]:
    """`postel worker intent` against `url`: how it ends."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env = {**base, "POSTEL_REDIS_URL": url, "POSTEL_LOG_LEVEL": "WARNING"}
    env["POSTEL_LLM_BASE_URL"] = "http://127.0.0.1:9/v1"  # never called: it must not start
    return subprocess.run(
        [sys.executable, "-m", "postel", "worker", "intent"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: a refused start exits at once, an outage never would
    )


async def test_a_percent_encoded_password_is_decoded(start_redis: object) -> None:
    password = "p@ss:w/rd%"
    port = start_redis(["--requirepass", password])  # type: ignore[operator]
    url = f"redis://:{quote(password, safe='')}@127.0.0.1:{port}/0"
    assert "p%40ss%3Aw%2Frd%25" in url
    client = redis_client(url)
    assert await client.ping()
    await client.aclose()
    pool = await connect_arq(url)
    assert await pool.ping()
    await pool.aclose()


async def test_an_authentication_error_is_refused_not_ridden_out() -> None:
    ride = RideOut("test")
    with pytest.raises(RedisRefused, match="refused the credentials"):
        await ride.failed(AuthenticationError("WRONGPASS invalid username-password pair"))
    assert ride.attempts == 0, "not counted as an outage attempt"


def test_a_wrong_password_ends_a_worker_at_start_with_exit_7(start_redis: object) -> None:
    port = start_redis(["--requirepass", "right-password"])  # type: ignore[operator]
    done = worker_exit(f"redis://:nope-4242@127.0.0.1:{port}/0")
    assert done.returncode == EXIT_REDIS_REFUSED, done.stderr
    assert "postel: Redis refused the credentials: invalid username-password" in done.stderr
    assert "4242" not in done.stderr, "the password is never echoed"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("redis://Zuser:Pa/Sw0rd@127.0.0.1:9/0", ["Zuser", "Pa/", "Sw0rd"]),
        ("redis://:Pw@Sx:Wy/Rdq%x@127.0.0.1:9/0", ["Pw@", "Sx", "Wy", "Rdq"]),
        ("redis+sentinel://:Pw@Sx/Wy@127.0.0.1:9/main", ["Pw@", "Sx", "Wy"]),
        ("redis+cluster://u:Pw/Sx@127.0.0.1:9", ["Pw", "Sx"]),
    ],
)
def test_a_password_written_unencoded_is_refused_and_never_printed(
    url: str, parts: list[str]
) -> None:
    """A password holding / ? # or @ unencoded would be read as part of the host or path:
    the start is refused (exit 2), asking for percent-encoding, and no part of it shows."""
    done = worker_exit(url)
    assert done.returncode == 2, done.stderr
    assert "percent-encode" in done.stderr and "Traceback" not in done.stderr
    assert not [part for part in parts if part in done.stderr + done.stdout], done.stderr


def test_a_redis_url_with_an_unknown_or_misplaced_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RedisURLError, match="unknown parameter ssl_ca_cert in"):
        redis_client("rediss://127.0.0.1:1/0?ssl_ca_cert=/x")
    with pytest.raises(RedisURLError, match="need a rediss:// URL"):
        redis_client(f"redis://127.0.0.1:1/0?ssl_ca_certs={tmp_path}")
    with pytest.raises(RedisURLError, match="no such file"):
        redis_client(f"rediss://127.0.0.1:1/0?ssl_ca_certs={tmp_path / 'none.pem'}")


def documented_acl_rule() -> str:
    text = " ".join((ROOT / "docs" / "SECURITY.md").read_text().split())
    found = re.search(r"ACL SETUSER postel on >PASSWORD (.*?) ?`", text)
    assert found, "docs/SECURITY.md quotes the ACL"
    return found.group(1)


def acl_user(port: int, name: str, rule: str) -> str:
    admin = redis.Redis(port=port)
    admin.execute_command("ACL", "SETUSER", name, "on", f">pw-{name}", *rule.split())
    admin.close()
    return f"redis://{name}:pw-{name}@127.0.0.1:{port}/0"


def servers() -> list[str]:
    """The redis-servers here, one per version (PATH's, and the system's if another)."""
    found: dict[str, str] = {}
    for candidate in (shutil.which("redis-server"), "/usr/bin/redis-server"):
        if candidate and Path(candidate).exists():
            version = subprocess.run(
                [candidate, "--version"], capture_output=True, text=True, timeout=30
            ).stdout.split()[2]
            found.setdefault(version, candidate)
    return list(found.values())


@pytest.mark.parametrize("executable", servers())
async def test_the_documented_acl_runs_a_whole_job_and_nothing_is_denied(
    start_redis: object, settings: Settings, executable: str
) -> None:
    assert documented_acl_rule() == ACL_RULE
    port = start_redis([], executable)  # type: ignore[operator]
    url = acl_user(port, "postel", ACL_RULE)
    model = Model(ScriptedClient.from_cassette(CASSETTE), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=url, resources={RESOURCE: model}),
        Client(url, settings) as client,
        WebServer(settings, url, "127.0.0.1", 0) as web,
        httpx.AsyncClient(base_url=web.url, timeout=30) as http,
    ):
        job_id = await client.submit("get the total price", type="float", text=INVOICE)
        assert await client.result(job_id, timeout=60) == 165.5
        assert len(await client.events.read(job_id)) > 5
        for path in (f"/api/jobs/{job_id}", f"/jobs/{job_id}", "/jobs", "/dead", "/metrics"):
            assert (await http.get(path)).status_code == 200, path
    admin = redis.Redis(port=port)
    # redis-py names itself on each new connection (CLIENT SETINFO) and ignores a refusal;
    # the rule leaves it out, as Redis before 7.2 cannot name that subcommand alone
    denied = [
        entry
        for entry in admin.acl_log()
        if entry.get("username") == "postel"
        and not (entry["object"].startswith("client") and entry["reason"] == "command")
    ]
    admin.close()
    assert denied == [], denied


async def test_a_user_without_time_is_refused_at_start_naming_it(start_redis: object) -> None:
    port = start_redis([])  # type: ignore[operator]
    url = acl_user(port, "notime", f"{ACL_RULE} -time")
    with pytest.raises(RedisRefused, match=r"lacks permissions postel needs: \+time \(NOPERM\)"):
        await connect_arq(url)
    done = await asyncio.to_thread(worker_exit, url)
    assert done.returncode == EXIT_REDIS_REFUSED, done.stderr
    assert "+time" in done.stderr and "Traceback" not in done.stderr


# TLS: a CA, and certificates it signs, made here


def _name(common: str) -> object:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(directory: Path) -> tuple[object, object]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("postel test CA"))  # type: ignore[arg-type]
        .issuer_name(_name("postel test CA"))  # type: ignore[arg-type]
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    write(directory / "ca", key, cert)
    return key, cert


def issue(directory: Path, name: str, ca: tuple[object, object], san: object) -> Path:
    """A certificate for `san` signed by `ca`: writes NAME.crt and NAME.key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))  # type: ignore[arg-type]
        .issuer_name(ca_cert.subject)  # type: ignore[attr-defined]
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([san]), critical=False)  # type: ignore[list-item]
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),  # type: ignore[attr-defined]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    write(directory / name, key, cert)
    return directory / name


def write(stem: Path, key: object, cert: object) -> None:
    from cryptography.hazmat.primitives import serialization

    stem.with_suffix(".key").write_bytes(
        key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    stem.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))  # type: ignore[attr-defined]


def tls_redis_server() -> str:
    """A redis-server built with TLS (the one on PATH may not be)."""
    for candidate in (shutil.which("redis-server"), "/usr/bin/redis-server"):
        if candidate is None or not Path(candidate).exists():
            continue
        probe = subprocess.run(
            [candidate, "--port", "0", "--tls-port", "0", "--tls-cert-file", "/nonexistent"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if "Bad directive" not in probe.stdout + probe.stderr:
            return candidate
    pytest.skip("no redis-server built with TLS support here")


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, Path]:
    pytest.importorskip("cryptography")
    from cryptography import x509

    ca = make_ca(tmp_path)
    return {
        "ca": tmp_path / "ca.crt",
        "wrong": issue(tmp_path, "wrong", ca, x509.DNSName("wrong.example")),
        "loopback": issue(
            tmp_path, "loopback", ca, x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        ),
        "client": issue(tmp_path, "client", ca, x509.DNSName("postel-client")),
    }


def tls_args(server: Path, ca: Path, clients: str) -> list[str]:
    return [
        "--tls-cert-file",
        str(server.with_suffix(".crt")),
        "--tls-key-file",
        str(server.with_suffix(".key")),
        "--tls-ca-cert-file",
        str(ca),
        "--tls-auth-clients",
        clients,
    ]


async def ping(url: str) -> None:
    client = redis_client(url)
    try:
        await client.ping()
    finally:
        await client.aclose()


async def test_a_certificate_for_another_host_is_refused(
    start_redis: object, certificates: dict[str, Path]
) -> None:
    executable = tls_redis_server()
    ca = certificates["ca"]
    port = start_redis(tls_args(certificates["wrong"], ca, "no"), executable, tls=True)  # type: ignore[operator]
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    with pytest.raises(redis.exceptions.ConnectionError) as raised:
        await ping(url)
    refused = refusal(raised.value, url)
    assert refused is not None and "TLS with Redis failed" in str(refused)
    assert "127.0.0.1" in str(refused), str(refused)
    with pytest.raises(RedisRefused):
        await RideOut("test").failed(raised.value)
    done = await asyncio.to_thread(worker_exit, url)
    assert done.returncode == EXIT_REDIS_REFUSED, done.stderr
    assert "postel: TLS with Redis failed" in done.stderr and "Traceback" not in done.stderr


async def test_a_certificate_for_the_host_is_accepted_with_the_ca_file_only(
    start_redis: object, certificates: dict[str, Path], settings: Settings
) -> None:
    executable = tls_redis_server()
    ca = certificates["ca"]
    port = start_redis(tls_args(certificates["loopback"], ca, "no"), executable, tls=True)  # type: ignore[operator]
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    await ping(url)
    pool = await connect_arq(url)
    await pool.aclose()
    with pytest.raises(redis.exceptions.ConnectionError) as raised:
        await ping(f"rediss://127.0.0.1:{port}/0")  # the system's CAs do not know the test CA
    assert refusal(raised.value) is not None


async def test_a_client_certificate_is_presented(
    start_redis: object, certificates: dict[str, Path], settings: Settings
) -> None:
    executable = tls_redis_server()
    ca, client = certificates["ca"], certificates["client"]
    port = start_redis(tls_args(certificates["loopback"], ca, "yes"), executable, tls=True)  # type: ignore[operator]
    base = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    url = (
        f"{base}&ssl_certfile={client.with_suffix('.crt')}&ssl_keyfile={client.with_suffix('.key')}"
    )
    await ping(url)
    model = Model(ScriptedClient.from_cassette(CASSETTE), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=url, resources={RESOURCE: model}),
        Client(url, settings) as postel,
    ):
        job_id = await postel.submit("get the total price", type="float", text=INVOICE)
        assert await postel.result(job_id, timeout=60) == 165.5
    with pytest.raises(redis.exceptions.ConnectionError):
        await ping(base)  # the server asks for a client certificate
