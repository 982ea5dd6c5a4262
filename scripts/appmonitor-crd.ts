/**
 * Builds the AppMonitor CustomResourceDefinition (apiextensions.k8s.io/v1) from
 * `schemas/appmonitor.schema.json`, so the API server validates exactly what the functions do.
 * `node scripts/appmonitor-crd.ts` rewrites `knative/crd/appmonitor.yaml`; a unit test checks
 * the committed file is what this produces.
 *
 * The JSON Schema's `exclusiveMinimum: N` becomes OpenAPI v3.0's `minimum: N, exclusiveMinimum: true`
 * (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema),
 * and `uniqueItems: true` becomes `x-kubernetes-list-type: set`; `x-kubernetes-validations` (CEL
 * rules, https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules)
 * pass through unchanged.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { ALERT_TRIGGERS } from "../functions/lib/alert-event.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the generated CRD is committed. */
export const crdPath = path.join(root, "knative", "crd", "appmonitor.yaml");

type Schema = Record<string, unknown>;

/** JSON Schema (draft-07) → a CRD's OpenAPI v3.0 structural schema. */
export function toOpenApiV3(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema" || key === "$id" || key === "title") continue;
    if (key === "exclusiveMinimum" && typeof value === "number") {
      out.minimum = value;
      out.exclusiveMinimum = true;
    } else if (key === "uniqueItems") {
      // The API server refuses uniqueItems (quadratic); a set list type refuses duplicates instead.
      if (value === true) out["x-kubernetes-list-type"] = "set";
    } else if (key === "properties" && value && typeof value === "object") {
      out.properties = Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, toOpenApiV3(v as Schema)]));
    } else if ((key === "items" || key === "additionalProperties") && value && typeof value === "object") {
      out[key] = toOpenApiV3(value as Schema);
    } else {
      out[key] = value;
    }
  }
  return out;
}

const memory = { type: "object", properties: { request: { type: "string" }, limit: { type: "string" } } };

/** The status schema: observedGeneration, conditions (metav1.Condition), the scale record. */
const statusSchema: Schema = {
  type: "object",
  properties: {
    observedGeneration: { type: "integer", format: "int64" },
    conditions: {
      type: "array",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
      items: {
        type: "object",
        required: ["type", "status"],
        properties: {
          type: { type: "string" },
          status: { type: "string", enum: ["True", "False", "Unknown"] },
          observedGeneration: { type: "integer", format: "int64" },
          lastTransitionTime: { type: "string", format: "date-time" },
          reason: { type: "string" },
          message: { type: "string" },
        },
      },
    },
    lastScaleTime: { type: "string", format: "date-time" },
    rollouts: {
      type: "array",
      description: "rollouts started by a scale and not yet ended (RolledOut or RolloutFailed, in the RolledOut condition)",
      maxItems: 50,
      items: {
        type: "object",
        properties: {
          workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
          generation: { type: "integer", format: "int64", description: "metadata.generation the scale gave the workload" },
          startedAt: { type: "string", format: "date-time" },
          event: { type: "string", description: "id of the CloudEvent that caused the scale" },
          waitingPods: { type: "array", description: "updateStrategy OnDelete: Pods still on the old revision", items: { type: "string" } },
          inPlace: {
            type: "object",
            description: "spec.updateMode InPlace or InPlaceOrRollout: the workload's Pods resized in place, followed until the kubelet applied each resize",
            properties: {
              pods: {
                type: "array",
                items: { type: "object", properties: { name: { type: "string" }, generation: { type: "integer", format: "int64", description: "metadata.generation the resize gave the Pod" } } },
              },
            },
          },
        },
      },
    },
    pendingScales: {
      type: "array",
      description:
        "scales memory-scaler is writing: each is listed before its workload is patched and taken off by the status write that records it; one still listed (that write failed) is recorded by the next follow-up tick from the workload's last-scale record",
      maxItems: 50,
      items: {
        type: "object",
        properties: {
          workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
          time: { type: "string", format: "date-time", description: "the scale's time, which its patch writes in the last-scale annotation" },
          event: { type: "string", description: "id of the CloudEvent that caused the scale" },
        },
      },
    },
    capped: {
      type: "array",
      description: "workloads whose memory limit is at spec.maxMemory, so an alert of theirs scales nothing (the AtMaxMemory condition); a workload leaves when it is scaled again",
      maxItems: 50,
      items: {
        type: "object",
        properties: {
          workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
          containers: { type: "array", items: { type: "string" } },
          maxMemory: { type: "string", description: "the cap the workload was found at: a spec.containerPolicies maxMemory, spec.maxMemory, the install's DEFAULT_MAX_MEMORY, or the install's ceiling MAX_MEMORY when lower" },
          source: { type: "string", enum: ["containerPolicy", "spec", "default", "ceiling"], description: "where that cap comes from" },
          since: { type: "string", format: "date-time" },
        },
      },
    },
    probableLeaks: {
      type: "array",
      description: "workloads the leak guard stopped scaling (spec.leakGuard; the ProbableLeak condition), and those it released early (cleared: the spec or the Pod template changed), each kept until its window has passed",
      maxItems: 50,
      items: {
        type: "object",
        properties: {
          workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
          since: { type: "string", format: "date-time", description: "when the guard stopped scaling it" },
          until: { type: "string", format: "date-time", description: "when the window ends and scaling resumes" },
          generation: { type: "integer", format: "int64", description: "the AppMonitor's metadata.generation then" },
          template: { type: "string", description: "a hash of the Pod template then" },
          scales: { type: "array", items: { type: "string" }, description: "the scales in the window: time, container, from → to" },
          cleared: { type: "string", description: "why the guard released it before the window's end" },
        },
      },
    },
    lastOutcome: {
      type: "object",
      description:
        "what the AppMonitor's last alert came to, written by memory-scaler: scaled, a dry run (or what would have refused it), or a skip and why; the same skip of a workload is recorded once per spec.cooldownSeconds",
      properties: {
        time: { type: "string", format: "date-time" },
        pod: { type: "string", description: "<namespace>/<pod> of the alerting Pod" },
        workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
        outcome: { type: "string", enum: ["scaled", "dry-run", "skipped"] },
        reason: { type: "string", description: "Scaled, Resized, DryRun, Cooldown, BelowThreshold, NotCovered, RolloutExceedsQuota, …" },
        message: { type: "string", maxLength: 1024 },
      },
    },
    scaleCount: { type: "integer", format: "int64", minimum: 0 },
    recentScales: {
      type: "array",
      maxItems: 20,
      items: {
        type: "object",
        properties: {
          time: { type: "string", format: "date-time" },
          workload: { type: "object", properties: { kind: { type: "string" }, name: { type: "string" } } },
          event: { type: "string", description: "id of the CloudEvent that caused the scale" },
          container: { type: "string" },
          from: memory,
          to: memory,
          dryRun: { type: "boolean" },
          held: {
            type: "string",
            enum: ["GitOpsManaged", "Reverted"],
            description: "not applied: the value a scale would set, held because a GitOps tool manages the workload (spec.gitOpsManaged Skip) or its revert budget is used; set it in the manifest",
          },
          reverted: { type: "boolean", description: "this scale applied again memory something had lowered after an earlier scale" },
          trigger: { type: "string", enum: ALERT_TRIGGERS.filter((t) => t !== "threshold"), description: "the alert that caused it when not the threshold alert: an OOM kill, the working set's trend (spec.trend), the runtime's heap error at a crash, or its heap's own threshold (containerPolicies heapMetrics)" },
          direction: { type: "string", enum: ["up", "down"], description: "down: a down-step of spec.scaleDown lowered the memory; absent: a raise" },
          floored: { type: "boolean", description: "this down-step reached the workload's floor (its memory before the first scale, or a containerPolicies minMemory): no further down-step" },
        },
      },
    },
  },
};

