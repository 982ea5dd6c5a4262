/**
 * memory-scaler's write policy (knative/admission/memory-scaler-writes.yaml) on the stack's real
 * kube-apiserver, with a token of memory-scaler's own ServiceAccount (knative/rbac/memory-scaler.yaml):
 * what RBAC lets it send and the policy refuses, each refusal naming the field; and every write a
 * scale makes, sent by memory-scaler's own writers (`kube/cluster.ts`, `scale/targets/write.ts` and the
 * patch builders), passing. The whole function's scales pass it too: `installMemoryScaler` applies
 * the policy for every memory-scaler test file, and the last case here delivers an alert.
 */
import assert from "node:assert/strict";
import { before, describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { apiStatus, isPatchConflict } from "../../functions/lib/kube-api-errors.ts";
import { type Cluster, createCluster } from "../../functions/memory-scaler/kube/cluster.ts";
import { memoryOf } from "../../functions/memory-scaler/kube/views.ts";
import type { ContainerChange, JsonPatchOperation, Workload, WorkloadKind } from "../../functions/memory-scaler/model.ts";
import { readHeapFlags, scaledFlag } from "../../functions/memory-scaler/scale/decide/heap-flags.ts";
import { buildInPlaceClaimPatch } from "../../functions/memory-scaler/scale/targets/in-place-patch.ts";
import { buildResizePatch } from "../../functions/memory-scaler/scale/targets/resize-patch.ts";
import { buildHeapFlagPatch, buildTemplatePatch, escapeJsonPointerToken } from "../../functions/memory-scaler/scale/targets/template-patch.ts";
import { podForAdmission, writeWorkload } from "../../functions/memory-scaler/scale/targets/write.ts";
import { installMemoryScaler } from "../support/install.ts";
import { alertEvent, deliver, monitoredDeployment, onlyRunningPod, SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT, scalerForSuite } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { adminKubeConfig, freshNamespace, serviceAccountKubeConfig, waitFor } from "../support/stack.ts";

const MiB = 1n << 20n;

/** The Pod template every workload here runs: a JVM with its heap in the command and in JAVA_TOOL_OPTIONS, a Go sidecar with GOMEMLIMIT. */
function template(app: string): k8s.V1PodTemplateSpec {
  return {
    metadata: { labels: { app } },
    spec: {
      containers: [{
        name: "app",
        image: "registry.example/app:1",
        command: ["java", "-Xmx256m", "-jar", "app.jar"],
        env: [{ name: "TZ", value: "UTC" }, { name: "JAVA_TOOL_OPTIONS", value: "-XX:+UseG1GC -Xmx256m" }],
        resources: { limits: { memory: "384Mi", cpu: "500m" }, requests: { memory: "256Mi", cpu: "250m" } },
      }],
      initContainers: [{
        name: "proxy",
        image: "registry.example/proxy:1",
        restartPolicy: "Always",
        env: [{ name: "GOMEMLIMIT", value: "100MiB" }],
        resources: { limits: { memory: "128Mi" }, requests: { memory: "128Mi" } },
      }],
    },
  };
}

/** Creates workload `kind` named `name` in `ns` (admin), each kind with the same Pod template. */
async function createWorkload(ns: string, kind: WorkloadKind, name: string): Promise<void> {
  const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
  const spec = { selector: { matchLabels: { app: name } }, template: template(name) };
  const body = { metadata: { name }, spec };
  switch (kind) {
    case "Deployment":
      await apps.createNamespacedDeployment({ namespace: ns, body: { ...body, spec: { ...spec, replicas: 1 } } });
      // As memory-scaler meets a Deployment with Pods: annotated by its controller.
      await waitFor(`Deployment ${name}'s revision`, async () => (await apps.readNamespacedDeployment({ namespace: ns, name })).metadata?.annotations?.["deployment.kubernetes.io/revision"]);
      return;
    case "StatefulSet":
      await apps.createNamespacedStatefulSet({ namespace: ns, body: { ...body, spec: { ...spec, replicas: 1, serviceName: name } } });
      return;
    case "DaemonSet":
      await apps.createNamespacedDaemonSet({ namespace: ns, body });
      return;
    case "ReplicaSet":
      await apps.createNamespacedReplicaSet({ namespace: ns, body: { ...body, spec: { ...spec, replicas: 1 } } });
      return;
  }
}

/** The workload as memory-scaler reads it (its own token). */
async function readAsScaler(cluster: Cluster, ns: string, kind: WorkloadKind, name: string): Promise<Workload> {
  const object = await cluster.readWorkload(kind, ns, name);
  if (object?.spec?.template === undefined) throw new Error(`${kind} ${ns}/${name} not found`);
  return { kind, name, namespace: ns, object: object as Workload["object"] };
}

/** Each container's memory times `factor` (a fraction `[num, den]`), as a scale decision's changes. */
function changesOf(workload: Workload, [num, den]: [bigint, bigint]): ContainerChange[] {
  const times = (q: string) => `${(BigInt(q.replace(/Mi$/, "")) * num) / den}Mi`;
  return memoryOf(workload.object.spec.template.spec).flatMap(({ name, limit, request }) => {
    if (limit === undefined || request === undefined) return [];
    return [{ container: name, from: { limit, request }, to: { limit: times(limit), request: times(request) } }];
  });
}

/** Every heap flag of the template raised by `[num, den]`, as `heapFlags: Scale` writes them. */
function heapChanges(workload: Workload, [num, den]: [bigint, bigint]): Parameters<typeof buildHeapFlagPatch>[1] {
  const spec = workload.object.spec.template.spec;
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].flatMap((c) =>
    readHeapFlags(c).flags.filter((f) => "bytes" in f.cap).map((flag) => ({ container: c.name, flag, to: scaledFlag(flag, 256n * MiB * den, 256n * MiB * num).token })));
}

