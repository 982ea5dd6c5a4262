// The Dockerfile, read statically (no Docker engine here): Node 24 stages, production
// dependencies only, a non-root user, FUNCTION choosing the function, and COPY instructions that
// take only existing paths — all the functions load at run time, nothing more.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { repoRoot } from "../stack/paths.ts";
import { copiesOf, importClosure, parseDockerfile, readDockerfile, type Dockerfile, type Stage } from "../support/dockerfile.ts";
import { FUNCTION_NAMES } from "../support/knative.ts";

/** What the image takes from the build context: the sources, schemas and package metadata. */
const ALLOWED_CONTEXT_PATHS = ["package.json", "package-lock.json", "schemas/", "functions/"];

let dockerfile: Dockerfile;
let runtime: Stage;

before(async () => {
  dockerfile = await readDockerfile();
  const last = dockerfile.stages.at(-1);
  assert.ok(last, "the Dockerfile has stages");
  runtime = last;
});

const instructions = (stage: Stage, keyword: string): string[] => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

describe("the parser", () => {
  test("reads directives, global ARGs, stages, continuations and both COPY forms", () => {
    const parsed = parseDockerfile(
      ["# syntax=docker/dockerfile:1", "ARG BASE=node:24-slim", "# a comment", "FROM ${BASE} AS deps", "RUN a \\", "  && b", "", "FROM $BASE", 'COPY --from=deps --chown=1:1 ["/x y", "./z"]', "COPY a b c/"].join("\n"),
    );
    assert.deepEqual(parsed.directives, { syntax: "docker/dockerfile:1" });
    assert.deepEqual(parsed.globalArgs, { BASE: "node:24-slim" });
    assert.deepEqual(parsed.stages.map((s) => [s.image, s.name]), [["node:24-slim", "deps"], ["node:24-slim", undefined]]);
    assert.equal(parsed.stages[0]?.instructions[0]?.args, "a && b");
    const [fromStage, fromContext] = copiesOf(parsed.stages[1] as Stage);
    assert.deepEqual(fromStage, { from: "deps", sources: ["/x y"], destination: "./z", line: 9 });
    assert.deepEqual(fromContext, { from: undefined, sources: ["a", "b"], destination: "c/", line: 10 });
    assert.throws(() => parseDockerfile("RUN x\nFROM y"), /RUN before the first FROM/);
  });
});

