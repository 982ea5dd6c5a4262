// What `kubectl apply -k knative/` installs: every object valid against its published schema,
// the Knative Services as Knative admits them and as the functions need them, the eventing wired
// to the types the functions handle, and RBAC no wider than the functions use.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../../../functions/lib/appmonitor.ts";
import { LIVENESS_PATH, READINESS_PATH } from "../../../functions/lib/runtime/health.ts";
import { FIRING_TYPE } from "../../../functions/lib/alert-event.ts";
import { PING_EVENT_TYPE } from "../../../functions/lib/ping-event.ts";
import { RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE, readTrigger } from "../../../functions/rule-sync/incoming-event.ts";
import {
  FUNCTION_NAMES,
  INSTALL_NAMESPACE,
  containerOf,
  kustomize,
  MODELS_REQUIRING_STATUS,
  manifestFile,
  modelFor,
  servicesByFunction,
  validateAgainstPublishedSchema,
  type FunctionName,
  type KnativeService,
  type Manifest,
} from "../../support/knative.ts";
import { backoffSeconds, type DeliverySpec } from "../../support/knative-delivery.ts";

let objects: Manifest[] = [];
let services: Record<FunctionName, KnativeService>;

before(async () => {
  objects = await kustomize("knative");
  services = servicesByFunction(objects);
});

/** A container's securityContext as every Service of the install sets it, running as `uid`. */
const restrictedSecurityContext = (uid: number): Record<string, unknown> => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
});

