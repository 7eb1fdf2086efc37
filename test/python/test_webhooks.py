"""Standard Webhooks from Python: the `standardwebhooks` package is not offered by this machine's
package index, so a hand verifier written from the specification is first checked against the
spec's published example, then verifies a real `webhook.test` delivery from `wrangler dev` to a
receiver on a loopback port."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
import uuid

from conftest import Dev


def verify(secret: str, headers: dict[str, str], body: bytes, now: float | None = None) -> bool:
    """Standard Webhooks v1: any `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>` in
    webhook-signature matches, with the key the base64 after `whsec_`, within 5 minutes."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs((now if now is not None else time.time()) - int(timestamp)) > 300:
        return False
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(sig, f"v1,{expected}") for sig in headers["webhook-signature"].split(" "))


def test_the_hand_verifier_accepts_the_specifications_example_and_refuses_a_changed_one():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    headers = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
               "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
    body = b'{"test": 2432232314}'
    assert verify(secret, headers, body, now=1614265330)
    assert not verify(secret, headers, b'{"test": 2432232315}', now=1614265330)
    assert not verify(secret, headers, body, now=1614265330 + 301)
    assert verify(secret, {**headers, "webhook-signature": "v1,bm90IGl0 " + headers["webhook-signature"]}, body, now=1614265330)


def test_a_real_webhook_test_delivery_verifies_in_python(dev: Dev):
    got: list[tuple[dict[str, str], bytes]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the handler's name is http.server's)
            body = self.rfile.read(int(self.headers["content-length"]))
            got.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = f"py-hook-{uuid.uuid4().hex[:8]}"
        url = f"http://127.0.0.1:{server.server_port}/hook"
        status, view = dev.request("PUT", f"/agents/{agent}/webhook", {"url": url})
        assert status == 200, view
        secret = view["secret"]
        assert secret.startswith("whsec_")
        status, result = dev.request("POST", f"/agents/{agent}/webhook/test")
        assert status == 200, result
        assert result["status"] == 204 and result["delivered"] is True
        headers, body = got[0]
        assert headers["webhook-id"] == result["id"]
        assert headers["baton-event-type"] == "webhook.test"
        assert verify(secret, headers, body)
        assert not verify("whsec_" + base64.b64encode(b"x" * 32).decode(), headers, body)
        assert json.loads(body)["type"] == "webhook.test"
    finally:
        server.shutdown()
