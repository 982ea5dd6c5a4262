// Tables for rule-sync's rule builder: PromQL quoting, name validation, the PrometheusRule's
// labels and ownerReference, `for`, both metric sources, and hostile input.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { parse } from "yaml";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { isDnsLabel, isDnsSubdomain, isLabelKey, isLabelValue } from "../../../functions/lib/kube-names.ts";
import { promDuration, promqlNumber, promqlString, regexQuote } from "../../../functions/lib/promql.ts";
import type { AppMonitorSpec } from "../../../functions/lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import { schemaErrorField } from "../../../functions/lib/json-schema.ts";
import {
  ALERT_NAME,
  alertExpression,
  buildAlertingRule,
  buildOOMAlertingRule,
  buildPrometheusRule,
  buildRuleGroup,
  buildRulesFile,
  GENERATION_ANNOTATION,
  buildTrendAlertingRule,
  GENERATED_ALERT_NAMES,
  HEAP_ERROR_ALERT_NAME,
  buildHeapErrorAlertingRule,
  buildHeapThresholdAlertingRule,
  heapErrorAlertExpression,
  heapWatches,
  HEAP_THRESHOLD_ALERT_NAME,
  OOM_ALERT_NAME,
  oomAlertExpression,
  percentOfLimitExpression,
  TREND_ALERT_NAME,
  TREND_DROP_PERCENT,
  trendAlertExpression,
  RULE_GENERATION_ANNOTATION,
} from "../../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG, MANAGED_BY_LABEL, MANAGED_BY_VALUE, validateRuleConfig, type RuleConfig } from "../../../functions/rule-sync/rule-config.ts";
import { checkRuleInput, MAX_FOR_SECONDS, RuleInputError, type AppMonitorForRule, type RuleInput } from "../../../functions/rule-sync/rule-input.ts";

const KSM: RuleConfig = { ...DEFAULT_RULE_CONFIG, metricSource: "kube-state-metrics" };

type Overrides = { metadata?: Partial<AppMonitorForRule["metadata"]>; spec?: Partial<AppMonitorForRule["spec"]> };

/** The test AppMonitor with `overrides`, checked by `checkRuleInput` (its spec taken as valid). */
function monitor(overrides: Overrides = {}): RuleInput {
  return checkRuleInput({
    metadata: { name: "mymonitor", namespace: "shop", uid: "0b7f6c1e-3c4d-4d7e-9a53-1c2b3d4e5f60", generation: 3, ...overrides.metadata },
    spec: { memThresholdPercent: 75, forSeconds: 60, ...overrides.spec },
  });
}

/**
 * The test AppMonitor with `overrides` as rule-sync takes any AppMonitor to a rule
 * (plan.ts, rules-cli.ts): its spec through `validateAppMonitorSpec`, then `checkRuleInput`.
 */
function ruleInputOf(overrides: { metadata?: Overrides["metadata"]; spec?: Partial<AppMonitorSpec> } = {}): RuleInput {
  return checkRuleInput({
    metadata: { name: "mymonitor", namespace: "shop", uid: "0b7f6c1e-3c4d-4d7e-9a53-1c2b3d4e5f60", generation: 3, ...overrides.metadata },
    spec: validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, forSeconds: 60, ...overrides.spec }),
  });
}

/** The fields an error of {@link ruleInputOf} names, written as RuleInputError writes them (`spec.containers[1]`). */
function fieldsOf(error: unknown): string[] {
  if (error instanceof RuleInputError) return [error.field];
  if (!(error instanceof AppMonitorSpecError)) return [];
  return error.errors.map((e) => schemaErrorField(e, "spec"));
}

