// Kubernetes objects as the plain data memory-scaler decides from (functions/memory-scaler/kube/views.ts), as tables.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { containerStatuses, memoryOf, podView, quotaView, workloadView, selectorString } from "../../../../functions/memory-scaler/kube/views.ts";

const status = (name: string, over: Partial<k8s.V1ContainerStatus> = {}): k8s.V1ContainerStatus => ({ name, image: "i", imageID: "", ready: true, restartCount: 0, ...over });

describe("containerStatuses", () => {
  it("lists the containers' statuses, then the init containers' (native sidecars among them)", () => {
    const pod: k8s.V1Pod = { status: { containerStatuses: [status("app")], initContainerStatuses: [status("proxy")] } };
    assert.deepEqual(containerStatuses(pod).map((s) => s.name), ["app", "proxy"]);
  });
  it("is empty for a Pod without a status", () => {
    assert.deepEqual(containerStatuses({}), []);
  });
});

describe("memoryOf", () => {
  it("reads containers, then init containers, each with its kind and only the memory it sets", () => {
    const spec: k8s.V1PodSpec = {
      containers: [{ name: "app", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi", cpu: "1" } } }, { name: "bare" }],
      initContainers: [{ name: "proxy", restartPolicy: "Always", resources: { limits: { memory: "64Mi" } } }, { name: "migrate" }],
    };
    assert.deepEqual(memoryOf(spec), [
      { name: "app", kind: "container", request: "256Mi", limit: "384Mi" },
      { name: "bare", kind: "container" },
      { name: "proxy", kind: "sidecar", limit: "64Mi" },
      { name: "migrate", kind: "init" },
    ]);
  });
  it("is empty for no spec", () => {
    assert.deepEqual(memoryOf(undefined), []);
  });
});

describe("workloadView", () => {
  it("a Deployment: replicas from its spec, availability from availableReplicas, its strategy's type", () => {
    const view = workloadView("Deployment", {
      metadata: { name: "web", uid: "u1", generation: 3 },
      spec: { replicas: 2, strategy: { type: "RollingUpdate" } },
      status: { observedGeneration: 3, replicas: 3, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 1 },
    });
    assert.deepEqual(
      { desired: view.desired, current: view.current, updated: view.updated, available: view.available, updateStrategy: view.updateStrategy, generation: view.generation, observedGeneration: view.observedGeneration },
      { desired: 2, current: 3, updated: 2, available: 2, updateStrategy: "RollingUpdate", generation: 3, observedGeneration: 3 },
    );
  });
  it("a DaemonSet: counts from its scheduled numbers; a StatefulSet's availability is its ready replicas", () => {
    const daemon = workloadView("DaemonSet", { metadata: { name: "d" }, spec: { updateStrategy: { type: "OnDelete" } }, status: { desiredNumberScheduled: 4, currentNumberScheduled: 4, updatedNumberScheduled: 1, numberAvailable: 3 } });
    assert.deepEqual([daemon.desired, daemon.current, daemon.updated, daemon.available, daemon.updateStrategy], [4, 4, 1, 3, "OnDelete"]);
    const sts = workloadView("StatefulSet", { metadata: { name: "s" }, spec: { replicas: 2 }, status: { replicas: 2, readyReplicas: 1, availableReplicas: 2 } });
    assert.equal(sts.available, 1);
  });
});

describe("podView", () => {
  it("names the containers crash-looping after an OOM kill, and an unschedulable Pod's message", () => {
    const pod: k8s.V1Pod = {
      metadata: { name: "p", uid: "u", labels: { "controller-revision-hash": "r1" } },
      status: {
        conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/1 nodes" }],
        containerStatuses: [
          status("app", { state: { waiting: { reason: "CrashLoopBackOff" } }, lastState: { terminated: { reason: "OOMKilled", exitCode: 137 } } }),
          status("other", { state: { waiting: { reason: "CrashLoopBackOff" } }, lastState: { terminated: { reason: "Error", exitCode: 1 } } }),
        ],
      },
    };
    assert.deepEqual(podView(pod), { name: "p", uid: "u", revision: "r1", deleting: false, unschedulable: "0/1 nodes", crashLoopingOOM: ["app"] });
  });
});

describe("quotaView", () => {
  it("keeps the name, whether it is scoped, and its hard and used amounts", () => {
    assert.deepEqual(quotaView({ metadata: { name: "q" }, spec: { scopes: ["BestEffort"] }, status: { hard: { "requests.memory": "1Gi" }, used: { "requests.memory": "512Mi" } } }), {
      name: "q",
      scoped: true,
      hard: { "requests.memory": "1Gi" },
      used: { "requests.memory": "512Mi" },
    });
    assert.equal(quotaView({ metadata: { name: "plain" } }).scoped, false);
  });
});

describe("selectorString", () => {
  it("matchLabels and matchExpressions in the API's syntax", () => {
    assert.equal(
      selectorString({ matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "In", values: ["a", "b"] }, { key: "x", operator: "Exists" }, { key: "y", operator: "DoesNotExist" }] }),
      "app=web,tier in (a,b),x,!y",
    );
    assert.equal(selectorString({}), undefined);
  });
});
