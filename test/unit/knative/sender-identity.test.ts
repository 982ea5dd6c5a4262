// The Triggers and the functions agree on sender identity: each Trigger's subscriber has the
// audience its function verifies tokens for, and each function accepts by default exactly the OIDC
// identities of the Triggers that deliver to it (functions/lib/sender-identity.ts); the Broker's
// EventPolicy names the install's three senders as they are shipped.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { SENDERS as SCALER_SENDERS } from "../../../functions/memory-scaler/config.ts";
import { SENDERS as RULE_SYNC_SENDERS } from "../../../functions/rule-sync/config.ts";
import { triggerIdentity } from "../../../functions/lib/sender-identity.ts";
import { kustomize, manifestFile, type Manifest } from "../../support/knative.ts";

interface Trigger { metadata: { name: string }; spec: { subscriber: { ref: { name: string }; audience?: string } } }
let objects: Manifest[] = [];
before(async () => {
  objects = await kustomize("knative/eventing-only");
});

test("each Trigger's subscriber audience is its function's, and each function's default senders are its Triggers' identities", () => {
  const triggers = objects.filter((o) => o.kind === "Trigger") as unknown as Trigger[];
  for (const [fn, senders] of [["memory-scaler", SCALER_SENDERS], ["rule-sync", RULE_SYNC_SENDERS]] as const) {
    const own = triggers.filter((t) => t.spec.subscriber.ref.name === fn);
    assert.deepEqual(own.map((t) => t.metadata.name).sort(), [...senders.triggers].sort(), fn);
    for (const t of own) assert.equal(t.spec.subscriber.audience, senders.audience, t.metadata.name);
    // Each identity is the Trigger's name and Knative's suffix whole: readable in a TokenReview's username.
    for (const name of senders.triggers) assert.equal(triggerIdentity(name), `${name}-oidc-eventing.knative.dev-trigger`);
  }
  assert.notEqual(SCALER_SENDERS.audience, RULE_SYNC_SENDERS.audience, "a token for one function is not taken by the other");
});

test("the Broker's EventPolicy admits the install's SinkBinding, ApiServerSource and PingSource, as shipped, and names the Broker", async () => {
  const [policy] = (await manifestFile("knative/eventing/event-policy.yaml")) as unknown as { spec: { to: { ref: object }[]; from: { ref: { apiVersion: string; kind: string; name: string } }[] } }[];
  const shipped = new Set(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`));
  assert.deepEqual(policy?.spec.to, [{ ref: { apiVersion: "eventing.knative.dev/v1", kind: "Broker", name: "default" } }]);
  assert.ok(shipped.has("eventing.knative.dev/v1 Broker default"));
  const senders = policy?.spec.from.map((f) => `${f.ref.apiVersion} ${f.ref.kind} ${f.ref.name}`) ?? [];
  assert.deepEqual(senders.sort(), ["sources.knative.dev/v1 ApiServerSource appmonitors", "sources.knative.dev/v1 PingSource rule-sync-resync", "sources.knative.dev/v1 SinkBinding alert-receiver"]);
  for (const s of senders) assert.ok(shipped.has(s), `${s} is shipped`);
});
