import { describe, it } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { laneFiles, relativeImports, splitLanes } from "../../support/suite-lanes.ts";

describe("relativeImports", () => {
  it("static, type-only, side-effect and dynamic imports and re-exports; not packages", () => {
    const source = [
      `import { a } from "./a.ts";`,
      `import type { B } from '../b.ts';`,
      `import "./side-effect.ts";`,
      `export { c } from "./c.ts";`,
      `const d = await import("./d.ts");`,
      `import * as k8s from "@kubernetes/client-node";`,
      `import path from "node:path";`,
      `// a comment naming "./e.ts" is not an import`,
    ].join("\n");
    assert.deepEqual(relativeImports(source), ["./a.ts", "../b.ts", "./side-effect.ts", "./c.ts", "./d.ts"]);
  });
});

describe("splitLanes", () => {
  const modules = { lock: "/r/test/harness/stack/real-node-lock.ts", shared: "/r/test/support/real-node-file.ts", alongside: "/r/test/support/real-node-alongside.ts" };
  const sources: Record<string, string> = {
    "/r/test/a.test.ts": `import { acquireRealNodeLock } from "./harness/stack/real-node-lock.ts";`,
    "/r/test/b.test.ts": `import { startRealNodeFile } from "./support/real-node-file.ts";`,
    "/r/test/support/real-node-file.ts": `import { x } from "../harness/stack/real-node-lock.ts";`,
    "/r/test/c.test.ts": `import { up } from "./harness/stack/stack.ts"; import * as k8s from "@kubernetes/client-node";`,
    "/r/test/harness/stack/stack.ts": `import { state } from "./state.ts";`,
    "/r/test/harness/stack/state.ts": `import { up } from "./stack.ts";`,
    "/r/test/d.test.ts": `const m = await import("./support/real-node-file.ts");`,
    "/r/test/support/real-node-alongside.ts": `import { startRealNodeFile } from "./real-node-file.ts";`,
    "/r/test/e.test.ts": `import { startRealNodeFileAlongside } from "./support/real-node-alongside.ts";`,
  };
  const read = (f: string) => sources[f];
  it("a file whose imports reach the lock, directly, through others or dynamically, takes the real node; the rest do not, a circle included", () => {
    const files = ["/r/test/a.test.ts", "/r/test/b.test.ts", "/r/test/c.test.ts", "/r/test/d.test.ts"];
    assert.deepEqual(splitLanes(files, modules, read).others, ["/r/test/c.test.ts"]);
  });
  it("in the real-node lane, the files with a node of their own first, then those on the shared stack, each group in the given order", () => {
    const files = ["/r/test/b.test.ts", "/r/test/d.test.ts", "/r/test/a.test.ts"];
    assert.deepEqual(splitLanes(files, modules, read).realNode, ["/r/test/a.test.ts", "/r/test/b.test.ts", "/r/test/d.test.ts"]);
  });
  it("a file that reaches the alongside module holds the shared stack beside the others like it, apart from those that hold it alone", () => {
    const lanes = splitLanes(["/r/test/e.test.ts", "/r/test/b.test.ts", "/r/test/c.test.ts"], modules, read);
    assert.deepEqual(lanes, { realNode: ["/r/test/b.test.ts"], alongside: ["/r/test/e.test.ts"], others: ["/r/test/c.test.ts"] });
  });
  it("a missing module reaches nothing", () => {
    assert.deepEqual(splitLanes(["/r/test/missing.test.ts"], modules, read), { realNode: [], alongside: [], others: ["/r/test/missing.test.ts"] });
  });
  it("this repository's real-node files are in the lane, the VPA's alone (its webhook sees every Pod) and in-place's beside others; a kwok file and the demo's CLI (its demo takes the lock after its builds) are not", () => {
    const root = path.resolve(import.meta.dirname, "../../..");
    const files = ["test/integration/harness/real-node.test.ts", "test/integration/memory-scaler-in-place-real-node.test.ts", "test/integration/vpa-real-node.test.ts", "test/e2e/demo-cli.test.ts", "test/unit/support/suite-lanes.test.ts"]
      .map((f) => path.join(root, f));
    const lanes = laneFiles(root, files);
    assert.deepEqual(lanes.realNode.map((f) => path.relative(root, f)), ["test/integration/harness/real-node.test.ts", "test/integration/vpa-real-node.test.ts"]);
    assert.deepEqual(lanes.alongside.map((f) => path.relative(root, f)), ["test/integration/memory-scaler-in-place-real-node.test.ts"]);
  });
});
