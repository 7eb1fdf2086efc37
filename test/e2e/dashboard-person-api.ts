// The HTTP side of the dashboard's end-to-end files (dashboardFixture's `http`): what the test
// reads and posts beside the page, with the file's token.
import { expect } from "vitest";

export interface View {
  status: string;
  reply: string | null;
  attempts: number;
  question: { text: string | null } | null;
  answers: { choice: string; text: string | null; via: string; token: string; account: string }[];
}

export interface Presence {
  controls: { paused: boolean; drained: { machine: string }[] };
  work: { running: { id: number; claim_seq: number | null; machine: string | null }[]; parked: { id: number }[] };
}

/** Polls `check` every 50 ms until it answers something truthy; throws naming `what` past the timeout. */
export async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The coordinator at `url` as the test's person and operator see it over HTTP, with `token`. */
export function personApi(url: string, token: string) {
  async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  async function postMessage(agent: string, text: string): Promise<number> {
    const res = await api<{ id: number }>("POST", `/agents/${agent}/messages`, { text });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function view(agent: string, id: number): Promise<View> {
    return (await api<View>("GET", `/agents/${agent}/messages/${id}`)).body;
  }

  async function presence(agent: string): Promise<Presence> {
    return (await api<Presence>("GET", `/agents/${agent}/presence`)).body;
  }

  function waitForStatus(agent: string, id: number, status: string): Promise<View> {
    return until(async () => {
      const v = await view(agent, id);
      return v.status === status ? v : null;
    }, `message ${id} of ${agent} ${status}`);
  }

  /** POST /agents/{agent}/pause, /unpause, /drain or /undrain, which must answer 200. */
  async function control(agent: string, route: "pause" | "unpause" | "drain" | "undrain", body: object = {}): Promise<void> {
    expect((await api("POST", `/agents/${agent}/${route}`, body)).status).toBe(200);
  }

  return { api, postMessage, view, presence, waitForStatus, control };
}
