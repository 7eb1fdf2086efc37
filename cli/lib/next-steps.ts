// The commands the CLI suggests for a parked message: each one works as printed (the words in
// brackets are optional), so a question with choices is answered with `baton answer … CHOICE`, never
// `baton approve`, which such a question refuses.
import { shellWord } from "./printable.ts";

/** Every command that answers the message, one per choice, then reject. */
export function answerCommands(agent: string, id: number, choices: readonly string[]): string[] {
  const picks = choices.length > 0 ? choices.map((c) => `baton answer ${agent} ${id} ${shellWord(c)} [TEXT]`) : [`baton approve ${agent} ${id} [TEXT]`];
  return [...picks, `baton reject ${agent} ${id} [REASON]`];
}

/** The same in a few words: `baton answer A 3 ship|hold, or baton reject A 3`, or `baton approve|reject A 3`. */
export function answerHint(agent: string, id: number, choices: readonly string[]): string {
  if (choices.length === 0) return `baton approve|reject ${agent} ${id}`;
  return `baton answer ${agent} ${id} ${choices.map(shellWord).join("|")}, or baton reject ${agent} ${id}`;
}
