/**
 * `npm run demo -- [--kwok] [--containers] [--host-functions] [--no-eventing]`: the main job on the local stack,
 * from one command. Installs the Debian packages it needs when run as root (`debian-packages.ts`,
 * saying which and why; otherwise it names the command), starts the stack (or uses the one
 * already up in `APPMONITOR_STACK_DIR`/.stack), runs the chain (`chain.ts`) with the original
 * demo's AppMonitor and memhog Deployment, prints the timeline and the resources before and
 * after, and stops everything it started.
 *
 * By default memhog runs on the stack's real node (root; `npm run stack -- up --real-node`): real
 * memory, a real cgroup limit read back after the scale; the three functions run there too, as
 * Pods from `npm run image`'s images, unless `--host-functions` (or `--containers`) keeps them on
 * the host. With the function Pods, Knative Eventing runs on the real node too (installed unless
 * the stack has it, about 50 s): alert-receiver sends to the Broker, whose Trigger hands the alert
 * to memory-scaler, and rule-sync hears of the AppMonitor from the ApiServerSource through the
 * Broker, its resyncs from the PingSource; `--no-eventing` has alert-receiver post straight to
 * memory-scaler's Service instead. `--kwok` runs memhog on a kwok Node instead, its usage an annotation, and the
 * functions as host processes. `--containers` runs the three functions from their images under
 * podman (root). (`--real-node`, the default, is still accepted.)
 *
 * Exit codes: 0 the Deployment was scaled and its new Pod runs; 1 a hop failed (named); 2 usage
 * or a missing prerequisite (named, with the command that fixes it).
 */
import { parseArgs } from "node:util";
import { ensureDebianPackages } from "../stack/debian-packages.ts";
import { defaultStateDir } from "../stack/paths.ts";
import { down, readState, up } from "../stack/stack.ts";
import { HopError, runChain, type Hop } from "./chain.ts";

const usage = "usage: npm run demo -- [--kwok] [--containers] [--host-functions] [--no-eventing]";
let containers = false;
let kwok = false;
let hostFunctions = false;
let noEventing = false;
try {
  const { values } = parseArgs({
    options: {
      containers: { type: "boolean", default: false },
      kwok: { type: "boolean", default: false },
      "real-node": { type: "boolean", default: false },
      "host-functions": { type: "boolean", default: false },
      "no-eventing": { type: "boolean", default: false },
    },
  });
  ({ containers, kwok, "host-functions": hostFunctions, "no-eventing": noEventing } = values);
  if (kwok && values["real-node"]) throw new Error("--kwok and --real-node exclude each other");
} catch (error) {
  console.error(`${usage}: ${(error as Error).message}`);
  process.exit(2);
}
const realNode = !kwok;
if (realNode && process.getuid?.() !== 0) {
  console.error("the demo's real node runs containerd, a kubelet and Pod networking, which need root: run it as root, or `npm run demo -- --kwok` for the kwok Nodes");
  process.exit(2);
}
try {
  await ensureDebianPackages();
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
const stateDir = defaultStateDir();
const existing = await readState(stateDir);
let crossedAt: number | undefined;
const line = (h: Hop) => {
  if (h.name === "usage crossed the threshold") crossedAt = h.at;
  const t = crossedAt === undefined ? "" : `+${((h.at - crossedAt) / 1000).toFixed(1).padStart(5)} s`;
  console.log(`${t.padStart(9)}  ${h.name}${h.detail ? `: ${h.detail}` : ""}`);
};

let code = 0;
try {
  console.log(existing ? `using the stack in ${stateDir}` : "starting the local stack ...");
  const state = await up({ stateDir, realNode, progress: (l) => console.log(`  stack: ${l}`) });
  console.log("\ntimeline (from the moment the usage crossed 75% of the limit):");
  if (containers) console.log("the functions run from their images (npm run image)");
  if (realNode) console.log("memhog runs on the real node: real memory, read from its log, cAdvisor and its cgroup");
  // On the real node the functions run there too, as Pods, unless asked to run on the host.
  const functionPods = realNode && !containers && !hostFunctions;
  if (functionPods) console.log("the functions run as Pods on the real node (Deployments rendered from knative/services)");
  // The Broker delivers to the functions' Services: only when they run as Pods.
  const eventing = functionPods && !noEventing;
  if (eventing) console.log("their events go through Knative Eventing on the real node: Broker, Triggers, ApiServerSource, PingSource, SinkBinding (knative/eventing)");
  const result = await runChain(state, { namespace: "appmonitor-demo", onHop: line, containers, realNode, functionPods, eventing });
  console.log(`\nmemhog before: requests ${result.before.request}, limits ${result.before.limit}  (Pod ${result.oldPod})`);
  console.log(`memhog after:  requests ${result.after.request}, limits ${result.after.limit}  (Pod ${result.newPod})`);
  const last = result.hops.at(-1);
  if (crossedAt !== undefined && last) console.log(`reaction time (usage crossed → new Pod Running): ${((last.at - crossedAt) / 1000).toFixed(1)} s`);
} catch (error) {
  code = 1;
  console.error(`\ndemo failed: ${error instanceof HopError ? error.message : (error as Error).stack ?? String(error)}`);
} finally {
  if (!existing) {
    await down(stateDir);
    console.log("stopped the local stack");
  }
}
process.exit(code);
