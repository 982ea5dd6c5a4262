/**
 * Cutting one Pod of the real node off the Kubernetes API server, and giving the path back: a rule
 * in the Pod's own network namespace (entered through one of its processes, found in its
 * container's cgroup) that answers every packet to the `kubernetes` Service with a TCP reset, so
 * new connections are refused and open ones reset at their next packet, as when the API server
 * is down or unreachable. Only that Pod is touched (its netns; nothing on the host), and the rule
 * goes with the Pod if a test never restores it.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import type * as k8s from "@kubernetes/client-node";
import { KUBERNETES_SERVICE_IP, podCgroupPath } from "../harness/stack/real-node-config.ts";
import { memoryCgroupDir } from "../harness/stack/real-node.ts";

const run = promisify(execFile);

/** The port of the `kubernetes` Service, which in-cluster clients dial (`KUBERNETES_SERVICE_PORT`). */
const KUBERNETES_SERVICE_PORT = 443;

/** A process of `pod`'s first container on the real node (the first pid of its memory cgroup). @throws Error when there is none. */
export function podProcess(pod: k8s.V1Pod): string {
  const container = (pod.status?.containerStatuses?.[0]?.containerID ?? "").replace(/^containerd:\/\//, "");
  const cgroup = memoryCgroupDir(podCgroupPath({ uid: pod.metadata?.uid ?? "", qosClass: pod.status?.qosClass ?? "" }, container));
  const [pid] = readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").split("\n").filter(Boolean);
  if (pid === undefined) throw new Error(`no process in ${cgroup} (Pod ${pod.metadata?.namespace}/${pod.metadata?.name})`);
  return pid;
}

/** iptables in the network namespace of process `pid`. */
async function podIptables(pid: string, args: readonly string[]): Promise<void> {
  await run("nsenter", [`--net=/proc/${pid}/ns/net`, "iptables", "-w", ...args]);
}

/**
 * Cuts `pod` off the API server (see the module's header).
 * @returns the restore: deletes the rule (a no-op when the Pod is gone).
 */
export async function cutFromApiServer(pod: k8s.V1Pod): Promise<() => Promise<void>> {
  const pid = podProcess(pod);
  const rule = ["OUTPUT", "-d", `${KUBERNETES_SERVICE_IP}/32`, "-p", "tcp", "--dport", String(KUBERNETES_SERVICE_PORT), "-j", "REJECT", "--reject-with", "tcp-reset"];
  await podIptables(pid, ["-I", ...rule]);
  return async () => {
    await podIptables(pid, ["-D", ...rule]).catch((error: { stderr?: string }) => {
      if (!/No such file or directory|No such process|does a matching rule exist/.test(error.stderr ?? "")) throw error;
    });
  };
}
