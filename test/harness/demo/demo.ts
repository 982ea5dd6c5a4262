/**
 * `npm run demo -- [--real-node (default) [--host-functions] [--no-eventing] [--prometheus-operator] | --kwok] [--containers] [--for-seconds SECONDS]`: the main job on the local stack,
 * from one command on a fresh machine. Installs the Debian packages it needs when run as root
 * (`debian-packages.ts`, saying which and why; otherwise it names the command), builds what it
 * needs and has not cached (the Go-built binaries, the base, function and memhog images and their
 * archives; one line per step with its cold time), starts the stack (or uses the one already up in
 * `APPMONITOR_STACK_DIR`/.stack, pushing any image its registry lacks), runs the chain
 * (`chain.ts`) with the original demo's AppMonitor and memhog Deployment, prints the timeline in
 * the order things happened with each time's clock (`timeline.ts`) and the resources before and
 * after, writes a chart of the run (`run-chart.ts`: working set, limit and threshold from
 * Prometheus, each hop marked) to `<cache>/demo/run-<time>.svg` and prints its path, and stops
 * everything it started.
 *
 * By default memhog runs on the stack's real node (root; `npm run stack -- up --real-node`): real
 * memory, a real cgroup limit read back after the scale; the three functions run there too, as
 * Pods from the images it builds, unless `--host-functions` (or `--containers`) keeps them on
 * the host. With the function Pods, Knative Eventing runs on the real node too (installed unless
 * the stack has it, about 50 s): alert-receiver sends to the Broker, whose Trigger hands the alert
 * to memory-scaler, and rule-sync hears of the AppMonitor from the ApiServerSource through the
 * Broker, its resyncs from the PingSource; `--no-eventing` has alert-receiver post straight to
 * memory-scaler's Service instead. `--kwok` runs memhog on a kwok Node instead, its usage an annotation, and the
 * functions as host processes. `--containers` runs the three functions from their images under
 * podman (root). (`--real-node`, the default, is still accepted.) `--prometheus-operator` runs the
 * chain on the monitoring stack users run: prometheus-operator's Prometheus and Alertmanager as
 * its StatefulSets on the real node, configured as kube-prometheus-stack's defaults configure
 * them, the alerts routed as docs/install.md says (with the function Pods and Eventing only).
 * `--for-seconds` sets the AppMonitor's `spec.forSeconds` (the example's is 60), to see the chain
 * sooner: the alert fires that long after the crossing. The options and exit codes are {@link USAGE}'s (`--help`).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { buildImages, FUNCTION_IMAGES, type ImageName } from "../../../scripts/images/build.ts";
import { cacheDir } from "../../../scripts/lib/paths.ts";
import { binarySetsFor } from "../../../scripts/lib/binaries.ts";
import { exitOnHelp, usageText, type CommandUsage, type OptionUsage } from "../../../scripts/lib/usage.ts";
import { aboutMinutes, coldSecondsOf, coldTimes } from "../bins/cold-times.ts";
import { ensureDebianPackages } from "../stack/debian-packages.ts";
import { defaultStateDir, resolveBinaries } from "../stack/paths.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { acquireRealNodeLock } from "../stack/real-node-lock.ts";
import { pushImages, servedImages } from "../stack/registry.ts";
import { down, up } from "../stack/stack.ts";
import { readState } from "../stack/state.ts";
import { HopError, runChain } from "./chain.ts";
import { runChartInput, runChartSvg } from "./run-chart.ts";
import { hasWholeSecondClock, timelineLines } from "./timeline.ts";

/** The hop the timeline counts from. */
const CROSSING = "usage crossed the threshold";
/** The original AppMonitor's `memThresholdPercent` (knative/examples/appmonitor.yaml). */
const THRESHOLD_PERCENT = 75;
/** A cold set-up's parts on a fresh machine of two cores (test/harness/bins/cold-times.txt; build.sh's and buildImages' own lines give each step's). */
const COLD = coldTimes();
const FUNCTION_NAMES = Object.keys(FUNCTION_IMAGES) as (keyof typeof FUNCTION_IMAGES)[];

