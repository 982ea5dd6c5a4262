/**
 * Validating an AppMonitor `spec`: `schemas/appmonitor.schema.json` (precompiled,
 * `schemas/validators/appmonitor-spec.js`, which also writes the schema's defaults) and the rules
 * the schema cannot state for ajv (label selector operators and values and the cross-field rules
 * the CRD states in CEL, `maxMemory` in the quantity parser's range). Every caller that acts on a spec goes through {@link validateAppMonitorSpec}
 * once; what it returns is the {@link AppMonitorSpecWithDefaults} the rest of the code trusts.
 */
import type { ErrorObject } from "ajv";
import validateSchema from "../../schemas/validators/appmonitor-spec.js";
import type { AppMonitorSpecWithDefaults, ContainerPolicy } from "./appmonitor.ts";
import { describeSchemaErrors, type SchemaValidator } from "./json-schema.ts";
import { checkLabelSelector, LabelSelectorError } from "./label-selector.ts";
import { compare, parseQuantity, type Quantity, QuantityError } from "./quantity.ts";

/** The schema, precompiled; a valid spec has its defaults written in. */
const validateSpecSchema = validateSchema as SchemaValidator<AppMonitorSpecWithDefaults>;

/** Thrown by {@link validateAppMonitorSpec}; `errors` lists every problem found. */
export class AppMonitorSpecError extends Error {
  /**
   * ajv errors, or (for a spec the schema accepts) `keyword: "labelSelector"` entries for selector
   * rules the schema cannot state and `keyword: "quantity"` for a `maxMemory` out of range.
   */
  readonly errors: ErrorObject[];

  /** @param errors every problem; the message lists each as `spec/<path> <message>`. */
  constructor(errors: ErrorObject[]) {
    const list = describeSchemaErrors(errors, "spec", Infinity).map((e) => `${e.path} ${e.message}`).join("; ");
    super(`invalid AppMonitor spec: ${list}`);
    this.name = "AppMonitorSpecError";
    this.errors = errors;
  }
}

/**
 * Validates an AppMonitor `spec` against `schemas/appmonitor.schema.json` and returns a copy with
 * the defaults applied (`forSeconds` 60, `cooldownSeconds` 300, `mode` "Scale", `updateMode`
 * "Rollout", `selectorMode` "Widen", `stuckRollout` "Report", `gitOpsManaged` "Skip", `heapFlags`
 * "Hold", `revertBudgetPerHour` 3: the CRD's, so the API server writes the same). The input is
 * not modified. The CRD's CEL rules are checked too: `targetRef` and `selector` exclusive, `targetRef`'s
 * `kind: Service` exactly with `apiVersion: serving.knative.dev/v1`,
 * `selectorMode` `Narrow` only with a `selector`, `scaleDown.marginPercent` below `memThresholdPercent`. Rules: DESIGN.md "The API" (AppMonitor table); selector operator/values rules from
 * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/label-selector/ ;
 * `maxMemory` must also parse as a quantity (see `parseQuantity`).
 * @param spec the `spec` field as parsed from JSON or YAML.
 * @throws {AppMonitorSpecError} with the full ajv error list when the spec is invalid.
 */
