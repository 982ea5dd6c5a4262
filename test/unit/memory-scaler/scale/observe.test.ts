// The read step (scale/observe.ts): the owner walk, and the owners read beside the Pod from what its name says.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { observeFiring, ownerGuesses, prefetchOwners, resolveWorkload } from "../../../../functions/memory-scaler/scale/observe.ts";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { apiError, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const alert = { namespace: NS, pod: "memhog-5d8f-x2", appmonitor: "mymonitor" };

describe("ownerGuesses", () => {
  const cases: [string, string, { kind: string; name: string }[]][] = [
    ["a Deployment's Pod", "web-7c9f8d6b5-x2kqz", [{ kind: "ReplicaSet", name: "web-7c9f8d6b5" }, { kind: "Deployment", name: "web" }]],
    ["a Deployment's Pod, dashes in the name", "my-api-server-5d8f-ab2cd", [{ kind: "ReplicaSet", name: "my-api-server-5d8f" }, { kind: "Deployment", name: "my-api-server" }]],
    ["a StatefulSet's Pod", "redis-0", [{ kind: "StatefulSet", name: "redis" }]],
    ["a StatefulSet's Pod, ordinal 12", "db-main-12", [{ kind: "StatefulSet", name: "db-main" }]],
    ["a ReplicaSet's Pod with one dash", "rs-ab2cd", [{ kind: "ReplicaSet", name: "rs" }]],
    ["a name without a dash", "standalone", []],
    [
      "a Knative Revision's Pod",
      "web-00001-deployment-7b9c8d6f5-x2kqz",
      [
        { kind: "ReplicaSet", name: "web-00001-deployment-7b9c8d6f5" },
        { kind: "Deployment", name: "web-00001-deployment" },
        { kind: "Revision", name: "web-00001" },
        { kind: "Configuration", name: "web" },
        { kind: "Service", name: "web" },
      ],
    ],
    ["a Deployment named …-deployment, no Revision number", "api-deployment-7b9c8d6f5-x2kqz", [{ kind: "ReplicaSet", name: "api-deployment-7b9c8d6f5" }, { kind: "Deployment", name: "api-deployment" }, { kind: "Revision", name: "api" }]],
    ["a name starting with a dash", "-x", []],
  ];
  for (const [what, pod, expected] of cases) it(`${what}: ${pod} → ${expected.map((g) => `${g.kind}/${g.name}`).join(", ") || "none"}`, () => assert.deepEqual(ownerGuesses(pod), expected));
});

