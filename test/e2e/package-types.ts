// What a user's strict `tsc` says about a file of theirs that imports an installed package: the
// compiler's errors in that file and in every declaration file the package ships (a .d.ts that
// imports one left out of the tarball is an error here, as it is for a user without skipLibCheck).
// Errors inside TypeScript's own lib, @types/node or the package's dependencies are theirs, not the
// package's, and checking them fully is most of a plain `tsc` run (12 of 15 CPU-seconds, 2026-12-07).
import ts from "typescript";
import { join, sep } from "node:path";
import { ROOT } from "./wrangler-dev.ts";

/** `tsc --noEmit --strict --module nodenext` on `file` in `dir`, its errors as tsc prints them ("" when none). */
export function packageTypeErrors(dir: string, file: string, pkg: string): string {
  const program = ts.createProgram([join(dir, file)], {
    noEmit: true, strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, typeRoots: [join(ROOT, "node_modules/@types")], types: ["node"],
  });
  const shipped = join(dir, "node_modules", pkg) + sep;
  const checked = program.getSourceFiles().filter((f) => f.fileName === join(dir, file) || f.fileName.startsWith(shipped));
  if (!checked.some((f) => f.fileName.startsWith(shipped))) return `${file} reaches no declaration file of ${pkg}`;
  const errors = [
    ...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(), ...program.getSyntacticDiagnostics(),
    ...checked.flatMap((f) => program.getSemanticDiagnostics(f)),
  ];
  return ts.formatDiagnostics(errors, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => "\n" });
}
