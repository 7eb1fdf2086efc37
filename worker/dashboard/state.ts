// What the page knows, shared by the feed (session.ts), which writes it, and the views, which
// read it. The shapes are the wire's (worker/wire/server-frames.ts, http-responses.ts).
import type { DirectoryEntry, ObserverFrame } from "../wire/server-frames.ts";
import type { MessageView } from "../wire/http-responses.ts";
import type { Confirmations } from "./confirm.ts";
import type { Answer } from "./api.ts";

export type { DirectoryEntry, MessageView, ObserverFrame };
export type Transition = DirectoryEntry["transitions"][number];
export type Connection = DirectoryEntry["connections"][number];
export type ParkedItem = DirectoryEntry["work"]["parked"][number];
export type RunningItem = DirectoryEntry["work"]["running"][number];
export type RecentMessage = DirectoryEntry["recent_messages"][number];
export type Step = MessageView["steps"][number];
export type AnswerRecord = MessageView["answers"][number];

export interface PageState {
  agents: Map<string, DirectoryEntry>;
  /** Per agent, the machine of every claim this page has seen (a transition may outlive its connection). */
  machines: Map<string, Map<number, string>>;
  /** Per agent, every transition seen within the longest range (timeline.ts keptTransitions). */
  transitions: Map<string, Transition[]>;
  /** Server time minus this browser's time, from the latest frame. */
  clockOffset: number;
  loaded: boolean;
  signedOut: boolean;
  unreachable: boolean;
  unreachableSince: number;
  /** The token's scopes from /whoami; none until it answered, so no button shows before it is known. */
  scopes: string[];
  windowMs: number;
}

/** What the token may do: answer questions (answer or admin), change controls and retry (admin), send. */
export interface Abilities {
  answer: boolean;
  admin: boolean;
  send: boolean;
}

export function abilities(scopes: readonly string[]): Abilities {
  const has = (scope: string) => scopes.includes(scope) || scopes.includes("admin");
  return { answer: has("answer"), admin: has("admin"), send: has("send") };
}

/** What a card's actions need: what the token may do, the confirmations, and the POST that acts. */
export interface Ui {
  can: Abilities;
  confirmations: Confirmations;
  act: (agent: string, route: string, body: object, done: string) => Promise<Answer>;
  /** Pool mode: every runner takes messages. */
  pool?: boolean;
  /** A message's live output pane (output-view.ts): a running one's, or one already shown; else null. */
  output?: (agent: string, id: number, status: string) => HTMLElement | null;
}