describe("observeFiring: the owners read beside the Pod", () => {
  it("an unused guess that fails (a 403 on a DaemonSet's Pod's guessed ReplicaSet) fails nothing", async () => {
    const cluster = memhogCluster();
    const template = cluster.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`)?.spec?.template;
    cluster.workloads.clear();
    cluster.workloads.set(`DaemonSet/${NS}/agent`, { metadata: { name: "agent", namespace: NS, uid: "ds1" }, spec: { template } });
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod?.metadata) pod.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "ds1", controller: true }];
    const read = cluster.readWorkload.bind(cluster);
    cluster.readWorkload = async (kind, namespace, name) => (kind === "DaemonSet" ? read(kind, namespace, name) : Promise.reject(apiError(403, "forbidden")));
    const observation = await observeFiring(cluster, alert, silent);
    assert.equal(observation.result === "observed" && `${observation.workload.kind}/${observation.workload.name}`, "DaemonSet/agent");
  });

  it("a used guess that failed fails the event with the read's class (503 for a refused connection)", async () => {
    const cluster = memhogCluster();
    cluster.readWorkload = async () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    const error = await observeFiring(cluster, alert, silent).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 503);
    assert.match(error.message, /owner of Pod team-a\/memhog-5d8f-x2/);
  });

  it("a Pod that is gone: PodGone, the guessed reads' answers unused", async () => {
    const cluster = memhogCluster();
    cluster.pods.clear();
    const observation = await observeFiring(cluster, alert, silent);
    assert.deepEqual([observation.result, observation.result === "ended" && observation.reason], ["ended", "PodGone"]);
  });

  it("a guessed Deployment that is a namesake (another uid than the ReplicaSet's owner reference): OwnerGone", async () => {
    const cluster = memhogCluster();
    const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (deployment?.metadata) deployment.metadata.uid = "someone-else";
    const observation = await observeFiring(cluster, alert, silent);
    assert.deepEqual([observation.result, observation.result === "ended" && observation.reason], ["ended", "OwnerGone"]);
  });

  it("prefetchOwners reads each guess once, and has nothing for what it was not told", async () => {
    const cluster = memhogCluster();
    const reads: string[] = [];
    const read = cluster.readWorkload.bind(cluster);
    cluster.readWorkload = async (kind, namespace, name) => (reads.push(`${kind}/${name}`), read(kind, namespace, name));
    const prefetched = prefetchOwners(cluster, NS, ownerGuesses("memhog-5d8f-x2"));
    assert.equal((await prefetched("Deployment", "memhog"))?.metadata?.uid, "d1");
    assert.equal(prefetched("StatefulSet", "memhog"), undefined);
    const resolution = await resolveWorkload(cluster, cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? ({} as k8s.V1Pod), prefetched);
    assert.equal(resolution.result === "found" && resolution.workload.name, "memhog");
    assert.deepEqual(reads.sort(), ["Deployment/memhog", "ReplicaSet/memhog-5d8f"]);
  });
});

describe("resolveWorkload", () => {
  it("finds the Deployment through its ReplicaSet, reading the likely Deployment alongside", async () => {
    const cluster = memhogCluster();
    let reads = 0;
    const read = cluster.readWorkload.bind(cluster);
    cluster.readWorkload = async (...args) => ((reads += 1), read(...args));
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {};
    const resolution = await resolveWorkload(cluster, pod);
    assert.equal(resolution.result === "found" && `${resolution.workload.kind}/${resolution.workload.name}`, "Deployment/memhog");
    assert.equal(reads, 2);
  });

  it("ignores a namesake the ReplicaSet does not belong to", async () => {
    const cluster = memhogCluster();
    // The ReplicaSet belongs to Deployment "owner"; a Deployment "memhog" also exists.
    const rs = cluster.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`);
    if (rs?.metadata) rs.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "Deployment", name: "owner", uid: "d2", controller: true }];
    const memhog = cluster.workloads.get(`Deployment/${NS}/memhog`);
    cluster.workloads.set(`Deployment/${NS}/owner`, { ...memhog, metadata: { name: "owner", namespace: NS, uid: "d2" } });
    const resolution = await resolveWorkload(cluster, cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {});
    assert.equal(resolution.result === "found" && resolution.workload.name, "owner");
  });

  const cases: { name: string; owner: k8s.V1OwnerReference | undefined; result: string }[] = [
    { name: "a bare Pod", owner: undefined, result: "bare" },
    { name: "a Job's Pod", owner: { apiVersion: "batch/v1", kind: "Job", name: "j", uid: "j1", controller: true }, result: "unsupported" },
    { name: "an unknown kind", owner: { apiVersion: "argoproj.io/v1alpha1", kind: "Rollout", name: "r", uid: "x", controller: true }, result: "unsupported" },
    { name: "a ReplicaSet that no longer exists", owner: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "gone", uid: "g", controller: true }, result: "gone" },
    { name: "a namesake ReplicaSet (another uid)", owner: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "memhog-5d8f", uid: "other", controller: true }, result: "gone" },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.result}`, async () => {
      const cluster = memhogCluster();
      const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {};
      if (pod.metadata) pod.metadata.ownerReferences = c.owner === undefined ? [] : [c.owner];
      assert.equal((await resolveWorkload(cluster, pod)).result, c.result);
    });
  }

  it("a Deployment another controller owns: UnknownController with the Deployment, from the reads the walk made anyway", async () => {
    const cluster = memhogCluster();
    const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (deployment?.metadata) deployment.metadata.ownerReferences = [{ apiVersion: "operators.example.com/v1", kind: "WebApp", name: "shop", uid: "op1", controller: true }];
    let reads = 0;
    const read = cluster.readWorkload.bind(cluster);
    cluster.readWorkload = async (...args) => ((reads += 1), read(...args));
    const resolution = await resolveWorkload(cluster, cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {});
    assert.ok(resolution.result === "unsupported", JSON.stringify(resolution));
    assert.deepEqual([resolution.reason, resolution.controller, resolution.workload], [
      "UnknownController",
      { apiVersion: "operators.example.com/v1", kind: "WebApp", name: "shop", uid: "op1" },
      { apiVersion: "apps/v1", kind: "Deployment", name: "memhog", namespace: NS, uid: "d1" },
    ]);
    assert.match(resolution.message, /change the memory in WebApp shop/);
    assert.equal(reads, 2);
  });

  it("a StatefulSet an operator's resource owns: UnknownController with the StatefulSet", async () => {
    const cluster = memhogCluster();
    const template = cluster.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`)?.spec?.template;
    cluster.workloads.set(`StatefulSet/${NS}/pg`, { metadata: { name: "pg", namespace: NS, uid: "s1", ownerReferences: [{ apiVersion: "postgres.example.com/v1", kind: "Cluster", name: "pg", uid: "c1", controller: true }] }, spec: { template } });
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {};
    if (pod.metadata) pod.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "StatefulSet", name: "pg", uid: "s1", controller: true }];
    const resolution = await resolveWorkload(cluster, pod);
    assert.deepEqual(resolution.result === "unsupported" && [resolution.reason, resolution.workload?.kind, resolution.controller.kind], ["UnknownController", "StatefulSet", "Cluster"]);
  });

  it("an owner reference that is not the controller is no step of the walk", async () => {
    const cluster = memhogCluster();
    const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (deployment?.metadata) deployment.metadata.ownerReferences = [{ apiVersion: "example.com/v1", kind: "Bundle", name: "b", uid: "b1" }];
    const resolution = await resolveWorkload(cluster, cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {});
    assert.equal(resolution.result === "found" && resolution.workload.kind, "Deployment");
  });

  it("a ReplicaSet without a Deployment is the workload", async () => {
    const cluster = memhogCluster();
    const rs = cluster.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`);
    if (rs?.metadata) rs.metadata.ownerReferences = [];
    const resolution = await resolveWorkload(cluster, cluster.pods.get(`${NS}/memhog-5d8f-x2`) ?? {});
    assert.equal(resolution.result === "found" && resolution.workload.kind, "ReplicaSet");
  });
});

