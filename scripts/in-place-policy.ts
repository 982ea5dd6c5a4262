/**
 * Builds the MutatingAdmissionPolicies (admissionregistration.k8s.io/v1, served and enabled by
 * default since Kubernetes 1.36, KEP-3962) that give a Pod, at its creation, the memory its
 * workload's in-place record holds (`app-monitor.kubedemo.com/in-place-memory`, written by
 * memory-scaler when it resizes a workload's Pods in place): a Pod a scale-up, an eviction, a
 * drain or someone else's rollout creates then starts with the raised memory, without a change of
 * the Pod template (nothing for a GitOps tool to see) and without crossing the threshold again.
 * `node scripts/in-place-policy.ts` rewrites `knative/admission/in-place-memory.yaml`; a unit test
 * checks the committed file is what this produces.
 *
 * One policy and one binding per workload kind, since a policy's parameters are of one kind: the
 * binding selects, in the namespace of the Pod being created, the workloads labelled
 * `app-monitor.kubedemo.com/in-place: "true"` (memory-scaler sets it with the record), and the
 * policy runs once per such workload. It mutates only a Pod whose controller is that workload (a
 * Deployment's through its ReplicaSet `<name>-<pod-template-hash>`, a Knative Service's through its
 * Revision's ReplicaSet `<revision>-deployment-<pod-template-hash>` and Serving's labels naming the
 * Service, the others by uid), and in it
 * only the containers and native sidecars whose memory is still what the record raised it from:
 * the rule of `functions/memory-scaler/in-place.ts`. `failurePolicy: Ignore`: a policy that fails
 * never stops a Pod from being created; the Pod then starts with the template's memory, and
 * memory-scaler resizes it when it crosses the threshold. No parameter (no labelled workload) is
 * no mutation (`parameterNotFoundAction: Allow`).
 * Source: https://kubernetes.io/docs/reference/access-authn-authz/mutating-admission-policy/
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION } from "../functions/lib/appmonitor.ts";
import { REVISION_LABEL, SERVICE_LABEL, SERVICE_UID_LABEL } from "../functions/memory-scaler/knative.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the generated policies are committed. */
export const policyPath = path.join(root, "knative", "admission", "in-place-memory.yaml");

type Manifest = Record<string, unknown>;

/** The workload kinds memory-scaler scales, with the CEL that says the Pod being created is one of its Pods. */
const OWNERS: readonly { readonly apiVersion: string; readonly kind: string; readonly plural: string; readonly owned: string }[] = [
  {
    apiVersion: "apps/v1",
    kind: "Deployment",
    plural: "deployments",
    owned:
      "has(object.metadata.labels) && 'pod-template-hash' in object.metadata.labels && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion == 'apps/v1' && r.kind == 'ReplicaSet' && r.name == params.metadata.name + '-' + object.metadata.labels['pod-template-hash'])",
  },
  ...["StatefulSet", "DaemonSet", "ReplicaSet"].map((kind) => ({
    apiVersion: "apps/v1",
    kind,
    plural: `${kind.toLowerCase()}s`,
    owned: `object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion == 'apps/v1' && r.kind == '${kind}' && r.uid == params.metadata.uid)`,
  })),
  {
    // A Knative Service's Revision Pods, keyed as a Deployment's (`functions/memory-scaler/knative.ts`
    // `isRevisionPodOf`): the ReplicaSet `<revision>-deployment-<pod-template-hash>` of the Revision's
    // Deployment controls the Pod, and Serving's labels name the Service and its uid.
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    plural: "knative-services",
    owned:
      `has(object.metadata.labels) && ${[REVISION_LABEL, "pod-template-hash", SERVICE_LABEL, SERVICE_UID_LABEL].map((l) => `'${l}' in object.metadata.labels`).join(" && ")} && ` +
      `object.metadata.labels['${SERVICE_LABEL}'] == params.metadata.name && object.metadata.labels['${SERVICE_UID_LABEL}'] == params.metadata.uid && ` +
      `object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.apiVersion == 'apps/v1' && r.kind == 'ReplicaSet' && r.name == object.metadata.labels['${REVISION_LABEL}'] + '-deployment-' + object.metadata.labels['pod-template-hash'])`,
  },
];

