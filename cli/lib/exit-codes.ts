// Exit codes shared by every command; a command with more documents them in its help (and the
// CLI reference, docs/reference/cli.md). 2 for usage mistakes follows the common convention (bash builtins, getopt).
export const EXIT = {
  ok: 0,
  /** The coordinator refused, could not be reached, or something else went wrong. */
  failure: 1,
  /** Unknown option, wrong number of arguments, or an invalid value. */
  usage: 2,
  /** The command to run does not exist or is not executable (as a shell says it). */
  notFound: 127,
} as const;

export interface ExitCodeDoc {
  /** A number, or a word such as "other" for a rule (a run's own exit code). */
  code: number | string;
  meaning: string;
}

export const COMMON_EXIT_CODES: readonly ExitCodeDoc[] = [
  { code: EXIT.ok, meaning: "success" },
  { code: EXIT.failure, meaning: "the coordinator refused (e.g. a wrong token) or could not be reached" },
  { code: EXIT.usage, meaning: "usage error: unknown option, wrong arguments, invalid value" },
];
