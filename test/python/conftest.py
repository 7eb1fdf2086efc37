"""Fixtures for the Python client tests: one real `wrangler dev` per test session (dev_server.py's,
or the one scripts/test-python.mjs started for all its runs), Python serve processes, and HTTP helpers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from dev_server import DEV_TOKEN, READ_ONLY_TOKEN, ROOT, Dev, start_dev, stop_dev

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def dev():
    """The server scripts/test-python.mjs started for all its runs (BATON_PY_DEV_URL), or one of this session's own."""
    shared = os.environ.get("BATON_PY_DEV_URL")
    if shared:
        d = Dev(shared, None, None)
        d.persist = Path(os.environ["BATON_PY_DEV_PERSIST"])
        yield d
        return
    d, out = start_dev()
    try:
        yield d
    finally:
        stop_dev(d, out)


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
