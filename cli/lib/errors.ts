// How the CLI fails: a CLIError is a user-facing failure printed as one line (no stack) with its
// exit code; a UsageError is a mistake in the command line itself (exit 2, with a pointer to --help).
import { EXIT } from "./exit-codes.ts";

export class CLIError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failure) {
    super(message);
    this.name = "CLIError";
  }
}

export class UsageError extends CLIError {
  /** `helpHint`: the command line itself is malformed, so point at --help. */
  constructor(message: string, readonly helpHint = false) {
    super(message, EXIT.usage);
    this.name = "UsageError";
  }
}
