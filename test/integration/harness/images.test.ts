// The function images, built for real by `npm run image` (scripts/images/build.ts) from the
// repository's Dockerfile and run with podman as Knative runs their containers: read-only root
// file system, user 1000, no capabilities, no privilege escalation, `PORT` from the runtime,
// the env of knative/services/*.yaml. Each becomes ready, serves its probes and metrics, handles
// its main request from inside the container (memory-scaler and rule-sync through the in-cluster
// configuration, with a ServiceAccount token mounted where the kubelet mounts it), finishes an
// in-flight request on SIGTERM and exits 0, and changes nothing in its file system.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { lstat, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { CloudEvent } from "cloudevents";
import { buildImages, FUNCTION_IMAGES, MEMHOG_IMAGES, type BuiltImage } from "../../../scripts/images/build.ts";
import { podman } from "../../../scripts/images/podman.ts";
import { startSink, type TestSink } from "../../support/cloudevent-sink.ts";
import { runContainer, SERVICE_ACCOUNT_MOUNT, serviceAccountCredentials, type FunctionContainer, type InClusterCredentials } from "../../harness/lib/container.ts";
import { installMemoryScaler } from "../../support/install.ts";
import { containerOf, FUNCTION_NAMES, kustomize, servicesByFunction, type FunctionName, type KnativeService } from "../../support/knative.ts";
import { alertEvent, deliver, SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT } from "../../support/memory-scaler.ts";
import { postEvent } from "../../support/post-event.ts";
import { installRuleSync, readAppMonitor, readRule, RULE_SYNC_NAMESPACE, RULE_SYNC_SERVICE_ACCOUNT, createAppMonitor } from "../../support/rule-sync.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../../support/stack.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";

const WEBHOOK_TOKEN = "image-test-token";
let built: Map<string, BuiltImage>;
let services: Record<FunctionName, KnativeService>;
let dir: TempDir;
let sink: TestSink;
/** Between the containers and the API server, so a test can slow requests down. */
let apiProxy: TcpProxy;

before(async () => {
  built = new Map((await buildImages()).map((image) => [image.name, image]));
  services = servicesByFunction(await kustomize("knative"));
  dir = await tempDir("images");
  sink = await startSink();
  const api = new URL((await stack()).apiserverUrl);
  apiProxy = await startTcpProxy(api.hostname, Number(api.port));
  await Promise.all([installMemoryScaler(), installRuleSync()]);
});

after(async () => {
  await sink?.stop();
  await apiProxy?.stop();
  await dir?.remove();
});

/** The Knative Service's env for `name`, as the Service sets it. */
function serviceEnv(name: FunctionName): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of containerOf(services[name]).env ?? []) if (entry.value !== undefined) env[entry.name] = entry.value;
  return env;
}

/** memory-scaler's or rule-sync's in-cluster credentials; their API calls go through the proxy. */
async function credentials(namespace: string, name: string): Promise<InClusterCredentials> {
  return serviceAccountCredentials(await adminKubeConfig(), namespace, name, dir.path, { host: "127.0.0.1", port: apiProxy.port });
}

/** Starts the function's image with its Service's env and what the cluster would give it. */
async function start(name: FunctionName): Promise<FunctionContainer> {
  const image = FUNCTION_IMAGES[name];
  const env: Record<string, string> = { ...serviceEnv(name), K_SERVICE: name };
  if (name === "alert-receiver") {
    // WEBHOOK_TOKEN_FILE names the Secret's mount; the token comes inline here instead.
    delete env.WEBHOOK_TOKEN_FILE;
    return runContainer({ image, env: { ...env, WEBHOOK_TOKEN, K_SINK: sink.url } });
  }
  // The Services' PROMETHEUS_URL names kube-prometheus-stack's in-cluster Service: not here.
  delete env.PROMETHEUS_URL;
  if (name === "memory-scaler") {
    // Without it memory-scaler starts only when told to take alerts unverified.
    return runContainer({ image, env: { ...env, ALLOW_UNVERIFIED_ALERTS: "true" }, credentials: await credentials(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT) });
  }
  // The shared stack's AppMonitors belong to other tests.
  return runContainer({ image, env: { ...env, RESYNC_ON_START: "false" }, credentials: await credentials(RULE_SYNC_NAMESPACE, RULE_SYNC_SERVICE_ACCOUNT) });
}

