/**
 * What the real node's test checks of the stack's registry: the original memhog manifest,
 * unchanged, pulls its image from it; an image it does not have fails at once, and nothing off
 * the machine is asked. Needs a stack started with the real node (`up({ realNode: true })`) and
 * `APPMONITOR_STACK_DIR` pointing at it (for {@link freshNamespace}).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { REAL_NODE, REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { realNodeKustomization } from "../harness/stack/real-node-overlay.ts";
import { statusLines } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { freshNamespace, waitFor } from "./stack.ts";

const run = promisify(execFile);
const MEMHOG = "quay.io/metral/memhog:v0.0.1";

function clients(state: StackState): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  return kc.makeApiClient(k8s.CoreV1Api);
}

/** The log of one of the stack's components (`registry`, `containerd`). */
function componentLog(state: StackState, name: string): string {
  const component = state.components.find((c) => c.name === name);
  assert.ok(component, `the stack runs ${name}`);
  return readFileSync(component.log, "utf8");
}

/** The kubelet's Events about one Pod, oldest first. */
async function podEvents(core: k8s.CoreV1Api, namespace: string, pod: string): Promise<k8s.CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${pod}` });
  return list.items.sort((a, b) => String(a.lastTimestamp ?? a.eventTime ?? "").localeCompare(String(b.lastTimestamp ?? b.eventTime ?? "")));
}

/**
 * knative/examples/memhog.yaml applied as a user would apply it, with `kubectl apply -k` of a
 * kustomize overlay whose only change is the real node's placement: its Pod runs on the real
 * node from an image containerd pulled from the stack's registry (the kubelet's Pulling and
 * Pulled Events, containerd's PullImage, the registry's access log), with the digest pushed.
 */
export async function originalManifestPullsFromRegistry(t: TestContext, state: StackState): Promise<void> {
  const core = clients(state);
  const registry = state.registry;
  assert.ok(registry, "the stack with the real node runs a registry");
  const manifest = path.join(repoRoot, "knative/examples/memhog.yaml");
  const container = (parse(await readFile(manifest, "utf8")) as k8s.V1Deployment).spec?.template.spec?.containers[0];
  assert.deepEqual([container?.image, container?.imagePullPolicy], [MEMHOG, "Always"], "the original manifest, as published");

  const namespace = await freshNamespace(t);
  const overlay = await mkdtemp(path.join(os.tmpdir(), "appmonitor-overlay-"));
  t.after(() => rm(overlay, { recursive: true, force: true }));
  // kustomize loads resources from inside the overlay only: the manifest goes in as a byte copy.
  await copyFile(manifest, path.join(overlay, "memhog.yaml"));
  await writeFile(path.join(overlay, "kustomization.yaml"), realNodeKustomization("memhog.yaml", namespace));
  const t0 = Date.now();
  await run(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, "apply", "-k", overlay]);

  const pod = await waitFor(`the memhog Pod Running on ${REAL_NODE.name}`, async () => {
    const [p] = (await core.listNamespacedPod({ namespace, labelSelector: "name=memhog" })).items;
    return p?.status?.phase === "Running" && p.status.containerStatuses?.[0]?.ready ? p : undefined;
  }, 90_000, 200);
  const running = Date.now() - t0;
  const name = pod.metadata?.name ?? "";
  assert.equal(pod.spec?.nodeName, REAL_NODE.name);
  assert.equal(pod.spec?.containers[0]?.imagePullPolicy, "Always");

  const events = await podEvents(core, namespace, name);
  const pulled = events.find((e) => e.reason === "Pulled");
  assert.ok(events.some((e) => e.reason === "Pulling" && e.message?.includes(MEMHOG)), "the kubelet pulled the image");
  assert.match(pulled?.message ?? "", /^Successfully pulled image "quay\.io\/metral\/memhog:v0\.0\.1" in /);

  const memhog = registry.images.find((i) => i.reference === MEMHOG);
  assert.ok(memhog, "the registry was given memhog");
  const containerd = componentLog(state, "containerd");
  assert.match(containerd, /PullImage \\"quay\.io\/metral\/memhog:v0\.0\.1\\" returns image reference/);
  assert.ok(state.realNode, "the stack runs the real node");
  const { bins, paths } = state.realNode;
  const listed = (await run(bins.ctr, ["--address", paths.containerdSocket, "--namespace", "k8s.io", "images", "list", `name==${MEMHOG}`])).stdout;
  assert.ok(listed.includes(memhog.digest), `containerd holds the digest pushed, ${memhog.digest}:\n${listed}`);
  // The access log's lines (combined log format), not the registry's own log lines about them.
  const served = componentLog(state, "registry").split("\n")
    .filter((l) => l.startsWith("127.0.0.1 - - ") && l.includes("/v2/quay.io/metral/memhog/") && l.includes('"containerd/'));
  assert.ok(served.some((l) => /"GET \/v2\/quay\.io\/metral\/memhog\/blobs\/sha256:[0-9a-f]{64}\?ns=quay\.io HTTP\/1\.1" 200 /.test(l)), `the registry served memhog's blobs to containerd:\n${served.join("\n")}`);

  const status = await statusLines(state);
  assert.ok(status.some((l) => l.startsWith("registry ") && l.includes("running")), status.join("\n"));
  assert.ok(status.some((l) => l.startsWith("registry image") && l.includes("present") && l.includes(MEMHOG)), status.join("\n"));
  t.diagnostic(`apply -k → Running ${running} ms; ${pulled?.message ?? ""}`);
  t.diagnostic(`registry access log (containerd):\n${served.map((l) => `  ${l.replace(/^\S+ - - \[[^\]]+\] /, "")}`).join("\n")}`);
}