/** The refusal `write` meets: 403 Forbidden from the policy, whose message matches `field`. */
async function refused(t: TestContext, write: Promise<unknown>, field: RegExp): Promise<string> {
  const error = await write.then(() => undefined, (e: unknown) => e);
  assert.ok(error !== undefined, `not refused (expected a refusal naming ${field})`);
  const status = apiStatus(error);
  assert.equal(status.code, 403, status.message);
  assert.match(status.message, /ValidatingAdmissionPolicy 'appmonitor-memory-scaler-writes'/);
  assert.match(status.message, field);
  t.diagnostic(`refused: ${status.message.replace(/^.*denied request: /, "")}`);
  return status.message;
}

describe("memory-scaler's write policy", { concurrency: 4 }, () => {
  let scaler: Cluster;
  before(async () => {
    await installMemoryScaler();
    scaler = createCluster(await serviceAccountKubeConfig(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT));
    // A new policy takes a moment to reach the API server's admission: wait until it refuses a
    // dry run, on a Deployment of no replicas in the install's namespace, removed after.
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    const probe = { namespace: SCALER_NAMESPACE, name: `writes-policy-probe-${process.pid}` };
    await apps.createNamespacedDeployment({ namespace: probe.namespace, body: { metadata: { name: probe.name }, spec: { replicas: 0, selector: { matchLabels: { app: "probe" } }, template: template("probe") } } });
    try {
      await waitFor("the write policy in force", () =>
        scaler.patchWorkload("Deployment", probe.namespace, probe.name, [{ op: "replace", path: "/spec/replicas", value: 1 }], true).then(() => false, (e: unknown) => apiStatus(e).code === 403));
    } finally {
      await apps.deleteNamespacedDeployment(probe);
    }
  });

  it("refuses what RBAC lets it send but a scale never writes, naming the field", async (t) => {
    const ns = await freshNamespace(t);
    await createWorkload(ns, "Deployment", "web");
    const app = "/spec/template/spec/containers/0";
    const cases: [string, JsonPatchOperation[], RegExp][] = [
      ["an image", [{ op: "replace", path: `${app}/image`, value: "registry.example/other:1" }], /spec\.template\.spec\.containers\[app\]\.image/],
      ["a command", [{ op: "replace", path: `${app}/command/0`, value: "sh" }], /containers\[app\]\.command\[0\]/],
      ["a heap flag made into another flag", [{ op: "replace", path: `${app}/command/1`, value: "-Xss256m" }], /containers\[app\]\.command\[1\]/],
      ["a heap env var's other tokens", [{ op: "replace", path: `${app}/env/1/value`, value: "-XX:+UseSerialGC -Xmx512m" }], /containers\[app\]\.env\[JAVA_TOOL_OPTIONS\]\.value/],
      ["an env var that holds no heap flag", [{ op: "replace", path: `${app}/env/0/value`, value: "CET" }], /containers\[app\]\.env\[TZ\]\.value/],
      ["an env var added", [{ op: "add", path: `${app}/env/-`, value: { name: "DEBUG", value: "1" } }], /containers\[app\]\.env\b/],
      ["a heap env var added with more than a heap setting", [{ op: "add", path: `${app}/env/-`, value: { name: "NODE_OPTIONS", value: "--max-old-space-size=512 --require ./x.js" } }], /containers\[app\]\.env\b/],
      ["something else appended to a heap env var", [{ op: "replace", path: `${app}/env/1/value`, value: "-XX:+UseG1GC -Xmx256m -javaagent:/x.jar" }], /containers\[app\]\.env\[JAVA_TOOL_OPTIONS\]\.value/],
      ["a CPU limit", [{ op: "replace", path: `${app}/resources/limits/cpu`, value: "2" }], /containers\[app\]\.resources\.limits\.cpu/],
      ["a memory limit removed", [{ op: "remove", path: `${app}/resources/limits/memory` }], /containers\[app\]\.resources\.limits\.memory \(added or removed\)/],
      ["a sidecar's image", [{ op: "replace", path: "/spec/template/spec/initContainers/0/image", value: "registry.example/other:1" }], /initContainers\[proxy\]\.image/],
      ["a label that is not appmonitor's", [{ op: "add", path: "/metadata/labels", value: { team: "x" } }], /metadata\.labels\[team\]/],
      ["an annotation that is not appmonitor's", [{ op: "add", path: "/metadata/annotations/example.com~1owner", value: "x" }], /metadata\.annotations\[example\.com\/owner\]/],
      ["the replicas", [{ op: "replace", path: "/spec/replicas", value: 3 }], /spec\.replicas/],
      ["the Pod template's labels", [{ op: "add", path: "/spec/template/metadata/labels/extra", value: "x" }], /spec\.template\.metadata/],
      ["the Pod's ServiceAccount", [{ op: "add", path: "/spec/template/spec/serviceAccountName", value: "admin" }], /spec\.template\.spec\.serviceAccountName/],
      ["a container added", [{ op: "add", path: "/spec/template/spec/containers/-", value: { name: "extra", image: "registry.example/x:1" } }], /spec\.template\.spec\.containers \(its containers\)/],
    ];
    for (const [name, patch, field] of cases) {
      await t.test(name, async (t) => {
        await refused(t, scaler.patchWorkload("Deployment", ns, "web", patch, false), field);
      });
    }
    await t.test("a dry run is judged the same", async (t) => {
      await refused(t, scaler.patchWorkload("Deployment", ns, "web", [{ op: "replace", path: `${app}/image`, value: "registry.example/other:1" }], true), /containers\[app\]\.image/);
    });
  });

  for (const kind of ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"] as const) {
    it(`${kind}: the template patch (memory, heap flags in command, env and a sidecar, last-scale annotations), then a down-step, pass through memory-scaler's writer`, async (t) => {
      const ns = await freshNamespace(t);
      await createWorkload(ns, kind, "app");
      const up = await readAsScaler(scaler, ns, kind, "app");
      const changes = changesOf(up, [2n, 1n]);
      const patch = [
        ...buildTemplatePatch({ templateContainers: memoryOf(up.object.spec.template.spec), changes, annotations: up.object.metadata?.annotations, time: new Date(), record: "{\"up\":1}" }),
        ...buildHeapFlagPatch(up.object.spec.template.spec, heapChanges(up, [2n, 1n])),
      ];
      const warnings: string[] = [];
      const written = await writeWorkload(scaler, up, patch, podForAdmission(up, changes), (w) => warnings.push(w));
      assert.equal(written.result, "written", JSON.stringify(written));
      const raised = await readAsScaler(scaler, ns, kind, "app");
      const spec = raised.object.spec.template.spec;
      assert.deepEqual(memoryOf(spec).map((c) => [c.name, c.limit, c.request]), [["app", "768Mi", "512Mi"], ["proxy", "256Mi", "256Mi"]]);
      assert.deepEqual(spec?.containers[0]?.command, ["java", "-Xmx512m", "-jar", "app.jar"]);
      assert.equal(spec?.containers[0]?.env?.[1]?.value, "-XX:+UseG1GC -Xmx512m");
      assert.equal(spec?.initContainers?.[0]?.env?.[0]?.value, "200MiB");

      // A down-step: the same writer, the memory three quarters of it.
      const down = changesOf(raised, [3n, 4n]);
      const stepped = await writeWorkload(scaler, raised, [
        ...buildTemplatePatch({ templateContainers: memoryOf(spec), changes: down, annotations: raised.object.metadata?.annotations, time: new Date(Date.now() + 1000), record: "{\"down\":1}" }),
        ...buildHeapFlagPatch(spec, heapChanges(raised, [3n, 4n])),
      ], podForAdmission(raised, down), (w) => warnings.push(w));
      assert.equal(stepped.result, "written", JSON.stringify(stepped));
      const after = await readAsScaler(scaler, ns, kind, "app");
      assert.deepEqual(memoryOf(after.object.spec.template.spec).map((c) => c.limit), ["576Mi", "192Mi"]);
    });
  }

  it("an in-place claim (annotations and label on the workload) and its removal by a later template patch pass", async (t) => {
    const ns = await freshNamespace(t);
    await createWorkload(ns, "StatefulSet", "db");
    // The claim tests the resourceVersion, which the StatefulSet controller's status writes move: read again on a conflict, as memory-scaler does.
    await waitFor("the claim written", async () => {
      const w = await readAsScaler(scaler, ns, "StatefulSet", "db");
      const claim = buildInPlaceClaimPatch({
        template: memoryOf(w.object.spec.template.spec), resourceVersion: w.object.metadata?.resourceVersion, annotations: w.object.metadata?.annotations, labels: w.object.metadata?.labels,
        time: "2026-01-01T00:00:00Z", record: "{}", inPlace: "app=384Mi>768Mi/256Mi>512Mi",
      });
      return scaler.patchWorkload("StatefulSet", ns, "db", claim, false).then(() => true, (error: unknown) => {
        if (isPatchConflict(error)) return false;
        throw error;
      });
    });
    const claimed = await readAsScaler(scaler, ns, "StatefulSet", "db");
    assert.equal(claimed.object.metadata?.labels?.[IN_PLACE_LABEL], "true");
    // What scale/targets/template-target.ts adds to a template patch of a workload that holds the
    // record, with its `test` of the record: the record holds `>`, which the API server's JSON Patch
    // compares in Go's encoding (\u003e); kube/cluster.ts writes the body so. A stale record conflicts.
    const path = `/metadata/annotations/${escapeJsonPointerToken(IN_PLACE_MEMORY_ANNOTATION)}`;
    const record = claimed.object.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION] ?? "";
    assert.match(record, />/, "the in-place record holds a '>'");
    const removal = (value: string): JsonPatchOperation[] => [{ op: "test", path, value }, { op: "remove", path }, { op: "remove", path: `/metadata/labels/${escapeJsonPointerToken(IN_PLACE_LABEL)}` }];
    await assert.rejects(scaler.patchWorkload("StatefulSet", ns, "db", removal(`${record}>1`), false), (error: unknown) => isPatchConflict(error), "a record changed since the read conflicts");
    await scaler.patchWorkload("StatefulSet", ns, "db", removal(record), false);
    const removed = await readAsScaler(scaler, ns, "StatefulSet", "db");
    assert.equal(removed.object.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], undefined);
  });

  it("Pods: a memory resize passes, a CPU resize is refused; a StatefulSet's Pod is deleted only with its uid as precondition, no other Pod at all", async (t) => {
    const ns = await freshNamespace(t);
    const admin = await adminKubeConfig();
    const core = admin.makeApiClient(k8s.CoreV1Api);
    await createWorkload(ns, "StatefulSet", "db");
    await createWorkload(ns, "Deployment", "web");
    const member = await onlyRunningPod(ns, "app=db");
    const other = await onlyRunningPod(ns, "app=web");
    // kwok reports no applied resources; the API server resizes only a Pod whose kubelet does (memory-scaler-resize.test.ts).
    const statuses = (member.status?.containerStatuses ?? []).map((s) => ({ ...s, resources: { limits: { memory: "384Mi", cpu: "500m" }, requests: { memory: "256Mi", cpu: "250m" } } }));
    await core.replaceNamespacedPodStatus({ namespace: ns, name: member.metadata.name, body: { ...member, status: { ...member.status, containerStatuses: statuses } } });
    const pod = await core.readNamespacedPod({ namespace: ns, name: member.metadata.name });

    await t.test("a CPU resize", async (t) => {
      await refused(t, scaler.resizePod(ns, member.metadata.name, [{ op: "replace", path: "/spec/containers/0/resources/limits/cpu", value: "1" }]), /spec\.containers\[app\]\.resources\.limits\.cpu/);
    });
    await t.test("a memory resize, as scale/targets/resize-patch.ts builds it, passes (dry run and real)", async () => {
      const app = memoryOf(pod.spec).filter((c) => c.name === "app");
      const patch = buildResizePatch(app, [{ container: "app", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }], undefined);
      await scaler.resizePod(ns, member.metadata.name, patch, true);
      await scaler.resizePod(ns, member.metadata.name, patch, false);
      const resized = await core.readNamespacedPod({ namespace: ns, name: member.metadata.name });
      assert.equal(resized.spec?.containers[0]?.resources?.limits?.memory, "768Mi");
    });
    await t.test("a delete without the uid", async (t) => {
      await refused(t, scaler.deletePod(ns, member.metadata.name, undefined), /preconditions\.uid/);
    });
    await t.test("a Deployment's Pod, even with its uid", async (t) => {
      await refused(t, scaler.deletePod(ns, other.metadata.name, other.metadata.uid), /only a Pod a StatefulSet controls/);
    });
    await t.test("the StatefulSet's Pod with its uid, as follow-up/flow.ts deletes it", async () => {
      await scaler.deletePod(ns, member.metadata.name, member.metadata.uid);
      await waitFor("the Pod deleted or recreated", async () => {
        const now = await core.readNamespacedPod({ namespace: ns, name: member.metadata.name }).catch(() => undefined);
        return now === undefined || now.metadata?.uid !== member.metadata.uid || now.metadata?.deletionTimestamp !== undefined;
      });
    });
  });
});

describe("the function's own scale passes the policy", () => {
  const running = scalerForSuite();
  it("heapFlags: Scale, -Xmx in the args: the limit and the flag raised", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, { heapFlags: "Scale" }, { command: ["java"], args: ["-Xmx256m", "-jar", "app.jar"] });
    const answer = await deliver(running().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const web = await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace: ns, name: "web" });
    assert.equal(web.spec?.template.spec?.containers[0]?.resources?.limits?.memory, "768Mi");
    assert.deepEqual(web.spec?.template.spec?.containers[0]?.args, ["-Xmx512m", "-jar", "app.jar"]);
  });
});