/** The CRD object. */
export function appMonitorCrd(): Schema {
  const spec = JSON.parse(readFileSync(path.join(root, "schemas", "appmonitor.schema.json"), "utf8")) as Schema;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "appmonitors.kubedemo.com" },
    spec: {
      group: "kubedemo.com",
      scope: "Namespaced",
      names: { kind: "AppMonitor", listKind: "AppMonitorList", plural: "appmonitors", singular: "appmonitor", shortNames: ["amon"] },
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: "True once the rule is in effect over series that exist (RuleReady and MetricsReady, summarised by rule-sync)" },
          { name: "Last Outcome", type: "string", jsonPath: ".status.lastOutcome.reason", description: "what the last alert came to (status.lastOutcome: Scaled, DryRun, Cooldown, NotCovered, …)" },
          { name: "Threshold", type: "number", jsonPath: ".spec.memThresholdPercent", description: "percent of the memory limit" },
          { name: "Multiplier", type: "number", jsonPath: ".spec.memMultiplier" },
          { name: "Mode", type: "string", jsonPath: ".spec.mode" },
          { name: "Scales", type: "integer", jsonPath: ".status.scaleCount" },
          { name: "Last Scale", type: "date", jsonPath: ".status.lastScaleTime" },
          { name: "Rollout", type: "string", jsonPath: '.status.conditions[?(@.type=="RolledOut")].reason', description: "how the last rollout a scale started stands" },
          { name: "At Max", type: "string", jsonPath: '.status.conditions[?(@.type=="AtMaxMemory")].status', description: "True while a workload is at spec.maxMemory (status.capped)" },
          { name: "Rule", type: "string", jsonPath: '.status.conditions[?(@.type=="RuleReady")].reason', description: "whether Prometheus loaded the AppMonitor's rule (RuleReady's reason: RuleLoaded, RuleNotLoaded, …)" },
          { name: "Metrics", type: "string", jsonPath: '.status.conditions[?(@.type=="MetricsReady")].reason', description: "whether the series the rule reads exist (MetricsReady's reason: SeriesFound, LimitNotScraped, …)" },
          { name: "Leak", type: "string", jsonPath: '.status.conditions[?(@.type=="ProbableLeak")].status', description: "True while the leak guard holds a workload (status.probableLeaks)" },
          { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
        ],
        schema: {
          openAPIV3Schema: {
            type: "object",
            description: "AppMonitor: raise the memory of the workloads whose Pods it covers when they near their memory limit.",
            required: ["spec"],
            properties: {
              apiVersion: { type: "string" },
              kind: { type: "string" },
              metadata: { type: "object" },
              spec: toOpenApiV3(spec),
              status: statusSchema,
            },
          },
        },
      }],
    },
  };
}

/** The CRD as the committed YAML text. */
export function appMonitorCrdYaml(): string {
  // YAML 1.1 quoting: kubectl reads YAML 1.1, where a bare Off (containerPolicies' mode) is false.
  return `# Generated by scripts/appmonitor-crd.ts from schemas/appmonitor.schema.json; do not edit.\n${stringify(appMonitorCrd(), { version: "1.1" })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(crdPath, appMonitorCrdYaml());
  console.log(`wrote ${path.relative(root, crdPath)}`);
}
