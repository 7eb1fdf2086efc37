"""One real `wrangler dev` for the Python client tests (2 s heartbeat TTL, 1 s presence scan, 1 s
preference hysteresis, the test clock): started by conftest.py's session fixture, or once by
scripts/test-python.mjs for all its pytest runs (`python3 dev_server.py`: prints the server as a JSON
line, stops it when its stdin closes), so that the start-up overlaps the clean venv's install and
the Debian run needs none of its own."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
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
    def __init__(self, url: str, proc: subprocess.Popen[bytes] | None, log: Path | None) -> None:
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
    # A dev registry of its own: wrangler devs of one name share ~/.config/.wrangler/registry/baton, and
    # one that exits deletes the file another is about to touch (ENOENT: that one crashes).
    env = {**os.environ, "WRANGLER_SEND_METRICS": "false", "CLOUDFLARE_CF_FETCH_ENABLED": "false", "CI": "true", "NO_COLOR": "1",
           "WRANGLER_REGISTRY_PATH": str(Path(persist) / "registry")}
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


def start_dev() -> tuple[Dev, Any]:
    """A started server and its open log file; a start-up that lost a port is tried again on others."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return _start_dev()
        except PortLost:
            if attempt == PORT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def stop_dev(d: Dev, out: Any) -> None:
    _stop_dev(d.proc)
    out.close()


def main() -> None:
    d, out = start_dev()
    try:
        print(json.dumps({"url": d.url, "persist": str(d.persist)}), flush=True)
        sys.stdin.read()  # until whoever started this closes it (or exits)
    finally:
        stop_dev(d, out)


if __name__ == "__main__":
    main()
