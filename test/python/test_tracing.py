"""OpenTelemetry spans of the Python client against a real wrangler dev, as test/e2e/tracing.test.ts
proves them for TypeScript: ``baton.send`` is a PRODUCER span whose traceparent the message
carries; each attempt of the message is an ``invoke_agent`` span under it, on whichever machine ran
it, with the fence, token, attempt and outcome; a failover shows as two sibling attempts in one
trace, the first ending in lease loss, the second replaying the recorded step and running the effect
under its key. A message sent by the TypeScript CLI within a trace runs in Python within the same.

Without opentelemetry-api (the Debian run: it is no Debian package) the tracing tests skip; the
clean-venv run installs it (scripts/python-otel.mjs). What must hold without it runs everywhere."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

import pytest

import baton
from conftest import DEV_TOKEN, ROOT, unique
from e2e_helpers import until

HAS_OTEL = importlib.util.find_spec("opentelemetry") is not None and importlib.util.find_spec("opentelemetry.trace") is not None
needs_otel = pytest.mark.skipif(not HAS_OTEL, reason="opentelemetry-api is not installed here (the clean-venv run installs it)")
BIN = ROOT / "dist" / "cli" / "main.js"


@pytest.fixture
def spans():
    from otel_spans import spans as collected

    s = collected()
    s.clear()
    yield s
    s.clear()


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes)


@needs_otel
def test_a_message_that_failed_over_is_one_trace_send_then_attempt_1_on_a_lease_lost_and_attempt_2_on_b_replied_as_siblings(dev, spans):
    from opentelemetry.trace import SpanKind
    from otel_spans import render

    agent = unique("py-otel")
    started: list[bool] = []

    def handler(machine: str):
        async def handle(message, ctx):
            await ctx.step("plan", lambda: "the plan")
            if machine == "a":
                started.append(True)
                await ctx.lost_event.wait()  # hangs until a is stopped
            await ctx.effect("charge", lambda effect: f"charged under {effect.key}")
            return "done"

        return handle

    async def main() -> dict[str, Any]:
        a = await baton.serve(agent, handler("a"), url=dev.url, token=DEV_TOKEN, machine="a")
        b = None
        try:
            await until(lambda: a.status["kind"] == "holder", "a holds")
            b = await baton.serve(agent, handler("b"), url=dev.url, token=DEV_TOKEN, machine="b")
            await until(lambda: b.status["kind"] == "standby", "b stands by")
            posted = await asyncio.to_thread(baton.send, agent, "charge the customer", url=dev.url, token=DEV_TOKEN)
            await until(lambda: bool(started), "a started")
            await a.stop()
            await asyncio.to_thread(dev.wait_message, agent, posted["id"], lambda m: m["status"] == "acknowledged")
            await until(lambda: len(spans.named("invoke_agent")) == 2, "two runs traced")
            return posted
        finally:
            await a.stop()
            if b is not None:
                await b.stop()

    posted = asyncio.run(main())
    [sent] = spans.named("send")
    assert sent.kind == SpanKind.PRODUCER
    assert attrs(sent) == {"gen_ai.agent.name": agent, "baton.message.id": posted["id"]}
    runs = sorted(spans.named("invoke_agent"), key=lambda s: s.attributes["baton.attempt"])
    for run in runs:
        assert run.kind == SpanKind.CONSUMER
        assert run.context.trace_id == sent.context.trace_id
        assert run.parent is not None and run.parent.span_id == sent.context.span_id
        assert attrs(run) | {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "baton.message.id": posted["id"],
                             "gen_ai.conversation.id": f"{agent}:{posted['id']}"} == attrs(run)
        assert isinstance(run.attributes["baton.fence"], int) and isinstance(run.attributes["baton.token"], int)
    assert [(r.attributes["baton.machine"], r.attributes["baton.attempt"], r.attributes["baton.outcome"]) for r in runs] == [
        ("a", 1, "lease_lost"), ("b", 2, "replied")]
    assert [e.name for e in runs[0].events] == ["baton.lease_lost"]
    assert runs[0].events[0].attributes["baton.reason.code"] == "stopped"
    assert runs[1].attributes["baton.fence"] > runs[0].attributes["baton.fence"]
    assert [(s.name, s.attributes["baton.replayed"]) for s in spans.children_of(runs[0])] == [("baton.step plan", False)]
    second = spans.children_of(runs[1])
    assert [(s.name, s.attributes["baton.replayed"]) for s in second] == [("baton.step plan", True), ("execute_tool charge", False)]
    charge = attrs(second[1])
    assert charge["gen_ai.operation.name"] == "execute_tool" and charge["gen_ai.tool.name"] == "charge"
    assert charge["gen_ai.tool.call.id"].startswith("baton:") and charge["gen_ai.tool.call.id"].endswith(f":{agent}:{posted['id']}:charge")
    assert charge["baton.effect.outcome"] == "done"
    print("\n" + render(spans.finished(), sent))  # the sample trace in docs/guides/tracing.md


@needs_otel
def test_the_handler_sees_its_run_spans_traceparent_and_its_own_spans_nest_under_the_run(dev, spans):
    from opentelemetry import trace

    agent = unique("py-otel")
    seen: list[str] = []

    async def handle(message, ctx):
        seen.append(message.traceparent)
        with trace.get_tracer("the handler").start_as_current_span("the handler's own work"):
            await ctx.step("inner", lambda: 1)
        await ctx.heartbeat()
        return "ok"

    async def main() -> None:
        async with baton.serve(agent, handle, url=dev.url, token=DEV_TOKEN, machine="a") as a:
            await until(lambda: a.status["kind"] == "holder", "a holds")
            posted = await asyncio.to_thread(baton.send, agent, "hi", url=dev.url, token=DEV_TOKEN, group="talk-1")
            await asyncio.to_thread(dev.wait_message, agent, posted["id"], lambda m: m["status"] == "acknowledged")
            await until(lambda: len(spans.named("invoke_agent")) == 1, "the run traced")

    asyncio.run(main())
    [run] = spans.named("invoke_agent")
    [own] = spans.named("the handler's own work")
    [step] = spans.named("baton.step inner")
    c = run.context
    assert seen == [f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"]
    assert run.attributes["gen_ai.conversation.id"] == "talk-1"
    assert own.parent.span_id == c.span_id and step.parent.span_id == c.span_id  # a step is the run's child wherever it is called
    assert [e.name for e in run.events] == ["baton.heartbeat"]


@needs_otel
def test_failed_and_parked_runs_say_so_and_tracing_false_leaves_runs_untraced(dev, spans):
    from opentelemetry.trace import StatusCode

    agent, quiet = unique("py-otel"), unique("py-otel-quiet")

    async def handle(message, ctx):
        if message.text == "fail":
            raise RuntimeError("no luck")
        await ctx.ask("go ahead?")
        return "asked"

    async def main() -> None:
        async with baton.serve(agent, handle, url=dev.url, token=DEV_TOKEN, machine="a") as a, \
                baton.serve(quiet, lambda m, ctx: asyncio.sleep(0, "ok"), url=dev.url, token=DEV_TOKEN, tracing=False) as q:
            await until(lambda: a.status["kind"] == "holder" and q.status["kind"] == "holder", "both hold")
            await asyncio.to_thread(dev.request, "PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
            failed = await asyncio.to_thread(baton.send, agent, "fail", url=dev.url, token=DEV_TOKEN)
            parked = await asyncio.to_thread(baton.send, agent, "ask", url=dev.url, token=DEV_TOKEN)
            untraced = await asyncio.to_thread(baton.send, quiet, "hi", url=dev.url, token=DEV_TOKEN)
            await asyncio.to_thread(dev.wait_message, agent, failed["id"], lambda m: m["status"] == "failed")
            await asyncio.to_thread(dev.wait_message, agent, parked["id"], lambda m: m["status"] == "parked")
            await asyncio.to_thread(dev.wait_message, quiet, untraced["id"], lambda m: m["status"] == "acknowledged")
            await until(lambda: len(spans.named("invoke_agent")) == 2, "two runs traced")

    asyncio.run(main())
    runs = {s.attributes["baton.message.id"]: s for s in spans.named("invoke_agent")}
    assert sorted(s.attributes["baton.outcome"] for s in runs.values()) == ["failed", "parked"]
    failed = next(s for s in runs.values() if s.attributes["baton.outcome"] == "failed")
    parked = next(s for s in runs.values() if s.attributes["baton.outcome"] == "parked")
    assert failed.status.status_code == StatusCode.ERROR and failed.status.description == "no luck"
    assert parked.status.status_code == StatusCode.UNSET
    [ask] = spans.children_of(parked)
    assert ask.name == "baton.ask" and ask.attributes["baton.ask.waiting"] is True
    assert not [s for s in spans.named("invoke_agent") if s.attributes["gen_ai.agent.name"] == quiet]
    assert len([s for s in spans.named("send") if s.attributes["gen_ai.agent.name"] == quiet]) == 1


@needs_otel
@pytest.mark.skipif(not BIN.exists(), reason="dist/cli/main.js missing: run `npm run build` first")
def test_a_message_sent_by_the_typescript_cli_within_a_trace_runs_in_python_within_that_trace(dev, spans):
    from opentelemetry import trace

    agent = unique("py-otel-ts")

    async def main() -> int:
        async with baton.serve(agent, lambda m, ctx: ctx.step("s", lambda: "ok"), url=dev.url, token=DEV_TOKEN, machine="py") as a:
            await until(lambda: a.status["kind"] == "holder", "py holds")
            with trace.get_tracer("test").start_as_current_span("a script") as outer:
                c = outer.get_span_context()
                env = {**os.environ, "BATON_URL": dev.url, "BATON_TOKEN": DEV_TOKEN,
                       "TRACEPARENT": f"00-{c.trace_id:032x}-{c.span_id:016x}-01"}
                out = await asyncio.to_thread(subprocess.run, ["node", str(BIN), "send", agent, "from node", "--json"], env=env,
                                              capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            mid = json.loads(out.stdout)["id"]
            await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "acknowledged")
            await until(lambda: len(spans.named("invoke_agent")) == 1, "the run traced")
            return mid

    mid = asyncio.run(main())
    [outer] = spans.named("a script")
    [run] = spans.named("invoke_agent")
    assert run.attributes["baton.message.id"] == mid
    assert run.context.trace_id == outer.context.trace_id and run.parent.span_id == outer.context.span_id


def test_send_refuses_bad_input_before_anything_is_sent(dev):
    agent = unique("py-send")
    for bad, says in [({"text": ""}, "non-empty"), ({"text": "x", "traceparent": "00-abc"}, "W3C traceparent"),
                      ({"text": "x", "run_timeout_seconds": 0}, "run_timeout_seconds")]:
        with pytest.raises(ValueError, match=says):
            baton.send(agent, url=dev.url, token=DEV_TOKEN, **bad)
    assert dev.request("GET", f"/agents/{agent}/messages")[1].get("messages", []) == []


@pytest.mark.parametrize("api", ["absent", "installed without a tracer provider"])
def test_send_and_serve_work_without_opentelemetry_or_without_a_provider_and_import_baton_loads_none_of_it(dev, api):
    """Without the API nothing is imported and a given traceparent is carried as is; with it but
    no provider registered, spans have no valid context, so a post outside any trace carries none
    (never an all-zero one the coordinator would refuse). `import baton` imports none of it."""
    if api != "absent" and not HAS_OTEL:
        pytest.skip("opentelemetry-api is not installed here (the clean-venv run installs it)")
    agent = unique("py-send")
    script = f"""