/** Files and directories under `root` (not following links), with their owners. */
async function walk(root: string, rel = ""): Promise<{ path: string; uid: number; gid: number }[]> {
  const out: { path: string; uid: number; gid: number }[] = [];
  for (const entry of await readdir(path.join(root, rel))) {
    const p = path.join(rel, entry);
    const stat = await lstat(path.join(root, p));
    out.push({ path: `/${p}`, uid: stat.uid, gid: stat.gid });
    if (stat.isDirectory()) out.push(...(await walk(root, p)));
  }
  return out;
}

describe("the images' file systems", () => {
  for (const name of FUNCTION_NAMES) {
    it(`${name}: the bundle, its compile cache and Node only; nothing belongs to user 1000; runs as 1000 with node as PID 1`, async () => {
      const image = built.get(name) ?? assert.fail(`${name} built`);
      const { stdout } = await podman(["image", "mount", image.id]);
      const root = stdout.trim();
      try {
        const files = await walk(root);
        assert.deepEqual(files.filter((f) => f.uid === 1000 || f.gid === 1000).map((f) => f.path), [], "no file owned by user or group 1000");
        const app = files.filter((f) => f.path.startsWith("/app/")).map((f) => f.path.split("/")[2]);
        assert.deepEqual([...new Set(app)].sort(), ["compile-cache", "function.mjs", "function.mjs.LEGAL.txt", "main.mjs"]);
        assert.ok(files.some((f) => f.path.startsWith("/app/compile-cache/") && f.path.split("/").length > 4), "the compile cache holds an entry");
        assert.ok(!files.some((f) => f.path.includes("/node_modules/") && f.path.startsWith("/app")), "no node_modules in /app");
      } finally {
        await podman(["image", "unmount", image.id]);
      }
      const { stdout: config } = await podman(["image", "inspect", "--format", "{{json .Config}}", image.id]);
      const parsed = JSON.parse(config) as { User?: string; Cmd?: string[]; Env?: string[]; ExposedPorts?: Record<string, unknown> };
      assert.equal(parsed.User, "1000:1000");
      assert.deepEqual(parsed.Cmd, ["node", "/app/main.mjs"]);
      assert.ok(parsed.Env?.includes(`FUNCTION=${name}`) && parsed.Env.includes("NODE_COMPILE_CACHE=/app/compile-cache"), String(parsed.Env));
      assert.deepEqual(Object.keys(parsed.ExposedPorts ?? {}), ["8080/tcp"]);
    });
  }
});

