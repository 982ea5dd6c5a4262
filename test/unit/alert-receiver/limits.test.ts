/**
 * Payload sizes against alert-receiver's body limit (functions/alert-receiver/limits.ts): the
 * largest alert a generated rule can raise, built from the real rule builder and measured as
 * Alertmanager's JSON; the arithmetic behind the suggested max_alerts; and the places that
 * suggest it.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import {
  ALERT_BYTES,
  ENVELOPE_BYTES,
  LARGE_PAYLOAD_BYTES,
  SUGGESTED_MAX_ALERTS,
  WEBHOOK_BODY_LIMIT_BYTES,
  worstCasePayloadBytes,
} from "../../../functions/alert-receiver/limits.ts";
import type { AlertmanagerAlert } from "../../../functions/alert-receiver/webhook.ts";
import { BODY_LIMIT_BYTES } from "../../../functions/lib/runtime/config.ts";
import { buildAlertingRule } from "../../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG, type RuleConfig } from "../../../functions/rule-sync/rule-config.ts";
import { checkRuleInput, type AppMonitorForRule } from "../../../functions/rule-sync/rule-input.ts";

const KIB = 1024;
const read = (path: string): string => readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8");

/** Go's url.QueryEscape: what Prometheus puts in a generatorURL. */
function goQueryEscape(text: string): string {
  return encodeURIComponent(text)
    .replace(/%20/g, "+")
    .replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** JSON as Go's encoding/json writes it (HTML-safe: `<`, `>`, `&` escaped). */
function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&]/g, (ch) => `\\u00${ch.charCodeAt(0).toString(16)}`);
}

/**
 * The alert Alertmanager sends for one series of `monitor`'s rule: the rule's labels and the
 * series' namespace/pod/container, the annotations rendered as Prometheus renders them, the
 * generatorURL Prometheus builds (`<external URL>/graph?g0.expr=…&g0.tab=1`), a resolved alert's
 * two nanosecond timestamps.
 */
function alertOf(monitor: AppMonitorForRule, config: RuleConfig, series: { pod: string; container: string }, externalUrl: string): AlertmanagerAlert {
  const rule = buildAlertingRule(checkRuleInput(monitor), config);
  const namespace = monitor.metadata.namespace ?? "";
  const render = (template: string): string =>
    template
      .replace("{{ $labels.container }}", series.container)
      .replace("{{ $labels.namespace }}", namespace)
      .replace("{{ $labels.pod }}", series.pod)
      .replace('{{ $value | printf "%.1f" }}', "100.0")
      .replace("{{ $value }}", "78.12500000000001");
  return {
    status: "resolved",
    labels: { alertname: rule.alert ?? "", namespace, ...series, ...(rule.labels ?? {}) },
    annotations: Object.fromEntries(Object.entries(rule.annotations ?? {}).map(([name, template]) => [name, render(template)])),
    startsAt: "2026-11-30T20:08:54.596966920Z",
    endsAt: "2026-11-30T20:18:54.596966920Z",
    generatorURL: `${externalUrl}/graph?g0.expr=${goQueryEscape(String(rule.expr))}&g0.tab=1`,
    fingerprint: "d43717828cf0565a",
  };
}

const longest = (prefix: string, length: number): string => prefix.padEnd(length, "x");

describe("the largest alert of a generated rule", () => {
  const monitor: AppMonitorForRule = {
    metadata: { name: longest("m", 253), namespace: longest("n", 63) },
    spec: {
      memThresholdPercent: 87.5,
      forSeconds: 60,
      containers: [1, 2, 3, 4, 5].map((i) => longest(`c${i}`, 63)),
      selector: { matchLabels: Object.fromEntries([1, 2, 3, 4].map((i) => [longest(`example.com/k${i}`, 63), longest("v", 63)])) },
    },
  };
  const config: RuleConfig = { ...DEFAULT_RULE_CONFIG, metricSource: "kube-state-metrics", severity: longest("s", 63) };
  const alert = alertOf(monitor, config, { pod: longest("p", 253), container: longest("c1", 63) }, "https://prometheus.monitoring.example.com");
  const bytes = Buffer.byteLength(goJson(alert));

  it(`leaves at least 4 KiB of the ${ALERT_BYTES / KIB} KiB budget for labels added outside the rule`, () => {
    assert.ok(bytes + 4 * KIB <= ALERT_BYTES, `${bytes} bytes`);
    assert.ok(bytes > 3.5 * KIB, `${bytes} bytes: the module comment says 3.8 KiB`);
  });

  it("is well over the demo's alert, which the module comment puts at about 1 KiB", () => {
    const demo = alertOf(
      { metadata: { name: "mymonitor", namespace: "default" }, spec: { memThresholdPercent: 75, forSeconds: 60 } },
      DEFAULT_RULE_CONFIG,
      { pod: "memhog-5d4f8b7c9-x2x7q", container: "memhog" },
      "http://prometheus-operated.monitoring.svc:9090",
    );
    const demoBytes = Buffer.byteLength(goJson(demo));
    assert.ok(demoBytes > 0.8 * KIB && demoBytes < 1.2 * KIB, `${demoBytes} bytes`);
  });
});

