/**
 * Every 2xx answer of every CloudEvent function is empty. Knative's Broker filter
 * (knative/eventing pkg/broker/filter/filter_handler.go, `writeResponse`) answers 502 upstream
 * for a reply that has a body but is not a CloudEvent, so a handled event answered with a JSON
 * body would be redelivered and finally dead-lettered. Each function's own handler runs in the
 * shared runtime and is reached over HTTP, on an in-memory cluster; one case per way an event
 * can be handled (scaled, skipped for each kind of reason, ignored; each rule outcome, skipped,
 * resynced). The outcome must stay visible in the `X-Appmonitor-*` headers.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CloudEvent } from "cloudevents";
import { pino } from "pino";
import { Registry } from "prom-client";
import { validateAlertEventData } from "../../../../functions/lib/alert-event.ts";
import { LAST_SCALE_ANNOTATION } from "../../../../functions/lib/appmonitor.ts";
import { acknowledge } from "../../../../functions/lib/runtime/cloudevent.ts";
import type { RunningServer } from "../../../../functions/lib/runtime/server.ts";
import type { CloudEventFunction } from "../../../../functions/lib/runtime/types.ts";
import { createAnswerMemory } from "../../../../functions/memory-scaler/answers.ts";
import { createHandler as createScalerHandler } from "../../../../functions/memory-scaler/handler.ts";
import { createMetrics as createScalerMetrics } from "../../../../functions/memory-scaler/metrics.ts";
import type { FlowDeps } from "../../../../functions/memory-scaler/scale/deps.ts";
import type { Verifier } from "../../../../functions/memory-scaler/kube/prometheus.ts";
import { readConfig as readRuleSyncConfig } from "../../../../functions/rule-sync/config.ts";
import { PING_EVENT_TYPE } from "../../../../functions/lib/ping-event.ts";
import { REF_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../../../functions/rule-sync/incoming-event.ts";
import { createHandler as createRuleSyncHandler } from "../../../../functions/rule-sync/handler.ts";
import { createMetrics as createRuleSyncMetrics } from "../../../../functions/rule-sync/metrics.ts";
import { syncOne, type SyncDeps } from "../../../../functions/rule-sync/sync.ts";
import { startFunction } from "../../../support/function-server.ts";
import { alertEvent, type AlertEventOptions } from "../../../support/memory-scaler.ts";
import { alertData, fakeVerifier, apiError, FakeCluster as ScalerCluster, flowDeps, memhogCluster, NS, ownedByJob, unannotateTemplate } from "../../../support/memory-scaler-fakes.ts";
import { assertNoReplyEvent, describeAnswer, postEvent, type EventAnswer } from "../../../support/post-event.ts";
import { apiError as ruleApiError, FakeCluster as RuleCluster, ref } from "../../../support/rule-sync-fakes.ts";

const silent = pino({ level: "silent" });

/** A CloudEvent function served by the runtime whose `handle` is set per case. */
interface Switchable {
  readonly server: RunningServer;
  use(handle: CloudEventFunction["handle"]): void;
}

async function serveSwitchable(name: string): Promise<Switchable> {
  let current: CloudEventFunction["handle"] | undefined;
  const server = await startFunction<null>({
    name,
    kind: "cloudevent",
    configure: () => null,
    init: () => ({
      handle: (context, event) => {
        if (current === undefined) throw new Error("no handler for this case");
        return current(context, event);
      },
    }),
  });
  return { server, use: (handle) => (current = handle) };
}

/** The answer of a handled event: 204, nothing a Broker could take for a reply, the outcome in headers. */
function assertHandledWithoutBody(answer: EventAnswer, outcome: string, reason: string | undefined): void {
  assertNoReplyEvent(answer);
  assert.equal(answer.outcome, outcome, describeAnswer(answer));
  assert.equal(answer.reason, reason, describeAnswer(answer));
}

