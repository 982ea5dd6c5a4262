// Knative Eventing's install rendered from the pinned module's own config/ tree (in the Go module
// cache; `go mod download` fetches it when missing): every ko:// reference becomes the name of an
// image build.sh makes, nothing else differs from Eventing's YAML, and the parts appmonitor needs
// are all there, in an order that can be applied.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import {
  EVENTING_IMAGE_REPOSITORY, EVENTING_LEFT_OUT, EVENTING_NAMESPACE, eventingImage, parseEventingFile, renderEventing, selectEventingFiles,
  type EventingFile, type EventingObject,
} from "../../harness/stack/eventing-manifests.ts";
import { EVENTING_SINK_COMMANDS, eventingFiles, eventingImageArchive, eventingModule, goModTools, type EventingModule } from "../../harness/stack/eventing-source.ts";

let module: EventingModule;
let files: EventingFile[];
let objects: EventingObject[];

before(async () => {
  module = await eventingModule();
  files = await eventingFiles(module.dir);
  objects = renderEventing(files, module.version, module.commands);
});

/** Every string anywhere in `value`. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

const named = (kind: string): string[] => objects.filter((o) => o.kind === kind).map((o) => o.metadata.name);

describe("the pinned module", () => {
  test("is Eventing v0.50.0, and its tool block names the commands the install runs and the dead-letter sink's", () => {
    assert.equal(module.version, "v0.50.0");
    assert.deepEqual([...module.commands].sort(), [
      "apiserver_receive_adapter", "auth_proxy", "broker/filter", "broker/ingress", "controller", "event_display",
      "in_memory/channel_controller", "in_memory/channel_dispatcher", "mtchannel_broker", "mtping", "webhook",
    ]);
    assert.deepEqual(Object.keys(EVENTING_SINK_COMMANDS), ["event_display"]);
  });

  test("each command's binary name is unique, so its image archive is too", () => {
    const archives = module.commands.map((c) => eventingImageArchive("/cache/bin", c));
    assert.equal(new Set(archives).size, archives.length);
    assert.equal(eventingImageArchive("/cache/bin", "broker/ingress"), "/cache/bin/knative-eventing/ingress.oci.tar");
  });
});

describe("ko:// references", () => {
  test("none is left, and every built command's image is named but the dead-letter sink's", () => {
    const all = strings(objects);
    assert.deepEqual(all.filter((s) => s.includes("ko://")), []);
    const images = new Set(all.filter((s) => s.startsWith(`${EVENTING_IMAGE_REPOSITORY}/`)));
    const installed = module.commands.filter((c) => !(c in EVENTING_SINK_COMMANDS));
    assert.deepEqual([...images].sort(), installed.map((c) => eventingImage(c, module.version)).sort());
  });

  test("nothing else differs from Eventing's YAML: the text with its references substituted parses to the same objects", () => {
    const expected = files.flatMap((file) => {
      const text = file.text.replace(/ko:\/\/knative\.dev\/eventing\/cmd\/([a-z_/]+)/g, (_, command: string) => eventingImage(command, module.version));
      return parseAllDocuments(text).map((d) => d.toJS() as unknown).filter((o) => o !== null);
    });
    assert.deepStrictEqual(objects, expected);
  });

  test("every container of every workload runs one of our images", () => {
    const deployments = objects.filter((o) => o.kind === "Deployment");
    for (const d of deployments) {
      const containers = (d.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers;
      for (const c of containers) assert.ok(c.image.startsWith(`${EVENTING_IMAGE_REPOSITORY}/`), `${d.metadata.name}: ${c.image}`);
    }
  });

  test("a reference to a command that is not built, or outside Eventing's cmd/, is refused, naming file and object", () => {
    const file = (image: string): EventingFile => ({
      path: "core/deployments/x.yaml",
      text: `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: x, image: "${image}"}]}}}\n`,
    });
    assert.throws(() => renderEventing([file("ko://knative.dev/eventing/cmd/jobsink")], "v1", ["controller"]), /core\/deployments\/x\.yaml: Deployment x names ko:\/\/knative\.dev\/eventing\/cmd\/jobsink/);
    assert.throws(() => renderEventing([file("ko://knative.dev/pkg/cmd/migrate")], "v1", ["controller"]), /names ko:\/\/knative\.dev\/pkg\/cmd\/migrate/);
    const [rendered] = renderEventing([file("ko://knative.dev/eventing/cmd/controller")], "v1", ["controller"]);
    assert.deepEqual(strings(rendered).filter((s) => s.includes(":")), ["localhost/appmonitor/knative-eventing/controller:v1"]);
  });
});

describe("the files", () => {
  test("are the YAML of the core, the in-memory channel and the MT channel broker, in ko's walk order, less the unused receivers", () => {
    const paths = files.map((f) => f.path);
    assert.equal(paths[0], "core/100-namespace.yaml");
    const part = (p: string): number => ["core/", "channels/in-memory-channel/", "brokers/mt-channel-broker/"].findIndex((prefix) => p.startsWith(prefix));
    assert.ok(paths.every((p, i) => part(p) >= 0 && p.endsWith(".yaml") && (i === 0 || part(paths[i - 1] as string) <= part(p))), paths.join("\n"));
    for (const left of Object.keys(EVENTING_LEFT_OUT)) assert.ok(!paths.includes(left), left);
    assert.ok(paths.indexOf("core/deployments/webhook.yaml") < paths.indexOf("core/webhooks/defaulting.yaml"));
  });

  test("selection keeps only .yaml under the three parts, orders each directory by name, and drops the left-out files", () => {
    const selected = selectEventingFiles([
      "brokers/mt-channel-broker/roles/b.yaml", "core/webhooks/a.yaml", "core/README.md", "core/placeholder.go",
      "brokers/mt-channel-broker/200-ingress-roles.yaml~cd5b396a2 (stray)", "core/deployments/job-sink.yaml", "core/a-b/x.yaml",
      "core/a/x.yaml", "tools/event-display/x.yaml", "channels/in-memory-channel/x.yaml", "core/100-namespace.yaml",
    ]);
    assert.deepEqual(selected, [
      "core/100-namespace.yaml", "core/a/x.yaml", "core/a-b/x.yaml", "core/webhooks/a.yaml",
      "channels/in-memory-channel/x.yaml", "brokers/mt-channel-broker/roles/b.yaml",
    ]);
  });

  test("a document that is not a Kubernetes object is refused, naming the file", () => {
    assert.throws(() => parseEventingFile({ path: "core/x.yaml", text: "a: 1\n" }), /core\/x\.yaml: document 1 is not a Kubernetes object/);
    assert.deepEqual(parseEventingFile({ path: "core/x.yaml", text: "# only a licence header\n---\n" }), []);
  });
});

describe("the objects", () => {
  test("start with the knative-eventing Namespace, and every namespaced object is in it", () => {
    assert.equal(objects[0]?.kind, "Namespace");
    assert.equal(objects[0]?.metadata.name, EVENTING_NAMESPACE);
    const namespaced = objects.filter((o) => o.metadata.namespace !== undefined);
    assert.ok(namespaced.length > 30);
    for (const o of namespaced) assert.equal(o.metadata.namespace, EVENTING_NAMESPACE, `${o.kind} ${o.metadata.name}`);
  });

  test("hold the CRDs of every kind appmonitor's knative/eventing/ uses, and the channel's", () => {
    const crds = named("CustomResourceDefinition");
    for (const crd of [
      "brokers.eventing.knative.dev", "triggers.eventing.knative.dev", "apiserversources.sources.knative.dev", "pingsources.sources.knative.dev",
      "sinkbindings.sources.knative.dev", "channels.messaging.knative.dev", "subscriptions.messaging.knative.dev", "inmemorychannels.messaging.knative.dev",
      "eventtypes.eventing.knative.dev", "eventpolicies.eventing.knative.dev",
    ]) assert.ok(crds.includes(crd), crd);
  });

  test("hold the controllers, the webhook, the PingSource adapter, the channel and the broker's workloads, and no other", () => {
    assert.deepEqual(named("Deployment").sort(), [
      "eventing-controller", "eventing-webhook", "imc-controller", "imc-dispatcher", "mt-broker-controller", "mt-broker-filter",
      "mt-broker-ingress", "pingsource-mt-adapter",
    ]);
    assert.deepEqual(named("StatefulSet"), []);
    for (const service of ["eventing-webhook", "imc-dispatcher", "broker-ingress", "broker-filter"]) assert.ok(named("Service").includes(service), service);
  });

  test("hold the webhook configurations, after every Deployment, and the configuration the controllers read", () => {
    const webhooks = objects.flatMap((o, i) => (/^(Validating|Mutating)WebhookConfiguration$/.test(o.kind) ? [i] : []));
    assert.ok(webhooks.length >= 5);
    const lastCoreDeployment = objects.findIndex((o) => o.kind === "Deployment" && o.metadata.name === "eventing-webhook");
    assert.ok(webhooks.every((i) => i > lastCoreDeployment));
    for (const config of ["config-br-defaults", "config-br-default-channel", "default-ch-webhook", "config-features", "config-logging", "config-imc-event-dispatcher"]) {
      assert.ok(named("ConfigMap").includes(config), config);
    }
  });

  test("hold the RBAC of each ServiceAccount the workloads run as", () => {
    const accounts = new Set(named("ServiceAccount"));
    const bound = new Set(
      objects
        .filter((o) => o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding")
        .flatMap((o) => ((o.subjects as { kind: string; name: string }[] | undefined) ?? []).filter((s) => s.kind === "ServiceAccount").map((s) => s.name)),
    );
    for (const d of objects.filter((o) => o.kind === "Deployment")) {
      const account = (d.spec as { template: { spec: { serviceAccountName?: string } } }).template.spec.serviceAccountName;
      assert.ok(account && accounts.has(account) && bound.has(account), `${d.metadata.name}: ${account}`);
    }
  });

  test("are parsed from the module's go.mod tool block single-line and block forms alike", () => {
    assert.deepEqual(goModTools("module m\n\ntool a/b // why\ntool (\n\tc/d\n\t// e/f\n\tg/h\n)\nrequire x v1\n"), ["a/b", "c/d", "g/h"]);
  });
});
