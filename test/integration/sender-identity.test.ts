/**
 * Who can make memory-scaler act, on the stack's real kube-apiserver (docs/operations.md, "Security
 * model"). Sender identity: memory-scaler runs as its ServiceAccount with the shipped RBAC
 * (knative/rbac/memory-scaler.yaml, knative/rbac/sender-review.yaml) and REQUIRE_SENDER_IDENTITY,
 * its credentials' namespace `appmonitor` as in a cluster; the tokens are the API server's own, from
 * the TokenRequest API, for the ServiceAccounts Knative Eventing makes for the Triggers, with the
 * audience the Trigger gives (what the Broker's filter sends with `authentication-oidc` on). An event
 * without one, with another audience's, another ServiceAccount's, or a token that is none, is
 * refused 401; the Trigger's is handled. And knative/network/'s NetworkPolicies as the API server
 * stores them (whether a CNI enforces them is not this API server's to show).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { before, after, describe, test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { fn } from "../../functions/memory-scaler/index.ts";
import { SENDERS } from "../../functions/memory-scaler/config.ts";
import { SENDERS as RULE_SYNC_SENDERS } from "../../functions/rule-sync/config.ts";
import { loadKubeConfig } from "../../functions/lib/kubeconfig.ts";
import { HttpError } from "../../functions/lib/runtime/errors.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { BEARER_CHALLENGE, readSenderIdentity, triggerIdentity } from "../../functions/lib/sender-identity.ts";
import { createSenderCheck } from "../../functions/lib/sender-review.ts";
import { startFunction } from "../support/function-server.ts";
import { applyFiles, installMemoryScaler } from "../support/install.ts";
import { kubectlBinary, kustomize, type Manifest } from "../support/knative.ts";
import { alertEvent, SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT, UNVERIFIED, writeKubeconfig } from "../support/memory-scaler.ts";
import { describeAnswer, postEvent } from "../support/post-event.ts";
import { runCommand } from "../support/run-command.ts";
import { adminKubeConfig, freshNamespace, serviceAccountKubeConfig, stack } from "../support/stack.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const ALERT_TRIGGER = triggerIdentity("memory-scaler-alert-firing");
const OTHER_TRIGGER = triggerIdentity("rule-sync-resync");
const WORKLOAD = "some-workload";

let core: k8s.CoreV1Api;
let dir: TempDir;
let scaler: RunningServer;

/** A token of ServiceAccount `appmonitor/name` for `audience`, from the TokenRequest API. */
async function token(name: string, audience: string): Promise<string> {
  const res = await core.createNamespacedServiceAccountToken({ name, namespace: SCALER_NAMESPACE, body: { spec: { audiences: [audience], expirationSeconds: 600 } } });
  if (!res.status?.token) throw new Error(`no token for ${name}`);
  return res.status.token;
}

/** A kubeconfig file of ServiceAccount `appmonitor/name` whose context names the namespace, as a Pod's in-cluster credentials do. */
async function inClusterLike(name: string): Promise<string> {
  const kc = await serviceAccountKubeConfig(SCALER_NAMESPACE, name);
  const context = kc.getContextObject(kc.getCurrentContext());
  if (!context) throw new Error("no context");
  const named = new k8s.KubeConfig();
  named.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: [{ ...context, namespace: SCALER_NAMESPACE }], currentContext: context.name });
  return writeKubeconfig(named, dir.path, name);
}

before(async () => {
  await installMemoryScaler();
  await applyFiles("knative/rbac/sender-review.yaml");
  core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  for (const name of [ALERT_TRIGGER, OTHER_TRIGGER, WORKLOAD]) {
    await core.createNamespacedServiceAccount({ namespace: SCALER_NAMESPACE, body: { metadata: { name } } }).catch((error: { code?: number }) => {
      if (error.code !== 409) throw error;
    });
  }
  dir = await tempDir("sender-identity");
  scaler = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: await inClusterLike(SCALER_SERVICE_ACCOUNT), REQUIRE_SENDER_IDENTITY: "true" });
});
after(async () => {
  await scaler?.close();
  await dir?.remove();
});

