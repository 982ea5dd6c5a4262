// A runtime's heap error read from the container's termination message: never an exit code alone.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ContainerChange } from "../../../../../functions/memory-scaler/model.ts";
import type { Scale, Skip } from "../../../../../functions/memory-scaler/outcome.ts";
import { holdFixedHeaps } from "../../../../../functions/memory-scaler/scale/decide/fixed-heap.ts";
import { podHeaps } from "../../../../../functions/memory-scaler/scale/decide/heap-flags.ts";
import {
  afterHeapCheck,
  checkHeapErrors,
  classifyHeapError,
  heapErrors,
  type HeapStatusLike,
  unansweredHeapError,
} from "../../../../../functions/memory-scaler/scale/decide/heap-error.ts";

/** Node.js 24's last words as PID 1 at a 256Mi limit (the real node; the log's tail as the kubelet keeps it). */
const NODE_TAIL = `<--- Last few GCs --->

[1:0x6a1c000]    61213 ms: Mark-Compact 255.9 (259.5) -> 255.8 (259.5) MB, pooled: 0 MB, 250.51 / 0.00 ms  (average mu = 0.169, current mu = 0.009) allocation failure; scavenge might not succeed
[1:0x6a1c000]    61471 ms: Mark-Compact (reduce) 256.0 (259.5) -> 255.9 (259.5) MB, pooled: 0 MB, 257.19 / 0.00 ms  (average mu = 0.091, current mu = 0.003) allocation failure; GC in old space requested


<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----

 1: 0xe1a1c0 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]
 2: 0x11e5a60 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [node]`;

const JVM_TAIL = `Exception in thread "main" java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)
\tat Hog.main(Hog.java:12)`;

describe("classifyHeapError", () => {
  const heap: [string, string, string][] = [
    ["Node.js: Reached heap limit", NODE_TAIL, "Node.js"],
    ["Node.js: Ineffective mark-compacts", "FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory", "Node.js"],
    ["Node.js: CALL_AND_RETRY_LAST", "FATAL ERROR: CALL_AND_RETRY_LAST Allocation failed - JavaScript heap out of memory", "Node.js"],
    ["JVM: Java heap space", JVM_TAIL, "JVM"],
    ["JVM: GC overhead limit exceeded", 'Exception in thread "worker-1" java.lang.OutOfMemoryError: GC overhead limit exceeded', "JVM"],
    ["Go", "fatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw({0x4b1d2e?, 0x400000?})", "Go"],
    ["Go, after a trace line", "runtime: out of memory: cannot allocate 4194304-byte block (536870912 in use)\nfatal error: out of memory\nfatal error: runtime: out of memory", "Go"],
    [".NET: OutOfMemoryException", "Unhandled exception. System.OutOfMemoryException: Exception of type 'System.OutOfMemoryException' was thrown.\n   at Program.Main()", ".NET"],
    [".NET: the runtime's own line", "GC heap initialization failed with error 0x8007000E\nOut of memory.", ".NET"],
  ];
  for (const [name, message, runtime] of heap) {
    it(`a heap error: ${name}`, () => assert.equal(classifyHeapError(message)?.runtime, runtime));
  }

  // Not the heap: a bigger heap does not answer these (heap-error.ts says why each).
  const notHeap: [string, string][] = [
    ["JVM Metaspace", 'Exception in thread "main" java.lang.OutOfMemoryError: Metaspace'],
    ["JVM compressed class space", "java.lang.OutOfMemoryError: Compressed class space"],
    ["JVM native thread", "java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached"],
    ["JVM new native thread (JDK 8)", "java.lang.OutOfMemoryError: unable to create new native thread"],
    ["JVM array size", "java.lang.OutOfMemoryError: Requested array size exceeds VM limit"],
    ["JVM direct buffers", "java.lang.OutOfMemoryError: Direct buffer memory"],
    ["a segfault's message", "Segmentation fault (core dumped)"],
    ["an ordinary error", "Error: connect ECONNREFUSED 10.0.0.1:5432\n    at TCPConnectWrap.afterConnect"],
    ["a Go panic", "panic: runtime error: index out of range [3] with length 3"],
    ["empty", ""],
  ];
  for (const [name, message] of notHeap) {
    it(`not a heap error: ${name}`, () => assert.equal(classifyHeapError(message), undefined));
  }

  it("keeps the heading line, and Node.js's heap size from V8's last full collection", () => {
    assert.deepEqual(classifyHeapError(NODE_TAIL), { runtime: "Node.js", line: "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory", heap: "259.5 MB" });
    assert.equal(classifyHeapError(JVM_TAIL)?.heap, undefined);
  });

  it("a heap line after a non-heap one of the JVM decides", () => {
    assert.equal(classifyHeapError("java.lang.OutOfMemoryError: Metaspace\njava.lang.OutOfMemoryError: Java heap space")?.runtime, "JVM");
  });
});

