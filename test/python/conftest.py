"""Fixtures for the Python client tests: one real `wrangler dev` per test session (2 s heartbeat
TTL, 1 s presence scan, 1 s preference hysteresis), Python serve processes, and HTTP helpers."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEV_TOKEN = "baton-dev-token"
# A token of account dev named "wall" with the read scope only (BATON_TOKENS below keeps the dev token's every scope).
READ_ONLY_TOKEN = "py-read-only-token"


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Dev:
    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.proc = proc
        self.log = log

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"authorization": f"Bearer {DEV_TOKEN}", "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def post_message(self, agent: str, text: str) -> int:
        status, body = self.request("POST", f"/agents/{agent}/messages", {"text": text})
        assert status == 201, (status, body)
        return body["id"]

    def message(self, agent: str, mid: int) -> dict[str, Any]:
        status, body = self.request("GET", f"/agents/{agent}/messages/{mid}")
        assert status == 200, (status, body)
        return body

    def freeze_clock(self, agent: str) -> None:
        """Stops the agent object's clock (BATON_TEST_CLOCK): for a test about something other than
        expiry, whose CPU-heavy handler must not cost the runner its 2 s lease on a busy machine."""
        status, body = self.request("POST", "/test/clock", {"advance_ms": 0, "agent": agent})
        assert status == 200, (status, body)

    def wait_message(self, agent: str, mid: int, done: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            m = self.message(agent, mid)
            if done(m):
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"message {mid} never reached the expected state: {m}")
            time.sleep(0.1)


# A port found free can be taken before wrangler binds it (the suite's lanes run side by side):
# such a start-up is tried again on new ports, this many times in all.
PORT_ATTEMPTS = 5


def _port_lost(output: str) -> bool:
    return "Address already in use" in output or "EADDRINUSE" in output


def _start_dev() -> tuple[Dev, Any]:
    """Starts `wrangler dev` on ports free right now; raises PortLost when one was taken before it bound."""
    port, inspector = free_port(), free_port()
    persist = tempfile.mkdtemp(prefix="baton-py-state-")
    log = Path(tempfile.mkdtemp(prefix="baton-py-log-")) / "wrangler.log"
    wrangler = ROOT / "node_modules" / ".bin" / "wrangler"
    cmd = [str(wrangler), "dev", "--ip", "127.0.0.1", "--port", str(port), "--inspector-port", str(inspector),
           "--persist-to", persist, "--log-level", "warn", "--show-interactive-dev-session=false",
           "--var", "BATON_HEARTBEAT_TTL_SECONDS:2", "--var", "BATON_PRESENCE_SCAN_SECONDS:1",
           "--var", "BATON_PREFERENCE_HYSTERESIS_SECONDS:1",
           "--var", "BATON_TEST_CLOCK:true",
           "--var", f"BATON_TOKENS:dev:{_sha256(DEV_TOKEN)},dev:wall:read:{_sha256(READ_ONLY_TOKEN)}"]
    env = {**os.environ, "WRANGLER_SEND_METRICS": "false", "CLOUDFLARE_CF_FETCH_ENABLED": "false", "CI": "true", "NO_COLOR": "1"}
    out = open(log, "wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    d = Dev(f"http://127.0.0.1:{port}", proc, log)
    d.persist = Path(persist)  # where wrangler dev keeps its state (R2 objects included)
    deadline = time.monotonic() + 90
    try:
        while True:
            if proc.poll() is not None:
                text = log.read_text()
                raise (PortLost if _port_lost(text) else RuntimeError)(f"wrangler dev exited {proc.returncode}:\n{text}")
            # Still running but said it lost a port (whatever answers there is not ours): start again on others.
            if _port_lost(log.read_text()):
                raise PortLost(f"wrangler dev lost a port:\n{log.read_text()}")
            try:
                answered = d.request("GET", "/agents/health/presence")[0] == 200
            except (OSError, ValueError):  # not listening yet, or something that does not answer JSON
                answered = False
            if answered and proc.poll() is None and not _port_lost(log.read_text()):
                return d, out
            if time.monotonic() > deadline:
                raise RuntimeError(f"wrangler dev did not answer in time:\n{log.read_text()}")
            time.sleep(0.2)
    except BaseException:
        _stop_dev(proc)
        out.close()
        raise


class PortLost(RuntimeError):
    pass


def _stop_dev(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def dev():
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            d, out = _start_dev()
            break
        except PortLost:
            if attempt == PORT_ATTEMPTS:
                raise
    try:
        yield d
    finally:
        _stop_dev(d.proc)
        out.close()


class Proc:
    """A child process whose stdout JSON lines are collected (by a thread)."""

    def __init__(self, args: list[str], env: dict[str, str], tag: str) -> None:
        self.tag = tag
        self.lines: list[dict[str, Any]] = []
        self.stderr_path = Path(tempfile.mkdtemp(prefix=f"baton-py-{tag}-")) / "stderr"
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self._err, stdin=subprocess.DEVNULL)
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            with self._lock:
                self.lines.append(line)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for(self, pick: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                found = next((l for l in self.lines if pick(l)), None)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.tag}: no matching line in {timeout} s; saw {self.lines}\nstderr:\n{self.stderr()}")
            if self.proc.poll() is not None and found is None:
                time.sleep(0.2)
                with self._lock:
                    found = next((l for l in self.lines if pick(l)), None)
                if found is not None:
                    return found
                raise AssertionError(f"{self.tag} exited {self.proc.returncode}; saw {self.lines}\nstderr:\n{self.stderr()}")
            time.sleep(0.02)

    def signal(self, sig: int) -> None:
        try:
            self.proc.send_signal(sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
        self.proc.wait(10)
        self._err.close()


def status_is(kind: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a status line of agent_proc.py whose status kind is `kind` (holder, standby, lapsed)."""

    def pick(line: dict[str, Any]) -> bool:
        return line.get("line") == "status" and line.get("status", {}).get("kind") == kind

    return pick


def event_is(kind: str) -> Callable[[dict[str, Any]], bool]:
    """Matches an event line of agent_proc.py of the given type (held, demoted, ran, releasing...)."""

    def pick(line: dict[str, Any]) -> bool:
        return line.get("line") == "event" and line.get("event", {}).get("type") == kind

    return pick


def python_agent(dev: Dev, agent: str, tag: str, sink: Path, **env: str) -> Proc:
    """Starts test/python/agent_proc.py serving `agent` under the venv's interpreter."""
    full = {**os.environ, "BATON_URL": dev.url, "BATON_TOKEN": DEV_TOKEN, "TAG": tag, "SINK": str(sink), **env}
    return Proc([sys.executable, str(HERE / "agent_proc.py"), agent], full, tag)


def read_sink(sink: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(l) for l in sink.read_text().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def wait_sink(sink: Path, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 20) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        lines = read_sink(sink)
        if done(lines):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"sink never matched: {lines}")
        time.sleep(0.05)


def wait_until(check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    """Polls ``check`` until it returns something truthy (and returns that); fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.05)
    return found


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def procs():
    """Processes started by a test; killed (SIGCONT, SIGKILL) after it."""
    started: list[Proc] = []
    yield started
    for p in started:
        p.kill()
