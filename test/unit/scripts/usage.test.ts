// Every command users run answers --help: its usage on stdout, exit 0, each of its options named,
// and nothing built, started or written first. Each is run as npm runs it (package.json's script).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { helpAsked, usageText } from "../../../scripts/lib/usage.ts";

const scripts = (JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

/** The entry file of `npm run <name>`: the script's `node FILE`. */
function entryOf(name: string): string {
  const file = /(?:^|\s)node (\S+\.ts)/.exec(scripts[name] ?? "")?.[1];
  assert.ok(file, `package.json's ${name} script runs no node FILE.ts: ${scripts[name]}`);
  return path.join(repoRoot, file);
}

/** Each command, and the options and arguments its usage must name. */
const COMMANDS: readonly (readonly [string, readonly string[]])[] = [
  ["demo", ["--real-node", "--host-functions", "--no-eventing", "--prometheus-operator", "--kwok", "--containers", "--for-seconds"]],
  ["stack", ["up", "down", "status", "env", "--real-node", "--eventing", "--serving", "--prometheus-operator"]],
  ["explain", ["KIND/NAME", "--namespace", "--prometheus-url", "--source"]],
  ["resend", ["EVENT", "--namespace", "--broker"]],
  ["release", ["DIR"]],
  ["chart", ["DIR"]],
  ["image", ["NAME", "alert-receiver", "memory-scaler", "rule-sync", "dead-letter", "memhog"]],
  ["bench", ["NAME", "OPTION", "memory-scaler"]],
];

/** Runs `argv` with the stack's and the cache's directories pointed at an empty one, so anything written there shows. */
async function runIsolated(argv: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string; wrote: boolean }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-help-"));
  try {
    const env = { ...process.env, APPMONITOR_STACK_DIR: path.join(dir, "stack"), APPMONITOR_CACHE: path.join(dir, "cache"), KUBECONFIG: path.join(dir, "none") };
    const res = spawnSync(argv[0] as string, argv.slice(1), { cwd: repoRoot, env, encoding: "utf8", timeout: 60_000 });
    return { status: res.status, stdout: res.stdout, stderr: res.stderr, wrote: existsSync(path.join(dir, "stack")) || existsSync(path.join(dir, "cache")) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("--help", () => {
  for (const [name, names] of COMMANDS) {
    for (const flag of ["--help", "-h"]) {
      it(`npm run ${name} -- ${flag}: the usage, each option named, exit 0, nothing done`, async () => {
        const res = await runIsolated([process.execPath, entryOf(name), flag]);
        assert.equal(res.status, 0, res.stderr);
        assert.match(res.stdout, new RegExp(`^usage: npm run ${name}\\b`));
        for (const word of [...names, "--help"]) assert.ok(res.stdout.includes(word), `${name}'s usage names ${word}:\n${res.stdout}`);
        assert.equal(res.wrote, false, "nothing is built or started");
      });
    }
  }

  it("kubectl appmonitor --help: both commands' usages, exit 0", async () => {
    const res = await runIsolated(["sh", path.join(repoRoot, "scripts/explain/kubectl-appmonitor"), "--help"]);
    assert.equal(res.status, 0, res.stderr);
    for (const word of ["kubectl appmonitor explain", "kubectl appmonitor resend", "--namespace", "--prometheus-url", "--source", "--broker"]) {
      assert.ok(res.stdout.includes(word), `names ${word}:\n${res.stdout}`);
    }
  });

  it("npm run demo -- --for-seconds with no whole number of seconds: exit 2 naming it, nothing done", async () => {
    for (const value of ["abc", "-1", "1.5", ""]) {
      const res = await runIsolated([process.execPath, entryOf("demo"), `--for-seconds=${value}`]);
      assert.equal(res.status, 2, `${value}: ${res.stderr}`);
      assert.match(res.stderr, /--for-seconds .*a whole number of seconds/, value);
      assert.equal(res.wrote, false);
    }
  });

  it("wins over arguments the command would refuse", async () => {
    for (const argv of [["explain", "deploy/x", "--bogus", "--help"], ["stack", "nonsense", "-h"]] as const) {
      const res = await runIsolated([process.execPath, entryOf(argv[0]), ...argv.slice(1)]);
      assert.equal(res.status, 0, `${argv.join(" ")}: ${res.stderr}`);
    }
  });
});

describe("helpAsked", () => {
  const cases: readonly (readonly [readonly string[], boolean])[] = [
    [["--help"], true],
    [["-h"], true],
    [["deploy/x", "-n", "ns", "--help"], true],
    [["deploy/x", "-n", "ns"], false],
    [["--", "--help"], false],
    [[], false],
  ];
  for (const [args, asked] of cases) it(`${JSON.stringify(args)} → ${asked}`, () => assert.equal(helpAsked(args, { namespace: { type: "string", short: "n", means: "" } }), asked));
});

describe("usageText", () => {
  it("lists each argument and option with what it means and its default, --help last", () => {
    const text = usageText({
      synopsis: ["npm run x -- A [-n NS] [--dry]", "kubectl x A"],
      arguments: [{ name: "A", means: "the thing", defaultIs: "all" }],
      options: {
        namespace: { type: "string", short: "n", default: "default", value: "NS", means: "where" },
        dry: { type: "boolean", default: false, means: "change nothing" },
        url: { type: "string", means: "a server", defaultIs: "$URL" },
      },
      notes: ["Exit codes: 0."],
    });
    assert.equal(text, [
      "usage: npm run x -- A [-n NS] [--dry]",
      "       kubectl x A",
      "",
      "arguments:",
      "  A  the thing (default: all)",
      "",
      "options:",
      "  -n, --namespace NS  where (default: default)",
      "      --dry           change nothing (default: off)",
      "      --url VALUE     a server (default: $URL)",
      "  -h, --help          print this usage and exit",
      "",
      "Exit codes: 0.",
    ].join("\n"));
  });
});
