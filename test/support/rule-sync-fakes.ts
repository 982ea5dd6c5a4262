/**
 * rule-sync's world in memory, for tests without an API server: a {@link Cluster} holding
 * AppMonitors, PrometheusRules and the Events written, with errors injected per call; a
 * {@link PrometheusApi} whose loaded groups and query answers the test sets; and the references
 * and API errors rule-sync's events and client carry.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import type { Cluster, DeleteOutcome } from "../../functions/rule-sync/cluster.ts";
import type { ObservedAppMonitor, ObservedRule, RuleRef } from "../../functions/rule-sync/plan.ts";
import { PrometheusError, type PrometheusApi, type Sample } from "../../functions/rule-sync/prometheus.ts";
import type { LoadedGroup } from "../../functions/rule-sync/rule-loaded.ts";
import { SIDE_LABEL } from "../../functions/rule-sync/series-check.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../functions/rule-sync/rule-config.ts";
import type { StatusApply } from "../../functions/rule-sync/status.ts";

/** An in-memory API server holding AppMonitors and PrometheusRules; `fail` injects errors per call. */
export class FakeCluster implements Cluster {
  monitors = new Map<string, ObservedAppMonitor>();
  rules = new Map<string, ObservedRule & { spec?: unknown }>();
  statusWrites: StatusApply[] = [];
  events: k8s.EventsV1Event[] = [];
  calls: string[] = [];
  fail: Partial<Record<keyof Cluster, (attempt: number) => unknown>> = {};
  private version = 1000;
  private counts = new Map<string, number>();

  private maybeFail(call: keyof Cluster): void {
    const attempt = (this.counts.get(call) ?? 0) + 1;
    this.counts.set(call, attempt);
    this.calls.push(call);
    const error = this.fail[call]?.(attempt);
    if (error !== undefined) throw error;
  }

  addMonitor(name: string, spec: unknown, namespace = "demo", uid = `uid-${name}`): ObservedAppMonitor {
    const m: ObservedAppMonitor = { metadata: { name, namespace, uid, generation: 1, resourceVersion: String(this.version++) }, spec };
    this.monitors.set(`${namespace}/${name}`, m);
    return m;
  }

  addRule(name: string, managed: boolean, ownerUid: string | undefined, namespace = "demo"): void {
    this.rules.set(`${namespace}/${name}`, {
      metadata: {
        name, namespace, uid: `rule-${name}-${this.version}`, resourceVersion: String(this.version++),
        labels: managed ? { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } : {},
        ownerReferences: ownerUid === undefined ? [] : [{ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, uid: ownerUid, controller: true }],
      },
    });
  }

  async readAppMonitor(namespace: string, name: string) {
    this.maybeFail("readAppMonitor");
    return this.monitors.get(`${namespace}/${name}`);
  }
  async listAppMonitors() {
    this.maybeFail("listAppMonitors");
    return [...this.monitors.values()];
  }
  async readRule(namespace: string, name: string) {
    this.maybeFail("readRule");
    return this.rules.get(`${namespace}/${name}`);
  }
  async listManagedRules() {
    this.maybeFail("listManagedRules");
    return [...this.rules.values()].filter((r) => r.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE);
  }
  async applyRule(rule: IPrometheusRule) {
    this.maybeFail("applyRule");
    const key = `${rule.metadata?.namespace}/${rule.metadata?.name}`;
    const old = this.rules.get(key);
    const same = old !== undefined && JSON.stringify(old.spec) === JSON.stringify(rule.spec);
    const stored = {
      metadata: { ...rule.metadata, uid: old?.metadata.uid ?? `rule-${this.version}`, resourceVersion: same ? old.metadata.resourceVersion : String(this.version++) },
      spec: rule.spec,
    } as ObservedRule & { spec?: unknown };
    this.rules.set(key, stored);
    return stored;
  }
  async deleteRule(ref: RuleRef): Promise<DeleteOutcome> {
    this.maybeFail("deleteRule");
    const key = `${ref.namespace}/${ref.name}`;
    const current = this.rules.get(key);
    if (current === undefined) return "gone";
    if (current.metadata.uid !== ref.uid || current.metadata.resourceVersion !== ref.resourceVersion) return "changed";
    this.rules.delete(key);
    return "deleted";
  }
  async applyStatus(body: StatusApply): Promise<"written" | "gone" | "conflict"> {
    this.maybeFail("applyStatus");
    const key = `${body.metadata.namespace}/${body.metadata.name}`;
    const current = this.monitors.get(key);
    if (current === undefined) return "gone";
    if (body.metadata.resourceVersion !== current.metadata.resourceVersion) return "conflict";
    this.statusWrites.push(body);
    this.monitors.set(key, { ...current, metadata: { ...current.metadata, resourceVersion: String(this.version++) }, status: body.status });
    return "written";
  }
  async probe() {
    this.maybeFail("probe");
  }
  async createEvent(namespace: string, event: k8s.EventsV1Event) {
    this.maybeFail("createEvent");
    assert.equal(event.metadata?.namespace, namespace);
    // As the API server: a name taken is 409 AlreadyExists.
    if (this.events.some((e) => e.metadata?.name === event.metadata?.name)) throw apiError(409, { reason: "AlreadyExists" });
    this.events.push(event);
  }
}