describe("Dockerfile", () => {
  test("is multi-stage on Node 24, with BuildKit's syntax directive", () => {
    assert.ok(dockerfile.directives.syntax?.startsWith("docker/dockerfile:"));
    assert.ok(dockerfile.stages.length >= 2, "multi-stage");
    for (const stage of dockerfile.stages) assert.match(stage.image, /^node:24([.-]|$)/, `stage ${stage.name ?? "(final)"}`);
  });

  test("installs production dependencies only, from the lock file, in a build stage", () => {
    const deps = dockerfile.stages.find((s) => instructions(s, "RUN").some((r) => /\bnpm ci\b/.test(r)));
    assert.ok(deps && deps !== runtime, "npm ci runs in a build stage");
    const npmCi = instructions(deps, "RUN").find((r) => /\bnpm ci\b/.test(r)) ?? "";
    assert.match(npmCi, /--omit=dev\b/);
    assert.deepEqual(copiesOf(deps).flatMap((c) => c.sources), ["package.json", "package-lock.json"]);
    const fromDeps = copiesOf(runtime).filter((c) => c.from !== undefined);
    assert.deepEqual(fromDeps.map((c) => [c.from, c.sources]), [[deps.name, ["/app/node_modules"]]], "only node_modules comes from the build stage");
    assert.ok(!instructions(runtime, "RUN").some((r) => /\bnpm (ci|install|i)\b/.test(r)), "no install in the final stage");
  });

  test("runs as a numeric non-root user", () => {
    const users = instructions(runtime, "USER");
    assert.equal(users.length, 1);
    const [uid, gid] = (users[0] ?? "").split(":");
    assert.ok(/^\d+$/.test(uid ?? "") && Number(uid) > 0, `USER ${users[0]}: numeric, so the kubelet can check runAsNonRoot`);
    if (gid !== undefined) assert.ok(/^\d+$/.test(gid) && Number(gid) > 0);
    // The Knative Services run with the same ids (test/unit/knative-manifests.test.ts).
    assert.equal(Number(uid), 1000);
  });

  test("FUNCTION picks the function the launcher starts; Knative's port is exposed", () => {
    assert.ok(instructions(runtime, "ARG").some((a) => /^FUNCTION(=|$)/.test(a)), "ARG FUNCTION in the final stage");
    const [cmd] = instructions(runtime, "CMD");
    assert.ok(cmd, "a CMD");
    assert.deepEqual(JSON.parse(cmd), ["sh", "-c", 'exec node functions/run.ts "$FUNCTION"'], "exec: node is PID 1 and gets SIGTERM");
    assert.ok(instructions(runtime, "ENV").some((e) => /\bFUNCTION=\$\{?FUNCTION\}?/.test(e)), "FUNCTION kept in the environment for CMD");
    assert.deepEqual(instructions(runtime, "EXPOSE"), ["8080"]);
    assert.ok(!instructions(runtime, "RUN").some((r) => /\b(tsc|build)\b/.test(r) && !/test -/.test(r)), "no build step: Node 24 strips types");
  });

  test("copies from the build context only paths that exist, and only the allowed ones", () => {
    const sources = dockerfile.stages.flatMap((s) => copiesOf(s).filter((c) => c.from === undefined).flatMap((c) => c.sources));
    assert.ok(sources.length > 0);
    for (const source of sources) {
      assert.ok(existsSync(path.join(repoRoot, source)), `${source} exists`);
      assert.ok(ALLOWED_CONTEXT_PATHS.includes(source), `${source} is one of ${ALLOWED_CONTEXT_PATHS.join(", ")}`);
    }
    for (const required of ALLOWED_CONTEXT_PATHS) assert.ok(copiesOf(runtime).some((c) => c.sources.includes(required)), `the image has ${required}`);
  });

  test(".dockerignore keeps the copied paths and drops node_modules and the local stacks", async () => {
    const patterns = (await readFile(path.join(repoRoot, ".dockerignore"), "utf8")).split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
    for (const kept of ALLOWED_CONTEXT_PATHS) {
      const top = kept.replace(/\/$/, "");
      assert.ok(!patterns.some((p) => p === top || p === `${top}/` || p === "*" || p === "**"), `${kept} is not ignored`);
    }
    for (const dropped of ["node_modules", ".git", ".stack-*"]) assert.ok(patterns.includes(dropped), `${dropped} is ignored`);
  });
});

describe("what the functions load at run time", () => {
  test("is inside the copied paths, and its packages are production dependencies", async () => {
    const entries = ["functions/run.ts", ...FUNCTION_NAMES.map((name) => `functions/${name}/index.ts`)];
    const closure = await importClosure(entries);
    for (const file of ["functions/lib/runtime/server.ts", "schemas/alert-event.schema.json", "functions/rule-sync/config.ts"]) assert.ok(closure.files.has(file), `the scan reaches ${file}`);
    for (const file of closure.files) assert.ok(ALLOWED_CONTEXT_PATHS.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p)), `${file} is in the image`);
    const pkg = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    for (const name of ["express", "cloudevents", "@kubernetes/client-node"]) assert.ok(closure.packages.has(name), `the scan finds ${name}`);
    for (const name of closure.packages) assert.ok(Object.hasOwn(pkg.dependencies, name), `${name} is a production dependency (npm ci --omit=dev installs it)`);
  });

  test("the scan skips type-only imports and follows re-exports", async () => {
    const types = await importClosure(["functions/lib/runtime/types.ts"]);
    assert.ok(!types.packages.has("pino") && !types.packages.has("cloudevents"), "types.ts imports them as types only");
    // index.ts has `export type * from "./types.ts"` and `export { … } from "./server.ts"`.
    const index = await importClosure(["functions/lib/runtime/index.ts"]);
    assert.ok(index.files.has("functions/lib/runtime/server.ts"));
    assert.ok(!index.files.has("functions/lib/runtime/types.ts"), "only ever imported as types");
    assert.ok(index.packages.has("express"));
  });
});
