// The heap flags of a container's command, args and env: each runtime's flags in each of their places, as tables.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type ContainerSpecLike, describeFlag, goBytes, jvmBytes, readHeapFlags, replaceToken, scaledFlag } from "../../../../../functions/memory-scaler/scale/decide/heap-flags.ts";

const MiB = 1024n ** 2n;
const GiB = 1024n ** 3n;

interface Case {
  readonly name: string;
  readonly container: Omit<ContainerSpecLike, "name">;
  /** The binding flag: its name, value, place and cap; undefined: none. */
  readonly binding?: { flag: string; value: string; place: object; cap: object };
  readonly unknown?: string[];
}

const cases: Case[] = [
  { name: "-Xmx512m in JAVA_TOOL_OPTIONS", container: { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:+UseG1GC -Xmx512m" }] }, binding: { flag: "-Xmx", value: "512m", place: { env: "JAVA_TOOL_OPTIONS" }, cap: { bytes: 512n * MiB } } },
  { name: "-Xmx1g in JDK_JAVA_OPTIONS", container: { env: [{ name: "JDK_JAVA_OPTIONS", value: "-Xmx1g" }] }, binding: { flag: "-Xmx", value: "1g", place: { env: "JDK_JAVA_OPTIONS" }, cap: { bytes: GiB } } },
  { name: "-Xmx2G in _JAVA_OPTIONS", container: { env: [{ name: "_JAVA_OPTIONS", value: "-Xmx2G" }] }, binding: { flag: "-Xmx", value: "2G", place: { env: "_JAVA_OPTIONS" }, cap: { bytes: 2n * GiB } } },
  { name: "-Xmx in the args", container: { command: ["java"], args: ["-Xmx768m", "-jar", "app.jar"] }, binding: { flag: "-Xmx", value: "768m", place: { args: 0 }, cap: { bytes: 768n * MiB } } },
  { name: "-Xmx in the command", container: { command: ["java", "-Xmx256k", "-jar", "app.jar"] }, binding: { flag: "-Xmx", value: "256k", place: { command: 1 }, cap: { bytes: 256n * 1024n } } },
  { name: "-Xmx in bytes inside sh -c", container: { command: ["sh", "-c", "exec java -Xmx536870912 -jar app.jar"] }, binding: { flag: "-Xmx", value: "536870912", place: { command: 2 }, cap: { bytes: 512n * MiB } } },
  { name: "the command line wins over JAVA_TOOL_OPTIONS", container: { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Xmx256m" }], args: ["-Xmx512m"] }, binding: { flag: "-Xmx", value: "512m", place: { args: 0 }, cap: { bytes: 512n * MiB } } },
  { name: "_JAVA_OPTIONS wins over the command line", container: { env: [{ name: "_JAVA_OPTIONS", value: "-Xmx1g" }], args: ["-Xmx512m"] }, binding: { flag: "-Xmx", value: "1g", place: { env: "_JAVA_OPTIONS" }, cap: { bytes: GiB } } },
  { name: "-XX:MaxRAM=", container: { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:MaxRAM=1g -XX:MaxRAMPercentage=75" }] }, binding: { flag: "-XX:MaxRAM", value: "1g", place: { env: "JAVA_TOOL_OPTIONS" }, cap: { bytes: GiB } } },
  { name: "-XX:MaxRAMPercentage= alone follows the limit", container: { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:MaxRAMPercentage=75.0" }] }, binding: { flag: "-XX:MaxRAMPercentage", value: "75.0", place: { env: "JAVA_TOOL_OPTIONS" }, cap: { percent: 75 } } },
  { name: "-Xmx wins over -XX:MaxRAMPercentage", container: { args: ["-XX:MaxRAMPercentage=80", "-Xmx300m"] }, binding: { flag: "-Xmx", value: "300m", place: { args: 1 }, cap: { bytes: 300n * MiB } } },
  { name: "Node --max-old-space-size in NODE_OPTIONS", container: { env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=512" }] }, binding: { flag: "--max-old-space-size", value: "512", place: { env: "NODE_OPTIONS" }, cap: { bytes: 512n * MiB } } },
  { name: "Node --max_old_space_size in the args", container: { command: ["node"], args: ["--max_old_space_size=96", "server.js"] }, binding: { flag: "--max_old_space_size", value: "96", place: { args: 0 }, cap: { bytes: 96n * MiB } } },
  { name: "GOMEMLIMIT in MiB", container: { env: [{ name: "GOMEMLIMIT", value: "512MiB" }] }, binding: { flag: "GOMEMLIMIT", value: "512MiB", place: { env: "GOMEMLIMIT" }, cap: { bytes: 512n * MiB } } },
  { name: "GOMEMLIMIT in bytes", container: { env: [{ name: "GOMEMLIMIT", value: "1000" }] }, binding: { flag: "GOMEMLIMIT", value: "1000", place: { env: "GOMEMLIMIT" }, cap: { bytes: 1000n } } },
  { name: "GOMEMLIMIT off sets none", container: { env: [{ name: "GOMEMLIMIT", value: "off" }] } },
  { name: "the last env entry of a name wins", container: { env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=64" }, { name: "NODE_OPTIONS", value: "--max-old-space-size=128" }] }, binding: { flag: "--max-old-space-size", value: "128", place: { env: "NODE_OPTIONS" }, cap: { bytes: 128n * MiB } } },
  { name: "an env var from a ConfigMap is unknown, not guessed", container: { env: [{ name: "JAVA_TOOL_OPTIONS", valueFrom: { configMapKeyRef: { name: "jvm", key: "opts" } } }] }, unknown: ["JAVA_TOOL_OPTIONS"] },
  { name: "a Secret's GOMEMLIMIT beside a known -Xmx", container: { env: [{ name: "GOMEMLIMIT", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }], args: ["-Xmx64m"] }, binding: { flag: "-Xmx", value: "64m", place: { args: 0 }, cap: { bytes: 64n * MiB } }, unknown: ["GOMEMLIMIT"] },
  { name: "other env vars and malformed flags are ignored", container: { env: [{ name: "OPTS", value: "-Xmx1g" }, { name: "JAVA_TOOL_OPTIONS", value: "-Xmxlots --max-old-space-size=big" }] } },
  { name: "no flags", container: { command: ["memhog"], args: ["--mem", "512"] } },
];

describe("readHeapFlags", () => {
  for (const c of cases) {
    it(c.name, () => {
      const read = readHeapFlags({ name: "app", ...c.container });
      assert.equal(read.container, "app");
      const b = read.binding;
      assert.deepEqual(b === undefined ? undefined : { flag: b.flag, value: b.value, place: b.place, cap: b.cap }, c.binding);
      assert.deepEqual(read.unknown, c.unknown ?? []);
    });
  }
});

describe("sizes", () => {
  it("reads JVM sizes in 1024s, either case", () => {
    assert.deepEqual(["1", "2k", "2K", "3m", "3M", "1g", "1t", "1x", "", "m"].map(jvmBytes), [1n, 2048n, 2048n, 3n * MiB, 3n * MiB, GiB, 1024n * GiB, undefined, undefined, undefined]);
  });
  it("reads GOMEMLIMIT's units B, KiB, MiB, GiB, TiB", () => {
    assert.deepEqual(["10B", "1KiB", "2MiB", "3GiB", "1TiB", "5", "off", "1MB", "1.5GiB"].map(goBytes), [10n, 1024n, 2n * MiB, 3n * GiB, 1024n * GiB, 5n, undefined, undefined, undefined]);
  });
});

describe("scaledFlag", () => {
  const flag = (container: Omit<ContainerSpecLike, "name">) => {
    const b = readHeapFlags({ name: "app", ...container }).binding;
    assert.ok(b !== undefined);
    return b;
  };
  const table: [string, Omit<ContainerSpecLike, "name">, bigint, bigint, string][] = [
    ["-Xmx512m × 2 → -Xmx1g", { args: ["-Xmx512m"] }, 768n * MiB, 1536n * MiB, "-Xmx1g"],
    ["-Xmx512M × 1.5 keeps the case → -Xmx768M", { args: ["-Xmx512M"] }, 512n * MiB, 768n * MiB, "-Xmx768M"],
    ["-Xmx1g × 1.5 → -Xmx1536m", { args: ["-Xmx1g"] }, GiB, 1536n * MiB, "-Xmx1536m"],
    ["-XX:MaxRAM=1g × 2 → 2g", { args: ["-XX:MaxRAM=1g"] }, GiB, 2n * GiB, "-XX:MaxRAM=2g"],
    ["--max-old-space-size=512 × 2 → 1024 (MiB)", { env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=512" }] }, 768n * MiB, 1536n * MiB, "--max-old-space-size=1024"],
    ["--max-old-space-size=100 × 1.25 rounds down to whole MiB", { args: ["--max-old-space-size=100"] }, 400n * MiB, 500n * MiB, "--max-old-space-size=125"],
    ["--max-old-space-size=101 × 1.5 → 151", { args: ["--max-old-space-size=101"] }, 200n * MiB, 300n * MiB, "--max-old-space-size=151"],
    ["GOMEMLIMIT=512MiB × 2 → 1GiB", { env: [{ name: "GOMEMLIMIT", value: "512MiB" }] }, 768n * MiB, 1536n * MiB, "1GiB"],
    ["GOMEMLIMIT=300MiB × 1.5 → 450MiB", { env: [{ name: "GOMEMLIMIT", value: "300MiB" }] }, 400n * MiB, 600n * MiB, "450MiB"],
  ];
  for (const [name, container, from, to, token] of table) {
    it(name, () => assert.equal(scaledFlag(flag(container), from, to).token, token));
  }
  it("refuses a percentage: it follows the limit", () => {
    assert.throws(() => scaledFlag(flag({ args: ["-XX:MaxRAMPercentage=75"] }), MiB, 2n * MiB), RangeError);
  });
});

describe("replaceToken and describeFlag", () => {
  it("replaces the one token, whitespace kept", () => {
    assert.equal(replaceToken("-XX:+UseG1GC  -Xmx512m\t-Dx=1", "-Xmx512m", "-Xmx1g"), "-XX:+UseG1GC  -Xmx1g\t-Dx=1");
    assert.throws(() => replaceToken("-Xmx1g", "-Xmx512m", "-Xmx1g"), RangeError);
  });
  it("names the flag and its place", () => {
    assert.equal(describeFlag(readHeapFlags({ name: "a", env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Xmx512m" }] }).binding ?? assert.fail()), "-Xmx512m in env JAVA_TOOL_OPTIONS");
    assert.equal(describeFlag(readHeapFlags({ name: "a", args: ["x", "--max-old-space-size=512"] }).binding ?? assert.fail()), "--max-old-space-size=512 in args[1]");
    assert.equal(describeFlag(readHeapFlags({ name: "a", env: [{ name: "GOMEMLIMIT", value: "512MiB" }] }).binding ?? assert.fail()), "GOMEMLIMIT=512MiB");
  });
});
