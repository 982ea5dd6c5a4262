/**
 * Whether the namespace's ResourceQuotas can hold a scale's whole rollout, not only one Pod.
 * Pure: the workload's strategy and the quotas (their `status.used` and `status.hard`) are read by
 * the caller.
 *
 * The server-side dry run of one scaled Pod asks ResourceQuota admission whether one more Pod
 * fits. A rollout needs more: a Deployment's `RollingUpdate` keeps its old Pods until new ones
 * are available, so at its peak it runs all `replicas` new Pods beside up to `maxSurge` old ones
 * (total Pods ≤ replicas + maxSurge; the new ReplicaSet grows to `replicas` while old Pods are
 * removed only as new ones become available:
 * https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment).
 * A Pod the quota refuses is never created (`FailedCreate`), the old Pod it would have replaced is
 * never removed, and the rollout stalls until its progress deadline. So before the patch the
 * peak is compared with each quota's room:
 *   extra = peak − replicas × old Pod; refused when used + extra > hard,
 * for `requests.memory` (also spelled `memory`) with the Pods' requests and `limits.memory` with
 * their limits (https://kubernetes.io/docs/concepts/policy/resource-quotas/#compute-resource-quota).
 * Peaks: Deployment `RollingUpdate` replicas × new + min(maxSurge, replicas) × old; `Recreate`
 * and StatefulSets (a Pod is deleted before its replacement is created) replicas × new.
 * DaemonSets (one Pod per Node) and bare ReplicaSets (which never replace their Pods) are not
 * judged. Quotas with `scopes` or a `scopeSelector` may not apply to the Pods and are not judged.
 */
import { ceil, formatBytes, parseQuantity, QuantityError } from "../lib/quantity.ts";

/** What the peak depends on: the workload's kind, replicas and rollout strategy. */
export interface RolloutShape {
  readonly kind: string;
  readonly name: string;
  /** `spec.replicas`; 1 when unset (the API server's default). */
  readonly replicas: number;
  /** Deployment `spec.strategy.type` (`RollingUpdate` when unset). */
  readonly strategy: string | undefined;
  /** Deployment `spec.strategy.rollingUpdate.maxSurge`: a count or a percent of replicas (`25%` when unset). */
  readonly maxSurge: number | string | undefined;
}

/** One Pod's memory, bytes: as ResourceQuota counts `requests.memory` and `limits.memory`. */
export interface PodMemory {
  readonly request: bigint;
  readonly limit: bigint;
}

/** A ResourceQuota of the namespace, as read: `status.hard` and `status.used`, quantity strings. */
export interface QuotaView {
  readonly name: string;
  /** True when it has `spec.scopes` or `spec.scopeSelector`. */
  readonly scoped: boolean;
  readonly hard: Readonly<Record<string, string>>;
  readonly used: Readonly<Record<string, string>>;
}

/**
 * `maxSurge` as a number of Pods: a percent of `replicas` rounded up, as the Deployment
 * controller resolves it (k8s.io/kubernetes `deploymentutil.ResolveFenceposts`); `25%` when unset.
 * A value that is neither is taken as 1.
 */
export function resolveMaxSurge(maxSurge: number | string | undefined, replicas: number): number {
  const value = maxSurge ?? "25%";
  if (typeof value === "number") return Math.max(0, Math.floor(value));
  const percent = /^(\d+)%$/.exec(value);
  if (percent !== null) return Math.ceil((replicas * Number(percent[1])) / 100);
  const count = Number(value);
  return Number.isInteger(count) && count >= 0 ? count : 1;
}

/**
 * The most memory the workload's Pods hold at once during the rollout from `from` to `to`, and
 * how many Pods of each it counts; undefined for a kind that is not judged (module comment).
 */
export function rolloutPeak(shape: RolloutShape, from: PodMemory, to: PodMemory): { readonly request: bigint; readonly limit: bigint; readonly newPods: number; readonly oldPods: number } | undefined {
  const replicas = BigInt(Math.max(0, shape.replicas));
  let oldPods = 0n;
  if (shape.kind === "Deployment") {
    if (shape.strategy !== "Recreate") oldPods = BigInt(Math.min(resolveMaxSurge(shape.maxSurge, shape.replicas), shape.replicas));
  } else if (shape.kind !== "StatefulSet") {
    return undefined;
  }
  return {
    request: replicas * to.request + oldPods * from.request,
    limit: replicas * to.limit + oldPods * from.limit,
    newPods: Number(replicas),
    oldPods: Number(oldPods),
  };
}

/** The result of {@link decideQuota}: `fits`, or `refused` with the first quota that cannot hold the rollout. */
export type QuotaFit = { readonly result: "fits" } | { readonly result: "refused"; readonly quota: string; readonly message: string };

const bytesOf = (value: string | undefined): bigint | undefined => {
  if (value === undefined) return undefined;
  try {
    return ceil(parseQuantity(value));
  } catch (error) {
    if (error instanceof QuantityError) return undefined;
    throw error;
  }
};

/**
 * Whether every unscoped quota in `quotas` holds the rollout of `shape` from `from` to `to`
 * (module comment). A resource a quota does not limit, or whose `used` it does not report yet,
 * is not judged.
 */
export function decideQuota(shape: RolloutShape, from: PodMemory, to: PodMemory, quotas: readonly QuotaView[]): QuotaFit {
  const peak = rolloutPeak(shape, from, to);
  if (peak === undefined) return { result: "fits" };
  const replicas = BigInt(Math.max(0, shape.replicas));
  const extra = { request: peak.request - replicas * from.request, limit: peak.limit - replicas * from.limit };
  for (const quota of quotas) {
    if (quota.scoped) continue;
    const checks: [string, bigint, bigint][] = [
      ["requests.memory", extra.request, to.request],
      ["memory", extra.request, to.request],
      ["limits.memory", extra.limit, to.limit],
    ];
    for (const [resource, more, perPod] of checks) {
      const hard = bytesOf(quota.hard[resource]);
      const used = bytesOf(quota.used[resource]);
      if (hard === undefined || used === undefined || more <= 0n || used + more <= hard) continue;
      const old = peak.oldPods > 0 ? ` beside ${peak.oldPods} old Pod${peak.oldPods === 1 ? "" : "s"} still running (maxSurge)` : "";
      return {
        result: "refused",
        quota: quota.name,
        message:
          `the rollout of ${shape.kind} ${shape.name} needs ${formatBytes(more)} more ${resource} at its peak (${peak.newPods} new Pod${peak.newPods === 1 ? "" : "s"} at ${formatBytes(perPod)}${old}), ` +
          `but ResourceQuota ${quota.name} has ${formatBytes(used)} of ${formatBytes(hard)} used: the Pods it refuses would never be created and the rollout would stall; raise the quota, or lower spec.memMultiplier or spec.maxMemory`,
      };
    }
  }
  return { result: "fits" };
}
