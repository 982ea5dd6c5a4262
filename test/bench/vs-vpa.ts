/**
 * Benchmark, not a test: appmonitor side by side with the Vertical Pod Autoscaler on the real
 * node, in one run. Every memory pattern of `test/harness/lib/vs-vpa-workloads.ts` runs as a
 * Deployment in every arm at once (memhog, or a runtime: Node.js, the JVM) (no autoscaler; the VPA; appmonitor with its shipped
 * defaults; appmonitor in place with the trend trigger), all from the same requests and limits, for
 * `--minutes`. The VPA runs from its own manifests (`installVpa`); appmonitor runs as shipped:
 * rule-sync's rule for each AppMonitor in the stack's Prometheus, its Alertmanager, alert-receiver
 * and memory-scaler (in this process, with Prometheus checking each alert), the follow-up ticked
 * every 10 s as its PingSource would. Every 5 s it samples each Pod (its limit from the Pod's
 * status, its working set and OOM events from cAdvisor through Prometheus), then prints the table
 * of `vs-vpa-figures.ts` and writes the samples (JSON) and the chart (SVG).
 *
 * Uses the stack named by APPMONITOR_STACK_DIR when it has the real node, else starts one in a
 * temporary directory and stops it at the end; it takes the machine's real-node lock itself (do
 * not wrap it in flock). Root. Its usage (`--help`) says the options.
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { buildImages } from "../../scripts/images/build.ts";
import { exitOnHelp } from "../../scripts/lib/usage.ts";
import { ceil, parseQuantity } from "../../functions/lib/quantity.ts";
import { figures, figuresTable, type PodSample } from "../harness/lib/vs-vpa-figures.ts";
import { appMonitorSpec, ARM_LABEL, ARM_MEANS, ARMS, CONTAINER, PATTERN_LABEL, PATTERNS, patternDeployment, programConfigMap, START_RESOURCES, verticalPodAutoscaler, workloadName, type Arm } from "../harness/lib/vs-vpa-workloads.ts";
import { placeNamespace } from "../harness/stack/eventing-install.ts";
import { archiveReference, importImages } from "../harness/stack/node-images.ts";
import { REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { down, up } from "../harness/stack/stack.ts";
import { readState, type StackState } from "../harness/stack/state.ts";
import { installVpa, uninstallVpa } from "../harness/stack/vpa-install.ts";
import { startAlertPath } from "../support/alert-path.ts";
import { applyFiles, installMemoryScaler } from "../support/install.ts";
import { createAppMonitor, deliver, memhogManifest, pingTick, startScaler } from "../support/memory-scaler.ts";
import { acquireRealNodeLock } from "../harness/stack/real-node-lock.ts";
import { timeSeriesSvg } from "../support/svg-chart.ts";
import { promQuery, waitFor } from "../support/stack.ts";

const argv = process.argv.slice(2);
exitOnHelp(argv, {
  synopsis: ["node test/bench/vs-vpa.ts [--minutes N] [--patterns a,b] [--chart FILE.svg] [--samples FILE.json]"],
  arguments: [
    { name: "--minutes N", means: "how long every workload runs", defaultIs: "12" },
    { name: "--patterns a,b", means: `the patterns run: ${PATTERNS.map((p) => p.name).join(", ")}`, defaultIs: "all" },
    { name: "--chart FILE.svg", means: "where the chart goes (memory and limit over time, a panel per pattern, a colour per arm)", defaultIs: "a new file in the temporary directory" },
    { name: "--samples FILE.json", means: "where the samples go", defaultIs: "beside the chart" },
  ],
  notes: ["Root, the real node: it takes the machine's real-node lock itself.", "Exit code: non-zero when the run failed; 2 usage."],
});
const { values } = parseArgs({ args: argv, options: { minutes: { type: "string", default: "12" }, patterns: { type: "string" }, chart: { type: "string" }, samples: { type: "string" } } });
const minutes = Number(values.minutes);
if (!(minutes > 0)) {
  console.error(`vs-vpa: --minutes ${values.minutes}: not a positive number`);
  process.exit(2);
}
const wanted = values.patterns?.split(",") ?? PATTERNS.map((p) => p.name);
const unknown = wanted.filter((w) => !PATTERNS.some((p) => p.name === w));
if (unknown.length > 0) {
  console.error(`vs-vpa: unknown pattern(s) ${unknown.join(", ")}; the patterns: ${PATTERNS.map((p) => p.name).join(", ")}`);
  process.exit(2);
}
const patterns = PATTERNS.filter((p) => wanted.includes(p.name));
const out = await mkdtemp(path.join(os.tmpdir(), "appmonitor-vs-vpa-"));
const chartFile = path.resolve(values.chart ?? path.join(out, "vs-vpa.svg"));
const samplesFile = path.resolve(values.samples ?? chartFile.replace(/\.svg$/, "") + ".json");

const NS = "vs-vpa";
const SAMPLE_SECONDS = 5;
const say = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);
const bytes = (q: string | undefined): number => (q ? Number(ceil(parseQuantity(q))) : 0);
const START_LIMIT = bytes(START_RESOURCES.limits.memory);

// OpenJDK's image only when a pattern runs the JVM (cold about 40 s).
const jvm = patterns.some((p) => p.runtime?.image === "openjdk");
const [memhog, node, openjdk] = await buildImages(["memhog", "memory-scaler", ...(jvm ? ["openjdk" as const] : [])], (line) => say(`images: ${line}`));
if (memhog === undefined || node === undefined || (jvm && openjdk === undefined)) throw new Error("memhog's, memory-scaler's or OpenJDK's image was not built");
const releaseLock = await acquireRealNodeLock();
const named = process.env.APPMONITOR_STACK_DIR ? await readState(process.env.APPMONITOR_STACK_DIR) : undefined;
let state: StackState;
let ownDir: string | undefined;
if (named?.realNode) {
  state = named;
} else {
  ownDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-vs-vpa-stack-"));
  state = await up({ stateDir: ownDir, nodes: 1, realNode: true, memhogArchive: memhog.archive, progress: (line) => say(`stack: ${line}`) });
  process.env.APPMONITOR_STACK_DIR = ownDir;
}
const cleanups: (() => Promise<unknown>)[] = [];
try {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  cleanups.push(() => uninstallVpa(state));
  const vpa = await installVpa(state, say);
  await installMemoryScaler();
  await applyFiles("knative/admission/in-place-memory.yaml");
  await core.createNamespace({ body: { metadata: { name: NS } } });
  cleanups.push(() => core.deleteNamespace({ name: NS }));
  await placeNamespace(state, NS);
  await waitFor(`ServiceAccount ${NS}/default`, async () => core.readNamespacedServiceAccount({ namespace: NS, name: "default" }).then(() => true, () => false));
  const scaler = await startScaler({ PROMETHEUS_URL: state.prometheusUrl, ALLOW_UNVERIFIED_ALERTS: "false" });
  cleanups.push(() => scaler.stop());
  const alerts = await startAlertPath(state, NS, scaler.url);
  cleanups.push(() => alerts.stop());

  // memhog as the stack's registry serves it; Node.js in memory-scaler's image and OpenJDK's, imported into the node.
  await importImages(state.realNode as NonNullable<StackState["realNode"]>, [node.archive, ...(openjdk === undefined ? [] : [openjdk.archive])]);
  const images = {
    memhog: (await memhogManifest()).spec?.template.spec?.containers[0]?.image ?? "",
    node: await archiveReference(node.archive),
    openjdk: openjdk === undefined ? "" : await archiveReference(openjdk.archive),
  };
  for (const { name, runtime } of patterns) {
    if (runtime?.program !== undefined) await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: programConfigMap(name) }, data: { [runtime.program.file]: runtime.program.source } } });
  }
  for (const pattern of patterns) {
    for (const arm of ARMS) {
      const name = workloadName(arm, pattern.name);
      if (arm === "vpa") await objects.create({ ...verticalPodAutoscaler(name), metadata: { name, namespace: NS } } as k8s.KubernetesObject);
      if (arm === "appmonitor" || arm === "trend") {
        await createAppMonitor(NS, name, appMonitorSpec(arm, name));
        await alerts.load(name, appMonitorSpec(arm, name));
      }
    }
  }
  // The workloads last, all at once: the same start for every arm.
  for (const pattern of patterns) {
    for (const arm of ARMS) {
      const deployment = patternDeployment(arm, pattern, images, REAL_NODE_PLACEMENT);
      await objects.create({ ...deployment, metadata: { ...(deployment.metadata as object), namespace: NS } } as k8s.KubernetesObject);
    }
  }
  say(`${patterns.length} patterns × ${ARMS.length} arms started; sampling every ${SAMPLE_SECONDS} s for ${minutes} min`);

  const samples: PodSample[] = [];
  const t0 = Date.now();
  let nextTick = 0;
  while (Date.now() - t0 < minutes * 60_000) {
    const t = (Date.now() - t0) / 1000;
    if (t >= nextTick) {
      nextTick = t + 10;
      await deliver(scaler.url, pingTick()).catch((error: Error) => say(`tick: ${error.message}`));
    }
    const [pods, ws, oom] = await Promise.all([
      core.listNamespacedPod({ namespace: NS }),
      promQuery(`container_memory_working_set_bytes{namespace="${NS}",container="${CONTAINER}"}`),
      promQuery(`container_oom_events_total{namespace="${NS}",container="${CONTAINER}"}`),
    ]);
    // cAdvisor's series of a Pod's current container: its cgroup path (`id`) ends with the container's ID.
    const current = (series: { metric: Record<string, string>; value: number }[], containerId: string | undefined) =>
      containerId ? series.find((s) => s.metric.id?.endsWith(containerId))?.value : undefined;
    for (const pod of pods.items) {
      const arm = pod.metadata?.labels?.[ARM_LABEL] as Arm | undefined;
      const pattern = pod.metadata?.labels?.[PATTERN_LABEL];
      const status = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER);
      if (!arm || !pattern || !pod.metadata?.uid) continue;
      const containerId = status?.containerID?.replace(/^\w+:\/\//, "");
      const workingSet = current(ws, containerId);
      const oomEvents = current(oom, containerId);
      samples.push({
        t, arm, pattern, uid: pod.metadata.uid,
        running: pod.status?.phase === "Running" && status?.state?.running !== undefined && pod.metadata.deletionTimestamp === undefined,
        limitBytes: bytes(status?.resources?.limits?.memory ?? pod.spec?.containers.find((c) => c.name === CONTAINER)?.resources?.limits?.memory),
        ...(workingSet !== undefined ? { workingSetBytes: workingSet } : {}),
        restartCount: status?.restartCount ?? 0,
        ...(status?.lastState?.terminated?.reason ? { lastTerminatedReason: status.lastState.terminated.reason } : {}),
        ...(oomEvents !== undefined ? { oomEvents } : {}),
      });
    }
    await new Promise((r) => setTimeout(r, Math.max(0, SAMPLE_SECONDS * 1000 - ((Date.now() - t0) % (SAMPLE_SECONDS * 1000)))));
  }

  const rows = figures(samples, { startLimitBytes: START_LIMIT, pressurePercent: 75, sampleSeconds: SAMPLE_SECONDS });
  rows.sort((a, b) => patterns.findIndex((p) => p.name === a.pattern) - patterns.findIndex((p) => p.name === b.pattern) || ARMS.indexOf(a.arm as Arm) - ARMS.indexOf(b.arm as Arm));
  await writeFile(samplesFile, JSON.stringify({ minutes, sampleSeconds: SAMPLE_SECONDS, start: START_RESOURCES, vpa: { version: vpa.vpaVersion, metricsServer: vpa.metricsServerVersion }, samples }));
  // One point per arm, pattern and sampling: the running Pods' highest limit and summed working set.
  const running = new Map<string, PodSample[]>();
  for (const s of samples.filter((x) => x.running)) {
    const key = `${s.arm}\0${s.pattern}\0${s.t}`;
    running.set(key, [...(running.get(key) ?? []), s]);
  }
  const points = [...running.values()].flatMap((now) => {
    const { arm, pattern, t } = now[0] as PodSample;
    const minute = t / 60;
    return [
      { panel: pattern, series: arm, line: "limit", minute, value: Math.max(...now.map((s) => s.limitBytes)) / 2 ** 20 },
      { panel: pattern, series: arm, line: "working set", minute, value: now.reduce((sum, s) => sum + (s.workingSetBytes ?? 0), 0) / 2 ** 20 },
    ];
  });
  await writeFile(chartFile, await timeSeriesSvg(points, { title: `Memory and limit, ${minutes} min, each workload from ${START_RESOURCES.limits.memory}`, x: "minutes", y: "MiB" }));
  console.log(`\nEach workload from requests ${START_RESOURCES.requests.memory}, limits ${START_RESOURCES.limits.memory}; ${minutes} min; sampled every ${SAMPLE_SECONDS} s.`);
  for (const arm of ARMS) console.log(`  ${arm}: ${ARM_MEANS[arm]}`);
  for (const p of patterns) console.log(`  ${p.name}: ${p.means}`);
  console.log(`\n${figuresTable(rows, SAMPLE_SECONDS)}\n`);
  console.log(`chart: ${chartFile}\nsamples: ${samplesFile}`);
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch((error: Error) => say(`cleanup: ${error.message}`));
  if (ownDir) await down(ownDir).catch((error: Error) => say(`down: ${error.message}`));
  await releaseLock();
}
