"""Schedules in the Python client against a real wrangler dev: add_schedule makes one (a bad cron
is refused naming its field, nothing stored), list/get show it with its next slot, pause and resume
flip it, and remove_schedule takes it away; a one-off in 0 seconds posts its message at once."""

from __future__ import annotations

import time

import pytest

from conftest import DEV_TOKEN, unique


def test_schedule_calls_add_list_pause_resume_remove_and_a_one_off_posts(dev):
    import baton

    agent = unique("py-sched")
    made = baton.add_schedule(agent, "daily review", cron="0 9 * * 1-5", tz="Europe/Berlin", url=dev.url, token=DEV_TOKEN)
    assert made["cron"] == "0 9 * * 1-5" and made["tz"] == "Europe/Berlin" and made["next_slot"] is not None
    assert [s["id"] for s in baton.list_schedules(agent, url=dev.url, token=DEV_TOKEN)] == [made["id"]]
    assert baton.pause_schedule(agent, made["id"], url=dev.url, token=DEV_TOKEN)["paused"] is True
    assert baton.resume_schedule(agent, made["id"], url=dev.url, token=DEV_TOKEN)["paused"] is False
    with pytest.raises(baton.CoordinatorError) as bad:
        baton.add_schedule(agent, "x", cron="0 9 * 13 *", url=dev.url, token=DEV_TOKEN)
    assert bad.value.code == "bad_request" and 'cron field 4 (month) "13"' in str(bad.value)
    baton.remove_schedule(agent, made["id"], url=dev.url, token=DEV_TOKEN)
    assert baton.list_schedules(agent, url=dev.url, token=DEV_TOKEN) == []

    once = baton.add_schedule(agent, "right now", in_seconds=0, url=dev.url, token=DEV_TOKEN)
    assert once["at"] is not None
    deadline = time.monotonic() + 15
    while True:
        _status, page = dev.request("GET", f"/agents/{agent}/messages")
        if page["messages"]:
            break
        assert time.monotonic() < deadline, "the one-off never posted"
        time.sleep(0.05)
    assert [m["text"] for m in page["messages"]] == ["right now"]
    assert baton.list_schedules(agent, url=dev.url, token=DEV_TOKEN) == []
