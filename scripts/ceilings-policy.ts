/**
 * Builds the ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) that refuses an AppMonitor
 * asking for more than the install's ceilings (`functions/memory-scaler/ceilings.ts`): its
 * parameter is the ConfigMap `appmonitor-ceilings` in the install's namespace
 * (knative/admission/appmonitor-ceilings.yaml), whose keys memory-scaler reads as its environment,
 * so the two hold the same bounds. `node scripts/ceilings-policy.ts` rewrites
 * `knative/admission/appmonitor-ceilings-policy.yaml`; a unit test checks the committed file is
 * what this produces. Every install profile and the Helm chart ship it (`knative/admission/`).
 *
 * - A create, or an update that changes the field, is refused when the field asks for more than
 *   its ceiling, with a message naming the field, its value, the ceiling and the ConfigMap. An
 *   update that leaves an over-ceiling field as it was passes (a ceiling lowered after the
 *   AppMonitor was written must not stop its other edits, nor the removal of its finalizers);
 *   memory-scaler bounds such a field whatever it says.
 * - Memory: `spec.maxMemory` and each `spec.containerPolicies[].maxMemory`, compared as quantities
 *   (CEL's Kubernetes quantity library, Kubernetes 1.29 and later: strings do not compare as sizes).
 * - An empty or absent key: no bound. A key that is not what memory-scaler accepts refuses every
 *   AppMonitor write, saying which (memory-scaler would refuse to start with it too).
 * - No ConfigMap: the binding's `parameterNotFoundAction: Allow` admits every AppMonitor, as
 *   memory-scaler, whose environment then holds no ceiling, bounds nothing.
 * - `failurePolicy: Fail`: an expression that cannot be evaluated refuses the write.
 * Source: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/
 * and https://kubernetes.io/docs/reference/using-api/cel/#kubernetes-quantity-library
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { APPMONITOR_GROUP, APPMONITOR_PLURAL } from "../functions/lib/appmonitor.ts";
import { CEILINGS, CEILINGS_CONFIGMAP, type CeilingSpec, DECIMAL_PATTERN } from "../functions/memory-scaler/ceilings.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the generated policy is committed. */
export const ceilingsPolicyPath = path.join(root, "knative", "admission", "appmonitor-ceilings-policy.yaml");

/** The policy's and its binding's name. */
export const CEILINGS_POLICY = "appmonitor-ceilings";

/** The install's namespace as knative/ names it; knative/namespace/'s replacements (and the chart) rewrite it in the binding. */
export const INSTALL_NAMESPACE = "appmonitor";

type Manifest = Record<string, unknown>;

/** CEL: `has()` of each step of `path` under `root` (`has(object.spec) && has(object.spec.leakGuard) && …`). */
function present(root: string, fields: readonly string[]): string {
  return fields.map((_, i) => `has(${root}.${fields.slice(0, i + 1).join(".")})`).join(" && ");
}

/** The variable holding a ceiling's value as the ConfigMap gives it (trimmed; `''` when absent). */
const raw = (c: CeilingSpec): string => `variables.${c.key}Raw`;
/** The variable that says a ceiling is set and well formed. */
const set = (c: CeilingSpec): string => `variables.${c.key}Set`;

/** CEL: whether `value` (a CEL string) is a value memory-scaler accepts for ceiling `c` (`functions/memory-scaler/config.ts`). */
function wellFormed(c: CeilingSpec, value: string): string {
  if (c.type === "quantity") return `isQuantity(${value}) && quantity(${value}).compareTo(quantity('0')) > 0`;
  const { min, max } = c.range ?? { min: 0, max: 0 };
  if (c.type === "number") return `${value}.matches('${DECIMAL_PATTERN}') && double(${value}) > ${min.toFixed(1)} && double(${value}) <= ${max.toFixed(1)}`;
  // At most nine digits: int() of a longer string could overflow, and no range here needs more.
  return `${value}.matches('^[0-9]{1,9}$') && int(${value}) >= ${min} && int(${value}) <= ${max}`;
}

/** CEL: the ceiling's value in the field's CEL type. */
function typed(c: CeilingSpec): string {
  return c.type === "quantity" ? `quantity(${raw(c)})` : c.type === "number" ? `double(${raw(c)})` : `int(${raw(c)})`;
}

/** CEL: whether field value `v` asks for more than ceiling `c`. */
function over(c: CeilingSpec, v: string): string {
  if (c.type === "quantity") return `quantity(${v}).compareTo(${typed(c)}) > 0`;
  if (c.type === "number") return `double(${v}) > ${typed(c)}`;
  return c.limit === "max" ? `${v} > ${typed(c)}` : `${v} < ${typed(c)}`;
}