for (const name of FUNCTION_NAMES) {
  describe(`the ${name} image as a Knative container`, () => {
    let container: FunctionContainer;
    before(async () => {
      container = await start(name);
    });
    after(async () => {
      await container?.remove();
    });

    it("is ready, live, and serves Prometheus metrics", async () => {
      assert.equal((await fetch(`${container.url}/health/readiness`)).status, 200);
      assert.equal((await fetch(`${container.url}/health/liveness`)).status, 200);
      const metrics = await fetch(`${container.url}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^# HELP /m);
      const { stdout } = await podman(["top", container.name, "pid", "args"]);
      assert.match(stdout, /^1\s+node \/app\/main\.mjs\s*$/m, `node is PID 1:\n${stdout}`);
      const status = await readFile(`/proc/${container.pid}/status`, "utf8");
      assert.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m, "runs as user 1000");
      assert.match(status, /^CapEff:\s+0+$/m, "with no capabilities");
      assert.match(status, /^NoNewPrivs:\s+1$/m, "and no new privileges");
    });

    it("can write /tmp only: the root file system is read-only", async () => {
      const write = (file: string) => podman(["exec", container.name, "node", "-e", `require("node:fs").writeFileSync(${JSON.stringify(file)}, "x")`]);
      await write("/tmp/probe");
      for (const file of ["/app/probe", "/probe", "/usr/probe"]) await assert.rejects(write(file), /EROFS|read-only/i, file);
    });

    it("handles its main request, finishes one in flight on SIGTERM, exits 0, and writes nothing outside /tmp", async (t) => {
      const request = await mainRequest(name, await freshNamespace(t), container);
      await request.send(false);
      // Slow the request down (alert-receiver's sink under its 2 s timeout; each API call
      // memory-scaler and rule-sync make by 0.4 s), stop the container while it is in flight.
      if (name === "alert-receiver") sink.answerAfter(1500);
      else apiProxy.setLatency(400);
      try {
        const inFlight = request.send(true).then(() => Date.now());
        await new Promise((resolve) => setTimeout(resolve, 500));
        const stopAt = Date.now();
        const [sent, stopped] = await Promise.allSettled([inFlight, container.stop(30)]);
        if (sent.status === "rejected") throw sent.reason;
        if (stopped.status === "rejected") throw stopped.reason;
        assert.ok(sent.value > stopAt, "the request was still in flight when SIGTERM was sent");
        assert.equal(stopped.value, 0, await container.logs());
      } finally {
        sink.answerAfter(0);
        apiProxy.setLatency(0);
      }
      const logs = await container.logs();
      assert.match(logs, /"msg":"shutting down"/);
      // What podman itself changes to run any container: /etc/hosts, /etc/resolv.conf and
      // /etc/hostname bind-mounted, mount points made for the token and a tmpfs on /var/tmp.
      const byPodman = new Set(["C /etc", "C /var", "A /var/run", "A /var/run/secrets", "A /var/run/secrets/kubernetes.io", `A ${SERVICE_ACCOUNT_MOUNT}`, "A /var/tmp"]);
      assert.deepEqual((await container.diff()).filter((change) => !byPodman.has(change)), [], "nothing else in the root file system changed");
    });
  });
}

/** One main request per function: `send(second)` sends it and asserts its complete effect. */
async function mainRequest(name: FunctionName, ns: string, container: FunctionContainer): Promise<{ send(second: boolean): Promise<void> }> {
  const kc = await adminKubeConfig();
  if (name === "alert-receiver") {
    return {
      async send(second) {
        const pod = `memhog-${second ? "b" : "a"}`;
        const before = sink.received.length;
        const response = await fetch(`${container.url}/`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${WEBHOOK_TOKEN}` },
          body: JSON.stringify({
            version: "4", status: "firing", receiver: "appmonitor", groupKey: "{}", externalURL: "http://alertmanager.test:9093",
            alerts: [{
              status: "firing", labels: { alertname: "AppMonitorMemoryHigh", namespace: ns, pod, appmonitor: "mymonitor" }, annotations: {},
              startsAt: new Date().toISOString(), endsAt: "0001-01-01T00:00:00Z", generatorURL: "http://prometheus.test:9090/graph", fingerprint: second ? "02" : "01",
            }],
          }),
        });
        assert.equal(response.status, 200, await response.text());
        assert.equal(sink.received.length, before + 1, "one CloudEvent reached the sink");
        assert.equal(sink.received.at(-1)?.event.subject, `namespaces/${ns}/pods/${pod}`);
      },
    };
  }
  if (name === "memory-scaler") {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await objects.create({ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: ns }, spec: { memThresholdPercent: 75, memMultiplier: 2 } } as k8s.KubernetesObject);
    const deploy = async (workload: string): Promise<string> => {
      await apps.createNamespacedDeployment({
        namespace: ns,
        body: {
          metadata: { name: workload },
          spec: {
            replicas: 1,
            selector: { matchLabels: { name: workload } },
            template: {
              metadata: { labels: { name: workload }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } },
              spec: { containers: [{ name: "memhog", image: MEMHOG_IMAGES[1], resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }] },
            },
          },
        },
      });
      const core = kc.makeApiClient(k8s.CoreV1Api);
      return waitFor(`a Running Pod of ${workload}`, async () => {
        const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `name=${workload}` });
        return pods.items.find((p) => p.status?.phase === "Running")?.metadata?.name;
      }, 60_000);
    };
    const pods = { first: await deploy("memhog-a"), second: await deploy("memhog-b") };
    return {
      async send(second) {
        const workload = second ? "memhog-b" : "memhog-a";
        const answer = await deliver(container.url, alertEvent({ namespace: ns, pod: second ? pods.second : pods.first, container: "memhog", appmonitor: "mymonitor" }));
        assert.ok(answer.status >= 200 && answer.status < 300, `${answer.status} ${answer.outcome ?? ""} ${answer.text}`);
        assert.equal(answer.reason, "Scaled");
        const deployment = await apps.readNamespacedDeployment({ name: workload, namespace: ns });
        const resources = deployment.spec?.template.spec?.containers[0]?.resources;
        assert.deepEqual([resources?.limits?.memory, resources?.requests?.memory], ["768Mi", "512Mi"]);
        const status = (await readAppMonitor(ns, "mymonitor")) as { status?: { scaleCount?: number } };
        assert.equal(status.status?.scaleCount, second ? 2 : 1, "the scale is recorded in the AppMonitor's status");
      },
    };
  }
  return {
    async send(second) {
      const monitor = await createAppMonitor(ns, second ? "second" : "first", { memThresholdPercent: 75, memMultiplier: 2 });
      const { apiserverUrl } = await stack();
      const answer = await postEvent(`${container.url}/`, new CloudEvent({ type: "dev.knative.apiserver.resource.add", source: apiserverUrl, datacontenttype: "application/json", data: monitor }));
      assert.ok(answer.status >= 200 && answer.status < 300, `${answer.status} ${answer.text}`);
      const rule = await readRule(ns, monitor.metadata.name);
      assert.ok(rule, "the PrometheusRule exists once the event is answered");
      assert.ok(rule.spec?.groups?.[0]?.rules?.length, "the rule has its alert");
      const stored = await readAppMonitor(ns, monitor.metadata.name);
      // Its status written (no PROMETHEUS_URL here, so RuleReady can only say it does not know).
      assert.ok(stored.status?.conditions?.some((c) => c.type === "RuleReady" && c.status === "Unknown" && c.reason === "PrometheusNotConfigured"), JSON.stringify(stored.status));
    },
  };
}

