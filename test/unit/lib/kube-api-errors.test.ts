// The one Kubernetes API error module (functions/lib/kube-api-errors.ts), as one table: what
// each failure the API server (or the network) gives is, and what the function answers, with
// Knative's retry table beside it (retried: 5xx, 404, 408, 409, 429; any other 4xx goes to the
// dead-letter sink at once). Then the authorizer's message, read for the permission it names.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import {
  classifyApiError,
  deniedPermission,
  describePermission,
  isConflict,
  isObjectNotFound,
  isPatchConflict,
  isRefusal,
  KubeApiTimeoutError,
  toHttpFailure,
  type ApiErrorClass,
} from "../../../functions/lib/kube-api-errors.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import { knativeRetries } from "../../support/knative-delivery.ts";

/** An error as the client throws it: the HTTP status, a `Status` body (as text), headers. */
const api = (code: number, status: Record<string, unknown>, headers: Record<string, string> = {}) =>
  new k8s.ApiException(code, "Unsuccessful HTTP Request", JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, ...status }), headers);

const RBAC_NAMESPACED = 'deployments.apps "web" is forbidden: User "system:serviceaccount:appmonitor:memory-scaler" cannot patch resource "deployments" in API group "apps" in the namespace "team-a"';
const RBAC_CLUSTER = 'appmonitors.kubedemo.com is forbidden: User "system:serviceaccount:appmonitor:rule-sync" cannot list resource "appmonitors" in API group "kubedemo.com" at the cluster scope';


