"""A Python serve process for the tests: serves AGENT with baton.serve and prints every status
and event as one JSON line on stdout (with a wall-clock "t"). Its handler appends a JSON line per
run to $SINK ("start" and "end"), sleeps $RUN_SLEEP seconds, then replies "$TAG did: TEXT". With
SWALLOW=1 it ignores its cancellation and returns a late reply anyway (which must not be posted).
$CONCURRENCY and $PRIORITY (default 1 and 0) are passed to serve(). Stops cleanly (releasing the
lease) on SIGTERM."""

import asyncio
import json
import os
import signal
import sys
import time

import baton

AGENT = sys.argv[1]
TAG = os.environ.get("TAG", "py")
SINK = os.environ.get("SINK")
RUN_SLEEP = float(os.environ.get("RUN_SLEEP", "0") or 0)
SWALLOW = os.environ.get("SWALLOW") == "1"
CONCURRENCY = int(os.environ.get("CONCURRENCY", "1") or 1)
PRIORITY = int(os.environ.get("PRIORITY", "0") or 0)


def emit(line: str, data: dict) -> None:
    print(json.dumps({"line": line, "t": time.time(), **data}), flush=True)


def sink(phase: str, message: baton.Message, ctx: baton.MessageContext) -> None:
    if SINK:
        with open(SINK, "a") as f:
            f.write(json.dumps({"tag": TAG, "id": message.id, "fence": ctx.fence, "token": ctx.token,
                                "attempt": message.attempt, "phase": phase}) + "\n")


async def handler(message: baton.Message, ctx: baton.MessageContext) -> str:
    sink("start", message, ctx)
    if RUN_SLEEP:
        try:
            await asyncio.sleep(RUN_SLEEP)
        except asyncio.CancelledError:
            emit("handler_cancelled", {"id": message.id, "reason": str(ctx.lost)})
            if not SWALLOW:
                raise
            return f"late {TAG} did: {message.text}"
    sink("end", message, ctx)
    return f"{TAG} did: {message.text}"


async def main() -> None:
    handle = await baton.serve(AGENT, handler, url=os.environ["BATON_URL"], token=os.environ["BATON_TOKEN"],
                               machine=f"machine-{TAG}", concurrency=CONCURRENCY, priority=PRIORITY, on_status=lambda s: emit("status", {"status": s}),
                               on_event=lambda e: emit("event", {"event": e}))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await asyncio.wait([asyncio.get_running_loop().create_task(stop.wait()), handle.done], return_when=asyncio.FIRST_COMPLETED)
    await handle.stop()
    emit("stopped", {})


asyncio.run(main())
