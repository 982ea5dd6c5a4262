/**
 * Builds the ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30)
 * that holds memory-scaler's ServiceAccount to the writes a scale makes, whatever its RBAC allows:
 * RBAC grants `patch` on whole workloads and `delete` on any Pod; this policy lets the API server
 * refuse any of those requests that changes something else. `node scripts/scaler-writes-policy.ts`
 * rewrites `knative/admission/memory-scaler-writes.yaml`; a unit test checks the committed file is
 * what this produces. Every install profile and the Helm chart ship it (`knative/admission/`).
 *
 * What memory-scaler writes, and so what the policy lets through (functions/memory-scaler/kube/cluster.ts):
 * - PATCH of a Deployment, StatefulSet, DaemonSet, ReplicaSet or Knative Service (`scale/targets/template-patch.ts`,
 *   `scale/targets/in-place-patch.ts`, `scale/targets/template-target.ts`): its containers' and native sidecars'
 *   memory requests and limits, the heap flags `spec.heapFlags: Scale` rewrites
 *   (`scale/decide/heap-flags.ts`: a token of an env var it reads, or of a `command`/`args` element), and
 *   its own annotations and label on the workload's metadata;
 * - PATCH of `pods/resize` (`scale/targets/resize-patch.ts`): containers' memory requests and limits;
 * - DELETE of a StatefulSet's Pod (`follow-up/flow.ts`, `spec.stuckRollout: DeletePod`), with the
 *   Pod's uid as precondition.
 * Every other write to these resources by that ServiceAccount is refused, with a message naming
 * the fields it would change. Its Pod creations (dry runs only) are the policy of
 * `knative/rbac/memory-scaler.yaml`; its Events and AppMonitor status writes are RBAC's alone. A
 * deletion's grace period is not judged: the API server itself sets it in the request's options
 * (the Pod's own, or 0 for a Pod never scheduled).
 *
 * The comparison is of `object` and `oldObject` as maps (the API server hands them to CEL as
 * untyped values, `dyn`): every key compared but the allowed ones, so a field Kubernetes adds later
 * is compared too. `failurePolicy: Fail`: an expression that cannot be evaluated refuses the write.
 * Source: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION, LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../functions/lib/appmonitor.ts";
import { HEAP_ENV_VARS } from "../functions/memory-scaler/scale/decide/heap-flags.ts";
import { HEAP_SETTINGS_ANNOTATION } from "../functions/memory-scaler/scale/decide/heap-settings.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the generated policy is committed. */
export const scalerWritesPolicyPath = path.join(root, "knative", "admission", "memory-scaler-writes.yaml");

/** The policy's and its binding's name. */
export const SCALER_WRITES_POLICY = "appmonitor-memory-scaler-writes";

/**
 * memory-scaler's user as knative/rbac/memory-scaler.yaml names its ServiceAccount; the install's
 * namespace is `appmonitor` here, and knative/namespace/'s replacements (and the chart) rewrite it.
 */
export const SCALER_USERNAME = "system:serviceaccount:appmonitor:memory-scaler";

/** The annotations memory-scaler writes on a workload (`functions/lib/appmonitor.ts`). */
export const OWN_ANNOTATIONS: readonly string[] = [LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, IN_PLACE_MEMORY_ANNOTATION, HEAP_SETTINGS_ANNOTATION];
/** The labels memory-scaler writes on a workload. */
export const OWN_LABELS: readonly string[] = [IN_PLACE_LABEL];
/**
 * Annotations the API server itself changes with a DaemonSet's Pod template: the template
 * generation, kept in apps/v1 as this annotation (pkg/registry/apps/daemonset/strategy.go).
 */
const SERVER_ANNOTATIONS: readonly string[] = ["deprecated.daemonset.template.generation"];
/**
 * Annotations Knative Serving's webhook changes with a Knative Service's spec: the user who last
 * changed it (knative.dev/serving `pkg/apis/serving/metadata_validation.go` `SetUserInfo`), which a
 * scale's patch makes memory-scaler.
 */
