/**
 * What tests use of the local stack that `global-setup.ts` started: its state, a KubeConfig,
 * a fresh namespace per test, ServiceAccount tokens, Prometheus queries and polling.
 */
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { readState, type StackState } from "../harness/stack/state.ts";
import { tokenKubeConfig } from "../harness/lib/service-account.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";

let cached: StackState | undefined;

/**
 * The running stack's state.
 * @throws Error when no stack runs (tests that need one run under `npm test`).
 */
export async function stack(): Promise<StackState> {
  if (cached) return cached;
  const dir = process.env.APPMONITOR_STACK_DIR;
  const state = dir ? await readState(dir) : undefined;
  if (!state) throw new Error("no local stack: run tests with `npm test` (its global setup starts one) or `eval \"$(npm run -s stack -- env)\"`");
  cached = state;
  return state;
}

/** A KubeConfig with the stack's admin credential (group system:masters). */
export async function adminKubeConfig(): Promise<k8s.KubeConfig> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile((await stack()).kubeconfig);
  return kc;
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined/false
 * ({@link waitUntil} with this module's longer default timeout, for cluster work).
 * @throws Error naming `what` (with the last error as cause) when `timeoutMs` passes.
 */
export function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 30_000, intervalMs = 200): Promise<T> {
  return waitUntil(what, check, { timeoutMs, intervalMs });
}

/**
 * Creates a namespace named after the test (plus a random suffix), waits until its `default`
 * ServiceAccount exists (Pods need it), and deletes it after the test.
 */
export async function freshNamespace(t: TestContext): Promise<string> {
  const kc = await adminKubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const slug = t.name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 40);
  const name = `${slug || "test"}-${randomBytes(3).toString("hex")}`.replace(/^-/, "");
  await core.createNamespace({ body: { metadata: { name, labels: { "appmonitor.test/run": "true" } } } });
  t.after(async () => {
    await core.deleteNamespace({ name }).catch(() => undefined);
  });
  await waitFor(`ServiceAccount default in ${name}`, () => core.readNamespacedServiceAccount({ name: "default", namespace: name }));
  return name;
}

/**
 * A KubeConfig that authenticates as ServiceAccount `namespace/name` with a short-lived token
 * from the TokenRequest API ({@link tokenKubeConfig} with the stack's admin credential).
 */
export async function serviceAccountKubeConfig(namespace: string, name: string, seconds = 3600): Promise<k8s.KubeConfig> {
  return tokenKubeConfig(await adminKubeConfig(), namespace, name, seconds);
}

/** One sample of a Prometheus instant-query vector result: labels and value. */
export interface Sample {
  metric: Record<string, string>;
  value: number;
}

/**
 * Runs an instant query against the stack's Prometheus HTTP API
 * (https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries).
 * @throws Error when Prometheus answers with an error.
 */
export async function promQuery(query: string): Promise<Sample[]> {
  const { prometheusUrl } = await stack();
  const res = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query })}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== "success") throw new Error(`Prometheus query ${query} failed: ${body.error ?? res.status}`);
  return (body.data?.result ?? []).map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/**
 * Creates ServiceAccount `namespace/name` that may create events.k8s.io Events in its namespace
 * and nothing else (a Role and its binding, named `<name>-events`): a function running as it is
 * refused every call but the Warning Event that names what it lacks.
 */
export async function serviceAccountForEventsOnly(namespace: string, name: string): Promise<void> {
  const admin = await adminKubeConfig();
  await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const role = `${name}-events`;
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: role }, rules: [{ apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] }] } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: { metadata: { name: role }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role }, subjects: [{ kind: "ServiceAccount", name, namespace }] },
  });
}

/**
 * The AppMonitor `spec.forSeconds` of a test whose subject is not the alert's `for`: long enough
 * to see the alert pending at the stack's 1 s evaluation interval, far short of the default minute.
 */
export const SHORT_FOR_SECONDS = 5;