/** Go's strconv.Unquote for the escapes promqlString emits; throws on anything else. */
function goUnquote(literal: string): string {
  assert.ok(literal.startsWith('"') && literal.endsWith('"') && literal.length >= 2, `not a quoted literal: ${literal}`);
  const body = literal.slice(1, -1);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '"' || ch === "\n") throw new Error(`unescaped ${JSON.stringify(ch)} at ${i} in ${literal}`);
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const esc = body[++i];
    const simple: Record<string, string> = { "\\": "\\", '"': '"', n: "\n", r: "\r", t: "\t" };
    if (esc !== undefined && esc in simple) out += simple[esc];
    else if (esc === "x") {
      out += String.fromCharCode(parseInt(body.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (esc === "u") {
      out += String.fromCharCode(parseInt(body.slice(i + 1, i + 5), 16));
      i += 4;
    } else throw new Error(`unknown escape \\${String(esc)} in ${literal}`);
  }
  return out;
}

describe("promqlString", () => {
  const cases: [string, string, string][] = [
    ["plain", "default", '"default"'],
    ["double quote", 'a"b', '"a\\"b"'],
    ["backslash", "a\\b", '"a\\\\b"'],
    ["injection attempt", '"} or vector(1) #', '"\\"} or vector(1) #"'],
    ["newline, return, tab", "a\nb\rc\td", '"a\\nb\\rc\\td"'],
    ["C0 control and DEL", "\x01\x7f", '"\\x01\\x7f"'],
    ["C1 control", "\u0085", '"\\u0085"'],
    ["non-ASCII kept", "é😀", '"é😀"'],
    ["empty", "", '""'],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => {
      assert.equal(promqlString(input), expected);
      assert.equal(goUnquote(promqlString(input)), input);
    });
  }

  test("a lone surrogate is refused", () => {
    assert.throws(() => promqlString("a\ud800b"), TypeError);
  });

  test("any well-formed string round-trips and never ends the literal early", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        assert.equal(goUnquote(promqlString(s)), s);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("regexQuote", () => {
  const cases: [string, string][] = [
    ["a.b", "a\\.b"],
    ["a|b", "a\\|b"],
    ["(x)+*?[]{}^$\\", "\\(x\\)\\+\\*\\?\\[\\]\\{\\}\\^\\$\\\\"],
    ["plain-value_1", "plain-value_1"],
  ];
  for (const [input, expected] of cases) {
    test(JSON.stringify(input), () => {
      assert.equal(regexQuote(input), expected);
      // The quoted text, as a JavaScript regex (same metacharacters here), matches only itself.
      assert.ok(new RegExp(`^(?:${expected})$`).test(input));
    });
  }
});

describe("promqlNumber and promDuration", () => {
  const numbers: [number, string][] = [
    [75, "75"],
    [0.5, "0.5"],
    [1e-7, "1e-7"],
    [100, "100"],
  ];
  for (const [n, s] of numbers) test(`number ${s}`, () => assert.equal(promqlNumber(n), s));
  for (const bad of [NaN, Infinity, -Infinity]) test(`number ${bad} refused`, () => assert.throws(() => promqlNumber(bad), RangeError));

  const durations: [number, string][] = [
    [0, "0s"],
    [60, "60s"],
    [3600, "3600s"],
  ];
  for (const [n, s] of durations) test(`duration ${s}`, () => assert.equal(promDuration(n), s));
  for (const bad of [-1, 1.5, NaN]) test(`duration ${bad} refused`, () => assert.throws(() => promDuration(bad), RangeError));
});

describe("Kubernetes name syntax", () => {
  const cases: [string, (v: string) => boolean, string, boolean][] = [
    ["DNS label", isDnsLabel, "shop", true],
    ["DNS label", isDnsLabel, "a-1", true],
    ["DNS label", isDnsLabel, "a".repeat(63), true],
    ["DNS label", isDnsLabel, "a".repeat(64), false],
    ["DNS label", isDnsLabel, "a.b", false],
    ["DNS label", isDnsLabel, "-a", false],
    ["DNS label", isDnsLabel, "A", false],
    ["DNS label", isDnsLabel, "", false],
    ["DNS subdomain", isDnsSubdomain, "my.monitor-1", true],
    ["DNS subdomain", isDnsSubdomain, `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`, true],
    ["DNS subdomain", isDnsSubdomain, `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`, false],
    ["DNS subdomain", isDnsSubdomain, "a..b", false],
    ["DNS subdomain", isDnsSubdomain, 'x"}', false],
    ["label key", isLabelKey, "app.kubernetes.io/name", true],
    ["label key", isLabelKey, "name", true],
    ["label key", isLabelKey, "Under_score.dot-dash", true],
    ["label key", isLabelKey, "/name", false],
    ["label key", isLabelKey, "a/b/c", false],
    ["label key", isLabelKey, "name-", false],
    ["label value", isLabelValue, "", true],
    ["label value", isLabelValue, "memhog", true],
    ["label value", isLabelValue, "a.b_c-D", true],
    ["label value", isLabelValue, "a b", false],
    ["label value", isLabelValue, 'x"', false],
    ["label value", isLabelValue, "v".repeat(64), false],
  ];
  for (const [kind, check, value, valid] of cases) {
    test(`${kind} ${JSON.stringify(value.length > 20 ? `${value.slice(0, 20)}…(${value.length})` : value)} → ${valid}`, () => {
      assert.equal(check(value), valid);
    });
  }
});

describe("buildPrometheusRule", () => {
  const config: RuleConfig = { ...DEFAULT_RULE_CONFIG, ruleLabels: { release: "prometheus", "example.com/team": "shop" } };
  const rule = buildPrometheusRule(monitor(), config);

  test("is a valid monitoring.coreos.com/v1 PrometheusRule named after the AppMonitor in its namespace", () => {
    assert.equal(rule.apiVersion, "monitoring.coreos.com/v1");
    assert.equal(rule.kind, "PrometheusRule");
    assert.equal(rule.metadata?.name, "mymonitor");
    assert.equal(rule.metadata?.namespace, "shop");
    new PrometheusRule(rule).validate();
  });

  test("object labels: the configured ones plus managed-by", () => {
    assert.deepEqual(rule.metadata?.labels, { release: "prometheus", "example.com/team": "shop", [MANAGED_BY_LABEL]: MANAGED_BY_VALUE });
  });

  test("controller ownerReference to the AppMonitor", () => {
    assert.deepEqual(rule.metadata?.ownerReferences, [
      { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "mymonitor", uid: "0b7f6c1e-3c4d-4d7e-9a53-1c2b3d4e5f60", controller: true, blockOwnerDeletion: true },
    ]);
  });

  test("records the AppMonitor generation", () => {
    assert.deepEqual(rule.metadata?.annotations, { [GENERATION_ANNOTATION]: "3" });
    assert.deepEqual(buildPrometheusRule(monitor({ metadata: { generation: undefined } }), config).metadata?.annotations, {});
  });

  test("annotates every rule of the group with the generation, where Prometheus's /api/v1/rules shows it; labels, and so the alerts' identity, stay as built", () => {
    const built = buildRuleGroup(monitor(), config).rules ?? [];
    const rules = rule.spec.groups?.[0]?.rules ?? [];
    assert.deepEqual(rules, built.map((r) => ({ ...r, annotations: { ...r.annotations, [RULE_GENERATION_ANNOTATION]: "3" } })));
    const unknown = buildPrometheusRule(monitor({ metadata: { generation: undefined } }), config).spec.groups?.[0]?.rules ?? [];
    assert.deepEqual(unknown, built, "no generation, no annotation");
    assert.match(RULE_GENERATION_ANNOTATION, /^[a-zA-Z_][a-zA-Z0-9_]*$/, "a name Prometheus 2 accepts for an annotation");
  });

  test("one group with the threshold alert, then the OOM-kill alert, then the heap-error alert: name, labels, annotations", () => {
    const groups = rule.spec.groups ?? [];
    assert.equal(groups.length, 1);
    assert.equal(groups[0]?.name, "appmonitor/shop/mymonitor");
    const rules = groups[0]?.rules ?? [];
    assert.deepEqual(
      rules.map((r) => r.alert),
      [ALERT_NAME, OOM_ALERT_NAME, HEAP_ERROR_ALERT_NAME],
    );
    const oom = buildOOMAlertingRule(monitor(), config);
    assert.deepEqual(rules[1], { ...oom, annotations: { ...oom.annotations, [RULE_GENERATION_ANNOTATION]: "3" } });
    const alert = rules[0];
    assert.equal(alert?.alert, ALERT_NAME);
    assert.equal(alert?.for, "60s");
    assert.deepEqual(alert?.labels, { appmonitor: "mymonitor", severity: "warning" });
    assert.equal(alert?.annotations?.value, "{{ $value }}");
    assert.match(alert?.annotations?.summary ?? "", /\{\{ \$value \| printf "%\.1f" \}\}% of its memory limit \(AppMonitor mymonitor, threshold 75%\)/);
    assert.equal(alert?.expr, alertExpression(monitor(), "cadvisor"));
  });

  test("severity comes from the config", () => {
    assert.equal(buildAlertingRule(monitor(), { ...DEFAULT_RULE_CONFIG, severity: "critical" }).labels?.severity, "critical");
  });

  test("without a uid there is no ownerReference to make", () => {
    assert.throws(() => buildPrometheusRule(monitor({ metadata: { uid: undefined } }), config), (e: unknown) => e instanceof RuleInputError && e.field === "metadata.uid");
    assert.throws(() => buildPrometheusRule(monitor({ metadata: { uid: "" } }), config), RuleInputError);
  });

  test("the ownerReference and labels are independent of the metric source", () => {
    const ksm = buildPrometheusRule(monitor(), { ...config, metricSource: "kube-state-metrics" });
    assert.deepEqual(ksm.metadata, rule.metadata);
    new PrometheusRule(ksm).validate();
  });
});

describe("for duration", () => {
  const valid: [number, string][] = [
    [0, "0s"],
    [60, "60s"],
    [90, "90s"],
    [86_400, "86400s"],
    [MAX_FOR_SECONDS, `${MAX_FOR_SECONDS}s`],
  ];
  for (const [seconds, expected] of valid) {
    test(`forSeconds ${seconds} → ${expected}`, () => {
      const alert = buildAlertingRule(monitor({ spec: { forSeconds: seconds } }), DEFAULT_RULE_CONFIG);
      assert.equal(alert.for, expected);
      new PrometheusRule(buildPrometheusRule(monitor({ spec: { forSeconds: seconds } }), DEFAULT_RULE_CONFIG)).validate();
    });
  }
  for (const seconds of [-1, 1.5, NaN, Infinity, MAX_FOR_SECONDS + 1]) {
    test(`forSeconds ${seconds} refused`, () => {
      assert.throws(
        () => buildAlertingRule(ruleInputOf({ spec: { forSeconds: seconds } }), DEFAULT_RULE_CONFIG),
        (e: unknown) => fieldsOf(e).includes("spec.forSeconds"),
      );
    });
  }
});

describe("alertExpression, both sources", () => {
  const common = [
    'max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="shop", container!="", container!="POD"})',
    "/ on (namespace, pod, container)",
    ">= 75",
  ];
  const sources = [
    {
      source: "cadvisor" as const,
      // cAdvisor's limit, or kube-state-metrics' where kube-prometheus-stack's relabeling dropped it.
      contains: [
        ...common,
        'max by (namespace, pod, container) (container_spec_memory_limit_bytes{namespace="shop", container!="", container!="POD"} > 0 or kube_pod_container_resource_limits{namespace="shop", resource="memory", container!="", container!="POD"} > 0)',
      ],
      absent: ["kube_pod_annotations", "kube_pod_labels", " and "],
    },
    {
      source: "kube-state-metrics" as const,
      contains: [
        ...common,
        'max by (namespace, pod, container) (kube_pod_container_resource_limits{namespace="shop", resource="memory", container!="", container!="POD"} > 0)',
        "and on (namespace, pod)",
        'kube_pod_annotations{namespace="shop", annotation_app_monitor_kubedemo_com_monitor="true"}',
      ],
      absent: ["container_spec_memory_limit_bytes", "kube_pod_labels"],
    },
  ];
  for (const { source, contains, absent } of sources) {
    test(`${source}: metrics and filters`, () => {
      const expr = alertExpression(monitor(), source);
      for (const part of contains) assert.ok(expr.includes(part), `${source} expression lacks ${part}:\n${expr}`);
      for (const part of absent) assert.ok(!expr.includes(part), `${source} expression has ${part}:\n${expr}`);
      // Every series selector is confined to the AppMonitor's namespace.
      const selectors = expr.match(/[a-z_]+\{[^}]*\}/g) ?? [];
      assert.ok(selectors.length >= 2);
      for (const selector of selectors) assert.ok(selector.includes('namespace="shop"'), `${selector} is not limited to the namespace`);
    });
  }

  test("threshold is written as given", () => {
    assert.match(alertExpression(monitor({ spec: { memThresholdPercent: 87.5 } }), "cadvisor"), />= 87\.5$/);
    assert.match(alertExpression(monitor({ spec: { memThresholdPercent: 100 } }), "kube-state-metrics"), />= 100\n\)/);
  });

  const containerCases: [string, string[] | undefined, string][] = [
    ["absent: every container but the pause container and the Pod cgroup", undefined, 'container!="", container!="POD"'],
    ["one container", ["memhog"], 'container=~"memhog"'],
    ["several, in the given order", ["memhog", "sidecar-1"], 'container=~"memhog|sidecar-1"'],
    ["a name given twice appears once", ["a", "b", "a"], 'container=~"a|b"'],
  ];
  for (const [name, containers, matcher] of containerCases) {
    for (const source of ["cadvisor", "kube-state-metrics"] as const) {
      test(`${source}: spec.containers ${name} → ${matcher} on the working set and the limit`, () => {
        const expr = alertExpression(monitor({ spec: containers === undefined ? {} : { containers } }), source);
        const limitMetric = source === "cadvisor" ? "container_spec_memory_limit_bytes" : "kube_pod_container_resource_limits";
        for (const metric of ["container_memory_working_set_bytes", limitMetric]) {
          const selector = new RegExp(`${metric}\\{[^}]*\\}`).exec(expr)?.[0] ?? "";
          assert.ok(selector.endsWith(`, ${matcher}}`), `${metric}: ${selector}`);
        }
      });
    }
  }

  const selectors: [string, NonNullable<AppMonitorForRule["spec"]["selector"]>, string][] = [
    ["matchLabels", { matchLabels: { name: "memhog" } }, 'kube_pod_labels{namespace="shop", label_name="memhog"}'],
    ["key with prefix and dots", { matchLabels: { "app.kubernetes.io/name": "a.b" } }, 'kube_pod_labels{namespace="shop", label_app_kubernetes_io_name="a.b"}'],
    ["In (regex-quoted)", { matchExpressions: [{ key: "tier", operator: "In", values: ["a.b", "c"] }] }, 'kube_pod_labels{namespace="shop", label_tier=~"a\\\\.b|c"}'],
    ["NotIn", { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["x"] }] }, 'kube_pod_labels{namespace="shop", label_tier!~"x"}'],
    ["Exists", { matchExpressions: [{ key: "tier", operator: "Exists" }] }, 'kube_pod_labels{namespace="shop", label_tier!=""}'],
    ["DoesNotExist", { matchExpressions: [{ key: "tier", operator: "DoesNotExist", values: [] }] }, 'kube_pod_labels{namespace="shop", label_tier=""}'],
    ["empty selector selects every Pod", {}, 'kube_pod_labels{namespace="shop"}'],
    [
      "all together, ANDed",
      { matchLabels: { a: "1" }, matchExpressions: [{ key: "b", operator: "Exists" }] },
      'kube_pod_labels{namespace="shop", label_a="1", label_b!=""}',
    ],
  ];
  for (const [name, selector, expected] of selectors) {
    test(`kube-state-metrics selector: ${name}`, () => {
      const expr = alertExpression(monitor({ spec: { selector } }), "kube-state-metrics");
      assert.ok(expr.includes(`  kube_pod_annotations{namespace="shop", annotation_app_monitor_kubedemo_com_monitor="true"}\n  or\n  ${expected}\n)`), expr);
    });
  }

  test("cadvisor cannot select Pods: a selector leaves the expression unchanged", () => {
    assert.equal(alertExpression(monitor({ spec: { selector: { matchLabels: { name: "memhog" } } } }), "cadvisor"), alertExpression(monitor(), "cadvisor"));
  });
});