const KNATIVE_SERVER_ANNOTATIONS: readonly string[] = ["serving.knative.dev/lastModifier"];
/** Metadata the API server writes on every update (or that only it may set). */
const SERVER_METADATA: readonly string[] = ["managedFields", "generation", "resourceVersion"];

/**
 * The heap flag tokens `scale/decide/heap-flags.ts` rewrites (`scaledFlag`), as RE2: the JVM's and
 * Node.js's, in the JVM and Node.js env vars and in `command`/`args`. A token may change only into
 * the same flag (what precedes its digits is kept). `-XX:MaxRAMPercentage` follows the limit: never
 * rewritten.
 */
export const HEAP_FLAG_TOKEN = "^(-Xmx[0-9]+[kKmMgGtT]?|-XX:MaxRAM=[0-9]+[kKmMgGtT]?|--max-old-space-size=[0-9]+|--max_old_space_size=[0-9]+)$";
/**
 * The heap settings a rollout after a heap error adds (`scale/decide/heap-settings.ts`): one
 * token appended to a runtime's env var (or the env var added with it alone).
 */
export const HEAP_SETTING_TOKEN = "^(--max-old-space-size=[0-9]+|-XX:MaxRAMPercentage=[0-9]+([.][0-9]+)?)$";
/** The env vars those settings go in. */
export const HEAP_SETTING_ENVS: readonly string[] = ["NODE_OPTIONS", "JAVA_TOOL_OPTIONS"];
/** `GOMEMLIMIT`'s value, its one token. */
export const GO_MEMLIMIT_TOKEN = "^[0-9]+(B|KiB|MiB|GiB|TiB)?$";
const GO_ENV = "GOMEMLIMIT";

type Manifest = Record<string, unknown>;

const list = (values: readonly string[]): string => `[${values.map((v) => `'${v}'`).join(", ")}]`;

/** CEL: the map at `expr`, or `{}` when `field` of `parent` is absent. */
const mapAt = (parent: string, field: string): string => `(has(${parent}.${field}) ? ${parent}.${field} : {})`;
/** CEL: the list at `parent.field`, or `[]`. */
const listAt = (parent: string, field: string): string => `(has(${parent}.${field}) ? ${parent}.${field} : [])`;

/**
 * CEL: the keys of maps `a` and `b` whose values differ (or that only one has), but those of the
 * CEL list `skip`, each named by `name(k)` (a CEL string expression of the key `k`).
 */
function changedKeys(a: string, b: string, skip: string, name: (k: string) => string): string {
  return `(${a}.filter(k, !(k in ${skip}) && (!(k in ${b}) || ${a}[k] != ${b}[k])) + ${b}.filter(k, !(k in ${skip}) && !(k in ${a}))).map(k, ${name("k")})`;
}

/** {@link changedKeys} with the key after `path` (a CEL string expression): `path + k`. */
const changedFields = (a: string, b: string, except: readonly string[], path: string): string => changedKeys(a, b, list(except), (k) => `${path} + ${k}`);

/**
 * CEL: whether strings `a` and `b` differ only in tokens (split at spaces, tabs and line breaks)
 * that both match `pattern`, with the same text before their digits.
 */
function onlyTokens(a: string, b: string, pattern: string): string {
  const split = (s: string) => `${s}.replace('\\t', ' ').replace('\\n', ' ').replace('\\r', ' ').split(' ')`;
  const u = `${split(b)}[ti]`;
  return `(${split(a)}.size() == ${split(b)}.size() && ${split(a)}.all(ti, t, t == ${u} || (t.matches('${pattern}') && ${u}.matches('${pattern}') && t.find('^[^0-9]*') == ${u}.find('^[^0-9]*'))))`;
}

