// Debian's packages the tests need, and one way to install those missing: the suite installs them
// all in one apt-get at its start (two apt-gets at once would fight over dpkg's lock), and
// test-python.mjs, run alone, installs its own when missing.
import { execSync } from "node:child_process";

/** The oldest websockets the Python package supports, and what its Debian run needs around it. */
export const PYTHON_DEBS = ["python3-websockets", "python3-pytest", "python3-venv", "python3-setuptools", "python3-wheel", "python3-build"];

export function installed(pkg) {
  try {
    execSync(`dpkg-query -W -f='\${Status}' ${pkg} 2>/dev/null | grep -q 'install ok installed'`, { stdio: "ignore", shell: "/bin/sh" });
    return true;
  } catch {
    return false;
  }
}

/** The apt-get command line that installs `packages` (with sudo unless root); waits for a held dpkg lock. */
export function aptInstall(packages) {
  const sudo = process.getuid?.() === 0 ? "" : "sudo -n ";
  return `${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 ${packages.join(" ")} >/dev/null`;
}