const cases: { name: string; error: unknown; kind: ApiErrorClass; status: number; retryAfter?: string; reason: RegExp }[] = [
  { name: "a Pod that is gone (404 naming it)", error: api(404, { reason: "NotFound", message: 'pods "p" not found', details: { name: "p", kind: "pods" } }), kind: "NotFound", status: 503, reason: /deleted meanwhile/ },
  { name: "a CRD that is not installed (404 naming nothing)", error: api(404, { reason: "NotFound", message: "the server could not find the requested resource", details: {} }), kind: "NotServed", status: 503, reason: /CRD installed/ },
  { name: "a 404 without a Status (a proxy)", error: new k8s.ApiException(404, "x", "404 page not found", {}), kind: "NotServed", status: 503, reason: /not served/ },
  { name: "AlreadyExists", error: api(409, { reason: "AlreadyExists", message: 'events "e" already exists', details: { name: "e" } }), kind: "Conflict", status: 503, retryAfter: "1", reason: /kept changing/ },
  { name: "a stale resourceVersion", error: api(409, { reason: "Conflict", message: "the object has been modified; please apply your changes to the latest version and try again" }), kind: "Conflict", status: 503, retryAfter: "1", reason: /kept changing/ },
  { name: "a failed JSON Patch test", error: api(422, { reason: "Invalid", message: "the server rejected our request due to an error in our request" }), kind: "PatchConflict", status: 503, retryAfter: "1", reason: /kept changing/ },
  { name: "a failed JSON Patch test, with the library's text", error: api(422, { message: "testing value /spec/x failed: test failed" }), kind: "PatchConflict", status: 503, retryAfter: "1", reason: /kept changing/ },
  { name: "validation (422 Invalid)", error: api(422, { reason: "Invalid", message: 'Deployment.apps "m" is invalid: spec.template.spec.containers[0].resources' }), kind: "Refused", status: 422, reason: /refused it/ },
  { name: "a bad request (400)", error: api(400, { reason: "BadRequest", message: "json: cannot unmarshal" }), kind: "Refused", status: 422, reason: /refused it/ },
  { name: "LimitRange (admission's 403)", error: api(403, { reason: "Forbidden", message: 'pods "m-x" is forbidden: maximum memory usage per Container is 512Mi, but limit is 768Mi' }), kind: "Refused", status: 422, reason: /refused it/ },
  { name: "a ValidatingAdmissionPolicy (admission's 403)", error: api(403, { reason: "Forbidden", message: 'pods "p" is forbidden: ValidatingAdmissionPolicy \'x\' with binding \'x\' denied request: may create Pods only with dryRun=All' }), kind: "Refused", status: 422, reason: /refused it/ },
  { name: "RBAC in a namespace (the authorizer's 403)", error: api(403, { reason: "Forbidden", message: RBAC_NAMESPACED }), kind: "Forbidden", status: 500, reason: /not allowed to/ },
  { name: "RBAC at the cluster scope", error: api(403, { reason: "Forbidden", message: RBAC_CLUSTER }), kind: "Forbidden", status: 500, reason: /not allowed to/ },
  { name: "credentials refused (401)", error: api(401, { reason: "Unauthorized", message: "Unauthorized" }), kind: "Unauthorized", status: 503, reason: /refused the credentials/ },
  { name: "etcd timed out (500)", error: api(500, { reason: "InternalError", message: "etcdserver: request timed out" }), kind: "Unavailable", status: 503, reason: /unavailable.*etcdserver/ },
  { name: "overloaded (503 with Retry-After)", error: api(503, { reason: "ServiceUnavailable", message: "the server is currently unable to handle the request" }, { "retry-after": "2" }), kind: "Unavailable", status: 503, retryAfter: "2", reason: /unavailable/ },
  { name: "a server-side timeout (504)", error: api(504, { reason: "Timeout", message: "the server was unable to return a response in the time allotted" }), kind: "Unavailable", status: 503, reason: /unavailable/ },
  { name: "a request timeout (408)", error: new k8s.ApiException(408, "x", "", {}), kind: "Unavailable", status: 503, reason: /unavailable/ },
  { name: "no complete answer within the client's timeout", error: new KubeApiTimeoutError("GET", "https://10.96.0.1/api/v1/namespaces/a/pods/p", 10_000), kind: "TimedOut", status: 503, reason: /did not answer in time: could not read it: GET https:\/\/10\.96\.0\.1\/api\/v1\/namespaces\/a\/pods\/p: no complete answer within 10000 ms/ },
  { name: "a refused connection", error: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" }), kind: "Unavailable", status: 503, reason: /unavailable.*ECONNREFUSED/ },
  { name: "throttling (429 with Retry-After)", error: api(429, { reason: "TooManyRequests", message: "too many requests" }, { "retry-after": "3" }), kind: "Throttled", status: 429, retryAfter: "3", reason: /throttled/ },
  { name: "throttling with a Retry-After that is not seconds", error: api(429, {}, { "retry-after": "Fri, 31 Dec 1999 23:59:59 GMT" }), kind: "Throttled", status: 429, reason: /throttled/ },
  { name: "a method not allowed (405)", error: api(405, { reason: "MethodNotAllowed", message: "the server does not allow this method" }), kind: "Unexpected", status: 500, reason: /HTTP 405/ },
  { name: "a request too large (413)", error: api(413, { reason: "RequestEntityTooLarge", message: "request is too large" }), kind: "Unexpected", status: 500, reason: /HTTP 413/ },
];

describe("a failed Kubernetes API call: its class and the function's answer", () => {
  for (const c of cases) {
    it(`${c.name} → ${c.kind}, ${c.status}`, () => {
      assert.equal(classifyApiError(c.error), c.kind);
      const failure = toHttpFailure(c.error, "read it");
      assert.equal(failure.status, c.status);
      assert.match(failure.reason, c.reason);
      assert.equal(failure.headers["retry-after"], c.retryAfter);
      assert.equal(failure.cause, c.error, "the original kept for the logs");
      // Knative retries exactly what DESIGN.md calls transient; a refusal goes to the dead-letter sink at once.
      assert.equal(knativeRetries(failure.status), c.kind !== "Refused");
      assert.equal(failure.transient, c.kind !== "Refused");
      assert.equal(isObjectNotFound(c.error), c.kind === "NotFound");
      assert.equal(isConflict(c.error), c.kind === "Conflict");
      assert.equal(isPatchConflict(c.error), c.kind === "Conflict" || c.kind === "PatchConflict");
      assert.equal(isRefusal(c.error), c.kind === "Refused");
    });
  }

  it("passes an HttpError on as it is", () => {
    const error = new HttpError(503, "Prometheus unavailable");
    assert.equal(toHttpFailure(error, "query"), error);
  });

  it("reads a Status the client already parsed", () => {
    const error = new k8s.ApiException(404, "x", { kind: "Status", reason: "NotFound", message: "gone", details: { name: "p" } } as unknown as string, {});
    assert.equal(classifyApiError(error), "NotFound");
  });
});

describe("deniedPermission and describePermission", () => {
  const table: { message: string; expected: ReturnType<typeof deniedPermission>; described?: string }[] = [
    {
      message: RBAC_NAMESPACED,
      expected: { user: "system:serviceaccount:appmonitor:memory-scaler", verb: "patch", resource: "deployments", group: "apps", namespace: "team-a" },
      described: "patch deployments.apps in namespace team-a",
    },
    {
      message: RBAC_CLUSTER,
      expected: { user: "system:serviceaccount:appmonitor:rule-sync", verb: "list", resource: "appmonitors", group: "kubedemo.com", namespace: undefined },
      described: "list appmonitors.kubedemo.com at the cluster scope",
    },
    {
      message: 'appmonitors.kubedemo.com "m" is forbidden: User "system:serviceaccount:appmonitor:rule-sync" cannot patch resource "appmonitors/status" in API group "kubedemo.com" in the namespace "demo": RBAC: clusterrole.rbac.authorization.k8s.io "x" not found',
      expected: { user: "system:serviceaccount:appmonitor:rule-sync", verb: "patch", resource: "appmonitors/status", group: "kubedemo.com", namespace: "demo" },
      described: "patch appmonitors.kubedemo.com/status in namespace demo",
    },
    {
      message: 'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "default"',
      expected: { user: "alice", verb: "create", resource: "pods", group: "", namespace: "default" },
      described: "create pods in namespace default",
    },
    { message: 'pods "m-x" is forbidden: maximum memory usage per Container is 512Mi, but limit is 768Mi', expected: undefined },
    { message: 'forbidden: User "alice" cannot get path "/metrics"', expected: undefined },
  ];
  for (const row of table) {
    it(row.described ?? `nothing in ${JSON.stringify(row.message.slice(0, 40))}`, () => {
      const permission = deniedPermission(row.message);
      assert.deepEqual(permission, row.expected);
      if (permission !== undefined) assert.equal(describePermission(permission), row.described);
    });
  }
});