/**
 * Whether container `c` runs the memory entry `p` (`[name, limit, raised limit, request, raised
 * request]`) was raised from: quantities compared. A template without a request (`p[3]` empty)
 * gives its Pods the limit as request (API defaulting runs before admission), so there the request
 * must equal the limit.
 */
const RUNS_FROM =
  "p[0] == c.name && has(c.resources) && has(c.resources.limits) && 'memory' in c.resources.limits && quantity(c.resources.limits['memory']).compareTo(quantity(p[1])) == 0 && " +
  "(!(has(c.resources.requests) && 'memory' in c.resources.requests) || quantity(c.resources.requests['memory']).compareTo(quantity(p[3] == '' ? p[1] : p[3])) == 0)";

/** The resources an entry `p` gives its container (list `list`: `containers` or `initContainers`): the raised request, or the raised limit where the template sets none, as defaulting would. */
const raised = (list: string): string => `Object.spec.${list}.resources{limits: {'memory': p[2]}, requests: {'memory': p[4] == '' ? p[2] : p[4]}}`;

/** The variables every policy shares, then the one that says whose Pod it is. */
function variables(owned: string): Manifest[] {
  const annotation = `'${IN_PLACE_MEMORY_ANNOTATION}'`;
  return [
    { name: "owned", expression: `has(object.metadata.ownerReferences) && ${owned}` },
    { name: "record", expression: `has(params.metadata.annotations) && ${annotation} in params.metadata.annotations ? params.metadata.annotations[${annotation}] : ''` },
    // Each entry `<name>=<limit>><raised>[/<request>><raised>]` as [name, limit, raised limit, request, raised request] ('' for no request).
    {
      name: "entries",
      expression:
        "variables.record == '' ? [] : variables.record.split(';').map(e, e.split('=')).filter(e, e.size() == 2).map(e, [e[0]] + e[1].split('/')[0].split('>') + (e[1].split('/').size() > 1 ? e[1].split('/')[1].split('>') : ['', ''])).filter(p, p.size() == 5)",
    },
    { name: "containers", expression: `variables.owned ? variables.entries.filter(p, object.spec.containers.exists(c, ${RUNS_FROM})) : []` },
    {
      name: "sidecars",
      expression: `variables.owned && has(object.spec.initContainers) ? variables.entries.filter(p, object.spec.initContainers.exists(c, has(c.restartPolicy) && c.restartPolicy == 'Always' && ${RUNS_FROM})) : []`,
    },
  ];
}

const MUTATION =
  "variables.containers.size() + variables.sidecars.size() == 0 ? Object{} : Object{spec: Object.spec{" +
  `containers: variables.containers.map(p, Object.spec.containers{name: p[0], resources: ${raised("containers")}}), ` +
  `initContainers: variables.sidecars.map(p, Object.spec.initContainers{name: p[0], resources: ${raised("initContainers")}})}}`;

/** The policies and their bindings, in order. */
export function inPlacePolicies(): Manifest[] {
  return OWNERS.flatMap(({ apiVersion, kind, plural, owned }) => {
    const name = `appmonitor-in-place-memory-${plural}`;
    return [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingAdmissionPolicy",
        metadata: { name },
        spec: {
          paramKind: { apiVersion, kind },
          matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"] }] },
          failurePolicy: "Ignore",
          reinvocationPolicy: "Never",
          variables: variables(owned),
          mutations: [{ patchType: "ApplyConfiguration", applyConfiguration: { expression: MUTATION } }],
        },
      },
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingAdmissionPolicyBinding",
        metadata: { name },
        spec: { policyName: name, paramRef: { selector: { matchLabels: { [IN_PLACE_LABEL]: "true" } }, parameterNotFoundAction: "Allow" } },
      },
    ];
  });
}

/** The policies as the committed YAML text. */
export function inPlacePoliciesYaml(): string {
  return `# Generated by scripts/in-place-policy.ts; do not edit.\n${inPlacePolicies().map((m) => stringify(m, { lineWidth: 0 })).join("---\n")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(policyPath, inPlacePoliciesYaml());
  console.log(`wrote ${path.relative(root, policyPath)}`);
}
