// The shipped Serving profile (knative/) for real on the stack's real node: Knative Serving's
// controller, webhook, autoscaler and activator run there beside Eventing as Pods, built from the
// pinned knative.dev/serving (test/harness/stack/serving-install.ts), and the Knative Services of
// the functions and the dead-letter sink are applied through the stack's overlay
// (test/harness/stack/serving-profile-install.ts): admitted and defaulted by Serving's own webhook,
// reconciled into Revisions, whose Pods (our container plus queue-proxy) are Ready on the real
// node. rule-sync answers through its queue-proxy; memory-scaler (min-scale 0) is watched going to
// zero after the autoscaler's window (shortened to 6 s for this file) and coming back to one on an
// event sent to its Revision's Service while at zero, which the activator holds and passes on.
//
// The hop not run: the Route's cluster-local address through an ingress. Serving's ingress layer
// (Kourier, Istio, Contour) needs Envoy, which cannot be had here, so no KIngress is reconciled:
// the Routes and Knative Services do not become Ready, and the Route's address
// (`http://<service>.<namespace>.svc.cluster.local`, which Triggers whose subscriber is a Knative
// Service do resolve) leads nowhere: its Service stays Serving's placeholder, an ExternalName
// naming itself, until an ingress writes its gateway there. So no event goes from the Broker to
// a Knative Service here. Events are sent to a Revision's own Services instead, as an ingress
// would after routing: `<revision>-private` (the Pods' queue-proxy) and `<revision>` (the
// activator or queue-proxy, as Serving points it), at the endpoints kube-proxy would pick.
//
// Starts its own stack (one kwok Node, the real node) in a temporary state directory; one real
// node per machine, so it waits for the machine-wide lock `/tmp/appmonitor-real-node.lock` first.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { HTTP } from "cloudevents";
import { buildImages } from "../../scripts/images/build.ts";
import { binarySetsFor, buildBinaries } from "../../scripts/lib/binaries.ts";
import { EVENTING_NAMESPACE } from "../harness/stack/eventing-manifests.ts";
import { installEventing } from "../harness/stack/eventing-install.ts";
import { FUNCTION_POD_NAMES } from "../harness/stack/function-pods-install.ts";
import { memoryCgroupDir } from "../harness/stack/real-node.ts";
import { podCgroupPath, REAL_NODE } from "../harness/stack/real-node-config.ts";
import { installServing, type ServingInstallation } from "../harness/stack/serving-install.ts";
import { NO_INGRESS_CLASS, SERVING_NAMESPACE } from "../harness/stack/serving-manifests.ts";
import { deployServingProfile, registryDigests, type ServingProfile } from "../harness/stack/serving-profile-install.ts";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { alertEvent } from "../support/memory-scaler.ts";
import { acquireRealNodeLock } from "../harness/stack/real-node-lock.ts";
import { waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

/** The autoscaler's windows for this file (Serving's minimum stable window; defaults 60 s and 30 s). */
const WINDOWS = { stableWindow: "6s", scaleToZeroGracePeriod: "6s" };

let state: StackState | undefined;
let stateDir = "";
let releaseLock: (() => Promise<void>) | undefined;
let serving: ServingInstallation;
let profile: ServingProfile;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let custom: k8s.CustomObjectsApi;
/** When every Revision was Ready (ms since the epoch). */
let profileReadyAt = 0;

before(async () => {
  // Built before the lock: under npm test, while the file before this one holds the node.
  const images = await buildImages(["memhog", ...FUNCTION_POD_NAMES]);
  await buildBinaries(process.env, undefined, binarySetsFor({ realNode: true, eventing: true, serving: true }));
  releaseLock = await acquireRealNodeLock();
  stateDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-serving-"));
  const say = (line: string) => process.stderr.write(`# stack: ${line}\n`);
  state = await up({ stateDir, nodes: 1, realNode: true, memhogArchive: images.find((i) => i.name === "memhog")?.archive ?? "", progress: say });
  process.env.APPMONITOR_STACK_DIR = stateDir;
  // Neither install needs the other: side by side, each waiting on its own Deployments.
  const [eventing, installed] = await Promise.all([installEventing(state), installServing(state, { autoscalerWindows: WINDOWS, progress: say })]);
  serving = installed;
  state.eventing = { version: eventing.version, deployments: eventing.deployments };
  process.stderr.write(`# Eventing ${eventing.version} Available in ${eventing.seconds.toFixed(1)} s\n`);
  state.serving = { version: serving.version, deployments: serving.deployments };
  process.stderr.write(`# Serving ${serving.version} (no ingress) Available in ${serving.seconds.toFixed(1)} s\n`);
  profile = await deployServingProfile(state, { progress: say });
  profileReadyAt = Date.now();
  process.stderr.write(`# Serving profile: every Revision Ready in ${profile.seconds.toFixed(1)} s\n`);
  kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  core = kc.makeApiClient(k8s.CoreV1Api);
  apps = kc.makeApiClient(k8s.AppsV1Api);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  if (state) await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
  await releaseLock?.();
});

const knative = (plural: string, name: string) =>
  custom.getNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace: profile.namespace, plural, name }) as Promise<{
    metadata: { annotations?: Record<string, string> };
    status?: { conditions?: { type: string; status: string; reason?: string }[] };
  }>;