export function validateAppMonitorSpec(spec: unknown): AppMonitorSpecWithDefaults {
  const valid: unknown = structuredClone(spec);
  if (!validateSpecSchema(valid)) {
    throw new AppMonitorSpecError([...(validateSpecSchema.errors ?? [])]);
  }
  const problems: ErrorObject[] = [];
  if (valid.selector !== undefined) {
    try {
      checkLabelSelector(valid.selector);
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      problems.push({
        instancePath: `/selector/matchExpressions/${err.index}`,
        schemaPath: "#/properties/selector/properties/matchExpressions/items",
        keyword: "labelSelector",
        params: {},
        message: err.message,
      });
    }
  }
  // The CRD's x-kubernetes-validations (CEL) across fields, for a spec that reached us another way.
  if (valid.targetRef !== undefined && valid.selector !== undefined) {
    problems.push({ instancePath: "", schemaPath: "#/x-kubernetes-validations/0", keyword: "x-kubernetes-validations", params: {}, message: "targetRef and selector are exclusive: a targetRef covers exactly the workload it names" });
  }
  if (valid.targetRef !== undefined && (valid.targetRef.apiVersion === "serving.knative.dev/v1") !== (valid.targetRef.kind === "Service")) {
    problems.push({ instancePath: "/targetRef", schemaPath: "#/properties/targetRef/x-kubernetes-validations/0", keyword: "x-kubernetes-validations", params: {}, message: "targetRef: kind Service is a Knative Service, apiVersion serving.knative.dev/v1; Deployment, StatefulSet, DaemonSet and ReplicaSet are apiVersion apps/v1" });
  }
  if (valid.selectorMode === "Narrow" && valid.selector === undefined) {
    problems.push({ instancePath: "/selectorMode", schemaPath: "#/x-kubernetes-validations/1", keyword: "x-kubernetes-validations", params: {}, message: "selectorMode Narrow needs a selector to narrow the annotated Pod templates by" });
  }
  if (valid.scaleDown !== undefined && valid.scaleDown.marginPercent >= valid.memThresholdPercent) {
    problems.push({ instancePath: "/scaleDown/marginPercent", schemaPath: "#/x-kubernetes-validations/2", keyword: "x-kubernetes-validations", params: {}, message: "scaleDown.marginPercent must be below memThresholdPercent: the peak must stay that many points below the threshold" });
  }
  if (valid.maxMemory !== undefined) {
    // The pattern admits exponents the quantity parser refuses as out of range.
    try {
      parseQuantity(valid.maxMemory);
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      problems.push({ instancePath: "/maxMemory", schemaPath: "#/properties/maxMemory", keyword: "quantity", params: {}, message: err.message });
    }
  }
  problems.push(...policyProblems(valid.containerPolicies ?? []));
  if (problems.length > 0) throw new AppMonitorSpecError(problems);
  return valid;
}

/**
 * What the schema cannot say of `spec.containerPolicies`: each `containerName` once, its
 * quantities in the parser's range, `minMemory` at most `maxMemory`, `heapMetrics: Watch` with a
 * `runtime`, and `heapThresholdPercent` only with `heapMetrics: Watch`.
 */
function policyProblems(policies: readonly ContainerPolicy[]): ErrorObject[] {
  const problems: ErrorObject[] = [];
  const problem = (index: number, field: string, message: string): void => {
    problems.push({ instancePath: `/containerPolicies/${index}${field}`, schemaPath: "#/properties/containerPolicies/items", keyword: "containerPolicy", params: {}, message });
  };
  policies.forEach((policy, index) => {
    if (policies.findIndex((p) => p.containerName === policy.containerName) !== index) problem(index, "/containerName", `names ${policy.containerName} a second time`);
    const parsed: Partial<Record<"maxMemory" | "minMemory", Quantity>> = {};
    for (const field of ["maxMemory", "minMemory"] as const) {
      const value = policy[field];
      if (value === undefined) continue;
      try {
        parsed[field] = parseQuantity(value);
      } catch (err) {
        if (!(err instanceof QuantityError)) throw err;
        problem(index, `/${field}`, err.message);
      }
    }
    if (parsed.maxMemory !== undefined && parsed.minMemory !== undefined && compare(parsed.minMemory, parsed.maxMemory) > 0) {
      problem(index, "/minMemory", `${policy.minMemory ?? ""} is above maxMemory ${policy.maxMemory ?? ""}`);
    }
    if (policy.heapMetrics === "Watch" && policy.runtime === undefined) problem(index, "/heapMetrics", "Watch needs runtime: which runtime's heap metrics to read");
    if (policy.heapThresholdPercent !== undefined && policy.heapMetrics !== "Watch") problem(index, "/heapThresholdPercent", "needs heapMetrics: Watch");
  });
  return problems;
}