describe("the OOM-kill alert, both sources", () => {
  test("no for, the threshold alert's labels, a summary and no value annotation", () => {
    for (const config of [DEFAULT_RULE_CONFIG, KSM]) {
      const oom = buildOOMAlertingRule(monitor(), { ...config, severity: "critical" });
      assert.equal(oom.alert, "AppMonitorOOMKilled");
      assert.equal(oom.for, undefined, "a kill is acted on at once");
      assert.deepEqual(oom.labels, { appmonitor: "mymonitor", severity: "critical" });
      assert.deepEqual(Object.keys(oom.annotations ?? {}), ["summary"]);
      assert.match(oom.annotations?.summary ?? "", /was OOM-killed in the last 10 minutes \(AppMonitor mymonitor\)/);
      assert.equal(oom.expr, oomAlertExpression(monitor(), config.metricSource));
    }
  });

  const sources = [
    {
      source: "cadvisor" as const,
      // cAdvisor's counter, or kube-state-metrics' restart with the last reason OOMKilled (the PID 1 kill cAdvisor misses), unnarrowed.
      contains: [
        'max by (namespace, pod, container) (increase(container_oom_events_total{namespace="shop", container!="", container!="POD"}[600s])) > 0',
        "\nor\n",
        'max by (namespace, pod, container) (kube_pod_container_status_last_terminated_reason{namespace="shop", reason="OOMKilled", container!="", container!="POD"}) == 1',
      ],
      absent: ["kube_pod_annotations", "kube_pod_labels"],
    },
    {
      source: "kube-state-metrics" as const,
      contains: [
        'max by (namespace, pod, container) (increase(kube_pod_container_status_restarts_total{namespace="shop", container!="", container!="POD"}[600s])) > 0',
        "  and on (namespace, pod, container)",
        'max by (namespace, pod, container) (kube_pod_container_status_last_terminated_reason{namespace="shop", reason="OOMKilled", container!="", container!="POD"}) == 1',
        "and on (namespace, pod)",
        'kube_pod_annotations{namespace="shop", annotation_app_monitor_kubedemo_com_monitor="true"}',
      ],
      absent: ["container_oom_events_total", "kube_pod_labels"],
    },
  ];
  for (const { source, contains, absent } of sources) {
    test(`${source}: metrics and filters, every selector in the namespace`, () => {
      const expr = oomAlertExpression(monitor(), source);
      for (const part of contains) assert.ok(expr.includes(part), `${source} expression lacks ${part}:\n${expr}`);
      for (const part of absent) assert.ok(!expr.includes(part), `${source} expression has ${part}:\n${expr}`);
      for (const selector of expr.match(/[a-z_]+\{[^}]*\}/g) ?? []) assert.ok(selector.includes('namespace="shop"'), `${selector} is not limited to the namespace`);
    });

    test(`${source}: spec.containers narrows every container series as the threshold rule does`, () => {
      const expr = oomAlertExpression(monitor({ spec: { containers: ["memhog", "side"] } }), source);
      const selectors = (expr.match(/[a-z_]+\{[^}]*\}/g) ?? []).filter((sel) => sel.startsWith("container_") || sel.startsWith("kube_pod_container_"));
      assert.ok(selectors.length >= 1, expr);
      for (const selector of selectors) assert.ok(selector.endsWith(', container=~"memhog|side"}'), selector);
    });
  }

  test("kube-state-metrics: spec.selector's Pods join as in the threshold rule", () => {
    const selector = { matchLabels: { name: "memhog" } };
    assert.ok(oomAlertExpression(monitor({ spec: { selector } }), "kube-state-metrics").endsWith('  or\n  kube_pod_labels{namespace="shop", label_name="memhog"}\n)'));
  });

  test("an invalid selector is refused", () => {
    const bad = { spec: { selector: { matchLabels: { app: '"} or vector(1) #' } } } };
    assert.throws(() => oomAlertExpression(monitor(bad), "cadvisor"), (e: unknown) => e instanceof RuleInputError && e.field === 'spec.selector.matchLabels["app"]');
  });
});

