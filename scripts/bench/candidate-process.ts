// A holder in its own OS process, so the benchmark can SIGKILL or SIGSTOP it.
// Usage: candidate-process.ts baton|etcd|floor <url> <agent-or-prefix-or-room> <ttl-seconds>
// Prints "leading" once it leads; exits when its stdin closes (the benchmark went away).
import { BatonCandidate, EtcdCandidate, FloorCandidate, type Candidate } from "./candidates.ts";
import { EtcdGateway } from "./etcd.ts";

const [system, url, name, ttl] = process.argv.slice(2);
if (!system || !url || !name || !ttl) {
  console.error("usage: candidate-process.ts baton|etcd|floor <url> <name> <ttl-seconds>");
  process.exit(2);
}
const ttlSeconds = Number(ttl);
const candidate: Candidate = system === "baton"
  ? new BatonCandidate(url, name, `holder-${process.pid}`, ttlSeconds * 1000)
  : system === "floor"
    ? new FloorCandidate(url, name, true)
    : new EtcdCandidate(new EtcdGateway(url), name, ttlSeconds);
candidate.leading.then(
  () => process.stdout.write("leading\n"),
  (e: Error) => {
    console.error(e.message);
    process.exit(1);
  },
);
process.stdin.resume();
process.stdin.on("end", () => {
  candidate.close();
  process.exit(0);
});
