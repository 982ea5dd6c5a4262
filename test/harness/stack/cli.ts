/**
 * `npm run stack -- up [--real-node] | down | status | env`: the local Kubernetes + Prometheus +
 * Alertmanager stack for users and tests. State lives in `APPMONITOR_STACK_DIR` (default
 * `<repo>/.stack`). `--real-node` adds the real node (containerd, runc, CNI, a kubelet; root only)
 * and first builds the memhog image its registry serves (cached; `npm run image`'s);
 * `--eventing` also installs Knative Eventing on it (`eventing-install.ts`), and `--serving` (with
 * `--eventing`) Knative Serving all but the ingress (`serving-install.ts`); `down` removes them with the node.
 * `--prometheus-operator` (with or without `--real-node`) installs the monitoring.coreos.com CRDs
 * and runs prometheus-operator with a Prometheus and an Alertmanager as kube-prometheus-stack's
 * defaults make them (`prometheus-operator.ts`). The options, environment and exit codes are
 * {@link USAGE}'s (`--help`).
 */
import { parseArgs } from "node:util";
import { exitOnHelp, usageText, type CommandUsage, type OptionUsage } from "../../../scripts/lib/usage.ts";
import { defaultStateDir } from "./paths.ts";
import { down, envLines, statusLines, up } from "./stack.ts";
import { readState, saveState } from "./state.ts";

/** `up`'s options: the others take none. */
const OPTIONS = {
  "real-node": { type: "boolean", default: false, means: "add the real node (containerd, runc, CNI, a kubelet; root only) and its registry" },
  eventing: { type: "boolean", default: false, means: "install Knative Eventing on the real node (needs --real-node)" },
  serving: { type: "boolean", default: false, means: "install Knative Serving, all but the ingress, beside Eventing (needs --eventing)" },
  "prometheus-operator": { type: "boolean", default: false, means: "run prometheus-operator with a Prometheus and an Alertmanager as kube-prometheus-stack's defaults make them" },
} as const satisfies Record<string, OptionUsage>;

const USAGE: CommandUsage = {
  synopsis: ["npm run stack -- up [--real-node [--eventing [--serving]]] [--prometheus-operator] | down | status | env"],
  commands: [
    { name: "up", means: "start the stack (or say it runs already) and print its endpoints" },
    { name: "down", means: "stop everything the stack started and remove what it made on the host" },
    { name: "status", means: "each component's state; exit 1 when one is stopped, missing or not ready" },
    { name: "env", means: "the shell lines that point kubectl and the tests at it: eval \"$(npm run -s stack -- env)\"" },
  ],
  options: OPTIONS,
  notes: [
    "State: APPMONITOR_STACK_DIR (default <repo>/.stack). Environment: STACK_NODES (fake Nodes, default 2),",
    "STACK_SCRAPE_INTERVAL and STACK_EVALUATION_INTERVAL (Prometheus durations, default 1s), KUBEBUILDER_ASSETS",
    "(controller-runtime's binaries, used first), APPMONITOR_CACHE (the Go-built binaries, default ~/.cache/appmonitor).",
    "Exit codes: 0 done; 1 a step or component failed (named); 2 usage.",
  ],
};

/** The command and `up`'s options. @throws Error naming what is wrong. */
function parseStackArgs(args: string[]): { command: string; flags: { [K in keyof typeof OPTIONS]: boolean } } {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: OPTIONS });
  const [command, ...rest] = positionals;
  if (command === undefined) throw new Error("a command is needed");
  if (!["up", "down", "status", "env"].includes(command)) throw new Error(`unknown command: ${command}`);
  if (rest.length > 0) throw new Error(`unknown: ${rest.join(" ")}`);
  const given = Object.keys(OPTIONS).filter((o) => values[o as keyof typeof OPTIONS]);
  if (command !== "up" && given.length > 0) throw new Error(`${command} takes no options: ${given.map((o) => `--${o}`).join(" ")}`);
  if (values.eventing && !values["real-node"]) throw new Error("--eventing runs Knative Eventing on the real node: add --real-node");
  if (values.serving && !values.eventing) throw new Error("--serving runs Knative Serving beside Eventing on the real node: add --real-node --eventing");
  return { command, flags: values };
}

async function main(args: string[]): Promise<number> {
  exitOnHelp(args, USAGE);
  let command: string;
  let flags: ReturnType<typeof parseStackArgs>["flags"];
  try {
    ({ command, flags } = parseStackArgs(args));
  } catch (error) {
    console.error(`stack: ${(error as Error).message}\n${usageText(USAGE)}`);
    return 2;
  }
  const stateDir = defaultStateDir();
  switch (command) {
    case "up": {
      const running = await readState(stateDir);
      if (running) console.error(`stack: already running in ${stateDir}`);
      // The real node's registry serves memhog, which the original manifest names: built (cached) first.
      if (flags["real-node"] && !running) {
        const { buildImages } = await import("../../../scripts/images/build.ts");
        await buildImages(["memhog"], (line) => console.error(`stack: images: ${line}`));
      }
      const state = await up({
        stateDir,
        nodes: Number(process.env.STACK_NODES ?? 2),
        scrapeInterval: process.env.STACK_SCRAPE_INTERVAL ?? "1s",
        evaluationInterval: process.env.STACK_EVALUATION_INTERVAL ?? "1s",
        realNode: flags["real-node"],
        prometheusOperator: flags["prometheus-operator"],
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
      if (flags.eventing && !state.eventing) {
        // Loaded here: the Kubernetes client and the Eventing module are needed for this alone.
        const { installEventing } = await import("./eventing-install.ts");
        const installed = await installEventing(state, undefined, (line) => console.error(`stack: ${line}`), true);
        state.eventing = { version: installed.version, deployments: installed.deployments };
        await saveState(state);
        console.error(`stack: Knative Eventing ${installed.version} Available on the real node (${installed.seconds.toFixed(1)} s)`);
      }
      if (flags.serving && !state.serving) {
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
  }
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`stack: ${error.message}`);
    process.exit(1);
  },
);