/** Knative Service `name`'s latest Ready Revision now (the SinkBinding's K_SINK makes alert-receiver a second one). */
async function latestRevision(name: string): Promise<string> {
  const configuration = await custom.getNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace: profile.namespace, plural: "configurations", name }) as { status?: { latestReadyRevisionName?: string } };
  return configuration.status?.latestReadyRevisionName ?? "";
}

/** The Pods of Revision `revision` that are Ready and not being deleted. */
async function readyPods(revision: string): Promise<k8s.V1Pod[]> {
  const pods = await core.listNamespacedPod({ namespace: profile.namespace, labelSelector: `serving.knative.dev/revision=${revision}` });
  return pods.items.filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
}

/** `ip:port` of each ready address of Service `name`'s Endpoints (port `portName`), as kube-proxy would pick from. */
async function endpoints(name: string, portName: string): Promise<string[]> {
  const found = await core.readNamespacedEndpoints({ name, namespace: profile.namespace }).catch(() => undefined);
  return (found?.subsets ?? []).flatMap((s) => {
    const port = s.ports?.find((p) => p.name === portName)?.port;
    return port === undefined ? [] : (s.addresses ?? []).map((a) => `${a.ip}:${port}`);
  });
}

/** One HTTP request `method urlPath` to `address` (`ip:port`) with `Host: host`; its status, headers and body. */
function send(address: string, host: string, method: string, urlPath: string, headers: Record<string, string> = {}, body = ""): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const [hostname, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port: Number(port), method, path: urlPath, headers: { ...headers, host }, timeout: 60_000 }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error(`no answer from ${address} in 60 s`)));
    req.end(body);
  });
}

/** A CloudEvent memory-scaler answers with a skip: an alert no AppMonitor rule raised. */
function markerEvent(): { headers: Record<string, string>; body: string } {
  const message = HTTP.binary(alertEvent({ namespace: "serving-marker", pod: "marker", alertname: "Marker" }));
  return { headers: message.headers as Record<string, string>, body: message.body as string };
}

/** The host name of Revision `revision`'s Service, which the activator reads the Revision from. */
const revisionHost = (revision: string) => `${revision}.${profile.namespace}.svc.cluster.local`;

test("Serving's controller, webhook, autoscaler and activator run on the real node beside Eventing", async (t) => {
  const pods = (await core.listNamespacedPod({ namespace: SERVING_NAMESPACE })).items;
  assert.deepEqual([...serving.deployments].sort(), ["activator", "autoscaler", "controller", "webhook"]);
  for (const name of serving.deployments) {
    const pod = pods.find((p) => p.metadata?.labels?.app === name && p.status?.phase === "Running");
    assert.equal(pod?.spec?.nodeName, REAL_NODE.name, `${name} runs on the real node`);
  }
  // Resident memory (the Pod cgroups' RSS) of both installs, for the record.
  const rss = async (namespace: string) => {
    let total = 0;
    for (const pod of (await core.listNamespacedPod({ namespace })).items.filter((p) => p.status?.phase === "Running")) {
      const stat = await readFile(path.join(memoryCgroupDir(podCgroupPath({ uid: pod.metadata?.uid ?? "", qosClass: pod.status?.qosClass ?? "" })), "memory.stat"), "utf8");
      total += Number(/^total_rss (\d+)$/m.exec(stat)?.[1] ?? 0);
    }
    return (total / 2 ** 20).toFixed(0);
  };
  t.diagnostic(`resident memory: Serving ${await rss(SERVING_NAMESPACE)} MiB, Eventing ${await rss(EVENTING_NAMESPACE)} MiB; installed in ${serving.seconds.toFixed(1)} s`);
});

