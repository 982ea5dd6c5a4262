/**
 * The compare-and-swap JSON Patch that claims an in-place scale of a workload (pure): its metadata
 * only, so the Pod template, and with it the Pods and whatever a GitOps tool compares, stay as they
 * are (a Deployment's `metadata.generation` still moves: the API server counts its annotations).
 * `scale/targets/in-place-target.ts` writes it before it resizes the Pods.
 */
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION, LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../../lib/appmonitor.ts";
import { type ContainerMemory, type JsonPatchOperation, listOf } from "../../model.ts";
import { escapeJsonPointerToken } from "./template-patch.ts";

/** What {@link buildInPlaceClaimPatch} writes, as read from the workload just before. */
export interface InPlaceClaimInput {
  /** The Pod template's own memory (`memoryOf`), as read: each container's limit and request are tested. */
  readonly template: readonly ContainerMemory[];
  /** The workload's `metadata.resourceVersion` as read (the API server always sets one). */
  readonly resourceVersion: string | undefined;
  /** The workload's `metadata.annotations` and `metadata.labels` as read; undefined when it has none. */
  readonly annotations: Readonly<Record<string, string>> | undefined;
  readonly labels: Readonly<Record<string, string>> | undefined;
  /** The new values: the last-scale time (RFC 3339), the last-scale record, the in-place record. */
  readonly time: string;
  readonly record: string;
  readonly inPlace: string;
}

/**
 * Builds the claim: `test` operations on the workload's resourceVersion, each template container's
 * memory and the annotations as read, then the annotations and the label
 * `app-monitor.kubedemo.com/in-place: "true"` written. The resourceVersion is what makes it a
 * claim: the patch changes no value the next delivery's patch tests otherwise (the template's
 * memory stays), and an annotation's absence cannot be tested. Two deliveries decided from the
 * same read cannot both pass: the second fails as a whole (422, read again, and the cooldown holds).
 * Sources: https://www.rfc-editor.org/rfc/rfc6902; DESIGN.md "In place for workloads".
 */
export function buildInPlaceClaimPatch(input: InPlaceClaimInput): JsonPatchOperation[] {
  const tests: JsonPatchOperation[] = input.resourceVersion === undefined ? [] : [{ op: "test", path: "/metadata/resourceVersion", value: input.resourceVersion }];
  const writes: JsonPatchOperation[] = [];
  for (const list of ["containers", "initContainers"] as const) {
    input.template.filter((c) => listOf(c) === list).forEach((c, i) => {
      const at = `/spec/template/spec/${list}/${i}`;
      tests.push({ op: "test", path: `${at}/name`, value: c.name });
      if (c.limit !== undefined) tests.push({ op: "test", path: `${at}/resources/limits/memory`, value: c.limit });
      if (c.request !== undefined) tests.push({ op: "test", path: `${at}/resources/requests/memory`, value: c.request });
    });
  }
  const values: [string, string][] = [
    [LAST_SCALE_ANNOTATION, input.time],
    [LAST_SCALE_RECORD_ANNOTATION, input.record],
    [IN_PLACE_MEMORY_ANNOTATION, input.inPlace],
  ];
  if (input.annotations === undefined) {
    writes.push({ op: "add", path: "/metadata/annotations", value: Object.fromEntries(values) });
  } else {
    for (const [key, value] of values) {
      const path = `/metadata/annotations/${escapeJsonPointerToken(key)}`;
      const previous = input.annotations[key];
      // `add` of an existing member replaces it (RFC 6902, 4.1).
      if (previous !== undefined) tests.push({ op: "test", path, value: previous });
      writes.push({ op: "add", path, value });
    }
  }
  if (input.labels === undefined) writes.push({ op: "add", path: "/metadata/labels", value: { [IN_PLACE_LABEL]: "true" } });
  else writes.push({ op: "add", path: `/metadata/labels/${escapeJsonPointerToken(IN_PLACE_LABEL)}`, value: "true" });
  return [...tests, ...writes];
}
