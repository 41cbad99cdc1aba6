"""The test servers (noida-db, Tansu) start on a free port and are known to be ours: a port that
answers may be another process's (free_port's number is free when picked; a test in another
pytest-xdist worker may take it before the server binds it), and a test must never talk to
another worker's server believing it is its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kafkaops.testing import servers


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port another process (this one, for the test) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_which_process_listens_on_a_port(taken: int) -> None:
    assert servers.pid_listens_on(os.getpid(), taken) is True
    assert servers.pid_listens_on(os.getpid(), servers.free_port()) is False


def test_a_server_asked_for_a_taken_port_fails_and_says_so(taken: int) -> None:
    with pytest.raises(RuntimeError, match=rf"noida-db did not start: 127.0.0.1:{taken} is another process's"):
        servers.start_noida(port=taken)


def test_a_server_that_exits_before_the_port_was_probed_is_told_apart_from_one_that_failed(taken: int) -> None:
    # noida-db on a taken port exits within milliseconds, before the first probe when the machine
    # is fast: the port's answer after the exit still says it is another process's (CI, 2026-12-06)
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    exited.wait(timeout=30)
    with pytest.raises(servers.PortTaken, match="another process's"):
        servers.wait_for_port("127.0.0.1", taken, timeout=5, process=exited)
    with socket.socket() as closed:  # bound, never listening: refuses connections, and no one else can take it
        closed.bind(("127.0.0.1", 0))
        with pytest.raises(RuntimeError, match="exited with code 1 before listening") as failed:
            servers.wait_for_port("127.0.0.1", closed.getsockname()[1], timeout=5, process=exited)
    assert not isinstance(failed.value, servers.PortTaken)


def test_a_chosen_port_taken_before_the_server_binds_it_is_chosen_again(taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    picks = iter([taken])
    real = servers.free_port
    monkeypatch.setattr(servers, "free_port", lambda host="127.0.0.1": next(picks, None) or real(host))
    with servers.start_noida() as server:
        assert server.port != taken
        assert servers.pid_listens_on(server.pid, server.port) is True
        with socket.create_connection((server.host, server.port), timeout=5):
            pass
