// The trace context baton hands on: a W3C traceparent parsed from a message (all-zero ids are no
// context), and a span's own only when an SDK records it, so a command never gets an all-zero
// TRACEPARENT when the API is installed without an SDK.
import * as api from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { parseTraceparent, traceparentOf } from "../../client/tracing.ts";

describe("trace context", () => {
  it("parses a W3C traceparent and refuses all-zero or malformed ones", () => {
    const ok = parseTraceparent(api, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    expect(api.trace.getSpanContext(ok!)).toMatchObject({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true });
    for (const bad of ["00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "01-x", "", null]) {
      expect(parseTraceparent(api, bad)).toBeNull();
    }
  });

  it("a span no SDK records has no traceparent to hand on", () => {
    const span = api.trace.getTracer("t").startSpan("x");
    expect(traceparentOf(api, span)).toBeNull();
    span.end();
  });
});