/**
 * CEL: the fields of the memory of container `c` (its old self `o`) other than the memory request
 * and limit that differ, under `path`: resources other than limits and requests, a limit or request
 * other than memory, a memory limit or request added or removed.
 */
function resourcesChanged(c: string, o: string, path: string): string {
  const parts = [changedFields(mapAt(c, "resources"), mapAt(o, "resources"), ["limits", "requests"], `${path} + '.resources.'`)];
  for (const field of ["limits", "requests"]) {
    const [a, b] = [c, o].map((x) => `(has(${x}.resources) && has(${x}.resources.${field}) ? ${x}.resources.${field} : {})`) as [string, string];
    parts.push(changedFields(a, b, ["memory"], `${path} + '.resources.${field}.'`));
    parts.push(`(('memory' in ${a}) == ('memory' in ${b}) ? [] : [${path} + '.resources.${field}.memory (added or removed)'])`);
  }
  return parts.join(" + ");
}

/** CEL: the changed elements of `command` or `args` of `c` against `o`, heap flag tokens allowed on a workload. */
function argsChanged(c: string, o: string, field: "command" | "args", path: string): string {
  const [a, b] = [listAt(c, field), listAt(o, field)];
  const heap = `(variables.workload && ${onlyTokens("v", `${b}[ai]`, HEAP_FLAG_TOKEN)})`;
  return `(${a}.size() != ${b}.size() ? [${path} + '.${field}'] : ${a}.transformList(ai, v, v != ${b}[ai] && !${heap}, ${path} + '.${field}[' + string(ai) + ']'))`;
}

/**
 * CEL: the changed entries of `env` of `c` against `o`: on a workload, heap flag tokens may change
 * in the heap env vars' values, a heap setting may be appended to its env var's value, and env
 * vars holding a heap setting alone may be added after the others.
 */
function envChanged(c: string, o: string, path: string): string {
  const [a, b] = [listAt(c, "env"), listAt(o, "env")];
  const old = `${b}[ei]`;
  const value = (e: string) => `(has(${e}.value) ? ${e}.value : '')`;
  const jvmAndNode = HEAP_ENV_VARS.filter((v) => v !== GO_ENV);
  const appended =
    `(e.name in ${list(HEAP_SETTING_ENVS)} && has(e.value) && (${value(old)}.trim() == '' ? e.value.matches('${HEAP_SETTING_TOKEN}') : ` +
    `e.value.startsWith(${value(old)} + ' ') && e.value.substring(${value(old)}.size() + 1).matches('${HEAP_SETTING_TOKEN}')))`;
  const heap =
    `(variables.workload && (${appended} || (has(e.value) && has(${old}.value) && ((e.name == '${GO_ENV}' && ${onlyTokens("e.value", `${old}.value`, GO_MEMLIMIT_TOKEN)}) || ` +
    `(e.name in ${list(jvmAndNode)} && ${onlyTokens("e.value", `${old}.value`, HEAP_FLAG_TOKEN)})))))`;
  const entry = `${changedFields("e", old, ["value"], `${path} + '.env[' + e.name + '].'`)} + (${value("e")} == ${value(old)} || ${heap} ? [] : [${path} + '.env[' + e.name + '].value'])`;
  const namesKept = `(${a}.size() >= ${b}.size() && ${b}.transformList(i, x, ${a}[i].name == x.name).all(k, k))`;
  const addedSettings = `${a}.transformList(i, x, i < ${b}.size() || (variables.workload && x.name in ${list(HEAP_SETTING_ENVS)} && !has(x.valueFrom) && has(x.value) && x.value.matches('${HEAP_SETTING_TOKEN}'))).all(k, k)`;
  return `(!(${namesKept} && ${addedSettings}) ? [${path} + '.env'] : ${a}.transformList(ei, e, ei < ${b}.size() ? (${entry}).join(', ') : '').filter(s, s != ''))`;
}

