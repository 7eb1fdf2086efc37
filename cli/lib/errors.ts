/** A user mistake: printed as one line with usage advice, exit code 1, no stack. */
export class CLIError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = "CLIError";
  }
}
