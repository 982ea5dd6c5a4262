/**
 * Benchmark of the local stack (not a test): warm `up` time until ready, over several runs, and
 * the resident memory of the whole stack at idle (sum of VmRSS over every process it started and
 * their children, read from /proc). Binaries must already be built (a warm cache).
 *
 * Usage: node test/bench/stack.ts [runs=3]
 */
import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { down, up } from "../harness/stack/stack.ts";

function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Every descendant of the given pids (a process started through a wrapper counts too). */
function withDescendants(roots: number[]): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  const all = new Set(roots);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parent) {
      if (all.has(ppid) && !all.has(pid)) {
        all.add(pid);
        grew = true;
      }
    }
  }
  return [...all];
}

const runs = Number(process.argv[2] ?? 3);
const times: number[] = [];
let idle: { name: string; mib: number }[] = [];
for (let i = 0; i < runs; i++) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-bench-stack-"));
  const t0 = performance.now();
  const state = await up({ stateDir: dir });
  times.push((performance.now() - t0) / 1000);
  if (i === runs - 1) {
    await new Promise((r) => setTimeout(r, 10_000));
    idle = state.components.map((c) => ({
      name: c.name,
      mib: withDescendants([c.pid]).reduce((sum, pid) => sum + rssKiB(pid), 0) / 1024,
    }));
  }
  await down(dir);
}
times.sort((a, b) => a - b);
console.log(`stack up (warm), ${runs} runs: ${times.map((t) => t.toFixed(1)).join(" s, ")} s; median ${times[Math.floor(runs / 2)]?.toFixed(1)} s`);
console.log("resident memory 10 s after ready:");
for (const c of idle) console.log(`  ${c.name.padEnd(24)} ${c.mib.toFixed(0)} MiB`);
console.log(`  ${"total".padEnd(24)} ${idle.reduce((s, c) => s + c.mib, 0).toFixed(0)} MiB`);