describe("the heap-error alert, both sources", () => {
  test("a restart within the OOM window whose last termination was Error, from kube-state-metrics; no exit code", () => {
    const expr = heapErrorAlertExpression(monitor(), "cadvisor");
    assert.equal(
      expr,
      [
        'max by (namespace, pod, container) (increase(kube_pod_container_status_restarts_total{namespace="shop", container!="", container!="POD"}[600s])) > 0',
        "  and on (namespace, pod, container)",
        'max by (namespace, pod, container) (kube_pod_container_status_last_terminated_reason{namespace="shop", reason="Error", container!="", container!="POD"}) == 1',
      ].join("\n"),
    );
    assert.ok(!expr.includes("exitcode"), "an exit code proves nothing: memory-scaler reads the message");
  });

  test("kube-state-metrics narrows it to the covered Pods, as the OOM-kill alert", () => {
    const expr = heapErrorAlertExpression(monitor(), "kube-state-metrics");
    assert.ok(expr.includes('reason="Error"') && expr.includes("kube_pod_annotations"), expr);
  });

  test("no for, the OOM-kill alert's labels, a summary", () => {
    const rule = buildHeapErrorAlertingRule(monitor(), DEFAULT_RULE_CONFIG);
    assert.equal(rule.alert, HEAP_ERROR_ALERT_NAME);
    assert.equal(rule.for, undefined);
    assert.deepEqual(rule.labels, { appmonitor: "mymonitor", severity: "warning" });
    assert.match(rule.annotations?.summary ?? "", /restarted after an error exit in the last 10 minutes, possibly its runtime's heap error \(AppMonitor mymonitor\)/);
  });
});

describe("the trend alert, both sources", () => {
  const trend = { horizonSeconds: 1800, windowSeconds: 300, floorPercent: 40 };
  const withTrend = (spec: Partial<AppMonitorForRule["spec"]> = {}) => monitor({ spec: { trend, ...spec } });

  test("only with spec.trend, after the threshold and OOM-kill alerts", () => {
    assert.deepEqual((buildRuleGroup(monitor(), DEFAULT_RULE_CONFIG).rules ?? []).map((r) => r.alert), [ALERT_NAME, OOM_ALERT_NAME, HEAP_ERROR_ALERT_NAME]);
    const rules = buildRuleGroup(withTrend(), DEFAULT_RULE_CONFIG).rules ?? [];
    assert.deepEqual(rules.map((r) => r.alert), [ALERT_NAME, OOM_ALERT_NAME, TREND_ALERT_NAME, HEAP_ERROR_ALERT_NAME]);
    assert.deepEqual(rules[2], buildTrendAlertingRule(withTrend(), trend, DEFAULT_RULE_CONFIG));
  });

  test("GENERATED_ALERT_NAMES is every alert a group holds, in its order, over both sources and every optional trigger", () => {
    const seen = new Set<string>();
    for (const config of [DEFAULT_RULE_CONFIG, KSM]) {
      const heap = { containerPolicies: [{ containerName: "*", runtime: "JVM" as const, heapMetrics: "Watch" as const }] };
      for (const spec of [{}, { trend }, { trend, selector: { matchLabels: { app: "memhog" } } }, heap]) {
        const alerts = (buildRuleGroup(monitor({ spec }), config).rules ?? []).map((r) => String(r.alert));
        assert.deepEqual(alerts, GENERATED_ALERT_NAMES.filter((name) => alerts.includes(name)), "in the list's order");
        for (const name of alerts) seen.add(name);
      }
    }
    assert.deepEqual([...seen].sort(), [...GENERATED_ALERT_NAMES].sort());
  });

  test("spec.trend with its horizon alone: the schema's window (600 s) and floor (50 %)", () => {
    const rule = (buildRuleGroup(ruleInputOf({ spec: { trend: { horizonSeconds: 900 } } }), DEFAULT_RULE_CONFIG).rules ?? [])[2];
    assert.equal(rule?.alert, TREND_ALERT_NAME);
    const expr = String(rule?.expr);
    assert.ok(expr.includes("[600s], 900))") && expr.includes("\n    >= 50\n"), expr);
  });

  test("the threshold alert's for and labels, a summary naming the window and horizon, the percent in use as its value", () => {
    for (const config of [DEFAULT_RULE_CONFIG, KSM]) {
      const rule = buildTrendAlertingRule(withTrend({ forSeconds: 90 }), trend, { ...config, severity: "critical" });
      assert.equal(rule.alert, "AppMonitorMemoryTrend");
      assert.equal(rule.for, "90s");
      assert.deepEqual(rule.labels, { appmonitor: "mymonitor", severity: "critical" });
      assert.equal(rule.annotations?.value, "{{ $value }}");
      assert.match(rule.annotations?.summary ?? "", /% of its memory limit and, at the rate of the last 300s, reaches it within 1800s \(AppMonitor mymonitor, trend\)\.$/);
      assert.equal(rule.expr, trendAlertExpression(withTrend(), trend, config.metricSource));
    }
  });

  for (const source of ["cadvisor", "kube-state-metrics"] as const) {
    test(`${source}: the percent in use, and the line, the floor and the release guard over the window`, () => {
      const expr = trendAlertExpression(withTrend(), trend, source);
      // Line by line, without the indentation the kube-state-metrics narrowing adds.
      const lines = expr.split("\n").map((line) => line.trim()).join("\n");
      const ws = 'container_memory_working_set_bytes{namespace="shop", container!="", container!="POD"}';
      const parts = [
        `(\n100 * max by (namespace, pod, container) (${ws})\n/ on (namespace, pod, container)\n`,
        `\nmax by (namespace, pod, container) (predict_linear(${ws}[300s], 1800))\n>= on (namespace, pod, container)\n`,
        `\n100 * min by (namespace, pod, container) (min_over_time(${ws}[300s]))\n`,
        "\n>= 40\n",
        `\n100 * (max by (namespace, pod, container) (max_over_time(${ws}[300s])) - on (namespace, pod, container) max by (namespace, pod, container) (${ws}))\n`,
        `\n<= ${TREND_DROP_PERCENT}\n`,
      ];
      for (const part of parts) assert.ok(lines.includes(part), `${source} expression lacks ${part}:\n${expr}`);
      assert.equal(lines.split("\nand on (namespace, pod, container)\n").length, 4, expr);
      // The same limit as the threshold alert's, on each side that needs one.
      const limit = alertExpression(monitor(), source).split("\n").map((line) => line.trim()).find((line) => line.startsWith("max by (namespace, pod, container) (") && line.includes("limit"));
      assert.ok(limit !== undefined);
      assert.equal(expr.split(limit).length - 1, 4, expr);
      for (const selector of expr.match(/[a-z_]+\{[^}]*\}/g) ?? []) assert.ok(selector.includes('namespace="shop"'), `${selector} is not limited to the namespace`);
      assert.equal(expr.includes("kube_pod_annotations"), source === "kube-state-metrics");
    });

    test(`${source}: spec.containers narrows every container series`, () => {
      const expr = trendAlertExpression(withTrend({ containers: ["memhog"] }), trend, source);
      const selectors = (expr.match(/[a-z_]+\{[^}]*\}/g) ?? []).filter((sel) => sel.startsWith("container_") || sel.startsWith("kube_pod_container_"));
      assert.ok(selectors.length >= 8, expr);
      for (const selector of selectors) assert.ok(selector.endsWith(', container=~"memhog"}'), selector);
    });
  }

  test("kube-state-metrics: spec.selector's Pods join as in the threshold rule", () => {
    const selector = { matchLabels: { name: "memhog" } };
    assert.ok(trendAlertExpression(withTrend({ selector }), trend, "kube-state-metrics").endsWith('  or\n  kube_pod_labels{namespace="shop", label_name="memhog"}\n)'));
  });
});

