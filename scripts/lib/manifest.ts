/** A manifest as parsed from YAML: plain data, typed only as far as every object goes. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly [field: string]: unknown;
}
