// Kubernetes LabelSelector matching, for deciding which Pods an AppMonitor selects.

/**
 * One requirement of a LabelSelector.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/label-selector/
 */
export interface LabelSelectorRequirement {
  /** The label key the requirement applies to. */
  key: string;
  /** How the key's value relates to `values`. */
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  /** Non-empty for In/NotIn; empty or absent for Exists/DoesNotExist. */
  values?: string[];
}

/**
 * A Kubernetes LabelSelector: `matchLabels` and `matchExpressions` are ANDed; an empty selector
 * (`{}`) matches every set of labels.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/label-selector/
 */
export interface LabelSelector {
  /** `{key: value}` pairs, each equivalent to a requirement `key In [value]`. */
  matchLabels?: Record<string, string>;
  /** Requirements, all of which must hold. */
  matchExpressions?: LabelSelectorRequirement[];
}

/** Thrown for a selector the API server would refuse, e.g. `In` without values. */
export class LabelSelectorError extends Error {
  /** Index of the offending entry of `matchExpressions`. */
  readonly index: number;

  constructor(message: string, index: number) {
    super(message);
    this.name = "LabelSelectorError";
    this.index = index;
  }
}

/**
 * Checks the operator/values rules that a JSON Schema cannot express structurally:
 * `In`/`NotIn` need at least one value, `Exists`/`DoesNotExist` take none.
 * Source: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#resources-that-support-set-based-requirements
 * @throws {LabelSelectorError} naming the first invalid requirement.
 */
export function checkLabelSelector(selector: LabelSelector): void {
  (selector.matchExpressions ?? []).forEach((req, index) => {
    const count = req.values?.length ?? 0;
    switch (req.operator) {
      case "In":
      case "NotIn":
        if (count === 0) {
          throw new LabelSelectorError(`matchExpressions[${index}]: operator ${req.operator} on key "${req.key}" needs at least one value`, index);
        }
        break;
      case "Exists":
      case "DoesNotExist":
        if (count !== 0) {
          throw new LabelSelectorError(`matchExpressions[${index}]: operator ${req.operator} on key "${req.key}" takes no values`, index);
        }
        break;
      default:
        throw new LabelSelectorError(`matchExpressions[${index}]: unknown operator "${String(req.operator)}"`, index);
    }
  });
}

/**
 * Whether `labels` satisfy `selector`. `matchLabels` and every `matchExpressions` entry must
 * hold; `NotIn` and `DoesNotExist` hold for a missing key; `{}` matches everything.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/label-selector/
 * @param selector the selector; pass none at all (not `{}`) when nothing should match.
 * @param labels the object's labels; absent means no labels.
 * @throws {LabelSelectorError} when the selector is invalid (see {@link checkLabelSelector}).
 */
export function matchesLabelSelector(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  checkLabelSelector(selector);
  const has = (key: string): boolean => labels !== undefined && Object.hasOwn(labels, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || labels?.[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const present = has(req.key);
    const value = present ? labels?.[req.key] : undefined;
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
        if (value === undefined || !values.includes(value)) return false;
        break;
      case "NotIn":
        if (value !== undefined && values.includes(value)) return false;
        break;
      case "Exists":
        if (!present) return false;
        break;
      case "DoesNotExist":
        if (present) return false;
        break;
    }
  }
  return true;
}