import asyncio, sys
import baton
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "import baton loaded opentelemetry"
if {api == "absent"!r}:
    sys.modules["opentelemetry"] = None  # as if it were not installed
from baton import _tracing
tp = "00-{"ab" * 16}-{"cd" * 8}-01"
seen = []
async def handle(message, ctx):
    seen.append(message.traceparent)
    return await ctx.step("s", lambda: "ok")
async def main():
    async with baton.serve({agent!r}, handle, url={dev.url!r}, token={DEV_TOKEN!r}) as h:
        first = await asyncio.to_thread(baton.send, {agent!r}, "hi", url={dev.url!r}, token={DEV_TOKEN!r}, idempotency_key="k-1")
        again = await asyncio.to_thread(baton.send, {agent!r}, "hi", url={dev.url!r}, token={DEV_TOKEN!r}, idempotency_key="k-1")
        within = await asyncio.to_thread(baton.send, {agent!r}, "hi", url={dev.url!r}, token={DEV_TOKEN!r}, traceparent=tp)
        assert first["id"] == again["id"], (first, again)  # the idempotency key reached the coordinator
        while len(seen) < 2:
            await asyncio.sleep(0.02)
asyncio.run(main())
assert seen == [None, tp], seen
assert (_tracing.load_api() is None) == {api == "absent"!r}
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=90, cwd=ROOT / "test" / "python")
    assert out.returncode == 0, out.stderr
