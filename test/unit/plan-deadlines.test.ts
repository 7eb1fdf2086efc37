// Phase 7: the next alarm (worker/rules/plan/deadlines.ts).
import { describe, expect, it } from "vitest";
import { nextAlarm, type DeadlineInput } from "../../worker/rules/plan/deadlines.ts";
import type { AgentPlan } from "../../worker/rules/agent-plan.ts";
import { message, NOW, running, TTL } from "./plan-fixtures.ts";

const BASE: DeadlineInput = {
  now: NOW, ttlMs: TTL, scanMs: 60_000, liveHeartbeats: [NOW], holderHeartbeat: NOW, open: [], parkDeadline: null, ownDeadlines: [], candidates: [],
  preference: { holderClaim: 1, holderBusy: false, paused: false, hysteresisMs: 0, reserved: null, now: NOW }, alarmAt: null,
};

describe("nextAlarm", () => {
  const cases: { name: string; over: Partial<DeadlineInput>; alarm: AgentPlan["alarm"] }[] = [
    { name: "the holder is looked at halfway to its deadline", over: {}, alarm: { set: NOW + TTL / 2 } },
    { name: "capped by the scan interval", over: { scanMs: 100 }, alarm: { set: NOW + 100 } },
    { name: "a message deadline earlier than any scan", over: { open: [running(7, "1", { expiresAt: NOW + 10 })] }, alarm: { set: NOW + 10 } },
    { name: "a park deadline", over: { parkDeadline: NOW + 20 }, alarm: { set: NOW + 20 } },
    { name: "one of the object's own deadlines", over: { ownDeadlines: [null, NOW + 30] }, alarm: { set: NOW + 30 } },
    { name: "a retry backoff still ahead", over: { liveHeartbeats: [], holderHeartbeat: undefined, open: [message(3, { retryAt: NOW + 40 })] }, alarm: { set: NOW + 40 } },
    { name: "never in the past", over: { liveHeartbeats: [], holderHeartbeat: undefined, parkDeadline: NOW - 5 }, alarm: { set: NOW + 1 } },
    { name: "an alarm already due earlier is left alone", over: { alarmAt: NOW + 100 }, alarm: null },
    { name: "with nothing to watch, a set alarm is deleted", over: { liveHeartbeats: [], holderHeartbeat: undefined, alarmAt: NOW + 100 }, alarm: "delete" },
    { name: "with nothing to watch and none set, nothing", over: { liveHeartbeats: [], holderHeartbeat: undefined }, alarm: null },
  ];
  for (const c of cases) it(c.name, () => expect(nextAlarm({ ...BASE, ...c.over })).toEqual(c.alarm));
});