/** The field's path under `spec` (`spec.leakGuard.maxScales` → `["spec", "leakGuard", "maxScales"]`). */
const fieldsOf = (c: CeilingSpec): string[] => c.field.split(".");

/** The end of each refusal: the ceiling and where it is set. */
function ceilingNamed(c: CeilingSpec): string {
  const above = c.limit === "max" ? "above" : "below";
  return `" is ${above} the install's ceiling ${c.variable} " + ${raw(c)} + " (ConfigMap " + params.metadata.namespace + "/" + params.metadata.name + ")"`;
}

/** The policy's variables: each ceiling as given and whether it is set, the malformed ones, and the container policies over the memory ceiling. */
function variables(): Manifest[] {
  const memory = CEILINGS.find((c) => c.key === "maxMemory");
  if (memory === undefined) throw new Error("no maxMemory ceiling");
  const old = "oldObject.spec.containerPolicies.exists(o, o.containerName == p.containerName && has(o.maxMemory) && o.maxMemory == p.maxMemory)";
  return [
    { name: "data", expression: "has(params.data) ? params.data : {}" },
    ...CEILINGS.flatMap((c) => [
      { name: `${c.key}Raw`, expression: `'${c.variable}' in variables.data ? variables.data['${c.variable}'].trim() : ''` },
      { name: `${c.key}Set`, expression: `${raw(c)} != '' && ${wellFormed(c, raw(c))}` },
    ]),
    {
      name: "malformed",
      expression: `[${CEILINGS.map((c) => `${raw(c)} != '' && !${set(c)} ? ['${c.variable} ' + ${raw(c)}] : []`).join(", ")}].flatten()`,
    },
    {
      name: "policiesOver",
      expression:
        `${set(memory)} && has(object.spec.containerPolicies) ? object.spec.containerPolicies.filter(p, has(p.maxMemory) && ${over(memory, "p.maxMemory")} && ` +
        `!(oldObject != null && has(oldObject.spec.containerPolicies) && ${old})) : []`,
    },
  ];
}

/** The validation of one ceiling's field: refused when present, over the ceiling, and new or changed. */
function fieldValidation(c: CeilingSpec): Manifest {
  const fields = fieldsOf(c);
  const at = `object.${c.field}`;
  const unchanged = `oldObject != null && ${present("oldObject", fields)} && oldObject.${c.field} == ${at}`;
  return {
    expression: `!${set(c)} || !(${present("object", fields)}) || !(${over(c, at)}) || (${unchanged})`,
    messageExpression: `'${c.field} ' + string(${at}) + ${ceilingNamed(c)}`,
    reason: "Invalid",
  };
}

/** The validations: the ConfigMap well formed, then each ceiling's field, memory's container policies too. */
function validations(): Manifest[] {
  const memory = CEILINGS.find((c) => c.key === "maxMemory") as CeilingSpec;
  return [
    {
      expression: "variables.malformed.size() == 0",
      messageExpression: `"the install's ceilings in ConfigMap " + params.metadata.namespace + "/" + params.metadata.name + " are not what memory-scaler accepts: " + variables.malformed.join(", ")`,
      reason: "Invalid",
    },
    ...CEILINGS.map(fieldValidation),
    {
      expression: "variables.policiesOver.size() == 0",
      messageExpression: `variables.policiesOver.map(p, 'spec.containerPolicies[' + p.containerName + '].maxMemory ' + p.maxMemory).join(', ') + ${ceilingNamed(memory)}`,
      reason: "Invalid",
    },
  ];
}

/** The policy and its binding. */
export function ceilingsPolicy(): Manifest[] {
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: CEILINGS_POLICY },
      spec: {
        failurePolicy: "Fail",
        paramKind: { apiVersion: "v1", kind: "ConfigMap" },
        matchConstraints: { resourceRules: [{ apiGroups: [APPMONITOR_GROUP], apiVersions: ["*"], operations: ["CREATE", "UPDATE"], resources: [APPMONITOR_PLURAL] }] },
        variables: variables(),
        validations: validations(),
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: CEILINGS_POLICY },
      spec: {
        policyName: CEILINGS_POLICY,
        validationActions: ["Deny"],
        paramRef: { name: CEILINGS_CONFIGMAP, namespace: INSTALL_NAMESPACE, parameterNotFoundAction: "Allow" },
      },
    },
  ];
}

/** The policy as the committed YAML text. */
export function ceilingsPolicyYaml(): string {
  return `# Generated by scripts/ceilings-policy.ts; do not edit.\n${ceilingsPolicy().map((m) => stringify(m, { lineWidth: 0 })).join("---\n")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(ceilingsPolicyPath, ceilingsPolicyYaml());
  console.log(`wrote ${path.relative(root, ceilingsPolicyPath)}`);
}