describe("hostile or invalid input is refused before it reaches PromQL", () => {
  const cases: [string, Overrides, string][] = [
    ["name closing the string", { metadata: { name: 'x"} or vector(1) #' } }, "metadata.name"],
    ["name with template syntax", { metadata: { name: "{{ .Foo }}" } }, "metadata.name"],
    ["name upper case", { metadata: { name: "MyMonitor" } }, "metadata.name"],
    ["name too long", { metadata: { name: "a".repeat(254) } }, "metadata.name"],
    ["name missing", { metadata: { name: undefined } }, "metadata.name"],
    ["namespace with a quote", { metadata: { namespace: 'shop"' } }, "metadata.namespace"],
    ["namespace with a backslash", { metadata: { namespace: "shop\\" } }, "metadata.namespace"],
    ["namespace with a dot (subdomain, not label)", { metadata: { namespace: "a.b" } }, "metadata.namespace"],
    ["namespace missing", { metadata: { namespace: undefined } }, "metadata.namespace"],
    ["threshold 0", { spec: { memThresholdPercent: 0 } }, "spec.memThresholdPercent"],
    ["threshold above 100", { spec: { memThresholdPercent: 100.5 } }, "spec.memThresholdPercent"],
    ["threshold NaN", { spec: { memThresholdPercent: NaN } }, "spec.memThresholdPercent"],
    ["threshold a string", { spec: { memThresholdPercent: "75) or vector(1" as unknown as number } }, "spec.memThresholdPercent"],
    ["selector value closing the string", { spec: { selector: { matchLabels: { app: '"} or vector(1) #' } } } }, 'spec.selector.matchLabels["app"]'],
    ["selector key with a brace", { spec: { selector: { matchLabels: { "a}": "b" } } } }, 'spec.selector.matchLabels["a}"]'],
    [
      "In value with a regex and a quote",
      { spec: { selector: { matchExpressions: [{ key: "a", operator: "In", values: ["ok", '.*"'] }] } } },
      "spec.selector.matchExpressions[0].values[1]",
    ],
    ["expression key invalid", { spec: { selector: { matchExpressions: [{ key: "a b", operator: "Exists" }] } } }, "spec.selector.matchExpressions[0].key"],
    ["container name closing the string", { spec: { containers: ["app", '"} or vector(1) #'] } }, "spec.containers[1]"],
    ["container name with a regex", { spec: { containers: [".*"] } }, "spec.containers[0]"],
    ["container name upper case", { spec: { containers: ["POD"] } }, "spec.containers[0]"],
    ["container name too long", { spec: { containers: ["a".repeat(64)] } }, "spec.containers[0]"],
    ["containers empty", { spec: { containers: [] } }, "spec.containers"],
    ["unknown operator", { spec: { selector: { matchExpressions: [{ key: "a", operator: "Gt" as "In", values: ["1"] }] } } }, "spec.selector.matchExpressions[0].operator"],
    ["In without values", { spec: { selector: { matchExpressions: [{ key: "a", operator: "In", values: [] }] } } }, "spec.selector.matchExpressions[0]"],
    ["Exists with values", { spec: { selector: { matchExpressions: [{ key: "a", operator: "Exists", values: ["x"] }] } } }, "spec.selector.matchExpressions[0]"],
  ];
  for (const [name, overrides, field] of cases) {
    for (const config of [DEFAULT_RULE_CONFIG, KSM]) {
      test(`${name} (${config.metricSource})`, () => {
        assert.throws(
          () => buildRuleGroup(ruleInputOf(overrides), config),
          (e: unknown) => fieldsOf(e).includes(field),
        );
      });
    }
  }
});

