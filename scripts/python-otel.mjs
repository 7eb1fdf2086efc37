// What the Python tracing tests need in the clean venv of scripts/test-python.mjs (never in the
// Debian run, which has no OpenTelemetry package): opentelemetry-api 1.45, the version the `otel`
// extra of python/pyproject.toml is tested with, and opentelemetry-sdk 1.45 for its in-memory
// exporter when the index offers the SDK's opentelemetry-semantic-conventions (the index these
// machines use does not: test/python/otel_spans.py then records spans on the API alone). When
// the API cannot be installed, test_tracing.py's tracing tests skip with that reason and this says so.
const API = "opentelemetry-api==1.45.0";
const SDK = "opentelemetry-sdk==1.45.0";

/** Installs them into the venv of `py` with `sh` (test-python.mjs's); returns false (and says why) when pip cannot install the API. */
export function installOpenTelemetry(py, sh) {
  try {
    sh(`${py} -m pip install -qq --retries 0 --no-compile ${API}`);
  } catch (err) {
    console.log(`-- ${API} could not be installed (${err.message.split("\n")[0]}): test_tracing.py's tracing tests skip`);
    return false;
  }
  try {
    sh(`${py} -m pip install -qq --retries 0 --no-compile ${SDK}`, { stdio: "ignore" });
  } catch {
    console.log(`-- ${SDK} could not be installed (its opentelemetry-semantic-conventions is not on the index): spans are recorded on the API alone`);
  }
  return true;
}