const OPTIONS = {
  "real-node": { type: "boolean", default: false, means: "memhog and the functions on the stack's real node (root)", defaultIs: "on, unless --kwok" },
  "host-functions": { type: "boolean", default: false, means: "the functions as host processes, not Pods on the real node" },
  "no-eventing": { type: "boolean", default: false, means: "alert-receiver posts straight to memory-scaler's Service, not through Knative Eventing's Broker" },
  "prometheus-operator": { type: "boolean", default: false, means: "prometheus-operator's Prometheus and Alertmanager, as kube-prometheus-stack's defaults make them" },
  kwok: { type: "boolean", default: false, means: "memhog on a kwok Node (its usage an annotation), the functions on the host; no root" },
  containers: { type: "boolean", default: false, means: "the functions from their images under podman (root)" },
  "for-seconds": { type: "string", value: "SECONDS", means: "the AppMonitor's spec.forSeconds: how long the usage stays over the threshold before the alert fires", defaultIs: "the example's, 60" },
} as const satisfies Record<string, OptionUsage>;

const USAGE: CommandUsage = {
  synopsis: ["npm run demo -- [--real-node (default) [--host-functions] [--no-eventing] [--prometheus-operator] | --kwok] [--containers] [--for-seconds SECONDS]"],
  options: OPTIONS,
  notes: [
    "Uses the stack running in APPMONITOR_STACK_DIR (default <repo>/.stack), else starts one and stops it after.",
    "Exit codes: 0 the Deployment was scaled and its new Pod runs; 1 a hop failed, or stopping the stack did (named); 2 usage or a missing prerequisite (named).",
  ],
};