describe("validateRuleConfig", () => {
  const invalid: [string, Partial<RuleConfig>, string][] = [
    ["unknown source", { metricSource: "prometheus" as "cadvisor" }, "metricSource"],
    ["severity with template syntax", { severity: "{{ $labels.pod }}" }, "severity"],
    ["empty severity", { severity: "" }, "severity"],
    ["severity with a space", { severity: "very high" }, "severity"],
    ["severity info, which kube-prometheus-stack's Alertmanager inhibits", { severity: "info" }, "severity"],
    ["rule label key invalid", { ruleLabels: { "bad key": "x" } }, 'ruleLabels["bad key"]'],
    ["rule label value invalid", { ruleLabels: { release: "a b" } }, 'ruleLabels["release"]'],
    ["rule label overriding managed-by", { ruleLabels: { [MANAGED_BY_LABEL]: "someone" } }, `ruleLabels[${JSON.stringify(MANAGED_BY_LABEL)}]`],
  ];
  for (const [name, overrides, field] of invalid) {
    test(name, () => {
      const config = { ...DEFAULT_RULE_CONFIG, ...overrides };
      assert.throws(() => validateRuleConfig(config), (e: unknown) => e instanceof RuleInputError && e.field === field);
    });
  }

  test("defaults are valid: cadvisor, severity warning, no labels", () => {
    validateRuleConfig(DEFAULT_RULE_CONFIG);
    assert.deepEqual({ ...DEFAULT_RULE_CONFIG }, { metricSource: "cadvisor", ruleLabels: {}, severity: "warning" });
  });
});

