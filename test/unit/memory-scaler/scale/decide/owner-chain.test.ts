// The owner walk's rule (functions/memory-scaler/scale/decide/owner-chain.ts): each chain it knows
// walked to its top (a Knative Revision's Pod to its Service), and a controller it does not know at
// each level stopping it, or a Knative Revision with no Service above it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChainLink, type ControllerRef, nextOwnerStep, type OwnerStep } from "../../../../../functions/memory-scaler/scale/decide/owner-chain.ts";

const ref = (apiVersion: string, kind: string, name: string): ControllerRef => ({ apiVersion, kind, name, uid: `${name}-uid` });
const link = (apiVersion: string, kind: string, name: string, controller?: ControllerRef): ChainLink => ({ apiVersion, kind, name, uid: `${name}-uid`, controller });

const rs = ref("apps/v1", "ReplicaSet", "web-5d8f");
const deployment = ref("apps/v1", "Deployment", "web");
const sts = ref("apps/v1", "StatefulSet", "db");
const ds = ref("apps/v1", "DaemonSet", "agent");
const KSVC = "serving.knative.dev/v1";
const revision = ref(KSVC, "Revision", "web-00001");
const configuration = ref(KSVC, "Configuration", "web");
const service = ref(KSVC, "Service", "web");
const revisionRs = ref("apps/v1", "ReplicaSet", "web-00001-deployment-7b9c");
const revisionDeployment = ref("apps/v1", "Deployment", "web-00001-deployment");
const revisionPod = "web-00001-deployment-7b9c-x2";

/** A Revision Pod's chain as Serving builds it, up to the level `upTo`, whose controller is `top` (undefined: none). */
function knativeChain(upTo: "Revision" | "Configuration" | "Service", top?: ControllerRef): Record<string, ChainLink> {
  const above: Record<string, ControllerRef> = { Revision: configuration, Configuration: service };
  const objects: Record<string, ChainLink> = {
    ReplicaSet: link("apps/v1", "ReplicaSet", revisionRs.name, revisionDeployment),
    Deployment: link("apps/v1", "Deployment", revisionDeployment.name, revision),
  };
  for (const kind of ["Revision", "Configuration", "Service"] as const) {
    const name = kind === "Revision" ? revision.name : "web";
    objects[kind] = link(KSVC, kind, name, kind === upTo ? top : above[kind]);
    if (kind === upTo) break;
  }
  return objects;
}
const operator = ref("postgres.example.com/v1", "Cluster", "pg");
const rollout = ref("argoproj.io/v1alpha1", "Rollout", "web");
const job = ref("batch/v1", "Job", "migrate");

/**
 * Walks `chain` step by step as the shell does, the object each `read` names taken from `objects`
 * (by kind): the steps taken, as `read <kind>`, `top <kind>` or the skip's reason.
 */
function walk(pod: ChainLink, objects: Readonly<Record<string, ChainLink>>): { steps: string[]; last: OwnerStep } {
  const chain = [pod];
  const steps: string[] = [];
  for (;;) {
    const step = nextOwnerStep(chain);
    if (step.step !== "read") {
      steps.push(step.step === "top" ? `top ${chain.at(-1)?.kind ?? ""}` : step.reason);
      return { steps, last: step };
    }
    steps.push(`read ${step.kind}`);
    const next = objects[step.kind];
    if (next === undefined) throw new Error(`no ${step.kind} in the test's objects`);
    chain.push(next);
  }
}

