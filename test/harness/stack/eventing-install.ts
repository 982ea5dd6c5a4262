/**
 * Knative Eventing running on the stack's real node: its images imported into the node's
 * containerd (of every command built, event_display, the tests' observer, included), its
 * rendered install (`eventing-source.ts`) placed on the node (`eventing-placement.ts`) and
 * applied, its webhook configurations applied only once the webhook serves (with failurePolicy
 * Fail, an earlier one would make the API server refuse Eventing's own ConfigMaps), and every
 * Deployment of the install with replicas waited for until Available.
 *
 * The API server reaches the webhook at its Pod IP (`--enable-aggregator-routing`, stack.ts); the
 * Pods Eventing's controller makes later are placed by namespace annotations
 * ({@link placeNamespace}).
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { EVENTING_NAMESPACE, type EventingObject } from "./eventing-manifests.ts";
import { placementAnnotations, placePods } from "./eventing-placement.ts";
import { eventingImageArchive, eventingInstall } from "./eventing-source.ts";
import { importImages } from "./node-images.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { REAL_NODE_PLACEMENT } from "./real-node-config.ts";
import type { StackState } from "./state.ts";
import { BINARY_SETS, buildBinaries } from "../../../scripts/lib/binaries.ts";

const run = promisify(execFile);
const STEP = "install Knative Eventing on the real node";

/** Kinds applied only after the webhook serves. */
export const WEBHOOK_CONFIG_KINDS: ReadonlySet<string> = new Set(["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]);

/** What {@link installEventing} did. */
export interface EventingInstallation {
  /** Eventing's version, such as `v0.50.0`. */
  version: string;
  /** The Deployments waited for (all with replicas > 0), in the knative-eventing namespace. */
  deployments: string[];
  /** Seconds from the first import to the last Deployment waited for (Available, or its Pod started: {@link installEventing}). */
  seconds: number;
}

/**
 * A readiness probe's `initialDelaySeconds` from which a Deployment is waited for until its Pod
 * has started rather than until it is Ready, unless asked: Eventing's two controllers (20 s, then
 * every 10 s) take about 20 s longer to be Ready than the rest. They serve no traffic (no Service
 * sends to them), and reconcile from their start, so what comes next (a Broker waited for until
 * Ready) needs them started, not Ready.
 */
const LATE_READINESS_SECONDS = 10;

/** The longest readiness delay of a Deployment's containers, in seconds (0 for any other object). */
function readinessDelay(o: EventingObject): number {
  const containers = (o as { spec?: { template?: { spec?: { containers?: { readinessProbe?: { initialDelaySeconds?: number } }[] } } } }).spec?.template?.spec?.containers ?? [];
  return Math.max(0, ...containers.map((c) => c.readinessProbe?.initialDelaySeconds ?? 0));
}

/**
 * Waits until a Pod of Deployment `name` runs with every container started (its startup probe, if
 * any, passed), Ready or not.
 * @throws StepError of `step` saying no Pod started, with its Pods' states, after `timeoutMs`.
 */
async function waitStarted(kc: k8s.KubeConfig, name: string, timeoutMs: number, namespace = EVENTING_NAMESPACE, step = STEP): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await until(async () => (await podsOf(core, namespace, name)).some((p) => p.status?.phase === "Running" && (p.status.containerStatuses ?? []).length > 0 && (p.status.containerStatuses ?? []).every((c) => c.started === true)), timeoutMs,
    async () => `Deployment ${namespace}/${name}: no Pod started (${await podStates(core, namespace, name)})`, step);
}

/** The Pods of Deployment `name` in `namespace`, by their names' prefix. */
async function podsOf(core: k8s.CoreV1Api, namespace: string, name: string): Promise<k8s.V1Pod[]> {
  return (await core.listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.name?.startsWith(`${name}-`));
}

/** Each Pod of Deployment `name`: its phase and its containers' states, for an error message ("no Pods" when none). */
async function podStates(core: k8s.CoreV1Api, namespace: string, name: string): Promise<string> {
  const states = (await podsOf(core, namespace, name)).map((p) => `${p.metadata?.name}: ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state) ?? p.status?.conditions ?? {})}`);
  return states.join("; ") || "no Pods";
}

/** kubectl against the stack, as one step's command; its stdout. @throws StepError with kubectl's stderr. */
export async function stackKubectl(state: StackState, args: readonly string[], step = STEP): Promise<string> {
  try {
    return (await run(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, ...args], { maxBuffer: 32 << 20, timeout: 180_000 })).stdout;
  } catch (error) {
    throw new StepError(step, `kubectl ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
  }
}

/** Server-side apply of `objects`, written to `file` first (kept for a reader of the state directory). @throws StepError of `step`. */
export async function applyObjects(state: StackState, objects: readonly object[], file: string, step = STEP): Promise<void> {
  await writeFile(file, objects.map((o) => stringify(o, { version: "1.1" })).join("---\n"));
  await stackKubectl(state, ["apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", "-f", file], step);
}

/**
 * Polls `check` every 500 ms until it returns true.
 * @throws StepError of `step` after `timeoutMs` with `describe()`'s account of what is missing.
 */
export async function until(check: () => Promise<boolean>, timeoutMs: number, describe: () => Promise<string>, step = STEP): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new StepError(step, `${await describe()} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Waits until Deployment `name` of `namespace` (default Eventing's) is Available.
 * @throws StepError of `step` naming its Pods' states.
 */
export async function waitAvailable(kc: k8s.KubeConfig, name: string, timeoutMs: number, namespace = EVENTING_NAMESPACE, step = STEP): Promise<void> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await until(async () => {
    const d = await apps.readNamespacedDeployment({ name, namespace });
    return (d.status?.conditions?.some((c) => c.type === "Available" && c.status === "True") ?? false) && (d.status?.readyReplicas ?? 0) >= 1;
  }, timeoutMs, async () => `Deployment ${namespace}/${name} not Available (${await podStates(core, namespace, name)})`, step);
}

/**
 * Annotates namespace `name` (which must exist) so that every Pod created in it lands on the real
 * node, whoever creates it ({@link placementAnnotations}).
 * @throws StepError when kubectl fails.
 */
export async function placeNamespace(state: StackState, name: string): Promise<void> {
  const annotations = Object.entries(placementAnnotations(REAL_NODE_PLACEMENT)).map(([k, v]) => `${k}=${v}`);
  await stackKubectl(state, ["annotate", "--overwrite", "namespace", name, ...annotations]);
}

/**
 * Applies a Knative install's webhook configurations (`configs`, written to `file`) once its
 * webhook serves, and waits until the webhook has written its own CA into each of them: until
 * then the API server cannot trust it.
 * @throws StepError of `step` when the apply fails or a configuration has no CA bundle after `timeoutMs`.
 */
export async function applyWebhookConfigurations(state: StackState, kc: k8s.KubeConfig, configs: readonly EventingObject[], file: string, timeoutMs: number, step = STEP): Promise<void> {
  await applyObjects(state, configs, file, step);
  const reg = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const caBundles = async (): Promise<string[]> => {
    const missing: string[] = [];
    for (const o of configs) {
      const config = o.kind === "MutatingWebhookConfiguration"
        ? await reg.readMutatingWebhookConfiguration({ name: o.metadata.name })
        : await reg.readValidatingWebhookConfiguration({ name: o.metadata.name });
      if (!config.webhooks?.length || config.webhooks.some((w) => !w.clientConfig.caBundle)) missing.push(o.metadata.name);
    }
    return missing;
  };
  await until(async () => (await caBundles()).length === 0, timeoutMs, async () => `webhook configurations without a CA bundle: ${(await caBundles()).join(", ")}`, step);
}

/**
 * Installs Knative Eventing (core, in-memory channel, channel-based Broker) on the stack's real
 * node and waits until it serves: its webhook and data plane (the Broker's ingress and filter, the
 * channel's dispatcher) Available, its controllers started, or Available too when `controllersReady`.
 * @param timeoutMs how long to wait for each Deployment and for the webhook's configurations (default 240 000).
 * @param progress hears one line per step: the images imported, each Deployment Available or started (n of m).
 * @param controllersReady wait for the controllers to be Ready as well, about 20 s more
 *   ({@link LATE_READINESS_SECONDS}): for `npm run stack -- up --eventing`, whose `status` then
 *   finds every Deployment Ready.
 * @throws StepError when the stack has no real node, an import or apply fails, or a
 *   Deployment is not Available in time (the message names its Pods' states).
 */
export async function installEventing(state: StackState, timeoutMs = 240_000, progress: (line: string) => void = () => {}, controllersReady = false): Promise<EventingInstallation> {
  const node = state.realNode;
  if (!node) throw new StepError(STEP, "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const t0 = Date.now();
  // Its set of build.sh, built now if the stack's start did not need it.
  await buildBinaries(process.env, progress, BINARY_SETS.eventing);
  const { module, objects } = await eventingInstall();
  const binDir = path.dirname(state.binaries.kubectl);
  progress(`Knative Eventing ${module.version}: importing ${module.commands.length} images into the real node, then waiting for its Deployments (about 90 s in all)`);
  await importImages(node, module.commands.map((c) => eventingImageArchive(binDir, c)), () => "bash test/harness/bins/build.sh");

  const placed = placePods(objects, REAL_NODE_PLACEMENT);
  const webhookConfigs = placed.filter((o) => WEBHOOK_CONFIG_KINDS.has(o.kind));
  await applyObjects(state, placed.filter((o) => !WEBHOOK_CONFIG_KINDS.has(o.kind)), path.join(node.paths.dir, "eventing.yaml"));

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await waitAvailable(kc, "eventing-webhook", timeoutMs);
  progress(`Knative Eventing: eventing-webhook Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  await applyWebhookConfigurations(state, kc, webhookConfigs, path.join(node.paths.dir, "eventing-webhooks.yaml"), timeoutMs);

  const waited = placed
    .filter((o): o is EventingObject & { spec?: { replicas?: number } } => o.kind === "Deployment" && o.metadata.namespace === EVENTING_NAMESPACE)
    .filter((o) => o.spec?.replicas !== 0);
  for (const [i, o] of waited.entries()) {
    const name = o.metadata.name;
    const delay = readinessDelay(o);
    const late = !controllersReady && delay >= LATE_READINESS_SECONDS;
    await (late ? waitStarted(kc, name, timeoutMs) : waitAvailable(kc, name, timeoutMs));
    const reached = late ? `started (Ready once its readiness probe begins, ${delay} s after)` : "Available";
    progress(`Knative Eventing: [${i + 1}/${waited.length}] ${name} ${reached} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return { version: module.version, deployments: waited.map((o) => o.metadata.name), seconds: (Date.now() - t0) / 1000 };
}

/**
 * One status line per Deployment {@link installEventing} waited for (`state.eventing`): its ready
 * replicas, `NOT READY` when none is, `MISSING` when the Deployment is gone; read with kubectl.
 */
export function eventingStatusLines(state: StackState): Promise<string[]> {
  return state.eventing ? deploymentStatusLines(state, "eventing", EVENTING_NAMESPACE, `Knative Eventing ${state.eventing.version}`, state.eventing.deployments) : Promise.resolve([]);
}

/**
 * One status line per Deployment of `namespace` named in `deployments` (a Knative install's),
 * each `<label> <name>` then its ready replicas, `NOT READY` when none is, `MISSING` when the
 * Deployment is gone, and `what` (the install's name and version); read with kubectl.
 */
export async function deploymentStatusLines(state: StackState, label: string, namespace: string, what: string, deployments: readonly string[]): Promise<string[]> {
  const list = await stackKubectl(state, ["get", "deployments", "-n", namespace, "-o", "json"]).then(
    (out) => (JSON.parse(out) as { items: { metadata: { name: string }; status?: { readyReplicas?: number; replicas?: number } }[] }).items,
    () => undefined,
  );
  return deployments.map((name) => {
    const d = list?.find((i) => i.metadata.name === name);
    const ready = !list ? "NOT READY (the API server does not answer)" : !d ? "MISSING" : (d.status?.readyReplicas ?? 0) > 0 ? `ready ${d.status?.readyReplicas}/${d.status?.replicas}` : "NOT READY";
    return `${`${label} ${name}`.padEnd(24)} ${ready}  ${namespace}, ${what}`;
  });
}
