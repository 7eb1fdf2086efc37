// What the Python tests of baton.langgraph need in the clean venv of scripts/test-python.mjs (never
// in the Debian run): langgraph-checkpoint 4.2 and langchain-core installed without their
// dependencies, since langchain-core's langchain-protocol is not on the index these machines use
// and `langgraph.checkpoint.base` does not import it; then langchain-core's other dependencies.
// langgraph itself does not import without langchain-protocol, so the Python side is tested on the
// saver's interface; graphs run end to end in the TypeScript tests. When the index lacks these,
// the tests skip with that reason (test/python/test_langgraph.py) and this says so.
const STEPS = [
  "--no-deps langgraph-checkpoint==4.2.0 langchain-core==1.6.5 ormsgpack==1.12.2",
  `"httpx>=0.23,<1" "jsonpatch>=1.33,<2" "langsmith>=0.3.45,<1" "packaging>=23.2" "pydantic>=2.7.4,<3" "pyyaml>=5.3,<7" "tenacity>=8.1,!=8.4.0,<10" "typing-extensions>=4.7,<5" "uuid-utils>=0.12,<1"`,
];

/** Installs them into the venv of `py` with `sh` (test-python.mjs's); returns false (and says why) when pip cannot. */
export function installLangGraphCheckpoint(py, sh) {
  try {
    for (const args of STEPS) sh(`${py} -m pip install -qq --retries 0 --no-compile ${args}`);
    return true;
  } catch (err) {
    console.log(`-- langgraph-checkpoint 4.2 could not be installed (${err.message.split("\n")[0]}): test_langgraph.py skips`);
    return false;
  }
}
