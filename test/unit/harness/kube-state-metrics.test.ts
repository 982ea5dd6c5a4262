// kube-state-metrics beside the real node, as configured: on 127.0.0.1 only, exporting what
// rule-sync's kube-state-metrics rules read, scraped so that its labels name the Pod described.
import { test } from "node:test";
import assert from "node:assert/strict";
import { oomAlertExpression } from "../../../functions/rule-sync/rule.ts";
import { kubeStateMetricsArgs, kubeStateMetricsScrapeJob } from "../../harness/stack/kube-state-metrics.ts";

const ports = { metrics: 18080, telemetry: 18081 };
const flags = (args: string[]) => new Map(args.map((a) => {
  const [flag = "", ...value] = a.split("=");
  return [flag, value.join("=")] as const;
}));

test("kube-state-metrics listens on 127.0.0.1 alone, on the ports given, with the kubeconfig given", () => {
  const args = flags(kubeStateMetricsArgs({ kubeconfig: "/state/node/ksm.kubeconfig", ports }));
  assert.deepEqual(
    ["--host", "--port", "--telemetry-host", "--telemetry-port", "--kubeconfig"].map((f) => args.get(f)),
    ["127.0.0.1", "18080", "127.0.0.1", "18081", "/state/node/ksm.kubeconfig"],
  );
});

test("it exports the Pod series and the opt-in annotation that rule-sync's kube-state-metrics OOM rule joins on", () => {
  const args = flags(kubeStateMetricsArgs({ kubeconfig: "k", ports }));
  assert.equal(args.get("--resources"), "pods");
  const allowed = /^pods=\[(.*)\]$/.exec(args.get("--metric-annotations-allowlist") ?? "")?.[1]?.split(",") ?? [];
  const expr = oomAlertExpression({ name: "m", namespace: "ns", uid: undefined, generation: undefined, spec: { memThresholdPercent: 75, forSeconds: 60 } }, "kube-state-metrics");
  // kube-state-metrics names an annotation's label `annotation_` + the key with [^a-zA-Z0-9_] as `_`.
  const joined = [...expr.matchAll(/kube_pod_annotations\{[^}]*\b(annotation_\w+)=/g)].map((m) => m[1]);
  assert.ok(joined.length > 0, expr);
  for (const label of joined) assert.ok(allowed.some((key) => `annotation_${key.replace(/[^a-zA-Z0-9_]/g, "_")}` === label), `${label} from ${allowed.join(",")}`);
  assert.equal(args.get("--metric-labels-allowlist"), "pods=[*]", "every Pod label, for spec.selector");
});

test("Prometheus scrapes it with honor_labels, so namespace and pod name the Pod and not the exporter", () => {
  const job = kubeStateMetricsScrapeJob(ports);
  assert.equal(job.honor_labels, true);
  assert.deepEqual(job.static_configs, [{ targets: ["127.0.0.1:18080"] }]);
});

test("on the real node it listens on the node IP, and with the chart's defaults it runs every collector with no allowlist, as kube-prometheus-stack's subchart does", () => {
  const args = flags(kubeStateMetricsArgs({ kubeconfig: "k", ports, host: "10.245.255.1", chartDefaults: true }));
  assert.equal(args.get("--host"), "10.245.255.1");
  assert.equal(args.get("--telemetry-host"), "127.0.0.1");
  for (const flag of ["--resources", "--metric-annotations-allowlist", "--metric-labels-allowlist"]) assert.equal(args.has(flag), false, flag);
  assert.deepEqual(kubeStateMetricsScrapeJob(ports, "10.245.255.1").static_configs, [{ targets: ["10.245.255.1:18080"] }]);
});
