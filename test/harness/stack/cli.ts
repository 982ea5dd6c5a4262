/**
 * `npm run stack -- up [--real-node] | down | status | env`: the local Kubernetes + Prometheus +
 * Alertmanager stack for users and tests. State lives in `APPMONITOR_STACK_DIR` (default
 * `<repo>/.stack`). `--real-node` adds the real node (containerd, runc, CNI, a kubelet; root only)
 * and first builds the memhog image its registry serves (cached; `npm run image`'s);
 * `--eventing` also installs Knative Eventing on it (`eventing-install.ts`), and `--serving` (with
 * `--eventing`) Knative Serving all but the ingress (`serving-install.ts`); `down` removes them with the node.
 * `--prometheus-operator` (with or without `--real-node`) installs the monitoring.coreos.com CRDs
 * and runs prometheus-operator with a Prometheus and an Alertmanager as kube-prometheus-stack's
 * defaults make them (`prometheus-operator.ts`).
 *
 * Exit codes: 0 done; 1 a step or component failed (the message names it); 2 usage.
 * Environment: `STACK_NODES` (fake Nodes, default 2), `STACK_SCRAPE_INTERVAL` and
 * `STACK_EVALUATION_INTERVAL` (Prometheus durations, default `1s`), `KUBEBUILDER_ASSETS`,
 * `APPMONITOR_CACHE` (where the Go-built binaries are cached, default `~/.cache/appmonitor`).
 */
import { defaultStateDir } from "./paths.ts";
import { down, envLines, statusLines, up } from "./stack.ts";
import { readState, saveState } from "./state.ts";

const usage = "usage: npm run stack -- up [--real-node [--eventing [--serving]]] [--prometheus-operator] | down | status | env";
const upFlags = ["--real-node", "--eventing", "--serving", "--prometheus-operator"];

async function main(command: string | undefined, flags: string[]): Promise<number> {
  const unknown = flags.filter((f) => !(command === "up" && upFlags.includes(f)));
  if (flags.includes("--eventing") && !flags.includes("--real-node")) {
    console.error(`${usage}\n--eventing runs Knative Eventing on the real node: add --real-node`);
    return 2;
  }
  if (flags.includes("--serving") && !flags.includes("--eventing")) {
    console.error(`${usage}\n--serving runs Knative Serving beside Eventing on the real node: add --real-node --eventing`);
    return 2;
  }
  if (unknown.length > 0) {
    console.error(`${usage}\nunknown: ${unknown.join(" ")}`);
    return 2;
  }
  const stateDir = defaultStateDir();
  switch (command) {
    case "up": {
      const running = await readState(stateDir);
      if (running) console.error(`stack: already running in ${stateDir}`);
      // The real node's registry serves memhog, which the original manifest names: built (cached) first.
      if (flags.includes("--real-node") && !running) {
        const { buildImages } = await import("../../../scripts/images/build.ts");
        await buildImages(["memhog"], (line) => console.error(`stack: images: ${line}`));
      }
      const state = await up({
        stateDir,
        nodes: Number(process.env.STACK_NODES ?? 2),
        scrapeInterval: process.env.STACK_SCRAPE_INTERVAL ?? "1s",
        evaluationInterval: process.env.STACK_EVALUATION_INTERVAL ?? "1s",
        realNode: flags.includes("--real-node"),
        prometheusOperator: flags.includes("--prometheus-operator"),
        progress: (line) => console.error(`stack: ${line}`),
      });
      console.log(`kube-apiserver  ${state.apiserverUrl}  (KUBECONFIG=${state.kubeconfig})`);
      console.log(`prometheus      ${state.prometheusUrl}  (rules: ${state.rulesDir}/*.yml)`);
      console.log(`alertmanager    ${state.alertmanagerUrl}`);
      console.log(`kwok (kubelet)  ${state.kwokUrl}/metrics/nodes/<node>/metrics/cadvisor  (nodes: ${state.nodes.join(", ")})`);
      if (state.realNode) {
        console.log(`real node       ${state.realNode.name} ${state.realNode.ip}, kubelet ${state.realNode.kubeletUrl}/metrics/cadvisor  (containerd unix://${state.realNode.paths.containerdSocket})`);
      }
      if (state.registry) {
        console.log(`registry        ${state.registry.url}  (the real node pulls ${state.registry.mirrors.join(", ")} images from it)`);
      }
      if (state.prometheusOperator) {
        const po = state.prometheusOperator;
        console.log(`prometheus-operator ${po.version}  ${po.metricsUrl}  (Prometheus ${po.namespace}/${po.prometheus} selects release=${po.release}; Alertmanager ${po.namespace}/${po.alertmanager})`);
      }
      if (flags.includes("--eventing") && !state.eventing) {
        // Loaded here: the Kubernetes client and the Eventing module are needed for this alone.
        const { installEventing } = await import("./eventing-install.ts");
        const installed = await installEventing(state, undefined, (line) => console.error(`stack: ${line}`));
        state.eventing = { version: installed.version, deployments: installed.deployments };
        await saveState(state);
        console.error(`stack: Knative Eventing ${installed.version} Available on the real node (${installed.seconds.toFixed(1)} s)`);
      }
      if (flags.includes("--serving") && !state.serving) {
        const { installServing } = await import("./serving-install.ts");
        const installed = await installServing(state, { progress: (line) => console.error(`stack: ${line}`) });
        state.serving = { version: installed.version, deployments: installed.deployments };
        await saveState(state);
        console.error(`stack: Knative Serving ${installed.version} (no ingress) Available on the real node (${installed.seconds.toFixed(1)} s)`);
      }
      if (state.eventing) console.log(`eventing        Knative Eventing ${state.eventing.version} on the real node: ${state.eventing.deployments.join(", ")}`);
      if (state.serving) console.log(`serving         Knative Serving ${state.serving.version} on the real node, no ingress: ${state.serving.deployments.join(", ")}`);
      console.log(`state           ${state.stateDir}`);
      console.log(`\nuse it from a shell: eval "$(npm run -s stack -- env)"`);
      return 0;
    }
    case "down": {
      const stopped = await down(stateDir);
      console.log(stopped.length ? `stopped: ${stopped.join(", ")}` : `no stack in ${stateDir}`);
      return 0;
    }
    case "status": {
      const state = await readState(stateDir);
      if (!state) {
        console.log(`no stack in ${stateDir}; run 'npm run stack -- up' to start one`);
        return 1;
      }
      const lines = await statusLines(state);
      console.log(lines.join("\n"));
      return lines.some((l) => l.includes("STOPPED") || l.includes("MISSING") || l.includes("NOT READY")) ? 1 : 0;
    }
    case "env": {
      const state = await readState(stateDir);
      if (!state) {
        console.error(`stack: no stack in ${stateDir}; run 'npm run stack -- up' first`);
        return 1;
      }
      console.log(envLines(state).join("\n"));
      return 0;
    }
    default:
      console.error(command === undefined ? usage : `${usage}\nunknown command: ${command}`);
      return 2;
  }
}

main(process.argv[2], process.argv.slice(3)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`stack: ${error.message}`);
    process.exit(1);
  },
);
