// The package version, read from package.json next to the sources (cli/) or the build (dist/cli/).
import { readFileSync } from "node:fs";

export function version(): string {
  for (const relative of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as { name?: unknown; version?: unknown };
      if (pkg.name === "baton-client" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not here; try the next place
    }
  }
  return "unknown";
}
