/**
 * The shape of a Knative Service as the install tree (`knative/services/`) writes it, as far as
 * the harness (which runs the functions' Services as Deployments on the real node) and the tests
 * read it. Types only: the shipped YAML is the source of truth.
 */
import type { Manifest } from "../../../scripts/lib/manifest.ts";


/** The container of a Knative Service's template, as far as the harness and the tests read it. */
export interface ServiceContainer {
  readonly name?: string;
  readonly image: string;
  readonly ports?: { name?: string; containerPort: number }[];
  readonly env?: { name: string; value?: string; valueFrom?: { readonly configMapKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean }; readonly [source: string]: unknown } }[];
  readonly volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  readonly readinessProbe?: { httpGet?: { path?: string; port?: number | string } };
  readonly livenessProbe?: { httpGet?: { path?: string; port?: number | string } };
  readonly resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readonly securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type?: string };
  };
  readonly [field: string]: unknown;
}

/** A serving.knative.dev/v1 Service, as far as the harness and the tests read it. */
export interface KnativeService extends Manifest {
  readonly spec: {
    readonly template: {
      readonly metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      readonly spec: {
        readonly serviceAccountName?: string;
        readonly automountServiceAccountToken?: boolean;
        readonly timeoutSeconds?: number;
        readonly containers: ServiceContainer[];
        readonly volumes?: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
        readonly [field: string]: unknown;
      };
    };
  };
}
