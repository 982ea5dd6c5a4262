// knative/network/: one NetworkPolicy per function, in both profiles, each selecting its function's
// Pods and admitting what delivers to it and Prometheus's scrape, nothing wider; the chart knows
// every peer (chart-templates.ts NETWORK_PEERS). That the API server accepts them:
// test/integration/knative-apply.test.ts (every object) and test/integration/sender-identity.test.ts.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { NETWORK_PEERS } from "../../../scripts/release/chart-templates.ts";
import { INSTALL_NAMESPACE, kustomize, type Manifest } from "../../support/knative.ts";

interface Policy {
  metadata: { name: string; namespace: string };
  spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { from?: Record<string, unknown>[]; ports?: { protocol: string; port: number }[] }[] };
}
interface Workload {
  kind: string;
  metadata: { name: string };
  spec: { template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: { ports?: { containerPort: number }[] }[] } } };
}

const profiles: Record<string, Manifest[]> = {};
before(async () => {
  profiles.serving = await kustomize("knative");
  profiles["eventing-only"] = await kustomize("knative/eventing-only");
});

const policies = (objects: Manifest[]) => objects.filter((o) => o.kind === "NetworkPolicy") as unknown as Policy[];
const workloads = (objects: Manifest[]) => objects.filter((o) => (o.kind === "Service" && o.apiVersion === "serving.knative.dev/v1") || o.kind === "Deployment") as unknown as Workload[];
/** Each rule as `peer keys → ports` (NETWORK_PEERS' keys; `any` for no port list). */
const rules = (policy: Policy) => policy.spec.ingress.map((rule) => {
  const peers = (rule.from ?? []).map((peer) => Object.keys(NETWORK_PEERS).find((k) => JSON.stringify(NETWORK_PEERS[k]) === JSON.stringify(peer)) ?? `unknown ${JSON.stringify(peer)}`);
  return `${peers.join(",")} → ${rule.ports === undefined ? "any" : rule.ports.map((p) => `${p.protocol}/${p.port}`).join(",")}`;
});

for (const profile of ["serving", "eventing-only"]) {
  describe(`the ${profile} profile's NetworkPolicies`, () => {
    test("one per function, in the install's namespace, selecting exactly its Pods, Ingress only", () => {
      const byName = new Map(policies(profiles[profile] ?? []).map((p) => [p.metadata.name, p]));
      const loads = workloads(profiles[profile] ?? []);
      assert.deepEqual([...byName.keys()].sort(), loads.map((w) => w.metadata.name).sort());
      for (const w of loads) {
        const policy = byName.get(w.metadata.name) as Policy;
        assert.equal(policy.metadata.namespace, INSTALL_NAMESPACE);
        assert.deepEqual(policy.spec.podSelector.matchLabels, { "app.kubernetes.io/name": w.spec.template.metadata.labels["app.kubernetes.io/name"] }, w.metadata.name);
        assert.deepEqual(policy.spec.policyTypes, ["Ingress"], "egress is not restricted");
      }
    });

    test("the event senders and Prometheus, each on the container's port, and Knative Serving's namespace on any; nothing else", () => {
      const expected: Record<string, string[]> = {
        "alert-receiver": ["alertmanager → TCP/8080", "knativeServing → any", "prometheus → TCP/8080"],
        "memory-scaler": ["knativeEventing → TCP/8080", "knativeServing → any", "prometheus → TCP/8080"],
        "rule-sync": ["knativeEventing → TCP/8080", "knativeServing → any", "prometheus → TCP/8080"],
        "appmonitor-dead-letter": ["knativeEventing → TCP/8080", "knativeServing → any", "prometheus → TCP/8080"],
      };
      for (const policy of policies(profiles[profile] ?? [])) assert.deepEqual(rules(policy), expected[policy.metadata.name], policy.metadata.name);
      for (const w of workloads(profiles[profile] ?? [])) assert.deepEqual(w.spec.template.spec.containers.map((c) => c.ports?.[0]?.containerPort), [8080], w.metadata.name);
    });
  });
}

test("under Serving the activator is always in the request path (target-burst-capacity -1), so no request reaches a Pod from the ingress's namespace", () => {
  for (const w of workloads(profiles.serving ?? [])) {
    assert.equal(w.spec.template.metadata.annotations?.["autoscaling.knative.dev/target-burst-capacity"], "-1", w.metadata.name);
  }
});