describe("the memhog image", () => {
  /** Runs memhog detached with `env` and a memory limit; returns its container name. */
  async function runMemhog(env: Record<string, string>, memoryLimit: string): Promise<string> {
    const name = `appmonitor-test-memhog-${Math.random().toString(16).slice(2, 10)}`;
    await podman(["run", "--detach", "--name", name, "--network=none", "--read-only", "--cap-drop=all", `--memory=${memoryLimit}`, "--memory-swap", memoryLimit,
      ...Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]), MEMHOG_IMAGES[1]]);
    return name;
  }
  const inspect = async (name: string): Promise<{ running: boolean; pid: number; exitCode: number }> => {
    const { stdout } = await podman(["inspect", "--format", "{{.State.Running}} {{.State.Pid}} {{.State.ExitCode}}", name]);
    const [running, pid, exitCode] = stdout.trim().split(" ");
    return { running: running === "true", pid: Number(pid), exitCode: Number(exitCode) };
  };

  it("allocates its target, holds it resident, and stops on SIGTERM", async () => {
    const name = await runMemhog({ MEMHOG_TARGET: "48Mi", MEMHOG_RATE: "96Mi" }, "128m");
    try {
      await waitFor("memhog to hold its target", async () => (await podman(["logs", name])).stdout.includes(`holding ${48 * 1024 * 1024} bytes`), 30_000);
      const status = await readFile(`/proc/${(await inspect(name)).pid}/status`, "utf8");
      const rssKiB = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
      assert.ok(rssKiB >= 48 * 1024 && rssKiB < 64 * 1024, `resident ${rssKiB} KiB: the 48Mi it holds, little more`);
      await podman(["stop", "--time=10", name]);
      assert.equal((await inspect(name)).exitCode, 0);
    } finally {
      await podman(["rm", "--force", "--time=0", name]).catch(() => undefined);
    }
  });

  it("in grow mode is OOM-killed by the kernel at its memory limit", async () => {
    const name = await runMemhog({ MEMHOG_MODE: "grow", MEMHOG_RATE: "128Mi" }, "64m");
    try {
      const state = await waitFor("memhog to be killed", async () => {
        const s = await inspect(name);
        return s.running ? undefined : s;
      }, 30_000);
      assert.equal(state.exitCode, 137, "ended by SIGKILL");
      // Podman's OOMKilled flag stays false under a hybrid cgroup hierarchy (conmon does not see
      // the v1 memory controller's event), so the kernel's own record is what tells: its OOM
      // killer names the container's memory cgroup.
      const { stdout: id } = await podman(["inspect", "--format", "{{.Id}}", name]);
      const { stdout: kernel } = await promisify(execFile)("dmesg", [], { maxBuffer: 64 << 20 });
      assert.match(kernel, new RegExp(`oom-kill:constraint=CONSTRAINT_MEMCG.*oom_memcg=[^,]*${id.trim()}.*task=memhog`), "the kernel's OOM killer killed memhog in its container's memory cgroup");
    } finally {
      await podman(["rm", "--force", "--time=0", name]).catch(() => undefined);
    }
  });
});