describe("nextOwnerStep: the chains it knows, walked to their top", () => {
  const cases: { name: string; pod: ChainLink; objects: Record<string, ChainLink>; steps: string[] }[] = [
    {
      name: "Pod → ReplicaSet → Deployment",
      pod: link("v1", "Pod", "web-5d8f-x2", rs),
      objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f", deployment), Deployment: link("apps/v1", "Deployment", "web") },
      steps: ["read ReplicaSet", "read Deployment", "top Deployment"],
    },
    { name: "Pod → StatefulSet", pod: link("v1", "Pod", "db-0", sts), objects: { StatefulSet: link("apps/v1", "StatefulSet", "db") }, steps: ["read StatefulSet", "top StatefulSet"] },
    { name: "Pod → DaemonSet", pod: link("v1", "Pod", "agent-x2", ds), objects: { DaemonSet: link("apps/v1", "DaemonSet", "agent") }, steps: ["read DaemonSet", "top DaemonSet"] },
    { name: "a bare Pod", pod: link("v1", "Pod", "standalone"), objects: {}, steps: ["top Pod"] },
    { name: "Pod → ReplicaSet without a Deployment", pod: link("v1", "Pod", "web-5d8f-x2", rs), objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f") }, steps: ["read ReplicaSet", "top ReplicaSet"] },
    {
      name: "a Knative Revision's Pod: Pod → ReplicaSet → Deployment → Revision → Configuration → Service",
      pod: link("v1", "Pod", revisionPod, revisionRs),
      objects: knativeChain("Service"),
      steps: ["read ReplicaSet", "read Deployment", "read Revision", "read Configuration", "read Service", "top Service"],
    },
  ];
  for (const c of cases) it(`${c.name}: ${c.steps.join(", ")}`, () => assert.deepEqual(walk(c.pod, c.objects).steps, c.steps));

  it("a read names the reference as the object gave it, uid included", () => {
    assert.deepEqual(nextOwnerStep([link("v1", "Pod", "web-5d8f-x2", rs)]), { step: "read", kind: "ReplicaSet", ref: rs });
  });
});

describe("nextOwnerStep: a controller it does not know, at each level", () => {
  const cases: { name: string; pod: ChainLink; objects: Record<string, ChainLink>; steps: string[]; controller: ControllerRef; message: RegExp }[] = [
    { name: "the Pod's: a Job", pod: link("v1", "Pod", "migrate-x2", job), objects: {}, steps: ["UnsupportedOwner"], controller: job, message: /^Pod migrate-x2 is controlled by Job migrate \(batch\/v1\), which memory-scaler does not scale$/ },
    {
      name: "the Pod's: a kind of another group named ReplicaSet",
      pod: link("v1", "Pod", "web-x2", ref("example.com/v1", "ReplicaSet", "web")),
      objects: {},
      steps: ["UnsupportedOwner"],
      controller: ref("example.com/v1", "ReplicaSet", "web"),
      message: /controlled by ReplicaSet web \(example\.com\/v1\)/,
    },
    {
      name: "the Pod's: a Deployment directly (a Deployment controls ReplicaSets, never Pods)",
      pod: link("v1", "Pod", "web-x2", deployment),
      objects: {},
      steps: ["UnsupportedOwner"],
      controller: deployment,
      message: /controlled by Deployment web \(apps\/v1\)/,
    },
    {
      name: "the ReplicaSet's: an Argo Rollout",
      pod: link("v1", "Pod", "web-5d8f-x2", rs),
      objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f", rollout) },
      steps: ["read ReplicaSet", "UnknownController"],
      controller: rollout,
      message: /^Pod web-5d8f-x2 belongs to ReplicaSet web-5d8f, which Rollout web \(argoproj\.io\/v1alpha1\) controls: .*so ReplicaSet web-5d8f is not patched; change the memory in Rollout web \(or in what controls it\) instead$/,
    },
    {
      name: "the Deployment's: an operator's resource",
      pod: link("v1", "Pod", "web-5d8f-x2", rs),
      objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f", deployment), Deployment: link("apps/v1", "Deployment", "web", operator) },
      steps: ["read ReplicaSet", "read Deployment", "UnknownController"],
      controller: operator,
      message: /^Pod web-5d8f-x2 belongs to Deployment web \(through ReplicaSet web-5d8f\), which Cluster pg \(postgres\.example\.com\/v1\) controls: .*change the memory in Cluster pg \(or in what controls it\) instead$/,
    },
    {
      name: "the Deployment's: a Revision of another API version",
      pod: link("v1", "Pod", "web-5d8f-x2", rs),
      objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f", deployment), Deployment: link("apps/v1", "Deployment", "web", ref("serving.knative.dev/v1beta1", "Revision", "web-00001")) },
      steps: ["read ReplicaSet", "read Deployment", "UnknownController"],
      controller: ref("serving.knative.dev/v1beta1", "Revision", "web-00001"),
      message: /which Revision web-00001 \(serving\.knative\.dev\/v1beta1\) controls/,
    },
    {
      name: "a Revision's Configuration without a Service (skipped: no traffic says whether a new Revision serves)",
      pod: link("v1", "Pod", revisionPod, revisionRs),
      objects: knativeChain("Configuration"),
      steps: ["read ReplicaSet", "read Deployment", "read Revision", "read Configuration", "UnsupportedOwner"],
      controller: configuration,
      message: /^Pod web-00001-deployment-7b9c-x2 belongs to Configuration web \(through ReplicaSet web-00001-deployment-7b9c, Deployment web-00001-deployment, Revision web-00001\), which no Knative Service owns: .*traffic says whether a new Revision serves.*change the memory in Configuration web's spec\.template/,
    },
    {
      name: "a Revision without a Configuration",
      pod: link("v1", "Pod", revisionPod, revisionRs),
      objects: knativeChain("Revision"),
      steps: ["read ReplicaSet", "read Deployment", "read Revision", "UnsupportedOwner"],
      controller: revision,
      message: /belongs to Revision web-00001 .*which no Knative Service owns/,
    },
    {
      name: "a Configuration another controller owns",
      pod: link("v1", "Pod", revisionPod, revisionRs),
      objects: knativeChain("Configuration", operator),
      steps: ["read ReplicaSet", "read Deployment", "read Revision", "read Configuration", "UnknownController"],
      controller: operator,
      message: /belongs to Configuration web .*which Cluster pg \(postgres\.example\.com\/v1\) controls/,
    },
    {
      name: "the Knative Service's: an operator's resource",
      pod: link("v1", "Pod", revisionPod, revisionRs),
      objects: knativeChain("Service", operator),
      steps: ["read ReplicaSet", "read Deployment", "read Revision", "read Configuration", "read Service", "UnknownController"],
      controller: operator,
      message: /belongs to Service web .*so Service web is not patched; change the memory in Cluster pg/,
    },
    {
      name: "the Deployment's: another Deployment (no chain goes above a Deployment)",
      pod: link("v1", "Pod", "web-5d8f-x2", rs),
      objects: { ReplicaSet: link("apps/v1", "ReplicaSet", "web-5d8f", deployment), Deployment: link("apps/v1", "Deployment", "web", ref("apps/v1", "Deployment", "parent")) },
      steps: ["read ReplicaSet", "read Deployment", "UnknownController"],
      controller: ref("apps/v1", "Deployment", "parent"),
      message: /which Deployment parent \(apps\/v1\) controls/,
    },
    {
      name: "the StatefulSet's: an operator's resource",
      pod: link("v1", "Pod", "pg-0", sts),
      objects: { StatefulSet: link("apps/v1", "StatefulSet", "db", operator) },
      steps: ["read StatefulSet", "UnknownController"],
      controller: operator,
      message: /^Pod pg-0 belongs to StatefulSet db, which Cluster pg \(postgres\.example\.com\/v1\) controls: .*change the memory in Cluster pg/,
    },
    {
      name: "the DaemonSet's: an operator's resource",
      pod: link("v1", "Pod", "agent-x2", ds),
      objects: { DaemonSet: link("apps/v1", "DaemonSet", "agent", operator) },
      steps: ["read DaemonSet", "UnknownController"],
      controller: operator,
      message: /belongs to DaemonSet agent, which Cluster pg/,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.steps.join(", ")}, naming it`, () => {
      const { steps, last } = walk(c.pod, c.objects);
      assert.deepEqual(steps, c.steps);
      assert.ok(last.step === "skip");
      assert.deepEqual(last.controller, c.controller);
      assert.match(last.message, c.message);
    });
  }

  it("an empty chain is a caller's bug, named", () => {
    assert.throws(() => nextOwnerStep([]), /starts from the Pod/);
  });
});
