"""The servers the tests start: the ports they listen on, and the private PostgreSQL fixtures
(they start, answer, stop, and leave nothing behind)."""

import os
import socket
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from bench import _stores
from bench._servers import free_port, server_ports
from tests import servers
from tests.servers import Postgres


def family(pid: int) -> set[int]:
    """``pid`` and every process whose parent it is (PostgreSQL's background workers)."""
    found = {pid}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The field after the parenthesised command name is the state, then the parent's pid.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists()}


def outgoing_low() -> int:
    """Where the kernel's ports for outgoing connections begin, read from the kernel."""
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_a_free_port_is_one_no_client_connection_can_take_and_a_server_can_bind() -> None:
    # A client's socket takes its port from the outgoing range: a server port below it cannot
    # be taken between its pick and the server's bind by the connections the tests open.
    low = outgoing_low()
    picked = [free_port() for _ in range(50)]
    assert all(1024 <= port < low for port in picked), (low, picked)
    assert len(set(picked)) > 40, "picked at random: processes starting servers at once differ"
    with socket.create_server(("127.0.0.1", picked[0])) as server:
        assert server.getsockname()[1] == picked[0]


def listen_on_consecutive_ports(count: int, held: ExitStack) -> list[socket.socket]:
    """Sockets listening on ``count`` consecutive server ports (free when found), open until
    ``held`` closes."""
    ports = server_ports()
    for start in range(ports.start, ports.stop - count, count):
        attempt = ExitStack()
        try:
            listening = [
                attempt.enter_context(socket.create_server(("127.0.0.1", port)))
                for port in range(start, start + count)
            ]
        except OSError:
            attempt.close()
            continue
        held.push(attempt)
        return listening
    raise AssertionError(f"no {count} free consecutive ports")


def test_a_port_a_socket_holds_is_never_handed_out_and_none_left_is_an_error() -> None:
    with ExitStack() as held:
        listening = listen_on_consecutive_ports(4, held)
        ports = range(listening[0].getsockname()[1], listening[-1].getsockname()[1] + 1)
        freed = listening[1].getsockname()[1]
        listening[1].close()  # a listener closed with no connection leaves its port free at once
        assert {free_port(ports) for _ in range(20)} == {freed}
        held.enter_context(socket.create_server(("127.0.0.1", freed)))
        with pytest.raises(RuntimeError, match=f"no free loopback port in {ports.start}-"):
            free_port(ports)


def test_postgres_starts_answers_and_leaves_nothing_behind() -> None:
    server = servers.new_postgres()
    with _stores.running(server):
        assert server.psql("SELECT 6 * 7") == "42"
        assert server.psql("SHOW listen_addresses") == "127.0.0.1"
        assert server.psql("SHOW fsync") == "off"
        major = server.psql("SELECT current_setting('server_version_num')::int / 10000")
        assert int(major) >= _stores.POSTGRES_MIN_VERSION
        assert server.process is not None
        started = family(server.process.pid)
        assert len(started) > 1  # the postmaster and its workers
    assert server.process.poll() is not None
    assert not _stores.port_open(server.port)
    assert alive(started) == set()
    assert not server.folder.exists()


def test_postgres_restart_keeps_data_on_the_same_port(private_postgres: Postgres) -> None:
    url = private_postgres.create_database()
    database = url.rsplit("/", 1)[1]
    private_postgres.psql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)", database)
    private_postgres.stop()
    assert not _stores.port_open(private_postgres.port)
    with pytest.raises(subprocess.CalledProcessError):
        private_postgres.psql("SELECT 1")
    private_postgres.start()
    assert private_postgres.psql("SELECT n FROM kept", database) == "7"


def test_postgres_url_is_a_fresh_database_dropped_afterwards(postgres_server: Postgres) -> None:
    url = postgres_server.create_database()
    database = url.rsplit("/", 1)[1]
    assert url == f"postgresql://postgres@127.0.0.1:{postgres_server.port}/{database}"
    assert postgres_server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
                                database) == "0"  # fmt: skip
    postgres_server.drop_database(url)
    listed = postgres_server.psql(f"SELECT count(*) FROM pg_database WHERE datname = '{database}'")
    assert listed == "0"


def test_drop_database_refuses_any_other_name(postgres_server: Postgres) -> None:
    with pytest.raises(ValueError, match="not a test database"):
        postgres_server.drop_database(postgres_server.url("postgres"))


def test_a_server_that_fails_to_start_is_reported_not_waited_for(tmp_path: Path) -> None:
    # No cluster was made in ``tmp_path`` (no initdb): postgres exits at once, saying so.
    server = Postgres(bin_dir=servers.required_postgres_bin(), folder=tmp_path)
    with pytest.raises(RuntimeError, match=r"PostgreSQL on port \d+ exited with \d+ before"):
        server.start()


def test_missing_server_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL nowhere"):
        servers.require(_stores.postgres_bin(Path("/nowhere")), "no PostgreSQL nowhere")


def test_missing_server_fails_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but no PostgreSQL"):
        servers.require(_stores.postgres_bin(tmp_path), "no PostgreSQL here")


def test_postgres_older_than_15_is_not_used(tmp_path: Path) -> None:
    for version in ("13", "14"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "postgres").touch()
    assert _stores.postgres_bin(tmp_path) is None
    (tmp_path / "16" / "bin").mkdir(parents=True)
    (tmp_path / "16" / "bin" / "postgres").touch()
    assert _stores.postgres_bin(tmp_path) == tmp_path / "16" / "bin"
    assert os.path.isdir(tmp_path / "16" / "bin")
