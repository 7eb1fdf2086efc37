"""What a Python user sees when something is wrong: a bad URL fails at once in the CLI's words, a
refused token or agent name ends serving with a one-line CoordinatorError (no internals chained to
it), and a callback that raises is logged, never swallowed. Also ``async with baton.serve(...)``."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import traceback

import pytest

from conftest import DEV_TOKEN, ROOT, unique

BIN = ROOT / "dist" / "cli" / "main.js"
BAD_URLS = ["127.0.0.1:8787", "localhost:8787/", "ftp://example.com", "http://"]


def cli_words(url: str) -> str:
    """What `baton who` prints for a bad --url, without the "baton: " prefix."""
    run = subprocess.run(["node", str(BIN), "who", "x", "--url", url], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2, (run.returncode, run.stderr)
    (line,) = run.stderr.strip().splitlines()
    return line.removeprefix("baton: ")


async def reply(message, ctx):
    return f"did {message.text}"


def internals_in(err: BaseException) -> list[str]:
    """Frames of baton's own modules in what a user's traceback of ``err`` would print."""
    text = "".join(traceback.format_exception(err))
    return [line for line in text.splitlines() if "/baton/" in line and line.strip().startswith("File ")]


@pytest.mark.skipif(not BIN.exists(), reason="dist/cli/main.js missing: run `npm run build` first")
@pytest.mark.parametrize("url", BAD_URLS)
def test_a_bad_url_fails_at_once_in_the_words_of_the_cli(url: str):
    import baton

    words = cli_words(url)

    async def main():
        with pytest.raises(ValueError) as served:
            async with asyncio.timeout(2):
                await baton.serve("a", lambda m, c: None, url=url, token=DEV_TOKEN)
        with pytest.raises(ValueError) as leased:
            async with asyncio.timeout(2):
                async with baton.session_lease("s", url=url, token=DEV_TOKEN):
                    pass
        return served.value, leased.value

    served, leased = asyncio.run(main())
    with pytest.raises(ValueError) as answered:
        baton.approve("a", 1, url=url, token=DEV_TOKEN, timeout=2)
    assert [str(served), str(leased), str(answered.value)] == [words] * 3


def test_a_refused_token_ends_serving_with_a_one_line_coordinator_error(dev):
    import baton

    async def main():
        handle = await baton.serve(unique("py-token"), lambda m, c: None, url=dev.url, token="wrong", machine="m")
        with pytest.raises(baton.CoordinatorError) as info:
            async with asyncio.timeout(10):
                await handle.done
        await handle.stop()
        return info.value

    err = asyncio.run(main())
    assert (err.status, err.code) == (401, "unauthorized")
    assert str(err) == f"the coordinator at {dev.url} refused the token"
    assert internals_in(err) == [], "".join(traceback.format_exception(err))


def test_a_bad_agent_name_ends_serving_with_a_one_line_coordinator_error(dev):
    import baton

    async def main():
        handle = await baton.serve("Not A Name!", lambda m, c: None, url=dev.url, token=DEV_TOKEN, machine="m")
        with pytest.raises(baton.CoordinatorError) as info:
            async with asyncio.timeout(10):
                await handle.done
        await handle.stop()
        return info.value

    err = asyncio.run(main())
    assert (err.status, err.code) == (400, "bad_name")
    assert str(err) == "not a valid name: agent names are 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
    assert internals_in(err) == [], "".join(traceback.format_exception(err))


def test_a_status_callback_that_raises_is_logged_and_serving_goes_on(dev, caplog):
    import baton

    agent = unique("py-callback")
    caplog.set_level(logging.ERROR, logger="baton")

    def on_status(status):
        raise RuntimeError(f"status printer broke on {status['kind']}")

    def on_event(event):
        raise KeyError("event printer broke")

    async def main():
        handle = await baton.serve(agent, reply, url=dev.url, token=DEV_TOKEN, machine="m",
                                   on_status=on_status, on_event=on_event)
        mid = await asyncio.to_thread(dev.post_message, agent, "x")
        m = await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "acknowledged")
        await handle.stop()
        return m

    m = asyncio.run(main())
    assert m["reply"] == "did x"
    logged = [(r.name, r.exc_info[0] if r.exc_info else None) for r in caplog.records]
    assert ("baton", RuntimeError) in logged and ("baton", KeyError) in logged, logged
    assert any("on_status" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_serve_as_an_async_context_manager_serves_and_releases_on_exit(dev):
    import baton

    agent = unique("py-with")

    async def main():
        async with baton.serve(agent, reply, url=dev.url, token=DEV_TOKEN, machine="with") as serving:
            assert isinstance(serving, baton.ServeHandle)
            mid = await asyncio.to_thread(dev.post_message, agent, "x")
            m = await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "acknowledged")
        assert serving.done.done() and serving.done.exception() is None
        _, presence = await asyncio.to_thread(dev.request, "GET", f"/agents/{agent}/presence")
        return m, presence

    m, presence = asyncio.run(main())
    assert m["reply"] == "did x"
    assert presence["holder"] is None, presence  # released on exit, not left to expire


def test_a_refusal_while_serving_in_async_with_cancels_the_block_and_raises(dev):
    import baton

    async def main():
        with pytest.raises(baton.CoordinatorError) as info:
            async with asyncio.timeout(10):
                async with baton.serve(unique("py-with"), lambda m, c: None, url=dev.url, token="wrong", machine="m"):
                    await asyncio.Event().wait()  # would wait for ever: the refusal cancels it
        return info.value

    err = asyncio.run(main())
    assert err.code == "unauthorized"


def test_serve_neither_awaited_nor_entered_warns_as_a_forgotten_coroutine_does():
    import baton

    with pytest.warns(RuntimeWarning, match="neither awaited nor used with async with"):
        baton.serve("a", reply, url="http://127.0.0.1:9", token="t")