/**
 * CEL: what differs in the containers of list `field` of the Pod spec (`variables.spec`, against
 * `variables.oldSpec`) but memory, and on a workload heap flags: one string per changed container,
 * naming its fields. A list whose containers are others (names, order) is named whole.
 */
function containersChanged(field: "containers" | "initContainers"): string {
  const [a, b] = [`variables.${field}`, `variables.old${field[0]?.toUpperCase()}${field.slice(1)}`];
  const o = `${b}[ci]`;
  const at = `variables.specPath + '.${field}[' + c.name + ']'`;
  const fields = [
    changedFields("c", o, ["resources", "env", "command", "args"], `${at} + '.'`),
    resourcesChanged("c", o, at),
    envChanged("c", o, at),
    argsChanged("c", o, "command", at),
    argsChanged("c", o, "args", at),
  ];
  return `(${a}.map(c, c.name) != ${b}.map(c, c.name) ? [variables.specPath + '.${field} (its containers)'] : ${a}.transformList(ci, c, (${fields.join(" + ")}).join(', ')).filter(s, s != ''))`;
}

/** CEL: what an update changes of a workload's spec or its Pod template, or of a Pod's spec, but the containers. */
function specChanged(): string {
  const template = [
    changedFields("object.spec", "oldObject.spec", ["template"], "'spec.'"),
    changedFields("object.spec.template", "oldObject.spec.template", ["spec"], "'spec.template.'"),
  ].join(" + ");
  return `(variables.workload ? ${template} : []) + ${changedFields("variables.spec", "variables.oldSpec", ["containers", "initContainers"], "variables.specPath + '.'")}`;
}

/**
 * CEL: what an update changes of the object's top level and metadata (what the API server writes
 * itself aside); on a workload, memory-scaler's own annotations and label may change.
 */
function metadataChanged(): string {
  const entry = (field: string) => (k: string) => `'metadata.${field}[' + ${k} + ']'`;
  const ownLabels = `(variables.workload ? ${list(OWN_LABELS)} : [])`;
  const ownAnnotations = `(variables.workload ? ${list([...OWN_ANNOTATIONS, ...SERVER_ANNOTATIONS])} + (variables.knative ? ${list(KNATIVE_SERVER_ANNOTATIONS)} : []) : [])`;
  return [
    changedFields("object", "oldObject", ["metadata", "spec", "status"], "''"),
    changedFields("object.metadata", "oldObject.metadata", ["labels", "annotations", ...SERVER_METADATA], "'metadata.'"),
    changedKeys(mapAt("object.metadata", "labels"), mapAt("oldObject.metadata", "labels"), ownLabels, entry("labels")),
    changedKeys(mapAt("object.metadata", "annotations"), mapAt("oldObject.metadata", "annotations"), ownAnnotations, entry("annotations")),
  ].join(" + ");
}

/** The policy's variables: what the request is, then what it changes (evaluated for an update only). */
function variables(): Manifest[] {
  return [
    // Absent for a request to the resource itself.
    { name: "subresource", expression: "has(request.subResource) ? request.subResource : ''" },
    // A Knative Service keeps its Pod template where the apps/v1 workloads do (`spec.template`).
    { name: "knative", expression: "request.resource.group == 'serving.knative.dev'" },
    { name: "workload", expression: "request.resource.group == 'apps' || variables.knative" },
    { name: "resize", expression: "request.resource.group == '' && request.resource.resource == 'pods' && variables.subresource == 'resize'" },
    {
      name: "podDelete",
      expression: "request.resource.group == '' && request.resource.resource == 'pods' && variables.subresource == '' && request.operation == 'DELETE'",
    },
    // A Pod's creation (`pods/*` matches `pods` too) is the dry-run-only policy's, knative/rbac/memory-scaler.yaml.
    { name: "podCreate", expression: "request.resource.group == '' && request.resource.resource == 'pods' && variables.subresource == '' && request.operation == 'CREATE'" },
    { name: "update", expression: "request.operation == 'UPDATE' && ((variables.workload && variables.subresource == '') || variables.resize)" },
    // The Pod spec: a workload's template's, or the Pod's own.
    { name: "spec", expression: "variables.workload ? object.spec.template.spec : object.spec" },
    { name: "oldSpec", expression: "variables.workload ? oldObject.spec.template.spec : oldObject.spec" },
    { name: "specPath", expression: "variables.workload ? 'spec.template.spec' : 'spec'" },
    ...(["containers", "initContainers"] as const).flatMap((field) => [
      { name: field, expression: listAt("variables.spec", field) },
      { name: `old${field[0]?.toUpperCase()}${field.slice(1)}`, expression: listAt("variables.oldSpec", field) },
    ]),
    { name: "metadataChanged", expression: metadataChanged() },
    { name: "specChanged", expression: specChanged() },
    { name: "containersChanged", expression: containersChanged("containers") },
    { name: "initContainersChanged", expression: containersChanged("initContainers") },
    {
      name: "changed",
      expression: "!variables.update ? [] : variables.metadataChanged + variables.specChanged + variables.containersChanged + variables.initContainersChanged",
    },
  ];
}

