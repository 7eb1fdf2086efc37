"""One wire, two languages: the Python client checks frames against the JSON Schema generated from
the TypeScript schemas (python/baton/wire-schema.json; test/unit/wire-schema.test.ts fails when it drifts)."""

from baton._wire import valid_client_frame, valid_server_frame


def test_frames_the_client_sends_match_the_coordinators_schema():
    assert valid_client_frame({"type": "serve_lease", "op": "claim", "runner_id": "run-1"})
    assert valid_client_frame({"type": "reply", "id": 3, "token": 7, "key": "3:reply", "text": "ok", "req": "r1"})
    assert valid_client_frame({"type": "fail", "id": 3, "token": 7, "reason": "boom"})
    # The older fence-only ack is refused by the coordinator, and so here.
    assert not valid_client_frame({"type": "ack", "id": 3, "fence": 2})
    assert not valid_client_frame({"type": "reply", "id": 0, "token": 7, "key": "k", "text": "x"})
    assert not valid_client_frame({"type": "no_such_frame"})


def test_frames_from_the_coordinator_are_checked_like_the_typescript_client_does():
    assert valid_server_frame({"type": "pong"})
    assert valid_server_frame({"type": "revoked", "id": 1, "token": 2, "reason": "run_timeout"})
    assert not valid_server_frame({"type": "revoked", "id": 1, "token": 2, "reason": "because"})
    assert valid_server_frame({"type": "serve_lease", "held": True, "fence": 1, "claim_seq": 1, "position": 0, "ttl_ms": 2000, "holder": None})
    assert not valid_server_frame({"type": "serve_lease", "held": "yes", "fence": 1, "claim_seq": 1, "position": 0, "ttl_ms": 2000, "holder": None})


def test_journal_frames_match_the_coordinators_schema():
    from baton._wire import step_name_pattern

    step = {"type": "step", "id": 3, "token": 7, "name": "pay", "kind": "effect", "phase": "intent", "on_unknown": "ask", "req": "r2"}
    assert valid_client_frame(step)
    assert valid_client_frame({**step, "phase": "done", "value": {"receipt": 1}})
    assert not valid_client_frame({**step, "on_unknown": "sometimes"})
    assert not valid_client_frame({**step, "kind": "task"})
    # JavaScript's `$` ends the input: a name with a trailing newline is refused as the coordinator refuses it.
    assert not valid_client_frame({**step, "name": "pay\n"})
    assert step_name_pattern().fullmatch("a:b.c_d-e") and not step_name_pattern().fullmatch("-a")
    assert valid_client_frame({"type": "heartbeat", "id": 3, "token": 7, "details": {"done": "half"}, "req": "r3"})
    assert valid_server_frame({"type": "result", "op": "step", "req": "r2", "id": 3, "token": 7, "name": "pay", "status": "done",
                               "duplicate": False, "value": 1})
    assert valid_server_frame({"type": "result", "op": "heartbeat", "req": "r3", "id": 3, "token": 7, "expires_at": None})


def test_the_limits_the_client_enforces_are_the_wires_own():
    """LIMITS comes from worker/wire/protocol.ts through the generated _wire_types.py, never a hand copy."""
    import json
    from importlib import resources

    import baton
    from baton import _handler, _journal_rules, _run_blobs, _socket

    wire = {"frameBytes": _socket.FRAME_BYTES, "replyTextBytes": _journal_rules.REPLY_BYTES,
            "checkpointBytes": _journal_rules.CHECKPOINT_BYTES, "failReasonChars": _handler.FAIL_REASON_CHARS,
            "stepValueBytes": _journal_rules.STEP_VALUE_BYTES, "blobBytes": _run_blobs.BLOB_BYTES,
            "stepNameChars": _handler.STEP_NAME_CHARS}
    assert {k: baton.LIMITS[k] for k in wire} == wire
    schema = json.loads(resources.files("baton").joinpath("wire-schema.json").read_text("utf-8"))
    assert json.loads(json.dumps(baton.LIMITS, default=dict)) == schema["limits"]
    assert baton.LIMITS["leaseTtlSeconds"] == {"min": 1, "max": 3600, "default": 30}
    try:
        baton.LIMITS["frameBytes"] = 1  # type: ignore[index]
    except TypeError:
        pass
    else:
        raise AssertionError("LIMITS must be read-only")


def test_paths_come_from_the_coordinators_route_table():
    import pytest
    from baton._routes import route_path
    from baton._wire_types import ON_DEADLINE, ROUTE_PATHS

    assert route_path("/agents/{agent}/messages/{id}/cancel", agent="a b/c", id=3) == "/agents/a%20b%2Fc/messages/3/cancel"
    assert "/leases/{session}/data" in ROUTE_PATHS and ON_DEADLINE == ("fail", "approve", "reject", "escalate")
    with pytest.raises(ValueError, match="no route /agents/{agent}/nope"):
        route_path("/agents/{agent}/nope", agent="x")
    with pytest.raises(ValueError, match="needs id"):
        route_path("/agents/{agent}/messages/{id}/cancel", agent="x")