/**
 * Two Pods on the real node whose images cannot be had: one of a mirrored registry that the stack's
 * registry lacks (its 404 is the answer: asked once, and nowhere else), one of a registry with no
 * mirror (the dead proxy on 127.0.0.1 refuses it). Both end in ErrImagePull within seconds.
 */
export async function missingImagesFailFast(t: TestContext, state: StackState): Promise<void> {
  const core = clients(state);
  const namespace = await freshNamespace(t);
  const cases = [
    { name: "absent-tag", image: "quay.io/metral/memhog:absent" },
    { name: "unmirrored", image: "registry.example.org/appmonitor/absent:1" },
  ];
  const t0 = Date.now();
  for (const c of cases) {
    await core.createNamespacedPod({ namespace, body: {
      metadata: { name: c.name },
      spec: { ...REAL_NODE_PLACEMENT, terminationGracePeriodSeconds: 0, containers: [{ name: "main", image: c.image }] },
    } });
  }
  const failures: Record<string, string> = {};
  for (const c of cases) {
    const failed = await waitFor(`${c.name}: ErrImagePull`, async () => {
      const waiting = (await core.readNamespacedPod({ name: c.name, namespace })).status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.reason !== "ErrImagePull" && waiting?.reason !== "ImagePullBackOff") return undefined;
      return (await podEvents(core, namespace, c.name)).find((e) => e.reason === "Failed" && e.message?.startsWith("Failed to pull image"));
    }, 30_000, 100);
    failures[c.name] = failed.message ?? "";
    t.diagnostic(`${c.image}: ErrImagePull within ${Date.now() - t0} ms: ${failed.message ?? ""}`);
  }
  assert.match(failures["absent-tag"] ?? "", /code = NotFound .*quay\.io\/metral\/memhog:absent: not found$/);
  assert.doesNotMatch(failures["absent-tag"] ?? "", /dial|proxy|https:\/\//, "the stack's registry answered; no other host was tried");
  assert.match(componentLog(state, "registry"), /"HEAD \/v2\/quay\.io\/metral\/memhog\/manifests\/absent\?ns=quay\.io HTTP\/1\.1" 404 .*"containerd\//);
  assert.doesNotMatch(componentLog(state, "containerd"), /trying next host.*host=quay\.io/, "containerd had no second host for quay.io");
  assert.match(failures.unmirrored ?? "", /proxyconnect tcp: dial tcp 127\.0\.0\.1:9: connect: connection refused$/, "the dead proxy on the loopback interface: nothing left the machine");
}