const NOW = new Date("2026-12-01T12:00:00Z");
const change: ContainerChange = { container: "app", from: { limit: "256Mi" }, to: { limit: "512Mi" } };
const ended = (terminated: Record<string, unknown>, where: "state" | "lastState" = "lastState"): HeapStatusLike[] => [{ name: "app", [where]: { terminated: { reason: "Error", finishedAt: "2026-12-01T11:59:00Z", ...terminated } } }];
const scale: Scale = { action: "scale", changes: [change], skipped: [], dryRun: false };

describe("checkHeapErrors: the runtime's words, never a code alone", () => {
  const cases: [string, HeapStatusLike[], "keep" | "NotHeapError" | "NoTerminationMessage"][] = [
    ["Node.js's heap error as PID 1 (139)", ended({ exitCode: 139, message: NODE_TAIL }), "keep"],
    ["the same while the container is down (state.terminated)", ended({ exitCode: 139, message: NODE_TAIL }, "state"), "keep"],
    ["the JVM's OutOfMemoryError (1)", ended({ exitCode: 1, message: JVM_TAIL }), "keep"],
    ["a segfault: 139 and no heap message", ended({ exitCode: 139, message: "Segmentation fault" }), "NotHeapError"],
    ["an ordinary error exit: 1 and its own message", ended({ exitCode: 1, message: "Error: config file missing" }), "NotHeapError"],
    ["139 with no message at all", ended({ exitCode: 139 }), "NoTerminationMessage"],
    ["1 with a blank message", ended({ exitCode: 1, message: "  \n" }), "NoTerminationMessage"],
    ["an OOM kill is not a heap error", ended({ reason: "OOMKilled", exitCode: 137, message: NODE_TAIL }), "NotHeapError"],
    ["a heap error older than the window", ended({ exitCode: 134, message: NODE_TAIL, finishedAt: "2026-12-01T11:40:00Z" }), "NotHeapError"],
    ["a container that never ended", [{ name: "app" }], "NotHeapError"],
    ["no status for the container", [], "NotHeapError"],
  ];
  for (const [name, statuses, expected] of cases) {
    it(name, () => {
      const checked = checkHeapErrors([change], statuses, NOW, 600);
      if (expected === "keep") {
        assert.deepEqual(checked.keep, [change]);
        assert.equal(checked.errors[0]?.container, "app");
      } else {
        assert.deepEqual(checked.keep, []);
        assert.equal(checked.skipped[0]?.reason, expected);
      }
    });
  }

  it("an empty message names what to set", () => {
    const checked = checkHeapErrors([change], ended({ exitCode: 139 }), NOW, 600);
    assert.match(checked.skipped[0]?.message ?? "", /exit code 139 \(Error\) with no termination message.*terminationMessagePolicy: FallbackToLogsOnError/);
  });
});

