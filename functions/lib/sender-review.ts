/**
 * The sender check of `sender-identity.ts` against the API server: each bearer token is reviewed
 * with a TokenReview (authentication.k8s.io/v1, `create`, the one permission it needs:
 * knative/rbac/sender-review.yaml) for the function's audience, and the verdict judged there.
 *
 * Verdicts are kept per token (its SHA-256) for at most {@link VERDICT_TTL_MS} and never past the
 * token's `exp`: the Broker's filter sends the same token with every delivery until it renews it,
 * so a burst of events costs one review; a ServiceAccount deleted meanwhile is refused within the
 * minute. Concurrent deliveries with one token share one review (lru-cache's `fetch`). A review
 * that fails (the API server down, the permission missing) is not kept and answers as any failed
 * API call (`kube-api-errors.ts`: 503, or 500 for a missing permission, both retried by Knative).
 */
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import { toHttpFailure } from "./kube-api-errors.ts";
import type { FunctionKubeConfig } from "./kubeconfig.ts";
import type { FunctionContext } from "./runtime/types.ts";
import { bearerToken, judgeReview, senderRefused, senderUsernames, tokenExpiry, type SenderIdentityConfig, type SenderVerdict } from "./sender-identity.ts";

/** How long a verdict is kept, in ms, at most. */
export const VERDICT_TTL_MS = 60_000;
/** Tokens whose verdicts are kept: far more than the Triggers that send. */
const MAX_VERDICTS = 1_000;

/** The check a CloudEvent function runs on each request's headers before its event is decoded. */
export type SenderCheck = (context: FunctionContext, headers: Readonly<Record<string, string | string[] | undefined>>) => Promise<void>;

/**
 * The check for `config`, its senders in the namespace of the function's credentials (the
 * context's namespace: in a cluster, the Pod's ServiceAccount's), `default` when they name none.
 * The check throws HttpError 401 for a refused sender (`senderRefused`), or the failed review's status.
 */
export function createSenderCheck(kc: FunctionKubeConfig, config: SenderIdentityConfig, now: () => number = Date.now): SenderCheck {
  const api = kc.makeApiClient(k8s.AuthenticationV1Api);
  const ownNamespace = kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
  const senders = senderUsernames(config, ownNamespace);
  const verdicts = new LRUCache<string, SenderVerdict, string>({
    max: MAX_VERDICTS,
    ttl: VERDICT_TTL_MS,
    fetchMethod: async (_key, _stale, { context: token, options }) => {
      const review = await api.createTokenReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: [config.audience] } } });
      const expiry = tokenExpiry(token);
      options.ttl = Math.max(1, Math.min(VERDICT_TTL_MS, expiry === undefined ? VERDICT_TTL_MS : expiry * 1000 - now()));
      return judgeReview(review.status ?? {}, config.audience, senders);
    },
  });
  return async (context, headers) => {
    const token = bearerToken(headers.authorization);
    let verdict: SenderVerdict | undefined;
    try {
      verdict = await verdicts.fetch(createHash("sha256").update(token).digest("hex"), { context: token });
    } catch (error) {
      throw toHttpFailure(error, "review the sender's token (TokenReview)");
    }
    if (verdict === undefined) throw toHttpFailure(new Error("no verdict"), "review the sender's token (TokenReview)");
    if (!verdict.allowed) throw senderRefused(verdict.reason);
    context.log.debug({ sender: verdict.sender }, "sender verified");
  };
}