describe("the suggested max_alerts against the body limit", () => {
  it("is the runtime's limit that webhooks are read with: 1 MiB", () => {
    assert.equal(WEBHOOK_BODY_LIMIT_BYTES, BODY_LIMIT_BYTES);
    assert.equal(WEBHOOK_BODY_LIMIT_BYTES, 1024 * KIB);
  });

  it("keeps the worst-case payload at about half the limit: (64 + 3) × 8 KiB + 1 KiB = 537 KiB", () => {
    assert.equal(worstCasePayloadBytes(SUGGESTED_MAX_ALERTS), SUGGESTED_MAX_ALERTS * ALERT_BYTES + ENVELOPE_BYTES);
    assert.equal(worstCasePayloadBytes(SUGGESTED_MAX_ALERTS), 537 * KIB);
    assert.ok(SUGGESTED_MAX_ALERTS * ALERT_BYTES <= WEBHOOK_BODY_LIMIT_BYTES / 2);
    assert.ok(worstCasePayloadBytes(SUGGESTED_MAX_ALERTS) < LARGE_PAYLOAD_BYTES, "a payload within the budget is not logged as large");
  });

  it("would not: 1000 alerts of 1.2 KB, the earlier suggestion with ordinary labels, are over the limit", () => {
    assert.ok(worstCasePayloadBytes(1000, 1200) > WEBHOOK_BODY_LIMIT_BYTES);
  });
});

describe("every place that suggests max_alerts says the same", () => {
  it("knative/alertmanager/alertmanager.yml", () => {
    const config = parse(read("knative/alertmanager/alertmanager.yml")) as { receivers: { name: string; webhook_configs?: { max_alerts?: number }[] }[] };
    const webhooks = config.receivers.flatMap((receiver) => receiver.webhook_configs ?? []);
    assert.deepEqual(webhooks.map((webhook) => webhook.max_alerts), [SUGGESTED_MAX_ALERTS]);
  });

  it("knative/alertmanager/alertmanagerconfig.yaml", () => {
    const [document] = parseAllDocuments(read("knative/alertmanager/alertmanagerconfig.yaml"));
    const spec = (document?.toJS() as { spec: { receivers: { webhookConfigs: { maxAlerts?: number }[] }[] } }).spec;
    assert.deepEqual(spec.receivers.flatMap((receiver) => receiver.webhookConfigs.map((webhook) => webhook.maxAlerts)), [SUGGESTED_MAX_ALERTS]);
  });

  it("the receiver in functions/alert-receiver/README.md", () => {
    const readme = read("functions/alert-receiver/README.md");
    assert.deepEqual([...readme.matchAll(/^ +max_alerts: (\d+)/gm)].map((match) => Number(match[1])), [SUGGESTED_MAX_ALERTS]);
  });
});

describe("the figures the docs give beside max_alerts agree with the limit and the budget", () => {
  const MIB = 1024 * KIB;
  const worst = worstCasePayloadBytes(SUGGESTED_MAX_ALERTS);
  /** Where the body limit, max_alerts and the payload budget are stated in words. */
  const places = [
    "functions/alert-receiver/README.md",
    "functions/alert-receiver/limits.ts",
    "functions/alert-receiver/handler.ts",
    "knative/alertmanager/alertmanager.yml",
    "knative/alertmanager/alertmanagerconfig.yaml",
    "docs/install.md",
    "docs/operations.md",
  ];

  it("every body limit they state is the runtime's", () => {
    const stated = places.flatMap((place) =>
      [...read(place).matchAll(/(?:body over|body limit is the shared runtime's,|of alert-receiver's|half of the) (\d+(?:\.\d+)?) MiB/g)].map((match) => [place, Number(match[1]) * MIB]),
    );
    assert.ok(stated.length >= 7, JSON.stringify(stated));
    for (const [place, bytes] of stated) assert.equal(bytes, WEBHOOK_BODY_LIMIT_BYTES, String(place));
  });

  it("the README's and limits.ts's worst case: (max_alerts + 3) × alert budget + 1 KiB, its KiB and its share of the limit", () => {
    for (const place of ["functions/alert-receiver/README.md", "functions/alert-receiver/limits.ts"]) {
      const match = /\((\d+) \+ 3\) × (\d+) KiB \+ 1 KiB = (\d+) KiB, (\d+) % of (\d+) MiB/.exec(read(place));
      assert.ok(match !== null, place);
      const [, maxAlerts, alertKib, worstKib, percent, limitMib] = match.map(Number);
      assert.deepEqual(
        { maxAlerts, alertKib, worstKib, percent, limitMib },
        { maxAlerts: SUGGESTED_MAX_ALERTS, alertKib: ALERT_BYTES / KIB, worstKib: worst / KIB, percent: Math.round((100 * worst) / WEBHOOK_BODY_LIMIT_BYTES), limitMib: WEBHOOK_BODY_LIMIT_BYTES / MIB },
        place,
      );
    }
  });

  it("the README receiver's comment: payloads within the worst case, about half the limit", () => {
    const match = /max_alerts: (\d+) +# payloads ≤ (\d+) KiB, half of the (\d+) MiB body limit/.exec(read("functions/alert-receiver/README.md"));
    assert.ok(match !== null);
    assert.deepEqual(match.slice(1).map(Number), [SUGGESTED_MAX_ALERTS, worst / KIB, WEBHOOK_BODY_LIMIT_BYTES / MIB]);
    assert.ok(Math.abs(worst / WEBHOOK_BODY_LIMIT_BYTES - 0.5) < 0.05, "“half” holds within 5 %");
  });

  it("the Alertmanager configurations' comment: the alert budget they name is limits.ts's", () => {
    for (const place of ["knative/alertmanager/alertmanager.yml", "knative/alertmanager/alertmanagerconfig.yaml"]) {
      const match = /half of alert-receiver's (\d+) MiB body limit, even with alerts of\s*#?\s*(\d+) KiB/.exec(read(place));
      assert.ok(match !== null, place);
      assert.deepEqual(match.slice(1).map(Number), [WEBHOOK_BODY_LIMIT_BYTES / MIB, ALERT_BYTES / KIB], place);
    }
  });
});