describe("buildRulesFile", () => {
  test("one group per AppMonitor, in order, as groups: YAML", () => {
    const a = monitor({ metadata: { name: "a", namespace: "one" } });
    const b = monitor({ metadata: { name: "b", namespace: "two", uid: undefined }, spec: { memThresholdPercent: 90, forSeconds: 0 } });
    const text = buildRulesFile([a, b], KSM);
    const parsed = parse(text) as { groups: { name: string; rules: { alert: string; expr: string; for: string; labels: Record<string, string> }[] }[] };
    assert.deepEqual(
      parsed.groups.map((g) => g.name),
      ["appmonitor/one/a", "appmonitor/two/b"],
    );
    assert.deepEqual(parsed.groups[1]?.rules[0], buildAlertingRule(b, KSM));
    assert.equal(parsed.groups[1]?.rules[0]?.for, "0s");
    assert.ok(text.endsWith("\n"));
  });

  test("the same AppMonitor twice is refused (group names must be unique)", () => {
    assert.throws(() => buildRulesFile([monitor(), monitor()], DEFAULT_RULE_CONFIG), (e: unknown) => e instanceof RuleInputError && /shop\/mymonitor appears twice/.test(e.message));
  });

  test("same name in two namespaces is two groups", () => {
    const text = buildRulesFile([monitor(), monitor({ metadata: { namespace: "other" } })], DEFAULT_RULE_CONFIG);
    assert.equal((parse(text) as { groups: unknown[] }).groups.length, 2);
  });
});

describe("spec.targetRef and selectorMode Narrow narrow the rule", () => {
  const targeted = monitor({ spec: { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web.v2" } } });
  test("every series of every alert, either source, is limited to the Pods named after the workload", () => {
    for (const source of ["cadvisor", "kube-state-metrics"] as const) {
      for (const expr of [alertExpression(targeted, source), oomAlertExpression(targeted, source)]) {
        const selectors = expr.match(/\{[^}]*\}/g) ?? [];
        assert.ok(selectors.length > 0);
        for (const selector of selectors) assert.match(selector, /namespace="shop", pod=~"web\\\\.v2-\.\+"/, `${source}: ${selector}`);
      }
    }
  });
  test("with kube-state-metrics the targeted Pods are covered without the annotation", () => {
    const expr = alertExpression(targeted, "kube-state-metrics");
    assert.doesNotMatch(expr, /kube_pod_annotations/);
    assert.match(expr, /and on \(namespace, pod\)\n\(\n {2}kube_pod_labels\{namespace="shop", pod=~"web\\\\.v2-\.\+"\}\n\)$/);
  });
  test("a long name keeps the prefix a generated Pod name keeps (58 characters)", () => {
    const name = "a".repeat(70);
    const expr = alertExpression(monitor({ spec: { targetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name } } }), "cadvisor");
    assert.match(expr, new RegExp(`pod=~"${"a".repeat(58)}\\.\\+"`));
  });
  test("Narrow: the annotated Pods the selector matches, joined with and", () => {
    const expr = alertExpression(monitor({ spec: { selector: { matchLabels: { app: "web" } }, selectorMode: "Narrow" } }), "kube-state-metrics");
    assert.match(expr, /kube_pod_annotations\{namespace="shop", annotation_app_monitor_kubedemo_com_monitor="true"\} and on \(namespace, pod\) kube_pod_labels\{namespace="shop", label_app="web"\}/);
    assert.doesNotMatch(expr, /\n {2}or\n/);
  });
  test("a Knative Service: the matcher takes its Revision Pods (<service>-<revision number>-deployment-<hash>-<suffix>), not another Service's", () => {
    const expr = alertExpression(monitor({ spec: { targetRef: { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "web" } } }), "cadvisor");
    const matcher = /pod=~"([^"]+)"/.exec(expr)?.[1] ?? "";
    const anchored = new RegExp(`^(?:${matcher})$`);
    assert.ok(anchored.test("web-00001-deployment-7b9c8d6f5-x2zqk"), matcher);
    assert.equal(anchored.test("api-00001-deployment-7b9c8d6f5-x2zqk"), false);
  });
  test("without a targetRef the series are limited to the namespace only, as before", () => {
    assert.doesNotMatch(alertExpression(monitor(), "cadvisor"), /pod=~/);
  });
});