const key = (o: Manifest): string => `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const ofKind = (apiVersion: string, kind: string): Manifest[] => objects.filter((o) => o.apiVersion === apiVersion && o.kind === kind);
const spec = (o: Manifest): Record<string, unknown> => o.spec as Record<string, unknown>;

describe("the install (kubectl kustomize knative/)", () => {
  test("holds the CRD, namespace, RBAC, three Services, Broker, Triggers and sources, and nothing from examples/ or alertmanager/", () => {
    const expected = [
      "v1 Namespace /appmonitor",
      "apiextensions.k8s.io/v1 CustomResourceDefinition /appmonitors.kubedemo.com",
      "v1 ServiceAccount appmonitor/alert-receiver",
      "v1 ServiceAccount appmonitor/memory-scaler",
      "v1 ServiceAccount appmonitor/rule-sync",
      "v1 ServiceAccount appmonitor/appmonitor-source",
      "serving.knative.dev/v1 Service appmonitor/alert-receiver",
      "serving.knative.dev/v1 Service appmonitor/memory-scaler",
      "serving.knative.dev/v1 Service appmonitor/rule-sync",
      "serving.knative.dev/v1 Service appmonitor/appmonitor-dead-letter",
      "eventing.knative.dev/v1 Broker appmonitor/default",
      "sources.knative.dev/v1 SinkBinding appmonitor/alert-receiver",
      "sources.knative.dev/v1 ApiServerSource appmonitor/appmonitors",
      "sources.knative.dev/v1 PingSource appmonitor/rule-sync-resync",
    ];
    const keys = new Set(objects.map(key));
    for (const k of expected) assert.ok(keys.has(k), `missing ${k}`);
    assert.equal(keys.size, objects.length, "an object appears twice");
    const forbidden = objects.filter((o) => ["Secret", "AppMonitor", "Deployment", "AlertmanagerConfig", "Pod"].includes(o.kind));
    assert.deepEqual(forbidden.map(key), [], "no real secret, no demo objects, no prometheus-operator objects");
  });

  test("every object validates against its published schema (kubernetes-models, Knative, prometheus-operator)", async () => {
    assert.ok(objects.length >= 20, `only ${objects.length} objects built`);
    for (const object of objects) await validateAgainstPublishedSchema(object);
  });

  test("the one schema quirk: the SinkBinding model requires a status, and nothing else is missing", async () => {
    const [binding] = ofKind("sources.knative.dev/v1", "SinkBinding");
    assert.ok(binding && binding.status === undefined);
    const Model = await modelFor(binding.apiVersion, binding.kind);
    assert.throws(() => new Model(binding).validate(), (error: Error) => error.message === "data must have required property status");
    assert.deepEqual([...MODELS_REQUIRING_STATUS], ["sources.knative.dev/v1 SinkBinding"]);
  });

  test("the schema check catches a broken object (a Service without containers, a Trigger without subscriber)", async () => {
    const service = structuredClone(services["memory-scaler"]) as unknown as { spec: { template: { spec: Record<string, unknown> } } };
    delete service.spec.template.spec.containers;
    await assert.rejects(validateAgainstPublishedSchema(service as unknown as Manifest), /containers/);
    const trigger = structuredClone(ofKind("eventing.knative.dev/v1", "Trigger")[0]) as unknown as { spec: Record<string, unknown> };
    delete trigger.spec.subscriber;
    await assert.rejects(validateAgainstPublishedSchema(trigger as unknown as Manifest), /subscriber/);
  });

  test("namespaced objects live in the appmonitor namespace; cluster-scoped ones have none", () => {
    const clusterScoped = new Set(["Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]);
    for (const o of objects) {
      if (clusterScoped.has(o.kind)) assert.equal(o.metadata.namespace, undefined, key(o));
      else assert.equal(o.metadata.namespace, INSTALL_NAMESPACE, key(o));
    }
  });

  test("the namespace enforces the restricted Pod Security Standard", () => {
    const [ns] = ofKind("v1", "Namespace");
    assert.equal(ns?.metadata.labels?.["pod-security.kubernetes.io/enforce"], "restricted");
  });
});

// Knative Serving admits only a subset of a PodSpec (knative.dev/serving pkg/apis/serving/fieldmask.go,
// without feature flags) and reserves some names; anything else is refused by its webhook.
const KNATIVE_POD_FIELDS = new Set(["serviceAccountName", "containers", "volumes", "imagePullSecrets", "enableServiceLinks", "automountServiceAccountToken",
  "containerConcurrency", "timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds"]);
const KNATIVE_CONTAINER_FIELDS = new Set(["name", "args", "command", "env", "workingDir", "envFrom", "image", "imagePullPolicy", "livenessProbe", "ports",
  "readinessProbe", "startupProbe", "resources", "securityContext", "terminationMessagePath", "terminationMessagePolicy", "volumeMounts"]);
const KNATIVE_SECURITY_CONTEXT_FIELDS = new Set(["capabilities", "readOnlyRootFilesystem", "runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation", "seccompProfile"]);
const KNATIVE_RESERVED_ENV = new Set(["PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION"]);
const KNATIVE_RESERVED_MOUNTS = new Set(["/", "/dev", "/dev/log", "/tmp", "/var", "/var/log"]);

describe("the Knative Services", () => {
  for (const name of FUNCTION_NAMES) {
    describe(name, () => {
      test("is cluster-local, runs the function's image under its own ServiceAccount", () => {
        const service = services[name];
        assert.equal(service.metadata.labels?.["networking.knative.dev/visibility"], "cluster-local");
        const container = containerOf(service);
        assert.match(container.image, new RegExp(`^ghcr\\.io/kubedemo/appmonitor-${name}:[\\w.-]+$`));
        assert.deepEqual(container.ports, [{ name: "http1", containerPort: 8080 }]);
        const account = service.spec.template.spec.serviceAccountName;
        assert.equal(account, name);
        assert.ok(ofKind("v1", "ServiceAccount").some((sa) => sa.metadata.name === account), `ServiceAccount ${account} is installed`);
      });

      test("probes the runtime's health endpoints on the serving port", () => {
        const container = containerOf(services[name]);
        assert.equal(container.readinessProbe?.httpGet?.path, READINESS_PATH);
        assert.equal(container.livenessProbe?.httpGet?.path, LIVENESS_PATH);
        for (const probe of [container.readinessProbe, container.livenessProbe]) assert.equal(probe?.httpGet?.port, 8080, "Knative accepts only the serving port");
      });

      test("has a restricted securityContext, resources and scale bounds", () => {
        const service = services[name];
        const container = containerOf(service);
        assert.deepEqual(container.securityContext, restrictedSecurityContext(1000));
        assert.ok(container.resources?.requests?.cpu && container.resources.requests.memory, "cpu and memory requests");
        assert.ok(container.resources?.limits?.memory, "a memory limit");
        const annotations = service.spec.template.metadata?.annotations ?? {};
        const min = Number(annotations["autoscaling.knative.dev/min-scale"]);
        const max = Number(annotations["autoscaling.knative.dev/max-scale"]);
        assert.ok(Number.isInteger(min) && Number.isInteger(max) && min >= 0 && max >= 1 && min <= max, `min-scale ${min}, max-scale ${max}`);
      });

      test("uses only what Knative Serving admits (fields, env names, mount paths)", () => {
        const podSpec = services[name].spec.template.spec;
        for (const field of Object.keys(podSpec)) assert.ok(KNATIVE_POD_FIELDS.has(field), `spec.template.spec.${field}`);
        if (podSpec.automountServiceAccountToken !== undefined) assert.equal(podSpec.automountServiceAccountToken, false, "Knative allows only false");
        const container = containerOf(services[name]);
        for (const field of Object.keys(container)) assert.ok(KNATIVE_CONTAINER_FIELDS.has(field), `container ${field}`);
        for (const field of Object.keys(container.securityContext ?? {})) assert.ok(KNATIVE_SECURITY_CONTEXT_FIELDS.has(field), `securityContext.${field}`);
        for (const env of container.env ?? []) assert.ok(!KNATIVE_RESERVED_ENV.has(env.name), `${env.name} is set by Knative`);
        for (const mount of container.volumeMounts ?? []) assert.ok(!KNATIVE_RESERVED_MOUNTS.has(mount.mountPath), `${mount.mountPath} is reserved`);
        for (const volume of podSpec.volumes ?? []) assert.ok(Object.keys(volume).every((k) => ["name", "secret", "configMap", "projected"].includes(k)), `volume ${volume.name}`);
      });
    });
  }

  test("alert-receiver mounts no Kubernetes credentials and reads its token from the Secret appmonitor-webhook", () => {
    const service = services["alert-receiver"];
    assert.equal(service.spec.template.spec.automountServiceAccountToken, false);
    const account = ofKind("v1", "ServiceAccount").find((sa) => sa.metadata.name === "alert-receiver");
    assert.equal(account?.automountServiceAccountToken, false);
    const volume = service.spec.template.spec.volumes?.find((v) => v.secret?.secretName === "appmonitor-webhook");
    assert.ok(volume, "a volume from the Secret appmonitor-webhook");
    const mount = containerOf(service).volumeMounts?.find((m) => m.name === volume.name);
    const item = volume.secret?.items?.find((i) => i.key === "token");
    assert.ok(mount && item, "the key token is mounted");
    assert.equal(mount.readOnly, true);
    const tokenFile = containerOf(service).env?.find((e) => e.name === "WEBHOOK_TOKEN_FILE")?.value;
    assert.equal(tokenFile, `${mount.mountPath}/${item.path}`);
  });
});

/** Which (group, resource, verb) each ServiceAccount of the install is granted by its RBAC. */
function grants(): Map<string, Set<string>> {
  const roles = new Map<string, { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[]>();
  for (const role of [...ofKind("rbac.authorization.k8s.io/v1", "ClusterRole"), ...ofKind("rbac.authorization.k8s.io/v1", "Role")]) {
    roles.set(`${role.kind}/${role.metadata.namespace ?? ""}/${role.metadata.name}`, (role.rules as never) ?? []);
  }
  const result = new Map<string, Set<string>>();
  for (const binding of [...ofKind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ...ofKind("rbac.authorization.k8s.io/v1", "RoleBinding")]) {
    const ref = binding.roleRef as { kind: string; name: string };
    const rules = roles.get(`${ref.kind}/${ref.kind === "Role" ? (binding.metadata.namespace ?? "") : ""}/${ref.name}`);
    assert.ok(rules, `${key(binding)} refers to ${ref.kind} ${ref.name}, which the install does not create`);
    for (const subject of (binding.subjects as { kind: string; name: string; namespace?: string }[]) ?? []) {
      if (subject.kind !== "ServiceAccount") continue;
      const account = `${subject.namespace ?? binding.metadata.namespace}/${subject.name}`;
      const set = result.get(account) ?? new Set<string>();
      for (const rule of rules) {
        for (const group of rule.apiGroups ?? []) for (const resource of rule.resources ?? []) for (const verb of rule.verbs ?? []) set.add(`${group}/${resource}:${verb}`);
      }
      result.set(account, set);
    }
  }
  return result;
}

describe("RBAC", () => {
  test("no role grants a wildcard group, resource or verb", () => {
    for (const role of [...ofKind("rbac.authorization.k8s.io/v1", "ClusterRole"), ...ofKind("rbac.authorization.k8s.io/v1", "Role")]) {
      for (const rule of (role.rules as { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[]) ?? []) {
        for (const value of [...(rule.apiGroups ?? []), ...(rule.resources ?? []), ...(rule.verbs ?? [])]) assert.notEqual(value, "*", key(role));
      }
    }
  });

  test("alert-receiver is granted nothing; the ApiServerSource exactly get, list, watch on AppMonitors", () => {
    const granted = grants();
    assert.equal(granted.get("appmonitor/alert-receiver"), undefined);
    assert.deepEqual([...(granted.get("appmonitor/appmonitor-source") ?? [])].sort(), ["kubedemo.com/appmonitors:get", "kubedemo.com/appmonitors:list", "kubedemo.com/appmonitors:watch"]);
  });

  test("memory-scaler and rule-sync are bound to roles that the install creates", () => {
    const granted = grants();
    for (const name of ["memory-scaler", "rule-sync"]) assert.ok((granted.get(`appmonitor/${name}`)?.size ?? 0) > 0, `${name} has RBAC`);
  });

  test("memory-scaler may patch a Pod only through its resize subresource (a bare Pod resized in place), never patch or update Pods themselves", () => {
    const granted = grants().get("appmonitor/memory-scaler") ?? new Set<string>();
    assert.ok(granted.has("/pods/resize:patch"));
    for (const verb of ["patch", "update"]) assert.equal(granted.has(`/pods:${verb}`), false, verb);
    assert.deepEqual([...granted].filter((g) => g.startsWith("/pods/")), ["/pods/resize:patch"], "no other Pod subresource");
  });

  test("memory-scaler and rule-sync may create Events wherever the AppMonitors are, for their Warnings on them and the PermissionDenied Warning on their ServiceAccount", () => {
    const granted = grants();
    for (const name of ["memory-scaler", "rule-sync"]) assert.ok(granted.get(`appmonitor/${name}`)?.has("events.k8s.io/events:create"), name);
    const role = ofKind("rbac.authorization.k8s.io/v1", "ClusterRole").find((r) => r.metadata.name === "appmonitor-rule-sync") as { rules?: { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[] } | undefined;
    assert.ok(role?.rules?.some((r) => r.apiGroups?.includes("events.k8s.io") && r.resources?.includes("events") && r.verbs?.join() === "create"), "rule-sync's Event grant is its ClusterRole's: the AppMonitors are in every namespace");
    assert.deepEqual(ofKind("rbac.authorization.k8s.io/v1", "Role").filter((r) => r.metadata.name === "appmonitor-rule-sync-events"), [], "no Role left beside it");
  });
});

describe("eventing", () => {
  test("Triggers route exactly the event types each function handles, from the one Broker", () => {
    const brokers = ofKind("eventing.knative.dev/v1", "Broker").map((b) => b.metadata.name);
    assert.deepEqual(brokers, ["default"]);
    const routes = ofKind("eventing.knative.dev/v1", "Trigger").map((t) => {
      const s = spec(t) as { broker: string; filter?: { attributes?: Record<string, string> }; subscriber: { ref?: { apiVersion: string; kind: string; name: string } } };
      assert.equal(s.broker, "default", key(t));
      assert.equal(s.subscriber.ref?.apiVersion, "serving.knative.dev/v1", key(t));
      assert.equal(s.subscriber.ref.kind, "Service", key(t));
      return { to: s.subscriber.ref.name, type: s.filter?.attributes?.type, attributes: s.filter?.attributes ?? {} };
    });
    const byType = (type: string): string[] => routes.filter((r) => r.type === type).map((r) => r.to);
    assert.deepEqual(byType(FIRING_TYPE), ["memory-scaler"]);
    for (const action of ["add", "update", "delete"]) assert.deepEqual(byType(`${RESOURCE_EVENT_PREFIX}${action}`), ["rule-sync"]);
    assert.deepEqual(byType(PING_EVENT_TYPE).sort(), ["memory-scaler", "rule-sync"]);
    assert.deepEqual(byType(RESYNC_EVENT_TYPE), ["rule-sync"]);
    assert.ok(routes.every((r) => r.type !== undefined), "every Trigger filters on type");
    assert.equal(routes.length, 7);
  });

  test("the Broker and every Trigger retry with backoff, then hand what is left to the dead-letter Service of the install", () => {
    interface Delivery {
      deadLetterSink?: { ref?: { apiVersion: string; kind: string; name: string; namespace?: string }; uri?: string };
      retry?: number;
      backoffPolicy?: string;
      backoffDelay?: string;
    }
    const deliveries = [...ofKind("eventing.knative.dev/v1", "Broker"), ...ofKind("eventing.knative.dev/v1", "Trigger")].map((o) => ({ key: key(o), delivery: (spec(o).delivery ?? {}) as Delivery }));
    assert.equal(deliveries.length, 8);
    const sinks = new Set<string>();
    for (const { key: where, delivery } of deliveries) {
      const ref = delivery.deadLetterSink?.ref;
      assert.ok(ref, `${where}: a dead-letter sink`);
      assert.equal(ref.namespace, undefined, `${where}: the sink is in the install's namespace`);
      sinks.add(`${ref.apiVersion} ${ref.kind} ${INSTALL_NAMESPACE}/${ref.name}`);
      assert.ok(Number.isInteger(delivery.retry) && (delivery.retry ?? 0) >= 3, `${where}: retries`);
      assert.equal(delivery.backoffPolicy, "exponential", where);
      assert.match(delivery.backoffDelay ?? "", /^PT\d+(\.\d+)?S$/, `${where}: an ISO 8601 duration`);
      // Knative waits backoffDelay × 2^i before retry i+1: the sum must outlast an API server restart (a minute or more).
      const total = backoffSeconds(delivery as DeliverySpec).reduce((a, b) => a + b, 0);
      assert.ok(total >= 120, `${where}: retries span ${total} s`);
    }
    assert.deepEqual([...sinks], [`serving.knative.dev/v1 Service ${INSTALL_NAMESPACE}/appmonitor-dead-letter`], "one sink for all");
    const sink = ofKind("serving.knative.dev/v1", "Service").find((o) => o.metadata.name === "appmonitor-dead-letter") as KnativeService | undefined;
    assert.ok(sink, "the sink is installed");
    assert.equal(sink.metadata.labels?.["networking.knative.dev/visibility"], "cluster-local");
    assert.equal(sink.spec.template.spec.serviceAccountName, "appmonitor-dead-letter", "its own ServiceAccount: it writes the dead letters' Events");
    const annotations = sink.spec.template.metadata?.annotations ?? {};
    assert.equal(annotations["autoscaling.knative.dev/min-scale"], "1", "never scaled to zero: a dead letter is recorded without a cold start");
    assert.deepEqual(containerOf(sink).securityContext, restrictedSecurityContext(1000), "the user of the functions' image");
    const subscribers = ofKind("eventing.knative.dev/v1", "Trigger").map((t) => (spec(t) as { subscriber: { ref: { name: string } } }).subscriber.ref.name);
    assert.ok(!subscribers.includes("appmonitor-dead-letter"), "no Trigger feeds the sink: only failed deliveries reach it");
  });

  test("every type routed to rule-sync is one rule-sync handles", () => {
    const appMonitor = { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, metadata: { name: "m", namespace: "ns", uid: "u" } };
    for (const t of ofKind("eventing.knative.dev/v1", "Trigger")) {
      const s = spec(t) as { filter: { attributes: { type: string } }; subscriber: { ref: { name: string } } };
      if (s.subscriber.ref.name !== "rule-sync") continue;
      assert.doesNotThrow(() => readTrigger({ type: s.filter.attributes.type, data: appMonitor }), s.filter.attributes.type);
    }
  });

  test("the resync Triggers (rule-sync's, memory-scaler's rollout follow-up) match only this install's PingSource", () => {
    const [ping] = ofKind("sources.knative.dev/v1", "PingSource");
    assert.ok(ping);
    const triggers = ofKind("eventing.knative.dev/v1", "Trigger").filter((t) => (spec(t) as { filter: { attributes: { type: string } } }).filter.attributes.type === PING_EVENT_TYPE);
    assert.equal(triggers.length, 2);
    // Knative's PingSource sets source to /apis/v1/namespaces/<namespace>/pingsources/<name>.
    for (const trigger of triggers) {
      assert.equal((spec(trigger) as { filter: { attributes: { source?: string } } }).filter.attributes.source, `/apis/v1/namespaces/${ping.metadata.namespace}/pingsources/${ping.metadata.name}`);
    }
    const p = spec(ping) as { schedule: string; sink: { ref: { kind: string; name: string } } };
    assert.equal(p.schedule.trim().split(/\s+/).length, 5, "a five-field cron schedule");
    assert.deepEqual(p.sink.ref, { apiVersion: "eventing.knative.dev/v1", kind: "Broker", name: "default" });
  });

  test("the SinkBinding gives alert-receiver the Broker as K_SINK", () => {
    const [binding] = ofKind("sources.knative.dev/v1", "SinkBinding");
    const s = spec(binding as Manifest) as { subject: Record<string, unknown>; sink: { ref: Record<string, unknown> } };
    assert.deepEqual(s.subject, { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "alert-receiver" });
    assert.deepEqual(s.sink.ref, { apiVersion: "eventing.knative.dev/v1", kind: "Broker", name: "default" });
  });

  test("the ApiServerSource sends whole AppMonitors from every namespace, as its own ServiceAccount", () => {
    const [source] = ofKind("sources.knative.dev/v1", "ApiServerSource");
    const s = spec(source as Manifest) as { mode: string; namespaceSelector?: object; resources: object[]; serviceAccountName: string; sink: { ref: object } };
    assert.equal(s.mode, "Resource");
    assert.deepEqual(s.resources, [{ apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND }]);
    assert.deepEqual(s.namespaceSelector, {}, "an empty selector: all namespaces");
    assert.equal(s.serviceAccountName, "appmonitor-source");
    assert.deepEqual(s.sink.ref, { apiVersion: "eventing.knative.dev/v1", kind: "Broker", name: "default" });
    const [crd] = ofKind("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    const crdSpec = spec(crd as Manifest) as { group: string; names: { kind: string }; versions: { name: string }[] };
    assert.equal(`${crdSpec.group}/${crdSpec.versions[0]?.name}`, APPMONITOR_API_VERSION);
    assert.equal(crdSpec.names.kind, APPMONITOR_KIND);
  });
});

describe("the examples (kubectl kustomize knative/examples/)", () => {
  test("hold the original AppMonitor unchanged and the memhog Deployment", async () => {
    const examples = await kustomize("knative/examples");
    const monitor = examples.find((o) => o.kind === APPMONITOR_KIND);
    assert.deepEqual(monitor, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor" }, spec: { memThresholdPercent: 75, memMultiplier: 2 } });
    assert.deepEqual(await manifestFile("knative/examples/appmonitor.yaml"), [monitor]);
    const memhog = examples.find((o) => o.kind === "Deployment");
    assert.equal(memhog?.metadata.name, "memhog");
    await validateAgainstPublishedSchema(memhog as Manifest);
  });
});
