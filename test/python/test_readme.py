"""python/README.md's samples, run as written: the five-minute failover (two processes serving the
agent in agent.py, Ctrl-C of the holder mid-message, the standby finishes it without running the
recorded steps again) and the baton.testing sample."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import baton
from conftest import DEV_TOKEN, unique, wait_until

README = Path(__file__).resolve().parents[2] / "python" / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.S)


class Agent:
    """One `python agent.py MACHINE`, its stdout lines collected as they come."""

    def __init__(self, script: Path, machine: str, url: str) -> None:
        env = {**os.environ, "BATON_URL": url, "BATON_TOKEN": DEV_TOKEN, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, str(script), machine], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float = 20) -> None:
        wait_until(lambda: text in self.lines, f"{text!r} in {self.lines}", timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)


def test_the_five_minute_failover_runs_as_written(dev, tmp_path: Path):
    agent = unique("py-readme")
    script = tmp_path / "agent.py"
    script.write_text(python_blocks()[0].replace('"reviewer"', repr(agent)), "utf-8")
    desktop = Agent(script, "desktop", dev.url)
    laptop = None
    try:
        desktop.wait_line("status: holder")
        laptop = Agent(script, "laptop", dev.url)
        laptop.wait_line("status: standby")
        mid = baton.send(agent, "review PR 7", url=dev.url, token=DEV_TOKEN)["id"]
        desktop.wait_line(f"message {mid}: part 2 done (attempt 1)")
        desktop.proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert desktop.proc.wait(10) == 0, desktop.lines
        m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged", timeout=30)
        assert m["reply"] == ", ".join(f"part {i} done" for i in range(1, 6)), m
        assert laptop.lines[-6:] == ["status: holder"] + [f"message {mid}: part {i} done (attempt 2)" for i in range(1, 6)], laptop.lines
        recorded_by = {s["name"]: s["attempt"] for s in m["steps"]}
        assert recorded_by["part-1"] == recorded_by["part-2"] == 1 and recorded_by["part-5"] == 2, m["steps"]
    finally:
        desktop.stop()
        if laptop is not None:
            laptop.stop()


def test_the_testing_sample_passes_as_written():
    scope: dict[str, object] = {}
    exec(compile(python_blocks()[1], "README.md", "exec"), scope)
    tests = [fn for name, fn in scope.items() if name.startswith("test_")]
    assert len(tests) == 1
    tests[0]()  # type: ignore[operator]
