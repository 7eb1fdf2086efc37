// An agent's schedules, for scripts: add one (cron with a time zone, every N seconds, or a one-off
// at a time), list, show, pause, resume and remove them. The coordinator posts each slot's message
// exactly once (docs/guides/schedules.md); a refused schedule (a bad cron names its field) is a
// CoordinatorError and nothing is stored.
import { scheduleListSchema, scheduleRemovedSchema, scheduleViewSchema, type ScheduleBody, type ScheduleView } from "../worker/wire/schedules.ts";
import { routePath } from "../worker/wire/routes.ts";
import { requestJson, type Connection } from "./http.ts";

export type { ScheduleBody, ScheduleView };

export function addSchedule(agent: string, body: ScheduleBody, conn: Connection): Promise<ScheduleView> {
  return requestJson(conn, "POST", routePath("/agents/{agent}/schedules", { agent }), scheduleViewSchema, { body });
}

export async function listSchedules(agent: string, conn: Connection): Promise<ScheduleView[]> {
  return (await requestJson(conn, "GET", routePath("/agents/{agent}/schedules", { agent }), scheduleListSchema)).schedules;
}

export function getSchedule(agent: string, id: number, conn: Connection): Promise<ScheduleView> {
  return requestJson(conn, "GET", routePath("/agents/{agent}/schedules/{schedule}", { agent, schedule: id }), scheduleViewSchema);
}

/** Its slots are recorded skipped while paused; on resume its catch-up decides about them. */
export function pauseSchedule(agent: string, id: number, conn: Connection): Promise<ScheduleView> {
  return requestJson(conn, "POST", routePath("/agents/{agent}/schedules/{schedule}/pause", { agent, schedule: id }), scheduleViewSchema);
}

export function resumeSchedule(agent: string, id: number, conn: Connection): Promise<ScheduleView> {
  return requestJson(conn, "POST", routePath("/agents/{agent}/schedules/{schedule}/resume", { agent, schedule: id }), scheduleViewSchema);
}

export async function removeSchedule(agent: string, id: number, conn: Connection): Promise<void> {
  await requestJson(conn, "DELETE", routePath("/agents/{agent}/schedules/{schedule}", { agent, schedule: id }), scheduleRemovedSchema);
}

/** "90s", "15m", "2h", "1d", "1h30m" as seconds; null when it is not such a duration. */
export function parseDuration(raw: string): number | null {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(raw.trim());
  if (!m || raw.trim() === "") return null;
  const [, d = "0", h = "0", min = "0", s = "0"] = m;
  return Number(d) * 86_400 + Number(h) * 3600 + Number(min) * 60 + Number(s);
}
