// How every chaos mode runs its main: everything it started is stopped on SIGINT or SIGTERM (logs
// kept, exit 130) and at the end (logs kept when the run failed or asked to keep them), and the
// process exits with main's code.
export function runMode(main: () => Promise<number>, stopAll: (keepLogs: boolean) => Promise<void>, keepLogs: () => boolean): void {
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => void stopAll(true).then(() => process.exit(130)));
  }
  main()
    .catch((e: Error) => {
      console.error(e.stack ?? e.message);
      return 1;
    })
    .then(async (code) => {
      await stopAll(keepLogs() || code !== 0);
      process.exit(code);
    });
}