test("the Knative Services were admitted by Serving's webhook: defaulted by it, and a bad one refused by it", async () => {
  const service = await knative("services", "memory-scaler");
  // Serving's defaulting webhook records who created a Knative Service; nothing else writes it.
  assert.ok(service.metadata.annotations?.["serving.knative.dev/creator"], "the creator annotation Serving's webhook sets");
  const bad = {
    apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name: "refused", namespace: profile.namespace },
    spec: { template: { metadata: { annotations: { "autoscaling.knative.dev/min-scale": "-1" } }, spec: { containers: [{ image: "ghcr.io/kubedemo/appmonitor-memory-scaler@sha256:" + "0".repeat(64) }] } } },
  };
  await assert.rejects(
    custom.createNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace: profile.namespace, plural: "services", body: bad, dryRun: "All" }),
    (error: Error) => /validation\.webhook\.serving\.knative\.dev/.test(error.message) && /min-scale/.test(error.message),
  );
});

test("each Revision's Pods run our container plus queue-proxy, Ready on the real node, the image pulled by digest from the stack's registry", async () => {
  const digests = state ? registryDigests(state) : {};
  // The dead-letter sink's Knative Service is appmonitor-dead-letter, its container and image dead-letter.
  for (const [service, fn] of [["alert-receiver", "alert-receiver"], ["rule-sync", "rule-sync"], ["appmonitor-dead-letter", "dead-letter"]] as const) {
    const revision = await latestRevision(service);
    const [pod] = await waitFor(`a Ready Pod of ${revision}`, async () => ((await readyPods(revision)).length > 0 ? readyPods(revision) : undefined), 60_000);
    assert.equal(pod?.spec?.nodeName, REAL_NODE.name);
    assert.deepEqual(pod?.spec?.containers.map((c) => c.name), [fn, "queue-proxy"]);
    assert.match(pod?.spec?.containers[1]?.image ?? "", /^localhost\/appmonitor\/knative-serving\/queue:v0\.50\.0$/);
    const image = pod?.spec?.containers[0]?.image ?? "";
    assert.equal(image, `ghcr.io/kubedemo/appmonitor-${fn}@${digests[`ghcr.io/kubedemo/appmonitor-${fn}`]}`);
  }
});

test("rule-sync answers its health probe through queue-proxy, at its Revision's private Service", async () => {
  const revision = await latestRevision("rule-sync");
  const [address] = await waitFor(`endpoints of ${revision}-private`, async () => ((await endpoints(`${revision}-private`, "http")).length > 0 ? endpoints(`${revision}-private`, "http") : undefined), 60_000);
  assert.match(address ?? "", /:8012$/, "queue-proxy's port, not the function's 8080");
  const res = await send(address ?? "", revisionHost(revision), "GET", "/health/readiness");
  assert.equal(res.status, 200, `rule-sync's readiness through queue-proxy: ${res.status} ${res.body.slice(0, 200)}`);
  assert.equal((await readyPods(revision)).length, 1);
});

