"""Session leases from Python against a real wrangler dev."""

from __future__ import annotations

import asyncio
import time

import pytest

import baton
from conftest import DEV_TOKEN, unique


def test_race_among_20_tasks_grants_exactly_one(dev):
    session = unique("race")

    async def contender(i: int, go: asyncio.Event) -> tuple[str, int | None]:
        await go.wait()
        try:
            async with baton.session_lease(session, url=dev.url, token=DEV_TOKEN, ttl=10) as lease:
                await asyncio.sleep(1.5)  # hold it while everybody else tries
                assert lease.fence >= 1 and lease.fence_token == f"{lease.fence:016d}"
                assert await lease.check()
                return "granted", lease.fence
        except baton.LeaseHeldError:
            return "held", None

    async def main():
        go = asyncio.Event()
        tasks = [asyncio.create_task(contender(i, go)) for i in range(20)]
        await asyncio.sleep(0.05)
        go.set()
        return await asyncio.gather(*tasks)

    outcomes = asyncio.run(main())
    granted = [o for o in outcomes if o[0] == "granted"]
    assert len(granted) == 1, outcomes
    assert sum(1 for o in outcomes if o[0] == "held") == 19
    # Released on exit: the next grant is at once, with a larger fence.
    status, body = dev.request("POST", f"/leases/{session}/acquire", {"run_id": "00000000-0000-4000-8000-000000000001", "ttl_seconds": 5})
    assert status == 201 and body["fence"] > granted[0][1], (status, body)


def test_wait_queues_behind_the_holder(dev):
    session = unique("wait")

    async def main():
        order = []

        async def first():
            async with baton.session_lease(session, url=dev.url, token=DEV_TOKEN, ttl=5) as lease:
                order.append(("first", lease.fence))
                await asyncio.sleep(1)
            order.append(("first-released", lease.fence))

        async def second():
            await asyncio.sleep(0.3)
            async with baton.session_lease(session, url=dev.url, token=DEV_TOKEN, ttl=5, wait=True, wait_timeout=10) as lease:
                order.append(("second", lease.fence))

        await asyncio.gather(first(), second())
        return order

    order = asyncio.run(main())
    assert [o[0] for o in order] == ["first", "first-released", "second"]
    assert order[2][1] == order[0][1] + 1


def test_a_lease_that_cannot_be_proven_cancels_the_body(dev):
    """ttl 1 s, and the body blocks the event loop for 1.5 s, so no renewal can be sent in time:
    the body is cancelled at its next await and LeaseLostError comes out of the block."""
    session = unique("lapse")

    async def main():
        reached = []
        with pytest.raises(baton.LeaseLostError) as info:
            async with baton.session_lease(session, url=dev.url, token=DEV_TOKEN, ttl=1) as lease:
                time.sleep(1.5)  # blocks renewals
                try:
                    await asyncio.sleep(5)
                    reached.append("slept through")
                except asyncio.CancelledError:
                    reached.append("cancelled")
                    assert lease.lost_event.is_set()
                    raise
        return reached, info.value

    reached, err = asyncio.run(main())
    assert reached == ["cancelled"]
    assert err.code == "lapsed"


def test_long_body_is_kept_alive_by_renewals(dev):
    session = unique("renew")

    async def main():
        async with baton.session_lease(session, url=dev.url, token=DEV_TOKEN, ttl=1) as lease:
            await asyncio.sleep(3.5)  # three and a half TTLs
            assert lease.valid and await lease.check()
            return lease.fence

    assert asyncio.run(main()) >= 1


def test_run_with_session_lease_for_plain_scripts(dev):
    session = unique("sync")
    seen = []

    def job(lease):
        seen.append(lease.fence_token)
        # a second, competing run is refused while this one holds the lease
        with pytest.raises(baton.LeaseHeldError):
            baton.run_with_session_lease(session, lambda _: None, url=dev.url, token=DEV_TOKEN)
        return "done"

    assert baton.run_with_session_lease(session, job, url=dev.url, token=DEV_TOKEN, ttl=5) == "done"
    assert len(seen) == 1 and len(seen[0]) == 16


def test_unreachable_coordinator():
    async def main():
        async with baton.session_lease("x", url="http://127.0.0.1:9", token="t"):
            pass

    with pytest.raises(baton.UnreachableError):
        asyncio.run(main())


def test_a_wait_for_an_unreachable_coordinator_says_so_and_ends_at_its_wait_timeout(caplog):
    async def main():
        async with baton.session_lease("x", url="http://127.0.0.1:9", token="t", wait=True, wait_timeout=0.5):
            pass

    started = time.monotonic()
    with caplog.at_level("WARNING", logger="baton"), pytest.raises(baton.UnreachableError):
        asyncio.run(main())
    assert time.monotonic() - started < 5
    assert any("waiting; the coordinator is unreachable" in r.getMessage() for r in caplog.records)


def test_refused_token(dev):
    async def main():
        async with baton.session_lease("x", url=dev.url, token="wrong"):
            pass

    with pytest.raises(baton.CoordinatorError) as info:
        asyncio.run(main())
    assert info.value.status == 401 and info.value.code == "unauthorized"