describe("afterHeapCheck", () => {
  it("keeps the confirmed changes with their errors, for the write", () => {
    const checked = checkHeapErrors([change], ended({ exitCode: 139, message: NODE_TAIL }), NOW, 600);
    const after = afterHeapCheck(scale, checked, true);
    assert.equal(after.action, "scale");
    assert.equal((after as Scale).heapErrors?.[0]?.runtime, "Node.js");
  });

  it("no HeapFailure Warning doubts a raise whose write sets the heap", () => {
    const checked = checkHeapErrors([change], ended({ exitCode: 134, message: NODE_TAIL }), NOW, 600);
    const after = afterHeapCheck({ ...scale, heapFailed: ["app"] }, checked, true) as Scale;
    assert.equal(after.heapFailed, undefined);
  });

  it("a bare Pod (no template to roll out): HeapNeedsRollout, never a resize the heap cannot use", () => {
    const checked = checkHeapErrors([change], ended({ exitCode: 139, message: NODE_TAIL }), NOW, 600);
    const after = afterHeapCheck(scale, checked, false) as Skip;
    assert.equal(after.reason, "HeapNeedsRollout");
    assert.match(after.message, /Node\.js's heap error .*cannot reach a heap its runtime sized when it started.*recreate it/);
  });

  it("no message beats another reason in the skip, so the hint is seen", () => {
    const two: ContainerChange[] = [change, { ...change, container: "side" }];
    const statuses = [...ended({ exitCode: 139 }), { name: "side" }];
    const after = afterHeapCheck({ ...scale, changes: two }, checkHeapErrors(two, statuses, NOW, 600), true) as Skip;
    assert.equal(after.reason, "NoTerminationMessage");
    assert.equal(after.skipped?.length, 2);
  });

  it("a segfault is not scaled", () => {
    const after = afterHeapCheck(scale, checkHeapErrors([change], ended({ exitCode: 139, message: "Segmentation fault" }), NOW, 600), true) as Skip;
    assert.equal(after.reason, "NotHeapError");
    assert.match(after.message, /never taken for one: 139 is also a segfault/);
  });
});

describe("unansweredHeapError: a hold says what it leaves unanswered", () => {
  const errors = heapErrors(ended({ exitCode: 139, message: NODE_TAIL }));
  for (const [reason, help] of [["AtCap", /raise the cap/], ["ProbableLeak", /may be a leak/]] as const) {
    it(reason, () => {
      const skip: Skip = { action: "skip", reason, message: "held" };
      const said = unansweredHeapError(skip, errors);
      assert.match(said.message, /^held; container app's last run ended in Node\.js's heap error \(exit code 139: "FATAL ERROR: Reached heap limit.*with a heap of 259\.5 MB, and nothing was raised: /);
      assert.match(said.message, help);
    });
  }
  it("other skips, and no heap error, pass unchanged", () => {
    const cooldown: Skip = { action: "skip", reason: "Cooldown", message: "scaled 10s ago" };
    assert.equal(unansweredHeapError(cooldown, errors), cooldown);
    const capped: Skip = { action: "skip", reason: "AtCap", message: "at cap" };
    assert.equal(unansweredHeapError(capped, []), capped);
  });
});

describe("a held fixed heap names the heap error it leaves unanswered", () => {
  it("FixedHeap: the flag, and the runtime's own words", () => {
    const heaps = podHeaps({ containers: [{ name: "app", env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=200" }] }] });
    const held = holdFixedHeaps(scale, { heaps, policy: "Hold", rewritable: true, failed: [], errors: heapErrors(ended({ exitCode: 139, message: NODE_TAIL })) }) as Skip;
    assert.equal(held.reason, "FixedHeap");
    assert.match(held.message, /fixed by --max-old-space-size=200 in env NODE_OPTIONS .*set spec\.heapFlags: Scale.*; its last run ended in Node\.js's heap error \(exit code 139: "FATAL ERROR: Reached heap limit/);
  });
});
