/** The state of a running (or crashed) local stack, kept in `<stateDir>/state.json`. */
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Binaries } from "./paths.ts";
import type { PrometheusOperatorState } from "./prometheus-operator.ts";
import type { RealNodeState } from "./real-node.ts";
import type { RegistryState } from "./registry.ts";

/** What `up` leaves in `<stateDir>/state.json`, and what `env`/`status` read back. */
export interface StackState {
  stateDir: string;
  startedAt: string;
  kubeconfig: string;
  apiserverUrl: string;
  prometheusUrl: string;
  alertmanagerUrl: string;
  kwokUrl: string;
  etcdUrl: string;
  /** Prometheus loads every `*.yml` here; POST `<prometheusUrl>/-/reload` after writing. */
  rulesDir: string;
  /** Alertmanager's config file; POST `<alertmanagerUrl>/-/reload` after writing. */
  alertmanagerConfig: string;
  nodes: string[];
  kubectlDir: string;
  binaries: Binaries;
  components: { name: string; pid: number; log: string; endpoint: string }[];
  /** The real node, when `up` was asked for it; recorded before it makes anything on the host. */
  realNode?: RealNodeState;
  /** The local OCI registry the real node pulls its images from (with the real node only). */
  registry?: RegistryState;
  /** Knative Eventing on the real node (`up --real-node --eventing`, `eventing-install.ts`): its version and the Deployments it waited for. */
  eventing?: { version: string; deployments: string[] };
  /** Knative Serving, all but the ingress, on the real node (`up --real-node --eventing --serving`, `serving-install.ts`): as {@link StackState.eventing}. */
  serving?: { version: string; deployments: string[] };
  /** prometheus-operator and the resources it manages (`up --prometheus-operator`, `prometheus-operator.ts`). */
  prometheusOperator?: PrometheusOperatorState;
}

/** `<stateDir>/state.json`. */
export const stateFile = (dir: string): string => path.join(dir, "state.json");

/** Writes `state` back to `<stateDir>/state.json`, after a step that adds to a running stack (Eventing). */
export async function saveState(state: StackState): Promise<void> {
  await writeFile(stateFile(state.stateDir), JSON.stringify(state, null, 2));
}

/** Reads the state of a running (or crashed) stack, or undefined when none was started there. */
export async function readState(stateDir: string): Promise<StackState | undefined> {
  if (!existsSync(stateFile(stateDir))) return undefined;
  return JSON.parse(await readFile(stateFile(stateDir), "utf8")) as StackState;
}
