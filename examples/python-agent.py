#!/usr/bin/env python3
"""A baton agent written in Python with the `baton` package (python/ in this repository).
Start it on every machine that may run the agent; exactly one of them handles each message,
the others stand by and take over when it stops or dies.

    python examples/python-agent.py reviewer      (BATON_URL and BATON_TOKEN as for the CLI)
    npx baton send reviewer "hello" --wait

The handler is cancelled (CancelledError at its next await) the moment this process may no
longer act on the message; it gets the serve fence and the message token to attach to its own
writes, and the checkpoint the previous holder saved. Raising fails the attempt (the coordinator
retries it); the returned text is the reply.
"""

import asyncio
import os
import signal
import socket
import sys

import baton

AGENT = sys.argv[1] if len(sys.argv) > 1 else "reviewer"
MACHINE = os.environ.get("BATON_MACHINE") or socket.gethostname()


async def handler(message: baton.Message, ctx: baton.MessageContext) -> str:
    handled = ((ctx.checkpoint or {}).get("handled", 0) if isinstance(ctx.checkpoint, dict) else 0) + 1
    await asyncio.sleep(0.1)  # real work goes here; it is cancelled when the lease is lost
    await ctx.save_checkpoint({"handled": handled})
    return f"{AGENT} on {MACHINE} (fence {ctx.fence}), message {handled}: {message.text.upper()}\n"


async def main() -> None:
    # Leaving the block releases the lease, so a standby takes over at once instead of after the TTL.
    async with baton.serve(
        AGENT, handler,
        url=os.environ.get("BATON_URL", "http://127.0.0.1:8787"),
        token=os.environ.get("BATON_TOKEN", "baton-dev-token"),
        machine=MACHINE,
        on_status=lambda s: print(f"{AGENT}: {s['kind']}" + (f" (fence {s['fence']})" if "fence" in s else ""),
                                  file=sys.stderr, flush=True),
    ):
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()  # cancelled, and the refusal raised, when the coordinator refuses the token or name


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (ValueError, baton.CoordinatorError) as err:  # a bad URL, token or agent name: one line, as the CLI
        raise SystemExit(f"{AGENT}: {err}") from None