exitOnHelp(process.argv.slice(2), USAGE);
let containers = false;
let kwok = false;
let hostFunctions = false;
let noEventing = false;
let operator = false;
let forSeconds: number | undefined;
try {
  const { values } = parseArgs({ options: OPTIONS });
  ({ containers, kwok, "host-functions": hostFunctions, "no-eventing": noEventing, "prometheus-operator": operator } = values);
  const given = values["for-seconds"];
  if (given !== undefined) {
    // The CRD's own bounds for spec.forSeconds: a whole number, at least 0.
    if (!/^\d+$/.test(given)) throw new Error(`--for-seconds ${JSON.stringify(given)}: a whole number of seconds, 0 or more, is wanted`);
    forSeconds = Number(given);
  }
  if (operator && (kwok || containers || values["host-functions"] || values["no-eventing"])) throw new Error("--prometheus-operator needs the real node's function Pods and Eventing");
  if (kwok && values["real-node"]) throw new Error("--kwok and --real-node exclude each other");
  // Both choose where the functions run on the real node; on kwok they run on the host already.
  for (const flag of ["host-functions", "no-eventing"] as const) if (kwok && values[flag]) throw new Error(`--${flag} applies to the real node's function Pods, not to --kwok`);
} catch (error) {
  console.error(`demo: ${(error as Error).message}\n${usageText(USAGE)}`);
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
// On the real node the functions run there too, as Pods, unless asked to run on the host.
const functionPods = realNode && !containers && !hostFunctions;
// The Broker delivers to the functions' Services: only when they run as Pods.
const eventing = functionPods && !noEventing;
const say = (part: string) => (l: string) => console.log(`  ${part}: ${l}`);

// build.sh's sets for this run: neither Serving nor Helm, the operator's only when asked for.
const sets = binarySetsFor({ realNode, prometheusOperator: operator, eventing });
const images: ImageName[] = [...(realNode ? ["memhog" as const] : []), ...(functionPods || containers ? FUNCTION_NAMES : []), ...(operator ? ["alertmanager" as const] : [])];

let code = 0;
let releaseLock: (() => Promise<void>) | undefined;
try {
  const cold = [...(existing ? [] : [`${aboutMinutes(coldSecondsOf(COLD, sets))} min of Go builds`]), ...(images.length > 0 ? [`${aboutMinutes(COLD.images.seconds)} min of images`] : [])];
  console.log(existing ? `using the stack in ${stateDir} (left running at the end)` : "starting the local stack (stopped at the end)");
  if (cold.length > 0) console.log(`on a fresh machine this first builds about ${cold.join(" and ")}; once cached, seconds`);
  // What the stack runs comes first: the binaries, then the images its registry serves (memhog)
  // and the function Pods import; `up` finds both cached.
  if (!existing) await resolveBinaries(process.env, say("binaries"), sets);
  if (images.length > 0) {
    const t0 = Date.now();
    await buildImages(images, say("images"));
    say("images")(`${images.length} ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  // The real node is one per machine: its start waits for any other's end (real-node-lock.ts),
  // after the builds, which need no node.
  if (realNode && !existing) releaseLock = await acquireRealNodeLock();
  const state = await up({ stateDir, realNode, prometheusOperator: operator, progress: say("stack") });
  // A stack that was already up may lack an image, or serve an older one: push what differs.
  if (existing && state.registry) await pushImages(state.registry.address, servedImages());
  if (containers) console.log("the functions run from their images (npm run image)");
  if (realNode) console.log("memhog runs on the real node: real memory, read from its log, cAdvisor and its cgroup");
  if (functionPods) console.log("the functions run as Pods on the real node (Deployments rendered from knative/services)");
  if (eventing) console.log("their events go through Knative Eventing on the real node: Broker, Triggers, ApiServerSource, PingSource, SinkBinding (knative/eventing)");
  if (operator) console.log("Prometheus and Alertmanager run as prometheus-operator's StatefulSets on the real node, as kube-prometheus-stack renders them, its Alertmanager configured by docs/install.md's values");
  console.log("the chain, each hop as it is seen:");
  const result = await runChain(state, {
    namespace: "appmonitor-demo", containers, realNode, functionPods, eventing, ...(operator ? { operator: true } : {}), ...(forSeconds === undefined ? {} : { forSeconds }),
    onHop: (h) => console.log(`  seen: ${h.name}`), onProgress: say("set-up"),
  });
  const legend = hasWholeSecondClock(result.hops) ? "; ≈: a whole-second clock" : "";
  console.log(`\ntimeline, in the order it happened (from the moment the usage crossed ${THRESHOLD_PERCENT}% of the limit${legend}):`);
  for (const l of timelineLines(result.hops, CROSSING)) console.log(l);
  console.log(`\nmemhog before: requests ${result.before.request}, limits ${result.before.limit}  (Pod ${result.oldPod})`);
  console.log(`memhog after:  requests ${result.after.request}, limits ${result.after.limit}  (Pod ${result.newPod})`);
  const crossed = result.hops.find((h) => h.name === CROSSING);
  const running = result.hops.find((h) => h.name === "new Pod Running, old Pod gone");
  if (crossed && running) console.log(`reaction time (usage crossed → new Pod Running): ${((running.at - crossed.at) / 1000).toFixed(1)} s`);
  const chart = runChartInput(result, CROSSING);
  if (chart) {
    const file = path.join(cacheDir(), "demo", `run-${new Date().toISOString().replace(/[:.]/g, "-")}.svg`);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, await runChartSvg(chart));
    console.log(`chart of this run (working set, limit and threshold from Prometheus, each hop marked): ${file}`);
  }
} catch (error) {
  code = 1;
  console.error(`\ndemo failed: ${error instanceof HopError || error instanceof StepError ? error.message : (error as Error).stack ?? String(error)}`);
} finally {
  if (!existing) {
    // A stack left half-stopped holds the node's processes, links and rules: the run fails, and says how to finish.
    const stopped = await down(stateDir).then(() => true, (error: unknown) => {
      console.error(`stopping the local stack failed: ${(error as Error).message}\nwhat it started may still run: \`APPMONITOR_STACK_DIR=${stateDir} npm run stack -- down\` stops it`);
      return false;
    });
    if (stopped) console.log("stopped the local stack");
    else code = 1;
  }
  await releaseLock?.();
}
process.exit(code);