describe("memory-scaler answers every handled event without a body", () => {
  const mi = 1024 * 1024;
  const verifier = (workingSets: Map<string, number>): Verifier => fakeVerifier({ workingSets });
  /** Replaces the Deployment's template container (memhogCluster shares one template object). */
  const templateMemory = (c: ScalerCluster, limit: string, request: string): void => {
    const key = `Deployment/${NS}/memhog`;
    const deployment = c.workloads.get(key);
    if (deployment?.spec === undefined) throw new Error("no memhog Deployment");
    const containers = [{ name: "memhog", image: "quay.io/metral/memhog:v0.0.1", resources: { limits: { memory: limit }, requests: { memory: request } } }];
    c.workloads.set(key, { ...deployment, spec: { ...deployment.spec, template: { ...deployment.spec.template, spec: { containers } } } });
  };
  const cases: {
    name: string;
    spec?: Record<string, unknown>;
    setup?: (c: ScalerCluster) => void;
    flow?: Partial<FlowDeps>;
    event?: Partial<AlertEventOptions>;
    outcome: string;
    reason: string;
  }[] = [
    { name: "the original demo scaled", outcome: "scaled", reason: "Scaled" },
    {
      name: "scaled, its Events not written (warnings)",
      setup: (c) => (c.createEvent = async () => Promise.reject(apiError(500, "etcdserver: request timed out"))),
      outcome: "scaled",
      reason: "Scaled",
    },
    { name: "a DryRun AppMonitor", spec: { memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" }, outcome: "dry-run", reason: "DryRun" },
    { name: "a resolved alert", event: { status: "resolved" }, outcome: "ignored", reason: "Resolved" },
    { name: "an alert without the appmonitor label", event: { appmonitor: undefined }, outcome: "skipped", reason: "NotAppMonitorAlert" },
    { name: "a Pod that is gone", setup: (c) => c.pods.clear(), outcome: "skipped", reason: "PodGone" },
    { name: "a namespace without AppMonitor", setup: (c) => c.appMonitors.clear(), outcome: "skipped", reason: "NoAppMonitor" },
    { name: "a Pod owned by a Job", setup: ownedByJob, outcome: "skipped", reason: "UnsupportedOwner" },
    { name: "an owner deleted meanwhile", setup: (c) => c.workloads.delete(`Deployment/${NS}/memhog`), outcome: "skipped", reason: "OwnerGone" },
    { name: "a Pod template no AppMonitor covers", setup: unannotateTemplate, outcome: "skipped", reason: "NotCovered" },
    { name: "a limit at maxMemory", spec: { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi" }, outcome: "skipped", reason: "AtCap" },
    {
      name: "a workload scaled a minute ago",
      setup: (c) => {
        const deployment = c.workloads.get(`Deployment/${NS}/memhog`);
        if (deployment?.metadata) deployment.metadata.annotations = { [LAST_SCALE_ANNOTATION]: "2025-06-01T11:59:00Z" };
      },
      // The crossing that scale answered: its alert began before it.
      event: { startsAt: "2025-06-01T11:58:00Z" },
      outcome: "skipped",
      reason: "Cooldown",
    },
    { name: "a template already scaled, its rollout under way", setup: (c) => templateMemory(c, "768Mi", "512Mi"), outcome: "skipped", reason: "RolloutUnderWay" },
    { name: "an alert for a container the template lacks", event: { container: "nope" }, outcome: "skipped", reason: "ContainerNotFound" },
    { name: "Prometheus below the threshold", flow: { verifier: verifier(new Map([["memhog", 100 * mi]])) }, outcome: "skipped", reason: "BelowThreshold" },
    { name: "Prometheus without the working set", flow: { verifier: verifier(new Map()) }, outcome: "skipped", reason: "NotMeasured" },
    {
      name: "a scaled Pod refused by admission",
      setup: (c) => (c.podRefusal = apiError(403, 'pods "memhog-abcde" is forbidden: maximum memory usage per Container is 512Mi, but limit is 768Mi')),
      outcome: "skipped",
      reason: "AdmissionRefused",
    },
  ];

  let fn: Switchable;
  before(async () => {
    fn = await serveSwitchable("memory-scaler");
  });
  after(() => fn.server.close());
  const validate = validateAlertEventData;

  for (const c of cases) {
    it(`${c.name}: 204 ${c.outcome}/${c.reason}`, async () => {
      const cluster = memhogCluster(c.spec);
      c.setup?.(cluster);
      const flow = flowDeps(cluster, c.flow);
      fn.use(createScalerHandler({ validate, metrics: createScalerMetrics(new Registry()), flow, follow: { cluster, events: flow.events, status: flow.status, now: flow.now }, answers: createAnswerMemory() }));
      const { namespace, pod, container, appmonitor } = alertData();
      const event = alertEvent({ namespace, pod, container, appmonitor, ...c.event });
      assertHandledWithoutBody(await postEvent(fn.server.url, event), c.outcome, c.reason);
    });
  }
});

describe("rule-sync answers every handled event without a body", () => {
  const spec = { memThresholdPercent: 75, memMultiplier: 2 };
  /** AppMonitor `mymonitor` (uid `uid-mymonitor`) with `spec`. */
  const monitor = (c: RuleCluster, monitorSpec: unknown = spec): void => void c.addMonitor("mymonitor", monitorSpec);
  /** A PrometheusRule `mymonitor`, rule-sync's (`managed`) or not, owned by `owner`; with the AppMonitor when `withMonitor`. */
  const rule = (managed: boolean, owner: string | undefined, withMonitor: boolean) => (c: RuleCluster): void => {
    if (withMonitor) monitor(c);
    c.addRule("mymonitor", managed, owner);
  };
  /** Events about `mymonitor` are ApiServerSource reference events; `event` names the action. */
  const cases: {
    name: string;
    setup?: (c: RuleCluster, deps: SyncDeps) => void | Promise<void>;
    env?: Record<string, string>;
    event?: "add" | "update" | "delete";
    /** Instead of `event`: an event of this type, without data. */
    type?: string;
    outcome: string;
    reason?: string;
  }[] = [
    { name: "a new AppMonitor", setup: (c) => monitor(c), event: "add", outcome: "created", reason: "PrometheusNotConfigured" },
    {
      name: "an AppMonitor whose rule is up to date",
      setup: async (c, deps) => {
        monitor(c);
        await syncOne(deps, "demo", "mymonitor");
      },
      event: "update",
      outcome: "unchanged",
      reason: "PrometheusNotConfigured",
    },
    { name: "an AppMonitor whose rule is stale", setup: rule(true, "uid-mymonitor", true), event: "update", outcome: "updated", reason: "PrometheusNotConfigured" },
    { name: "an invalid AppMonitor", setup: (c) => monitor(c, { ...spec, selector: { matchLabels: { "no spaces": "x" } } }), event: "add", outcome: "kept", reason: "InvalidSpec" },
    {
      name: "a rule the API server refuses",
      setup: (c) => {
        monitor(c);
        c.fail.applyRule = () => ruleApiError(422, { reason: "Invalid", message: "spec.groups: bad" });
      },
      event: "add",
      outcome: "rejected",
      reason: "RuleRejected",
    },
    { name: "someone else's rule of that name", setup: rule(false, undefined, true), event: "add", outcome: "kept", reason: "RuleConflict" },
    { name: "a deleted AppMonitor's rule", setup: rule(true, "uid-mymonitor", false), event: "delete", outcome: "deleted" },
    { name: "a deleted AppMonitor without rule", event: "delete", outcome: "kept" },
    { name: "an AppMonitor outside WATCH_NAMESPACES", env: { WATCH_NAMESPACES: "elsewhere" }, event: "add", outcome: "skipped", reason: "NamespaceNotWatched" },
    { name: "a resync event", setup: rule(true, undefined, true), type: RESYNC_EVENT_TYPE, outcome: "resynced" },
    { name: "a PingSource tick", type: PING_EVENT_TYPE, outcome: "resynced" },
  ];

  let fn: Switchable;
  before(async () => {
    fn = await serveSwitchable("rule-sync");
  });
  after(() => fn.server.close());

  for (const c of cases) {
    it(`${c.name}: 204 ${c.outcome}${c.reason === undefined ? "" : `/${c.reason}`}`, async () => {
      const cluster = new RuleCluster();
      const deps: SyncDeps = { cluster, config: readRuleSyncConfig(c.env ?? {}), metrics: createRuleSyncMetrics(new Registry()), log: silent, now: () => new Date("2026-05-01T00:00:00Z") };
      await c.setup?.(cluster, deps);
      fn.use(createRuleSyncHandler(deps));
      const attributes = c.type === undefined ? { type: `${REF_EVENT_PREFIX}${c.event ?? "add"}`, data: ref("mymonitor") } : { type: c.type };
      const event = new CloudEvent({ ...attributes, source: "https://kubernetes.default.svc", datacontenttype: "application/json" });
      assertHandledWithoutBody(await postEvent(fn.server.url, event), c.outcome, c.reason);
    });
  }
});

describe("acknowledge", () => {
  it("is 204 with the outcome and reason headers only", () => {
    assert.deepEqual(acknowledge({ outcome: "scaled", reason: "Scaled" }), { status: 204, headers: { "x-appmonitor-outcome": "scaled", "x-appmonitor-reason": "Scaled" } });
    assert.deepEqual(acknowledge({ outcome: "resynced" }), { status: 204, headers: { "x-appmonitor-outcome": "resynced" } });
  });

  it("refuses what is not one header-safe word (a bug in the function: answered 500)", () => {
    for (const bad of [{ outcome: "" }, { outcome: "two words" }, { outcome: "scaled", reason: "→" }, { outcome: "x".repeat(65) }, undefined, { status: 200, body: {} }]) {
      assert.throws(() => acknowledge(bad as never), RangeError, JSON.stringify(bad));
    }
  });
});
