// A stand-in for `baton serve`: starts one run of the given shell script with a lifeline and prints
// "ready" once the run's first stdout line (its pids) arrived, then waits to be killed.
import { Lifeline } from "../../cli/lib/lifeline.ts";
import { startRun } from "../../cli/lib/runner.ts";

const lifeline = new Lifeline((m) => process.stderr.write(`${m}\n`));
startRun({ command: "/bin/sh", args: ["-c", process.argv[2]!], stdin: "", env: {}, lifeline,
  onStdout: (chunk) => process.stdout.write(chunk) });
setInterval(() => {}, 1000);