/** The validations, each with a message that names what was refused. */
function validations(): Manifest[] {
  return [
    {
      expression: "variables.update || variables.podDelete || variables.podCreate",
      messageExpression:
        "'memory-scaler may not ' + request.operation + ' ' + request.resource.resource + (variables.subresource == '' ? '' : '/' + variables.subresource) + " +
        "': it patches workloads, resizes Pods and deletes Pods, nothing else'",
      reason: "Forbidden",
    },
    {
      expression: "!variables.update || variables.changed.size() == 0",
      messageExpression:
        "\"memory-scaler may change only containers' memory requests and limits, a workload's heap flags and its own annotations and label; refused: \" + variables.changed.join(', ')",
      reason: "Forbidden",
    },
    {
      expression:
        "!variables.podDelete || (has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion == 'apps/v1' && r.kind == 'StatefulSet'))",
      message: "memory-scaler may delete only a Pod a StatefulSet controls",
      reason: "Forbidden",
    },
    {
      expression: "!variables.podDelete || (has(request.options.preconditions) && has(request.options.preconditions.uid) && request.options.preconditions.uid == oldObject.metadata.uid)",
      message: "memory-scaler may delete a Pod only with the Pod's uid in preconditions.uid",
      reason: "Forbidden",
    },
  ];
}

/** The policy and its binding. */
export function scalerWritesPolicy(): Manifest[] {
  const workloads = ["deployments", "statefulsets", "daemonsets", "replicasets"];
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: SCALER_WRITES_POLICY },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [
            { apiGroups: ["apps"], apiVersions: ["*"], operations: ["CREATE", "UPDATE", "DELETE"], resources: workloads.flatMap((r) => [r, `${r}/*`]) },
            { apiGroups: ["serving.knative.dev"], apiVersions: ["*"], operations: ["CREATE", "UPDATE", "DELETE"], resources: ["services", "services/*"] },
            // `pods/*` matches `pods` itself too.
            { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE", "DELETE"], resources: ["pods/*"] },
          ],
        },
        matchConditions: [{ name: "is-memory-scaler", expression: `request.userInfo.username == "${SCALER_USERNAME}"` }],
        variables: variables(),
        validations: validations(),
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: SCALER_WRITES_POLICY },
      spec: { policyName: SCALER_WRITES_POLICY, validationActions: ["Deny"] },
    },
  ];
}

/** The policy as the committed YAML text. */
export function scalerWritesPolicyYaml(): string {
  return `# Generated by scripts/scaler-writes-policy.ts; do not edit.\n${scalerWritesPolicy().map((m) => stringify(m, { lineWidth: 0 })).join("---\n")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(scalerWritesPolicyPath, scalerWritesPolicyYaml());
  console.log(`wrote ${path.relative(root, scalerWritesPolicyPath)}`);
}
