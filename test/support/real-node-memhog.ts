/**
 * memhog on the stack's real node, read back from the host: its container's memory cgroup (the
 * limit the kubelet wrote) and its process's resident memory, for the real-node tests that scale it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { memoryCgroupDir } from "../harness/stack/real-node.ts";
import { podCgroupPath } from "../harness/stack/real-node-config.ts";

/** The container id of a Pod's first container, without the runtime's prefix. */
export const containerId = (pod: k8s.V1Pod): string => (pod.status?.containerStatuses?.[0]?.containerID ?? "").replace(/^containerd:\/\//, "");

/** The host directory of the memory cgroup of a Pod's first container. */
export const cgroupOf = (pod: k8s.V1Pod): string => memoryCgroupDir(podCgroupPath({ uid: pod.metadata?.uid ?? "", qosClass: pod.status?.qosClass ?? "" }, containerId(pod)));

/** The memory limit in bytes of a Pod's first container, as its cgroup says. */
export const cgroupLimit = (pod: k8s.V1Pod): number => Number(readFileSync(path.join(cgroupOf(pod), "memory.limit_in_bytes"), "utf8"));

/** memhog's process in the container's cgroup, and its resident memory (bytes), read from the host's /proc. */
export function memhogProcess(pod: k8s.V1Pod): { pid: string; rss: number } {
  const [pid = ""] = readFileSync(path.join(cgroupOf(pod), "cgroup.procs"), "utf8").split("\n").filter(Boolean);
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return { pid, rss: Number(kb ?? 0) * 1024 };
}