describe("memory-scaler with REQUIRE_SENDER_IDENTITY", () => {
  test("an event sent straight to it without a token is refused 401 with a Bearer challenge; probes and scrapes need none", async (t) => {
    const answer = await postEvent(scaler.url, alertEvent({ namespace: await freshNamespace(t), pod: "memhog" }));
    assert.equal(answer.status, 401, describeAnswer(answer));
    assert.equal(answer.headers.get("www-authenticate"), BEARER_CHALLENGE);
    assert.match(answer.body.error ?? "", /sender not verified: no Authorization header/);
    for (const path of ["/health/readiness", "/metrics"]) assert.equal((await fetch(`${scaler.url}${path}`)).status, 200, path);
  });

  test("the alert Trigger's identity with memory-scaler's audience, as the Broker's filter sends it: handled", async (t) => {
    const answer = await postEvent(scaler.url, alertEvent({ namespace: await freshNamespace(t), pod: "memhog" }), "binary", { authorization: `Bearer ${await token(ALERT_TRIGGER, SENDERS.audience)}` });
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.equal(answer.outcome, "skipped", "handled: no such Pod to scale");
  });

  const refusals: [string, () => Promise<string>, RegExp][] = [
    ["the Trigger's identity for rule-sync's audience (the API server does not authenticate it for memory-scaler's)", () => token(ALERT_TRIGGER, RULE_SYNC_SENDERS.audience), /did not authenticate the token/],
    ["another Trigger's identity (rule-sync's) for memory-scaler's audience", () => token(OTHER_TRIGGER, SENDERS.audience), new RegExp(`system:serviceaccount:appmonitor:${OTHER_TRIGGER} is not an allowed sender`)],
    ["a workload's ServiceAccount in the install's namespace, for memory-scaler's audience", () => token(WORKLOAD, SENDERS.audience), /system:serviceaccount:appmonitor:some-workload is not an allowed sender/],
    ["a JWT-shaped string the API server never issued", async () => "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", /did not authenticate the token/],
  ];
  for (const [what, make, reason] of refusals) {
    test(`refused 401: ${what}`, async (t) => {
      const answer = await postEvent(scaler.url, alertEvent({ namespace: await freshNamespace(t), pod: "memhog" }), "structured", { authorization: `Bearer ${await make()}` });
      assert.equal(answer.status, 401, describeAnswer(answer));
      assert.equal(answer.headers.get("www-authenticate"), BEARER_CHALLENGE);
      assert.match(answer.body.error ?? "", reason);
    });
  }

  test("a function whose ServiceAccount may not create TokenReviews answers 500, which Knative retries, naming the permission", async () => {
    const kc = loadKubeConfig(await inClusterLike(WORKLOAD));
    const config = readSenderIdentity({ REQUIRE_SENDER_IDENTITY: "true" }, SENDERS);
    assert.ok(config);
    const check = createSenderCheck(kc, config);
    const log = { debug: () => undefined } as unknown as Parameters<typeof check>[0]["log"];
    await assert.rejects(
      check({ log, requestId: "x", signal: new AbortController().signal }, { authorization: `Bearer ${await token(ALERT_TRIGGER, SENDERS.audience)}` }),
      (error: unknown) => error instanceof HttpError && error.status === 500 && /not allowed to review the sender's token \(TokenReview\).*tokenreviews/.test(error.reason),
    );
    kc.destroyAgents();
  });
});

test("the API server keeps knative/network/'s NetworkPolicies as written", async (t) => {
  // Through kubectl, as a user applies them: the typed client's model names `from` `_from` and
  // would drop it from an object written as YAML, leaving rules that admit everyone.
  const namespace = await freshNamespace(t);
  const shipped = (await kustomize("knative")).filter((o) => o.kind === "NetworkPolicy").map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }) as Manifest & { spec: unknown });
  assert.equal(shipped.length, 4);
  const file = path.join(dir.path, "network-policies.yaml");
  await writeFile(file, shipped.map((o) => stringify(o)).join("---\n"));
  await applyFiles(file);
  const { kubeconfig } = await stack();
  const listed = await runCommand(await kubectlBinary(), ["get", "networkpolicies", "-n", namespace, "-o", "json", `--kubeconfig=${kubeconfig}`]);
  assert.equal(listed.code, 0, listed.stderr);
  const stored = new Map((JSON.parse(listed.stdout) as { items: { metadata: { name: string }; spec: unknown }[] }).items.map((p) => [p.metadata.name, p.spec]));
  for (const policy of shipped) assert.deepEqual(stored.get(policy.metadata.name), policy.spec, policy.metadata.name);
});