test("memory-scaler goes to zero after the autoscaler's window, and an event sent at zero is answered through the activator, its Deployment back at one", { timeout: 300_000 }, async (t) => {
  const revision = await latestRevision("memory-scaler");
  const deployment = `${revision}-deployment`;
  await waitFor(`${deployment} at 0 replicas`, async () => (await apps.readNamespacedDeployment({ name: deployment, namespace: profile.namespace })).spec?.replicas === 0, 180_000, 500);
  await waitFor(`no Pod of ${revision} left`, async () => (await core.listNamespacedPod({ namespace: profile.namespace, labelSelector: `serving.knative.dev/revision=${revision}` })).items.length === 0, 120_000, 500);
  t.diagnostic(`at zero, its Pod gone, ${((Date.now() - profileReadyAt) / 1000).toFixed(1)} s after every Revision was Ready (windows ${JSON.stringify(WINDOWS)})`);

  // At zero Serving points the Revision's Service at the activator.
  const activators = (await core.listNamespacedPod({ namespace: SERVING_NAMESPACE, labelSelector: "app=activator" })).items.map((p) => p.status?.podIP);
  const [address] = await waitFor(`${revision}'s endpoints on the activator`, async () => {
    const found = await endpoints(revision, "http");
    return found.length > 0 && found.every((a) => activators.includes(a.split(":")[0])) ? found : undefined;
  }, 60_000);
  const { headers, body } = markerEvent();
  const sent = Date.now();
  const res = await send(address ?? "", revisionHost(revision), "POST", "/", headers, body);
  const latency = Date.now() - sent;
  assert.equal(res.status, 204, `memory-scaler's answer through the activator: ${res.status} ${res.body.slice(0, 200)}`);
  assert.equal(res.headers["x-appmonitor-outcome"], "skipped");
  assert.equal(res.headers["x-appmonitor-reason"], "NotAppMonitorAlert");
  const d = await apps.readNamespacedDeployment({ name: deployment, namespace: profile.namespace });
  assert.equal(d.spec?.replicas, 1, "the autoscaler scaled the Deployment back to one");
  t.diagnostic(`cold start through the activator: answered in ${latency} ms (POST to ${address}, Host ${revisionHost(revision)})`);
  // The activator passes the request on once its own probe of queue-proxy passes, which can be
  // before the kubelet has written the Pod's Ready condition.
  const [pod] = await waitFor(`a Ready Pod of ${revision}`, async () => ((await readyPods(revision)).length > 0 ? readyPods(revision) : undefined), 60_000);
  assert.deepEqual(pod?.spec?.containers.map((c) => c.name), ["memory-scaler", "queue-proxy"]);
  assert.equal(pod?.spec?.nodeName, REAL_NODE.name);
});

test("the hop not run: no ingress reconciles the Routes' KIngresses, so the Routes and Knative Services are not Ready and the Route's address leads nowhere", async () => {
  const ingresses = await custom.listNamespacedCustomObject({ group: "networking.internal.knative.dev", version: "v1alpha1", namespace: profile.namespace, plural: "ingresses" }) as {
    items: { metadata: { name: string; annotations?: Record<string, string> }; status?: { conditions?: unknown[] } }[];
  };
  const memoryScaler = ingresses.items.find((i) => i.metadata.name === "memory-scaler");
  assert.equal(memoryScaler?.metadata.annotations?.["networking.knative.dev/ingress.class"], NO_INGRESS_CLASS);
  assert.equal(memoryScaler?.status?.conditions, undefined, "no ingress controller wrote a status");
  for (const name of Object.keys(profile.revisions)) {
    const route = await knative("routes", name);
    assert.notEqual(route.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", `Route ${name} not Ready`);
    const revision = await knative("revisions", await latestRevision(name));
    assert.equal(revision.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", `Revision of ${name} Ready`);
  }
  // The Trigger resolves the Knative Service's address, the Route's; its Service stays the
  // placeholder Serving writes until an ingress gives its gateway: an ExternalName naming itself.
  const address = `memory-scaler.${profile.namespace}.svc.cluster.local`;
  const trigger = await custom.getNamespacedCustomObject({ group: "eventing.knative.dev", version: "v1", namespace: profile.namespace, plural: "triggers", name: "memory-scaler-alert-firing" }) as { status?: { subscriberUri?: string } };
  assert.equal(trigger.status?.subscriberUri, `http://${address}`);
  const placeholder = await core.readNamespacedService({ name: "memory-scaler", namespace: profile.namespace });
  assert.deepEqual([placeholder.spec?.type, placeholder.spec?.externalName], ["ExternalName", address]);
});
