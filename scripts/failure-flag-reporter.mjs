// A vitest reporter that only marks, in the file named by BATON_TEST_FAILURE_FLAG, that the run had
// a failing test or file, as soon as it happens: scripts/test-phase.mjs must not retry such a run
// when it later hangs.
import { writeFileSync } from "node:fs";

function mark() {
  const flag = process.env.BATON_TEST_FAILURE_FLAG;
  if (flag) writeFileSync(flag, "failed\n");
}

export default class FailureFlagReporter {
  onTestCaseResult(testCase) {
    if (testCase.result().state === "failed") mark();
  }

  onTestModuleEnd(testModule) {
    if (testModule.state() === "failed") mark();
  }
}