/**
 * A Prometheus in memory: `groups` is what `/api/v1/rules` lists; `series` the count of each side
 * a query asks for (by the `side` tags of the query's `label_replace` calls); `firing` the labels
 * of the `ALERTS` series a query of firing alerts answers; `down` makes every request fail as
 * unreachable. `requests` counts them by endpoint.
 */
export class FakePrometheus implements PrometheusApi {
  readonly url = "http://prometheus.test:9090";
  groups = new Map<string, LoadedGroup>();
  /** Counts answered for a namespace query (`namespace="…"` in it) and for the cluster-wide one. */
  series: { inNamespace: Record<string, number>; inCluster: Record<string, number> } = { inNamespace: {}, inCluster: {} };
  /** The firing alerts' labels, as `ALERTS{alertstate="firing"}` holds them. */
  firing: Record<string, string>[] = [];
  down: PrometheusError | undefined;
  requests = { rules: 0, query: 0 };

  /** Lists the group of `namespace/name` with `rules` rules at `generation`. */
  load(namespace: string, name: string, generation: string | undefined, rules = 2): void {
    const group = `appmonitor/${namespace}/${name}`;
    this.groups.set(group, { name: group, file: `/etc/prometheus/rules/${namespace}-${name}.yaml`, rules: Array.from({ length: rules }, (_, i) => ({ name: `A${i}`, generation, health: "ok", lastError: undefined })) });
  }

  async ruleGroups(names?: readonly string[]) {
    this.requests.rules += 1;
    if (this.down) throw this.down;
    return new Map([...this.groups].filter(([name]) => names === undefined || names.includes(name)));
  }

  async query(expr: string): Promise<Sample[]> {
    this.requests.query += 1;
    if (this.down) throw this.down;
    if (expr.startsWith("ALERTS{")) return this.firing.map((labels) => ({ metric: { __name__: "ALERTS", alertstate: "firing", ...labels }, value: 1 }));
    const counts = /namespace="/.test(expr) ? this.series.inNamespace : this.series.inCluster;
    const sides = [...expr.matchAll(new RegExp(`"${SIDE_LABEL}", "([A-Za-z]+)"`, "g"))].map((m) => m[1] ?? "");
    return sides.filter((side) => (counts[side] ?? 0) > 0).map((side) => ({ metric: { [SIDE_LABEL]: side }, value: counts[side] ?? 0 }));
  }
}

/** An unreachable Prometheus's error, as `prometheus.ts` raises it. */
export const unreachable = (message = "connect ECONNREFUSED 127.0.0.1:9") => new PrometheusError("unreachable", message);

/** An ApiServerSource reference (`mode: Reference`) to the AppMonitor `namespace/name`. */
export const ref = (name: string, namespace = "demo") => ({ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, namespace });

/** An error as the Kubernetes client throws it for an API server answer `code` with a Status `body`. */
export const apiError = (code: number, body: object = {}, headers: Record<string, string> = {}) => new k8s.ApiException(code, "Unsuccessful HTTP Request", JSON.stringify(body), headers);