describe("percentOfLimitExpression", () => {
  for (const source of ["cadvisor", "kube-state-metrics"] as const) {
    test(`${source}: the threshold alert's expression without its threshold`, () => {
      const m = monitor();
      const percent = percentOfLimitExpression(m, source);
      assert.doesNotMatch(percent, />=/);
      const alert = alertExpression(m, source);
      if (source === "cadvisor") assert.equal(alert, `${percent}\n  >= 75`);
      else assert.equal(alert.replace("\n    >= 75", ""), percent);
    });
  }
});

describe("the heap-threshold alert", () => {
  const policies = {
    containers: ["api", "worker", "sidecar", "cache"],
    containerPolicies: [
      { containerName: "api", runtime: "JVM" as const, heapMetrics: "Watch" as const, heapThresholdPercent: 85 },
      { containerName: "sidecar", mode: "Off" as const },
      { containerName: "gone", runtime: "Go" as const, heapMetrics: "Watch" as const },
      { containerName: "*", runtime: ".NET" as const, heapMetrics: "Watch" as const },
    ],
  };

  test("one watch per entry with heapMetrics: Watch: a named container the monitor scales, and * for the others no entry names; the threshold defaults to memThresholdPercent", () => {
    const watches = heapWatches(monitor({ spec: policies }));
    assert.deepEqual(watches.map((w) => [w.containerName, w.runtime, w.thresholdPercent, w.containers]), [
      ["api", "JVM", 85, 'container=~"api"'],
      ["*", ".NET", 75, 'container=~"api|worker|sidecar|cache", container!~"api|sidecar|gone"'],
    ]);
  });

  test("no rule without a watch; with one, after the heap-error alert, held for forSeconds, one block per watch at its threshold", () => {
    assert.equal(buildHeapThresholdAlertingRule(monitor(), DEFAULT_RULE_CONFIG), undefined);
    assert.ok(!(buildRuleGroup(monitor(), DEFAULT_RULE_CONFIG).rules ?? []).some((r) => r.alert === HEAP_THRESHOLD_ALERT_NAME));
    const rules = buildRuleGroup(monitor({ spec: policies }), DEFAULT_RULE_CONFIG).rules ?? [];
    const rule = rules.at(-1);
    assert.equal(rule?.alert, HEAP_THRESHOLD_ALERT_NAME);
    assert.equal(rules.at(-2)?.alert, HEAP_ERROR_ALERT_NAME);
    assert.equal(rule?.for, "60s");
    const expr = String(rule?.expr);
    assert.match(expr, /jvm_memory_used_bytes\{namespace="shop", container=~"api", area="heap"\}/);
    assert.match(expr, /\) >= 85\n/);
    assert.match(expr, /dotnet_gc_last_collection_heap_size_bytes\{namespace="shop", container=~"api\|worker\|sidecar\|cache", container!~"api\|sidecar\|gone"\}/);
    assert.match(expr, /\(0\.75 \* max by \(namespace, pod, container\) \(container_spec_memory_limit_bytes\{/);
    assert.match(expr, /\) >= 75\n\)$/);
    assert.doesNotMatch(expr, /go_/, "a named container outside spec.containers gets no watch");
  });

  test("with spec.targetRef and kube-state-metrics: every series within the workload's Pods, joined to the covered Pods; .NET's limit from kube-state-metrics", () => {
    const spec = { targetRef: { apiVersion: "apps/v1" as const, kind: "Deployment" as const, name: "web" }, containerPolicies: [{ containerName: "*", runtime: ".NET" as const, heapMetrics: "Watch" as const }] };
    const expr = String(buildHeapThresholdAlertingRule(monitor({ spec }), KSM)?.expr);
    assert.match(expr, /dotnet_gc_last_collection_heap_size_bytes\{namespace="shop", pod=~"web-\.\+"/);
    assert.doesNotMatch(expr, /container_spec_memory_limit_bytes/);
    assert.match(expr, /and on \(namespace, pod\)\n\(\n {2}kube_pod_labels\{namespace="shop", pod=~"web-\.\+"\}\n\)$/);
  });

  test("validateAppMonitorSpec: heapMetrics Watch needs a runtime; heapThresholdPercent needs Watch; the CRD's rules say the same", () => {
    const refused = (containerPolicies: AppMonitorSpec["containerPolicies"]) => {
      try {
        validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, containerPolicies });
      } catch (error) {
        assert.ok(error instanceof AppMonitorSpecError);
        return error.message;
      }
      return "accepted";
    };
    assert.match(refused([{ containerName: "api", heapMetrics: "Watch" }]), /containerPolicies\/0\/heapMetrics.*Watch needs runtime/);
    assert.match(refused([{ containerName: "api", runtime: "Go", heapThresholdPercent: 80 }]), /containerPolicies\/0\/heapThresholdPercent.*needs heapMetrics: Watch/);
    assert.match(refused([{ containerName: "api", runtime: "Go", heapMetrics: "Watch", heapThresholdPercent: 0 }]), /heapThresholdPercent/);
    assert.equal(refused([{ containerName: "api", runtime: ".NET", heapMetrics: "Watch", heapThresholdPercent: 80 }]), "accepted");
  });
});
